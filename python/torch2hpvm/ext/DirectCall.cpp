// DirectCall.cpp - torch2hpvm._direct: Python's own call of a Program
// (torch2hpvm.load()'s module, run from Python), a few C calls instead of
// TorchScript's dispatch of a method from Python (schema matching, IValue
// conversions, a list returned), which costs more than the rest of a
// call at batch 1.
//
//   run_one(handle, images) -> Tensor        (a one-output Program)
//   run(handle, images) -> list of Tensors
//
// handle is the Program's handle() (DirectCall.h). The GIL is released
// while the program runs. Errors are those of the Program's TorchScript
// methods, with the same Python types (ValueError, TypeError,
// RuntimeError) and messages, without libtorch's C++ backtrace.
//
// A Python extension module (libtorch_python, the interpreter): apart from
// libtorch2hpvm_torch.so, which C++ programs load without Python.
#include "DirectCall.h"

#include <torch/csrc/autograd/python_variable.h>

#include <c10/util/Exception.h>

#include <Python.h>

#include <cstring>
#include <exception>
#include <optional>
#include <string>

namespace {

/// The handle and the images of a call; false with Python's error set.
bool parseArgs(const char* name, PyObject* const* args, Py_ssize_t nargs,
               int64_t* handle, at::Tensor* images) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "%s() takes 2 arguments (%zd given)", name,
                 nargs);
    return false;
  }
  *handle = PyLong_AsLongLong(args[0]);
  if (*handle == -1 && PyErr_Occurred())
    return false;
  if (!THPVariable_Check(args[1])) {
    // (Python's type(x).__name__: tp_name without its module.)
    const char* type = Py_TYPE(args[1])->tp_name;
    const char* dot = std::strrchr(type, '.');
    PyErr_Format(PyExc_TypeError, "expected a torch.Tensor, got %s",
                 dot ? dot + 1 : type);
    return false;
  }
  *images = THPVariable_Unpack(args[1]);
  return true;
}

/// Runs \p body with the GIL released; on an error, sets Python's and
/// returns nullopt.
template <class Body>
auto released(Body&& body) -> std::optional<decltype(body())> {
  std::optional<decltype(body())> result;
  PyObject* type = nullptr;
  std::string message;
  Py_BEGIN_ALLOW_THREADS;
  try {
    result.emplace(body());
  } catch (const c10::ValueError& e) {
    type = PyExc_ValueError;
    message = e.what_without_backtrace();
  } catch (const c10::TypeError& e) {
    type = PyExc_TypeError;
    message = e.what_without_backtrace();
  } catch (const c10::Error& e) {
    type = PyExc_RuntimeError;
    message = e.what_without_backtrace();
  } catch (const std::exception& e) {
    type = PyExc_RuntimeError;
    message = e.what();
  }
  Py_END_ALLOW_THREADS;
  if (type)
    PyErr_SetString(type, message.c_str());
  return result;
}

PyObject* runOne(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  int64_t handle = 0;
  at::Tensor images;
  if (!parseArgs("run_one", args, nargs, &handle, &images))
    return nullptr;
  auto out = released([&] { return torch2hpvm::callOne(handle, images); });
  return out ? THPVariable_Wrap(std::move(*out)) : nullptr;
}

PyObject* runAll(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  int64_t handle = 0;
  at::Tensor images;
  if (!parseArgs("run", args, nargs, &handle, &images))
    return nullptr;
  auto outs = released([&] { return torch2hpvm::callAll(handle, images); });
  if (!outs)
    return nullptr;
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(outs->size()));
  if (!list)
    return nullptr;
  for (size_t k = 0; k < outs->size(); ++k) {
    PyObject* t = THPVariable_Wrap(std::move((*outs)[k]));
    if (!t) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(k), t);
  }
  return list;
}

PyMethodDef methods[] = {
    {"run_one", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(runOne)),
     METH_FASTCALL,
     "run_one(handle, images): the output of the one-output Program with "
     "that handle"},
    {"run", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(runAll)),
     METH_FASTCALL,
     "run(handle, images): the outputs of the Program with that handle"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT,
                      "torch2hpvm._direct",
                      "Direct calls of torch2hpvm Programs from Python.",
                      -1,
                      methods,
                      nullptr,
                      nullptr,
                      nullptr,
                      nullptr};

} // namespace

PyMODINIT_FUNC PyInit__direct() { return PyModule_Create(&module); }

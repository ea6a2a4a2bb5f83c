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
#include <torch/csrc/jit/frontend/tracer.h>

#include <c10/util/Exception.h>

#include <Python.h>

#include <cstddef>
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

/// Program \p handle's output for \p images (its list of outputs unless
/// \p one), or nullptr with Python's error set.
PyObject* call(int64_t handle, const at::Tensor& images, bool one) {
  if (one) {
    auto out = released([&] { return torch2hpvm::callOne(handle, images); });
    return out ? THPVariable_Wrap(std::move(*out)) : nullptr;
  }
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

PyObject* runOne(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  int64_t handle = 0;
  at::Tensor images;
  if (!parseArgs("run_one", args, nargs, &handle, &images))
    return nullptr;
  return call(handle, images, true);
}

PyObject* runAll(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  int64_t handle = 0;
  at::Tensor images;
  if (!parseArgs("run", args, nargs, &handle, &images))
    return nullptr;
  return call(handle, images, false);
}

// --- module_call: HPVMModule.__call__ --------------------------------------

/// What module_call reads: nn.Module (whose __call__ it falls back on, looked
/// up at each fallback: torch.fx patches it), torch's global hook dicts, and
/// the instance dict's keys.
struct CallSetup {
  PyObject* nnModule = nullptr;
  PyObject* globalHooks = nullptr; ///< A tuple of dicts.
  PyObject* direct = nullptr;      ///< "_direct": (handle, one) or None.
  PyObject* hookKeys[3] = {};      ///< The instance's hook dicts.
  PyObject* callName = nullptr;    ///< "__call__"
};
CallSetup setup;

PyObject* setUp(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyTuple_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError,
                    "set_up(nn.Module, (global hook dicts...))");
    return nullptr;
  }
  Py_INCREF(args[0]);
  Py_INCREF(args[1]);
  Py_XSETREF(setup.nnModule, args[0]);
  Py_XSETREF(setup.globalHooks, args[1]);
  Py_RETURN_NONE;
}

/// True where nn.Module's call would run forward() and nothing else: no
/// hook of \p self's or global, not tracing. -1 with Python's error set.
int nothingToDo(PyObject* dict) {
  for (PyObject* key : setup.hookKeys) {
    PyObject* hooks = PyDict_GetItemWithError(dict, key);
    if (!hooks)
      return PyErr_Occurred() ? -1 : 0;
    const int truth = PyObject_IsTrue(hooks);
    if (truth != 0)
      return truth < 0 ? -1 : 0;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(setup.globalHooks); ++i) {
    const int truth = PyObject_IsTrue(PyTuple_GET_ITEM(setup.globalHooks, i));
    if (truth != 0)
      return truth < 0 ? -1 : 0;
  }
  return torch::jit::tracer::isTracing() ? 0 : 1;
}

/// The module's program on one plain tensor, or nullptr without an error
/// set where nn.Module's call is to run instead.
PyObject* directly(PyObject* self, PyObject* x) {
  if (!setup.nnModule ||
      Py_TYPE(x) != reinterpret_cast<PyTypeObject*>(THPVariableClass))
    return nullptr;
  PyObject* dict = PyObject_GenericGetDict(self, nullptr);
  if (!dict)
    return nullptr;
  PyObject* result = nullptr;
  PyObject* direct = PyDict_GetItemWithError(dict, setup.direct);
  if (direct && PyTuple_Check(direct) && PyTuple_GET_SIZE(direct) == 2 &&
      nothingToDo(dict) == 1) {
    const int64_t handle = PyLong_AsLongLong(PyTuple_GET_ITEM(direct, 0));
    if (!(handle == -1 && PyErr_Occurred()))
      result = call(handle, THPVariable_Unpack(x),
                    PyTuple_GET_ITEM(direct, 1) == Py_True);
  }
  Py_DECREF(dict);
  return result;
}

struct ModuleCall {
  PyObject_HEAD vectorcallfunc vectorcall;
};

/// HPVMModule.__call__(self, *args, **kwargs).
PyObject* moduleCall(PyObject*, PyObject* const* args, size_t nargsf,
                     PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs == 2 && !kwnames) {
    if (PyObject* out = directly(args[0], args[1]))
      return out;
    if (PyErr_Occurred())
      return nullptr;
  }
  if (nargs < 1 || !setup.nnModule) {
    PyErr_SetString(PyExc_TypeError, "HPVMModule.__call__ needs the module");
    return nullptr;
  }
  PyObject* call = PyObject_GetAttr(setup.nnModule, setup.callName);
  if (!call)
    return nullptr;
  PyObject* out = PyObject_Vectorcall(call, args, nargsf, kwnames);
  Py_DECREF(call);
  return out;
}

/// module.__call__ read as an attribute: bound to the module.
PyObject* bindCall(PyObject* self, PyObject* obj, PyObject*) {
  if (!obj || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

PyTypeObject moduleCallType = [] {
  PyTypeObject t{};
  t.ob_base.ob_base.ob_refcnt = 1; // (a static type, never freed)
  t.tp_name = "torch2hpvm._direct.ModuleCall";
  t.tp_basicsize = sizeof(ModuleCall);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL |
               Py_TPFLAGS_METHOD_DESCRIPTOR;
  t.tp_vectorcall_offset = offsetof(ModuleCall, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_descr_get = bindCall;
  t.tp_doc = "HPVMModule.__call__: the program straight away where "
             "nn.Module's call has nothing to do, else nn.Module's call.";
  return t;
}();

ModuleCall moduleCallObject;

PyMethodDef methods[] = {
    {"run_one", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(runOne)),
     METH_FASTCALL,
     "run_one(handle, images): the output of the one-output Program with "
     "that handle"},
    {"run", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(runAll)),
     METH_FASTCALL,
     "run(handle, images): the outputs of the Program with that handle"},
    {"set_up", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(setUp)),
     METH_FASTCALL,
     "set_up(nn.Module, global_hook_dicts): what module_call reads"},
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

PyMODINIT_FUNC PyInit__direct() {
  if (PyType_Ready(&moduleCallType) < 0)
    return nullptr;
  setup.direct = PyUnicode_InternFromString("_direct");
  setup.hookKeys[0] = PyUnicode_InternFromString("_forward_pre_hooks");
  setup.hookKeys[1] = PyUnicode_InternFromString("_forward_hooks");
  setup.hookKeys[2] = PyUnicode_InternFromString("_backward_hooks");
  setup.callName = PyUnicode_InternFromString("__call__");
  PyObject* m = PyModule_Create(&module);
  if (!m)
    return nullptr;
  PyObject_Init(reinterpret_cast<PyObject*>(&moduleCallObject),
                &moduleCallType);
  moduleCallObject.vectorcall = moduleCall;
  if (PyModule_AddObjectRef(m, "module_call",
                            reinterpret_cast<PyObject*>(&moduleCallObject)) <
      0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}

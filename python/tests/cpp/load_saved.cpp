// load_saved.cpp - a C++ program with libtorch and torch2hpvm's TorchScript
// class, and no Python: loads a module saved by torch.jit.save and runs it
// on images from a file. The test of serving a saved torch2hpvm module from
// C++ (python/tests/test_script.py).
//
//   load_saved MODULE.pt IMAGES.bin N C H W OUT_PREFIX [CONFIG]
//
// IMAGES.bin holds N x C x H x W float32 values. The module's result (a
// tensor, or a tuple or list of them) is written as OUT_PREFIX.K.bin, one
// file per tensor, its raw contiguous values. CONFIG, when given, is run
// first through the module's exported use_configuration(). Exit status 1
// with the error on stderr when anything fails.
#include <torch/script.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::vector<at::Tensor> tensorsOf(const c10::IValue& v) {
  if (v.isTensor())
    return {v.toTensor()};
  std::vector<at::Tensor> out;
  if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements())
      out.push_back(e.toTensor());
  } else {
    for (const c10::IValue& e : v.toListRef())
      out.push_back(e.toTensor());
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 8 && argc != 9) {
    std::cerr << "usage: load_saved MODULE.pt IMAGES.bin N C H W OUT_PREFIX "
                 "[CONFIG]\n";
    return 2;
  }
  try {
    torch::jit::Module module = torch::jit::load(argv[1]);
    module.eval();
    if (argc == 9)
      module.run_method("use_configuration", std::string(argv[8]));
    std::vector<int64_t> shape;
    for (int i = 3; i < 7; ++i)
      shape.push_back(std::stoll(argv[i]));
    at::Tensor images = torch::empty(shape, torch::kFloat);
    std::ifstream in(argv[2], std::ios::binary);
    in.read(reinterpret_cast<char*>(images.data_ptr<float>()),
            static_cast<std::streamsize>(images.numel() * sizeof(float)));
    if (!in) {
      std::cerr << "load_saved: cannot read " << images.numel()
                << " float32 values from " << argv[2] << "\n";
      return 1;
    }
    torch::NoGradGuard noGrad;
    std::vector<at::Tensor> outs = tensorsOf(module.forward({images}));
    for (size_t k = 0; k < outs.size(); ++k) {
      at::Tensor t = outs[k].contiguous();
      std::string path =
          std::string(argv[7]) + "." + std::to_string(k) + ".bin";
      std::ofstream out(path, std::ios::binary);
      out.write(static_cast<const char*>(t.data_ptr()),
                static_cast<std::streamsize>(t.nbytes()));
      if (!out) {
        std::cerr << "load_saved: cannot write " << path << "\n";
        return 1;
      }
    }
  } catch (const c10::Error& e) {
    std::cerr << "load_saved: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "load_saved: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

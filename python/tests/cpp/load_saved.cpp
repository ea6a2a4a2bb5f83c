// load_saved.cpp - a C++ program with libtorch and torch2hpvm's TorchScript
// class, and no Python: loads a module saved by torch.jit.save and runs it
// on images from a file. The test of serving a saved torch2hpvm module from
// C++ (python/tests/test_script.py).
//
//   load_saved MODULE.pt IMAGES.bin N C H W OUT_PREFIX [CONFIG]
//   load_saved --time BATCH THREADS MODULE.pt IMAGES.bin N C H W
//
// IMAGES.bin holds N x C x H x W float32 values. The module's result (a
// tensor, or a tuple or list of them) is written as OUT_PREFIX.K.bin, one
// file per tensor, its raw contiguous values. CONFIG, when given, is run
// first through the module's exported use_configuration(). Exit status 1
// with the error on stderr when anything fails.
//
// --time: runs the module on the images BATCH at a time, with THREADS
// threads (its exported set_threads()), after one untimed call, and
// prints each call's wall time in milliseconds on one line, then the
// program's own time of each call (its exported last_run_ms(), read after
// the call) on a second (scripts/bench/load_overhead.py). BATCH 0 times
// 2000 calls on an empty batch: the cost of the call alone, without the
// run (the second line is then empty).
#include <torch/script.h>

#include <chrono>
#include <cstdio>
#include <cstring>
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

/// Reads N x C x H x W float32 images from \p path (shape in argv[0..3]).
at::Tensor readImages(const char* path, char** dims) {
  std::vector<int64_t> shape;
  for (int i = 0; i < 4; ++i)
    shape.push_back(std::stoll(dims[i]));
  at::Tensor images = torch::empty(shape, torch::kFloat);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(images.data_ptr<float>()),
          static_cast<std::streamsize>(images.numel() * sizeof(float)));
  if (!in)
    throw std::runtime_error("cannot read " + std::to_string(images.numel()) +
                             " float32 values from " + path);
  return images;
}

int timeCalls(int argc, char** argv) {
  if (argc != 10) {
    std::cerr << "usage: load_saved --time BATCH THREADS MODULE.pt "
                 "IMAGES.bin N C H W\n";
    return 2;
  }
  const int64_t batch = std::stoll(argv[2]);
  torch::jit::Module module = torch::jit::load(argv[4]);
  module.run_method("set_threads", static_cast<int64_t>(std::stoll(argv[3])));
  at::Tensor images = readImages(argv[5], argv + 6);
  torch::NoGradGuard noGrad;
  module.forward({images.narrow(0, 0, batch)}); // untimed
  const int64_t step = batch > 0 ? batch : 1;
  const int64_t end = batch > 0 ? images.size(0) : 2000;
  std::vector<double> walls, runs;
  for (int64_t start = 0; start + batch <= end; start += step) {
    std::vector<c10::IValue> input{
        images.narrow(0, batch > 0 ? start : 0, batch)};
    auto t0 = std::chrono::steady_clock::now();
    module.forward(input);
    auto t1 = std::chrono::steady_clock::now();
    walls.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (batch > 0)
      runs.push_back(module.run_method("last_run_ms").toDouble());
  }
  for (const std::vector<double>* line : {&walls, &runs}) {
    for (size_t i = 0; i < line->size(); ++i)
      std::printf("%s%.6f", i ? " " : "", (*line)[i]);
    std::printf("\n");
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--time") == 0) {
    try {
      return timeCalls(argc, argv);
    } catch (const c10::Error& e) {
      std::cerr << "load_saved: " << e.what_without_backtrace() << "\n";
    } catch (const std::exception& e) {
      std::cerr << "load_saved: " << e.what() << "\n";
    }
    return 1;
  }
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
    at::Tensor images = readImages(argv[2], argv + 3);
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

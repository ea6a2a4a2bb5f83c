// Library.cpp - the C entry points of a generated program's shared library
// (hpvm_rt/Library.h): the program's model (programModel()) opened,
// configured and run on batches from memory, with the driver's
// configuration and calibration handling and every error turned into a
// message for hpvm_rt_last_error().
#include "hpvm_rt/Library.h"

#include "approx/Isa.h"
#include "base/Errors.h"
#include "config/Config.h"
#include "core/Core.h"
#include "core/Launch.h"
#include "core/Top1.h"
#include "driver/BakedConfig.h"
#include "driver/Calibration.h"
#include "driver/Controller.h"
#include "driver/Runner.h"
#include "hpvm_rt/CpuFeatures.h"
#include "hpvm_rt/Printable.h"
#include "hpvm_rt/RunModel.h"
#include "kernels/Kernels.h"
#include "tensorUtils.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <chrono>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>
#include <omp.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace hpvm::rt;

/// Largest thread count accepted (the program's --threads limit).
constexpr int kMaxLibraryThreads = 1024;

/// What the library keeps across opens: the directory the weights were
/// loaded from, and the model whose thread count the runtime currently
/// holds.
struct LibraryState {
  std::mutex mutex;
  std::string weightsDir; ///< Empty until the weights are loaded.
  const hpvm_rt_model* active = nullptr;
};

LibraryState& state() {
  static LibraryState* s = new LibraryState; // Never destroyed: used at exit.
  return *s;
}

thread_local std::string lastError;

/// Runs \p body under the library's lock; returns 0, or 1 with the message
/// of what it threw in lastError.
template <class Body> int guarded(Body&& body) {
  std::lock_guard<std::mutex> lock(state().mutex);
  try {
    body();
    lastError.clear();
    return 0;
  } catch (const UserError& e) {
    lastError = hpvm::printableMessage(e.what());
  } catch (const std::bad_alloc&) {
    lastError = "out of memory";
  } catch (const InternalError& e) {
    lastError = "internal error at " + std::string(e.file()) + ":" +
                std::to_string(e.line()) + ": " + e.message() +
                " (a bug in hpvm_rt; please report it)";
  } catch (const dnnl::error& e) {
    lastError = "internal error: oneDNN failed with status " +
                std::to_string(static_cast<int>(e.status)) + ": " + e.what() +
                " (a bug in hpvm_rt; please report it)";
  } catch (const std::exception& e) {
    lastError = std::string("internal error: ") + e.what() +
                " (a bug in hpvm_rt; please report it)";
  } catch (...) {
    lastError = "internal error: exception of unknown type (a bug in "
                "hpvm_rt; please report it)";
  }
  return 1;
}

/// The model directory baked in at export, resolved as the program resolves
/// it, but relative to this library's directory (both live in OUT/build/).
std::string bakedModelDir() {
  const char* baked = hpvm_rt::programModel().info.modelDir;
  std::string dir = baked ? baked : "";
  if (!dir.empty() && dir[0] != '/') {
    Dl_info where;
    if (::dladdr(reinterpret_cast<const void*>(&hpvm_rt_open), &where) == 0 ||
        !where.dli_fname)
      throw UserError("cannot tell where the model's library is; give the "
                      "model directory");
    std::filesystem::path lib = std::filesystem::absolute(where.dli_fname);
    dir = (lib.parent_path() / dir).lexically_normal().string();
  }
  return dir.empty() ? "./" : dir;
}

std::string withSlash(std::string dir) {
  if (dir.empty())
    dir = "./";
  if (dir.back() != '/')
    dir += '/';
  return dir;
}

} // namespace

/// An opened model: its configuration and calibration, and the settings
/// its launches run under (bound to the executor for each of its runs),
/// and its thread count, applied to the runtime whenever this model runs
/// after another one did.
struct hpvm_rt_model {
  std::string modelDir;
  std::unique_ptr<ConfigFile> file;
  const Configuration* config = nullptr;
  std::unique_ptr<Int8Calibration> calibration;
  LaunchSettings settings; ///< Of config and calibration.
  std::string description = "exact FP32 (no configuration)";
  int threads = 0; ///< 0: all cores.
  /// The program's own time of the last run (hpvm_rt_last_run_seconds()).
  double lastRunSeconds = -1;
};

namespace {

/// Makes \p m the model whose thread count the runtime holds.
void activate(const hpvm_rt_model* m) {
  LibraryState& s = state();
  if (s.active == m)
    return;
  setNumThreads(m->threads);
  s.active = m;
}

/// In a process where another OpenMP runtime is in the global symbol scope
/// (PyTorch loads GNU libgomp with RTLD_GLOBAL), oneDNN's parallel regions
/// in this library bind to that runtime, whose thread count hpvm_rt's
/// setNumThreads() does not reach. For one run, this gives it the model's
/// count (for the calling thread: OpenMP's setting is per thread), and then
/// gives the caller's own setting (torch's threads) back.
///
/// The library links the OpenMP runtime hpvm_rt was compiled for: with
/// g++, that is libgomp, the same library PyTorch loads, so one thread team
/// runs everything. A clang-built hpvm_rt brings LLVM's libomp, whose team
/// takes turns on the cores with libgomp's and spins 200 ms after each
/// loop by default, stealing the cores from the other team's next region
/// (+60% on LeNet at batch 64 and 2 threads): for the run, libomp's threads
/// then go to sleep at once (kmp_set_blocktime(0)), and the caller's
/// setting comes back after.
class GlobalOpenMPThreads {
public:
  GlobalOpenMPThreads() {
    const Api& a = api();
    if (a.set && a.get) {
      previous_ = a.get();
      if (previous_ != numThreads())
        a.set(numThreads());
    }
    if (a.setBlocktime && a.getBlocktime) {
      blocktime_ = a.getBlocktime();
      a.setBlocktime(0);
    }
  }
  GlobalOpenMPThreads(const GlobalOpenMPThreads&) = delete;
  GlobalOpenMPThreads& operator=(const GlobalOpenMPThreads&) = delete;
  ~GlobalOpenMPThreads() {
    const Api& a = api();
    if (previous_ > 0 && previous_ != numThreads())
      a.set(previous_);
    if (blocktime_ >= 0)
      a.setBlocktime(blocktime_);
  }

private:
  struct Api {
    void (*set)(int) = nullptr; ///< The global runtime's.
    int (*get)() = nullptr;
    /// libomp's, when it is the library's runtime and not the global one.
    void (*setBlocktime)(int) = nullptr;
    int (*getBlocktime)() = nullptr;
  };
  static Api find() {
    Api a;
    a.set = reinterpret_cast<void (*)(int)>(
        ::dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    a.get = reinterpret_cast<int (*)()>(
        ::dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    Dl_info global{}, own{};
    if (!a.set || !::dladdr(reinterpret_cast<void*>(a.set), &global) ||
        !::dladdr(reinterpret_cast<void*>(&omp_set_num_threads), &own) ||
        global.dli_fbase == own.dli_fbase || !own.dli_fname)
      return a;
    if (void* lib = ::dlopen(own.dli_fname, RTLD_NOW | RTLD_NOLOAD)) {
      a.setBlocktime =
          reinterpret_cast<void (*)(int)>(::dlsym(lib, "kmp_set_blocktime"));
      a.getBlocktime =
          reinterpret_cast<int (*)()>(::dlsym(lib, "kmp_get_blocktime"));
      ::dlclose(lib); // (still loaded: this library needs it)
    }
    return a;
  }
  static const Api& api() {
    static const Api a = find();
    return a;
  }
  int previous_ = 0;
  int blocktime_ = -1;
};

/// The configuration file hpvm_rt_set_config() reads: \p given, else the
/// one baked in at export (relative to the model directory), else none.
std::string configPathFor(const hpvm_rt_model& m, const char* given) {
  return given ? std::string(given)
               : bakedConfigPath(hpvm_rt::programModel().info, m.modelDir);
}

/// Runs \p n images and copies output k to outs[k] (n x its values).
void runInto(hpvm_rt_model* model, const float* images, int64_t n,
             float* const* outs, const char* what) {
  if (!model || !images || !outs)
    throw UserError(std::string(what) + ": a NULL model, input or output");
  const hpvm_rt::Model& program = hpvm_rt::programModel();
  const hpvm_rt::ModelInfo& info = program.info;
  const int count = graphOutputs(info);
  for (int k = 0; k < count; ++k)
    if (!outs[k])
      throw UserError(std::string(what) + ": output " + std::to_string(k) +
                      "'s buffer is NULL");
  if (n < 1)
    throw UserError(std::string(what) + ": " + std::to_string(n) +
                    " images; expected at least 1");
  // (Before activate(): where this library and the caller share one
  // OpenMP runtime, activate() sets that runtime's count, and the
  // caller's must be read first to be given back.)
  GlobalOpenMPThreads threads;
  activate(model);
  LaunchScope launches(model->settings);
  startMemTracking();
  struct FreeBatch {
    ~FreeBatch() { freeBatchMemory(); }
  } freeBatch;
  // The caller's images are the input tensor's host buffer (read only:
  // the executor never works in place on an external tensor).
  Tensor* input = newTensor({n, info.channels, info.height, info.width}, 4,
                            /*tracked=*/true);
  input->host_data = const_cast<float*>(images);
  hostModified(input);
  // The outputs are computed straight into the caller's buffers where
  // they can be (aligned, the graph output's size): no copy then.
  std::vector<int64_t> elems(static_cast<size_t>(count));
  for (int k = 0; k < count; ++k)
    elems[size_t(k)] = n * outputValues(info, k);
  model->settings.setOutputBuffers(outs, elems.data(), elems.size());
  struct ClearBuffers {
    LaunchSettings& settings;
    ~ClearBuffers() { settings.setOutputBuffers(nullptr, nullptr, 0); }
  } clearBuffers{model->settings};
  // What the program's own timer covers per batch (Runner::run): the
  // launch and the output request; the checks and copies come after.
  const auto start = std::chrono::steady_clock::now();
  auto* first = static_cast<Tensor*>(program.runBatch(input));
  for (int k = 0; k < count; ++k) {
    auto* out = k == 0 ? first : static_cast<Tensor*>(info.outputOf(k));
    if (!out)
      throw UserError("the program returned no output tensor " +
                      std::to_string(k));
    hpvm_request_tensor(out, 0);
  }
  model->lastRunSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (int k = 0; k < count; ++k) {
    auto* out = k == 0 ? first : static_cast<Tensor*>(info.outputOf(k));
    const int64_t values = outputValues(info, k);
    const uint64_t want = static_cast<uint64_t>(n * values);
    if (out->dims.num_dims < 1 ||
        out->dims.dim_sizes[0] != static_cast<size_t>(n) ||
        out->num_elems != want)
      throw UserError("the program's output " + std::to_string(k) + " has " +
                      std::to_string(out->num_elems) + " values; expected " +
                      std::to_string(n) + " images x " +
                      std::to_string(values));
    if (out->host_data != outs[k])
      std::memcpy(outs[k], out->host_data, want * sizeof(float));
  }
}

} // namespace

extern "C" {

int hpvm_rt_model_outputs(void) {
  return graphOutputs(hpvm_rt::programModel().info);
}

int hpvm_rt_model_output(int k, int64_t* dims) {
  const hpvm_rt::ModelInfo& info = hpvm_rt::programModel().info;
  if (k < 0 || k >= graphOutputs(info))
    return -1;
  if (!info.outputs) { // an older exporter's program: numClasses scores
    if (dims)
      dims[0] = info.numClasses;
    return 1;
  }
  const int rank = info.outputs[k].rank;
  for (int d = 0; dims && d < rank; ++d)
    dims[d] = info.outputs[k].dims[d];
  return rank;
}

const char* hpvm_rt_model_output_name(int k) {
  const hpvm_rt::ModelInfo& info = hpvm_rt::programModel().info;
  if (k < 0 || k >= graphOutputs(info) || !info.outputs)
    return "";
  return info.outputs[k].name;
}

int hpvm_rt_library_version(void) { return HPVM_RT_LIBRARY_VERSION; }

const char* hpvm_rt_build_features(void) {
  return hpvm::rt::approx::buildFeatures();
}

const char* hpvm_rt_default_config(void) {
  const char* baked = hpvm_rt::programModel().info.defaultConfig;
  return baked ? baked : "";
}

const char* hpvm_rt_model_name(void) {
  return hpvm_rt::programModel().info.name;
}

void hpvm_rt_model_shape(int64_t* channels, int64_t* height, int64_t* width,
                         int64_t* classes) {
  const hpvm_rt::ModelInfo& info = hpvm_rt::programModel().info;
  if (channels)
    *channels = info.channels;
  if (height)
    *height = info.height;
  if (width)
    *width = info.width;
  if (classes)
    *classes = info.numClasses;
}

hpvm_rt_model* hpvm_rt_open(const char* model_dir) {
  std::unique_ptr<hpvm_rt_model> m;
  int status = guarded([&] {
    const std::string dir =
        withSlash(model_dir ? std::string(model_dir) : bakedModelDir());
    // (The CPU does not change while the process runs.)
    static const std::string missing =
        hpvm_rt::missingCpuFeatures(approx::buildFeatures());
    if (!missing.empty())
      throw UserError(std::string("this program's hpvm_rt was built for a "
                                  "CPU with") +
                      approx::buildFeatures() + "; this CPU lacks " + missing +
                      ": build the program on this machine, or build hpvm_rt "
                      "portable (-DHPVM_PORTABLE=ON)");
    std::error_code ec;
    if (!std::filesystem::is_directory(dir + "weights", ec))
      throw UserError(dir + ": not a model directory (it has no weights/ "
                            "folder)");
    LibraryState& s = state();
    const std::string canonical =
        std::filesystem::weakly_canonical(dir, ec).string();
    if (s.weightsDir.empty()) {
      hpvm_rt::programModel().loadWeights(dir);
      s.weightsDir = canonical;
    } else if (s.weightsDir != canonical) {
      throw UserError(dir +
                      ": this process already loaded the model's "
                      "weights from " +
                      s.weightsDir +
                      " (one set of weights per library; copy the "
                      "library to open another)");
    }
    m = std::make_unique<hpvm_rt_model>();
    m->modelDir = dir;
  });
  return status == 0 ? m.release() : nullptr;
}

int hpvm_rt_set_config(hpvm_rt_model* model, const char* config_file,
                       const char* selector, double qos_loss,
                       const char* calibration) {
  return guarded([&] {
    if (!model)
      throw UserError("hpvm_rt_set_config: the model is NULL");
    std::string path = configPathFor(*model, config_file);
    std::string missing; // a baked-in file that does not exist (yet)
    if (!config_file && !path.empty() &&
        !bakedConfigExists(path, selector        ? "config"
                                 : qos_loss >= 0 ? "qos_loss"
                                                 : nullptr))
      missing.swap(path);
    if (path.empty() && (selector || qos_loss >= 0))
      throw UserError(std::string(selector ? "config" : "qos_loss") +
                      " needs a configuration file (the model has no "
                      "default configuration)");
    std::unique_ptr<ConfigFile> file;
    const Configuration* config = nullptr;
    std::string description =
        missing.empty() ? "exact FP32 (no configuration)"
                        : "exact FP32 (" + missingBakedConfig(missing) + ")";
    if (!path.empty()) {
      file = std::make_unique<ConfigFile>(parseConfigFile(path));
      if (qos_loss >= 0) {
        config = selectByLoss(*file, qos_loss);
        if (!config)
          description = "exact FP32 (no configuration of " + path +
                        " has a recorded loss of at most " +
                        std::to_string(qos_loss) + ")";
      } else {
        config = selector ? &selectConfiguration(*file, selector)
                          : &file->configs[0];
      }
      if (config) {
        checkOpCount(*config, file->path, hpvm_rt::programModel().info.numOps);
        description = "configuration '" + config->name + "' of " + file->path;
      }
    }
    std::unique_ptr<Int8Calibration> cal;
    std::string calPath = calibration ? calibration : "";
    if (!calibration && !path.empty() &&
        ::access(companionCalibration(path).c_str(), R_OK) == 0)
      calPath = companionCalibration(path);
    if (!calPath.empty())
      cal = std::make_unique<Int8Calibration>(readCalibration(calPath));
    model->file = std::move(file);
    model->config = config;
    model->calibration = std::move(cal);
    model->description = std::move(description);
    model->settings.setConfiguration(model->config,
                                     model->file ? model->file->path : "");
    model->settings.setCalibration(model->calibration.get());
  });
}

const char* hpvm_rt_config_description(hpvm_rt_model* model) {
  return model ? model->description.c_str() : "";
}

int hpvm_rt_set_threads(hpvm_rt_model* model, int threads) {
  return guarded([&] {
    if (!model)
      throw UserError("hpvm_rt_set_threads: the model is NULL");
    if (threads < 0 || threads > kMaxLibraryThreads)
      throw UserError("threads must be from 0 (all cores) to " +
                      std::to_string(kMaxLibraryThreads) + ", got " +
                      std::to_string(threads));
    model->threads = threads;
    if (state().active == model)
      state().active = nullptr;
  });
}

int hpvm_rt_run(hpvm_rt_model* model, const float* images, int64_t n,
                float* outputs) {
  return guarded([&] {
    const hpvm_rt::ModelInfo& info = hpvm_rt::programModel().info;
    if (graphOutputs(info) > 1)
      throw UserError("hpvm_rt_run: " + std::string(info.name) + " has " +
                      std::to_string(graphOutputs(info)) +
                      " outputs; hpvm_rt_run_outputs() writes them");
    float* const outs[1] = {outputs};
    runInto(model, images, n, outputs ? outs : nullptr, "hpvm_rt_run");
  });
}

int hpvm_rt_run_outputs(hpvm_rt_model* model, const float* images, int64_t n,
                        float* const* outputs) {
  return guarded(
      [&] { runInto(model, images, n, outputs, "hpvm_rt_run_outputs"); });
}

double hpvm_rt_last_run_seconds(hpvm_rt_model* model) {
  if (!model)
    return -1;
  std::lock_guard<std::mutex> lock(state().mutex);
  return model->lastRunSeconds;
}

void hpvm_rt_close(hpvm_rt_model* model) {
  if (!model)
    return;
  std::lock_guard<std::mutex> lock(state().mutex);
  LibraryState& s = state();
  if (s.active == model)
    s.active = nullptr;
  delete model;
}

const char* hpvm_rt_last_error(void) { return lastError.c_str(); }

} // extern "C"

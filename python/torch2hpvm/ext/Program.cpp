// Program.cpp - torch.classes.torch2hpvm.Program: a built torch2hpvm
// program as a TorchScript custom class, and the operator
// torch2hpvm::run(images, program) that scripted and traced graphs call.
//
// A Program holds everything its program needs to run: the program's
// shared library, its weights, the chosen configuration file and int8
// calibration (their text), the configuration choice and the thread
// count. Saved by torch.jit.save (def_pickle), it needs nothing else: it
// loads from another directory or machine after the export is gone, in
// Python or from C++ (torch::jit::load with this library loaded).
//
// Loading runs the saved library's code: a saved module is a program, to
// be loaded only from a source trusted as one.
#include "DirectCall.h"
#include "ProgramLibrary.h"

#include "hpvm_rt/CpuFeatures.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <c10/util/SmallVector.h>
#include <torch/custom_class.h>
#include <torch/library.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace torch2hpvm {
namespace {

/// The version of the saved state; a newer torch2hpvm reads older ones.
constexpr int64_t kStateFormat = 1;
/// Largest configuration or calibration file read (they are text).
constexpr uint64_t kMaxTextBytes = uint64_t{64} << 20;
/// Largest library or weight file read.
constexpr uint64_t kMaxFileBytes = uint64_t{16} << 30;

/// What a saved Program holds: format, digest of everything after it,
/// library image, weight files by name, settings (text) and the QoS-loss
/// budget (negative: none) and thread count.
using State = std::tuple<int64_t, std::string, at::Tensor,
                         c10::Dict<std::string, at::Tensor>,
                         c10::Dict<std::string, std::string>, double, int64_t>;

/// A configuration or calibration file: where it came from ("" : none)
/// and its bytes.
struct TextFile {
  std::string path;
  std::string text;
  bool present() const { return !path.empty(); }
};

/// A configuration file with the calibration that goes with it.
struct ConfigChoice {
  TextFile config;
  TextFile calibration;
};

/// The whole file at \p path as a byte tensor, read straight into it.
at::Tensor fileTensor(const std::string& path, const std::string& what) {
  at::Tensor t;
  readWholeFileInto(path, what, kMaxFileBytes, [&](size_t size) {
    t = at::empty({static_cast<int64_t>(size)}, at::kByte);
    return static_cast<char*>(t.data_ptr());
  });
  return t;
}

/// \p t's bytes, after checking it is what a saved Program holds there.
std::pair<const void*, size_t> tensorBytes(const at::Tensor& t,
                                           const std::string& what) {
  if (!t.defined() || t.scalar_type() != at::kByte || t.dim() != 1 ||
      !t.is_contiguous() || !t.device().is_cpu())
    throw ProgramError("the saved Program is damaged: its " + what +
                       " is not a byte tensor");
  return {t.data_ptr(), static_cast<size_t>(t.numel())};
}

std::string replaceAll(std::string s, const std::string& from,
                       const std::string& to) {
  if (from.empty())
    return s;
  for (size_t at = s.find(from); at != std::string::npos;
       at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

/// The companion calibration of configuration file \p path
/// (<stem>.calib.txt beside it), as hpvm_rt finds it.
std::string companionOf(const std::string& path) {
  std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + ".calib.txt")).string();
}

/// \p t's dtype as Python names it ("torch.int32").
std::string dtypeName(at::ScalarType t) {
  switch (t) {
  case at::kByte:
    return "torch.uint8";
  case at::kChar:
    return "torch.int8";
  case at::kShort:
    return "torch.int16";
  case at::kInt:
    return "torch.int32";
  case at::kLong:
    return "torch.int64";
  case at::kBool:
    return "torch.bool";
  case at::kComplexFloat:
    return "torch.complex64";
  case at::kComplexDouble:
    return "torch.complex128";
  default:
    return std::string("torch.") + c10::toString(t);
  }
}

/// \p sizes as Python prints a shape: "(2, 3)", "(5,)".
std::string shapeText(at::IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

bool readable(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

} // namespace

class Program : public torch::CustomClassHolder {
public:
  /// The program built in export directory \p outDir, whose shared library
  /// is \p library, running its default configuration.
  Program(const std::string& outDir, const std::string& library) {
    fromDir_ = outDir.empty() || outDir.back() == '/' ? outDir : outDir + '/';
    library_ = fileTensor(library, "program library");
    const std::string weightsDir = fromDir_ + "weights";
    std::error_code ec;
    if (!std::filesystem::is_directory(weightsDir, ec))
      throw ProgramError(outDir + ": not a torch2hpvm output directory (it "
                                  "has no weights/ folder)");
    std::vector<std::string> names;
    for (const auto& entry :
         std::filesystem::directory_iterator(weightsDir, ec)) {
      if (!entry.is_regular_file(ec))
        continue;
      names.push_back(entry.path().filename().string());
    }
    if (ec)
      throw ProgramError("cannot list " + weightsDir + ": " + ec.message());
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      if (!isPlainFileName(name))
        throw ProgramError(weightsDir + "/" + name +
                           ": not a weight file torch2hpvm writes (its name "
                           "is not letters, digits, '.', '_' and '-')");
      weights_.insert(name, fileTensor(weightsDir + "/" + name, "weight file"));
    }
    digest_ = contentDigest();
    start(library);
    features_ = lib_.buildFeatures();
    features_.erase(0, features_.find_first_not_of(' '));
    const std::string baked = lib_.defaultConfig();
    if (!baked.empty())
      defaultPath_ = baked[0] == '/' ? baked : fromDir_ + baked;
    configure(std::nullopt, std::nullopt, std::nullopt, std::nullopt, false);
  }

  /// A saved Program (def_pickle's state).
  explicit Program(const State& s) {
    const int64_t format = std::get<0>(s);
    if (format < 1 || format > kStateFormat)
      throw ProgramError("the saved Program has state format " +
                         std::to_string(format) + "; this torch2hpvm reads " +
                         std::to_string(kStateFormat) +
                         (format > kStateFormat ? " (save it with this "
                                                  "torch2hpvm, or update)"
                                                : ""));
    library_ = std::get<2>(s);
    weights_ = std::get<3>(s);
    tensorBytes(library_, "library");
    for (const auto& item : weights_) {
      if (!isPlainFileName(item.key()))
        throw ProgramError("the saved Program is damaged: weight file name '" +
                           item.key().substr(0, 80) + "' is not plain");
      tensorBytes(item.value(), "weight file " + item.key());
    }
    const c10::Dict<std::string, std::string>& settings = std::get<4>(s);
    auto setting = [&](const char* key) -> std::string {
      auto it = settings.find(key);
      return it == settings.end() ? std::string() : it->value();
    };
    saved_.config = {setting("config_path"), setting("config_text")};
    saved_.calibration = {setting("calibration_path"),
                          setting("calibration_text")};
    const std::string selector = setting("config");
    digest_ = contentDigest();
    if (digest_ != std::get<1>(s))
      throw ProgramError("the saved Program is damaged: its content does not "
                         "match its SHA-256 digest (the file was changed or "
                         "truncated)");
    // Before any of the library's code runs (its kernels would die of
    // SIGILL on a CPU without their instructions).
    features_ = setting("cpu_features");
    const std::string missing = hpvm_rt::missingCpuFeatures(features_);
    if (!missing.empty())
      throw ProgramError("the saved Program's library was built for a CPU "
                         "with " +
                         features_ + "; this CPU lacks " + missing +
                         ": export the model again on this machine (or with "
                         "hpvm_rt built portable, -DHPVM_PORTABLE=ON)");
    start("the saved Program");
    const double loss = std::get<5>(s);
    apply(saved_, selector.empty() ? std::nullopt : std::optional(selector),
          loss >= 0 ? std::optional(loss) : std::nullopt);
    setThreads(std::get<6>(s));
  }

  ~Program() override {
    if (model_)
      lib_.close(model_);
  }
  /// (With a handle given, the last strong reference calls this, and the
  /// destructor waits for the handle table's weak one, dropped here.)
  void release_resources() override;

  State state() const {
    std::lock_guard<std::mutex> lock(mutex_);
    c10::Dict<std::string, std::string> settings;
    settings.insert("config_path", current_.config.path);
    settings.insert("config_text", current_.config.text);
    settings.insert("calibration_path", current_.calibration.path);
    settings.insert("calibration_text", current_.calibration.text);
    settings.insert("config", selector_.value_or(""));
    settings.insert("description", description_);
    settings.insert("cpu_features", features_);
    return State(kStateFormat, digest_, library_, weights_, settings,
                 qosLoss_.value_or(-1.0), threads_);
  }

  /// Chooses the configuration, as HPVMModule.configure() documents.
  void configure(const std::optional<std::string>& configFile,
                 const std::optional<std::string>& selector,
                 const std::optional<double>& qosLoss,
                 const std::optional<std::string>& calibration, bool exact) {
    if (exact && (configFile || selector || qosLoss))
      throw ProgramError("exact excludes config, config_file and qos_loss");
    if (selector && qosLoss)
      throw ProgramError("config and qos_loss exclude each other");
    if (qosLoss && !(*qosLoss >= 0))
      throw ProgramError("qos_loss must be a number >= 0");
    ConfigChoice choice;
    std::string missing; // a baked-in file that does not exist (yet)
    if (exact) {
      // none
    } else if (configFile) {
      if (!configFile->empty())
        choice.config = {
            *configFile,
            readWholeFile(*configFile, "configuration file", kMaxTextBytes)};
    } else if (!fromDir_.empty()) {
      // The export's default configuration, read now (HPVM's tuner may
      // have written it after the export).
      if (!defaultPath_.empty() && readable(defaultPath_))
        choice.config = {
            defaultPath_,
            readWholeFile(defaultPath_, "configuration file", kMaxTextBytes)};
      else if (!defaultPath_.empty())
        missing = defaultPath_;
    } else {
      choice = saved_;
    }
    if (calibration) {
      choice.calibration = {
          *calibration,
          readWholeFile(*calibration, "calibration file", kMaxTextBytes)};
    } else if (choice.config.present() && (configFile || !fromDir_.empty())) {
      const std::string companion = companionOf(choice.config.path);
      if (readable(companion))
        choice.calibration = {
            companion,
            readWholeFile(companion, "calibration file", kMaxTextBytes)};
    }
    if (!missing.empty() && (selector || qosLoss))
      throw ProgramError(std::string(selector ? "config" : "qos_loss") +
                         " needs a configuration file: " + missing +
                         ", baked in at export, does not exist");
    apply(choice, selector, qosLoss);
    if (!missing.empty()) {
      std::lock_guard<std::mutex> lock(mutex_);
      description_ = "exact FP32 (" + missing +
                     ", the configuration file baked in at export, does "
                     "not exist)";
    }
  }

  /// The program's outputs for images \p x (N x C x H x W, or one
  /// C x H x W image): one tensor per graph output, images first.
  std::vector<at::Tensor> forward(const at::Tensor& x) {
    at::AutoDispatchBelowADInplaceOrView noAutograd;
    const at::Tensor images = inputImages(x);
    const int64_t n = images.size(0);
    std::vector<at::Tensor> outs;
    outs.reserve(outputShapes_.size());
    c10::SmallVector<float*, 4> pointers;
    for (const std::vector<int64_t>& shape : outputShapes_) {
      outs.push_back(newOutput(n, shape));
      pointers.push_back(outs.back().data_ptr<float>());
    }
    run(images, pointers.data());
    if (x.dim() == 3)
      for (at::Tensor& o : outs)
        o = o.select(0, 0);
    return outs;
  }

  /// forward() of a program with one graph output: that output alone
  /// (scripted modules call this; no list to make and index per call).
  at::Tensor forwardOne(const at::Tensor& x) {
    if (outputShapes_.size() != 1)
      throw ProgramError(name_ + " has " +
                         std::to_string(outputShapes_.size()) +
                         " graph outputs: call forward() for the list");
    at::AutoDispatchBelowADInplaceOrView noAutograd;
    const at::Tensor images = inputImages(x);
    at::Tensor out = newOutput(images.size(0), outputShapes_[0]);
    float* pointer = out.data_ptr<float>();
    run(images, &pointer);
    return x.dim() == 3 ? out.select(0, 0) : out;
  }

  std::string description() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return description_;
  }

  void setThreads(int64_t threads) {
    if (threads < 0 || threads > 1024)
      throw ProgramError("threads must be from 0 (all cores) to 1024, got " +
                         std::to_string(threads));
    std::lock_guard<std::mutex> lock(mutex_);
    if (lib_.setThreads(model_, static_cast<int>(threads)) != 0)
      throw ProgramError(lib_.lastError());
    threads_ = threads;
  }

  int64_t threads() const { return threads_; }
  /// The program's own time of the last run, in milliseconds (-1: none
  /// yet, or a library too old to say).
  double lastRunMs() const {
    if (!lib_.lastRunSeconds)
      return -1;
    const double s = lib_.lastRunSeconds(model_);
    return s < 0 ? -1 : s * 1e3;
  }
  std::string name() const { return name_; }
  std::vector<int64_t> inputShape() const { return shape_; }
  std::vector<std::vector<int64_t>> outputShapes() const {
    return outputShapes_;
  }
  std::vector<std::string> outputNames() const { return outputNames_; }
  std::string digest() const { return digest_; }

private:
  /// \p x checked against the model's input and made the N x C x H x W
  /// float32 contiguous tensor the library reads (\p x itself when it is
  /// one already: the library reads the caller's memory in place).
  at::Tensor inputImages(const at::Tensor& x) const {
    TORCH_CHECK_VALUE(x.device().is_cpu(), "expected a CPU tensor, got one on ",
                      x.device(), " (hpvm_rt runs on the CPU)");
    TORCH_CHECK_TYPE(x.is_floating_point(),
                     "expected floating-point images, got dtype ",
                     dtypeName(x.scalar_type()));
    at::Tensor images = x.dim() == 3 ? x.unsqueeze(0) : x;
    TORCH_CHECK_VALUE(
        images.dim() == 4 && images.size(1) == shape_[0] &&
            images.size(2) == shape_[1] && images.size(3) == shape_[2],
        "expected images of shape (N, ", shape_[0], ", ", shape_[1], ", ",
        shape_[2], ") or (", shape_[0], ", ", shape_[1], ", ", shape_[2],
        "), got ", shapeText(x.sizes()));
    if (images.scalar_type() != at::kFloat)
      images = images.to(at::kFloat);
    if (!images.is_contiguous())
      images = images.contiguous();
    return images;
  }

  /// An uninitialised float32 tensor for \p n images of an output whose
  /// per-image shape is \p shape (the library writes every value).
  static at::Tensor newOutput(int64_t n, const std::vector<int64_t>& shape) {
    c10::SmallVector<int64_t, 4> dims{n};
    dims.append(shape.begin(), shape.end());
    return at::detail::empty_cpu(dims, at::kFloat);
  }

  /// Runs the library on \p images into \p outputs (one per graph output).
  void run(const at::Tensor& images, float* const* outputs) {
    const int64_t n = images.size(0);
    if (n > 0 &&
        lib_.runOutputs(model_, images.data_ptr<float>(), n, outputs) != 0)
      throw ProgramError(name_ + ": " + lib_.lastError());
  }

  /// Loads the library image and opens the model on the weights.
  void start(const std::string& origin) {
    auto [bytes, size] = tensorBytes(library_, "library");
    lib_ = loadProgramLibrary(bytes, size, origin);
    name_ = lib_.modelName();
    int64_t dims[4] = {0, 0, 0, 0};
    lib_.modelShape(&dims[0], &dims[1], &dims[2], &dims[3]);
    shape_.assign(dims, dims + 3);
    for (int k = 0; k < lib_.modelOutputs(); ++k) {
      int64_t out[3] = {0, 0, 0};
      const int rank = lib_.modelOutput(k, out);
      if (rank < 1 || rank > 3)
        throw ProgramError(origin + ": output " + std::to_string(k) +
                           " has rank " + std::to_string(rank));
      outputShapes_.emplace_back(out, out + rank);
      outputNames_.emplace_back(lib_.modelOutputName(k));
    }
    ScratchDir dir;
    const std::string weights = dir.subdir("weights");
    for (const auto& item : weights_) {
      auto [data, n] = tensorBytes(item.value(), "weight file " + item.key());
      dir.write("weights/" + item.key(), data, n);
    }
    model_ = lib_.open(dir.path().c_str());
    if (!model_)
      throw ProgramError(
          name_ + ": " +
          replaceAll(lib_.lastError(), dir.path(), "(weights) "));
  }

  /// Gives the model \p choice (written to a private directory for hpvm_rt
  /// to read) with \p selector or \p qosLoss.
  void apply(const ConfigChoice& choice,
             const std::optional<std::string>& selector,
             const std::optional<double>& qosLoss) {
    ScratchDir dir;
    std::string configPath, calibrationPath;
    if (choice.config.present())
      configPath = dir.write("config.txt", choice.config.text.data(),
                             choice.config.text.size());
    if (choice.calibration.present())
      calibrationPath =
          dir.write("calibration.txt", choice.calibration.text.data(),
                    choice.calibration.text.size());
    auto original = [&](std::string text) {
      if (!configPath.empty())
        text = replaceAll(text, configPath, choice.config.path);
      if (!calibrationPath.empty())
        text = replaceAll(text, calibrationPath, choice.calibration.path);
      return text;
    };
    std::lock_guard<std::mutex> lock(mutex_);
    if (lib_.setConfig(
            model_, configPath.c_str(), selector ? selector->c_str() : nullptr,
            qosLoss ? *qosLoss : -1.0,
            calibrationPath.empty() ? nullptr : calibrationPath.c_str()) != 0)
      throw ProgramError(original(lib_.lastError()));
    description_ = original(lib_.configDescription(model_));
    current_ = choice;
    selector_ = selector;
    qosLoss_ = qosLoss;
  }

  /// The SHA-256 of the library and the weights (names and bytes).
  std::string contentDigest() const {
    Digest d;
    auto [bytes, size] = tensorBytes(library_, "library");
    d.add(std::string_view(static_cast<const char*>(bytes), size));
    for (const auto& item : weights_) {
      auto [data, n] = tensorBytes(item.value(), "weight file " + item.key());
      d.add(item.key());
      d.add(std::string_view(static_cast<const char*>(data), n));
    }
    return d.hex();
  }

  friend int64_t handleOf(const c10::intrusive_ptr<Program>& program);

  mutable std::mutex mutex_;
  int64_t handle_ = 0; ///< 0: none given yet (handleOf()).
  EntryPoints lib_{};
  hpvm_rt_model* model_ = nullptr;
  at::Tensor library_;
  c10::Dict<std::string, at::Tensor> weights_;
  std::string digest_;
  std::string features_;    ///< hpvm_rt_build_features() of the library.
  std::string fromDir_;     ///< The export directory ("" once restored).
  std::string defaultPath_; ///< Its baked-in configuration file.
  ConfigChoice saved_;      ///< A restored Program's saved choice.
  ConfigChoice current_;
  std::optional<std::string> selector_;
  std::optional<double> qosLoss_;
  std::string description_;
  int64_t threads_ = 0;
  std::string name_;
  std::vector<int64_t> shape_;
  std::vector<std::vector<int64_t>> outputShapes_;
  std::vector<std::string> outputNames_;
};

namespace {

/// The Programs that have a handle, by it (DirectCall.h).
struct Handles {
  std::mutex mutex;
  std::unordered_map<int64_t, c10::weak_intrusive_ptr<Program>> programs;
  int64_t next = 1;
};

Handles& handles() {
  static Handles* h = new Handles; // (never freed: Programs may outlive it)
  return *h;
}

/// The Program with \p handle, held for a call.
c10::intrusive_ptr<Program> programOf(int64_t handle) {
  Handles& h = handles();
  c10::intrusive_ptr<Program> program;
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    auto it = h.programs.find(handle);
    if (it != h.programs.end())
      program = it->second.lock();
  }
  TORCH_CHECK(program, "no torch2hpvm Program has handle ", handle,
              " (it was freed)");
  return program;
}

} // namespace

/// \p program's handle, given on the first call.
int64_t handleOf(const c10::intrusive_ptr<Program>& program) {
  Handles& h = handles();
  std::lock_guard<std::mutex> lock(h.mutex);
  if (program->handle_ == 0) {
    program->handle_ = h.next++;
    h.programs.emplace(program->handle_,
                       c10::weak_intrusive_ptr<Program>(program));
  }
  return program->handle_;
}

void Program::release_resources() {
  if (handle_ == 0)
    return;
  Handles& h = handles();
  std::lock_guard<std::mutex> lock(h.mutex);
  // (Not the last weak reference: intrusive_ptr holds one until after
  // this, then deletes the Program.)
  h.programs.erase(handle_);
}

namespace {

/// Runs \p body, turning a ProgramError into the error TorchScript reports.
template <class Body> auto checked(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const ProgramError& e) {
    TORCH_CHECK(false, e.what());
  }
}

std::vector<at::Tensor> run(const at::Tensor& images,
                            const c10::intrusive_ptr<Program>& program) {
  return checked([&] { return program->forward(images); });
}

} // namespace

std::vector<at::Tensor> callAll(int64_t handle, const at::Tensor& x) {
  return run(x, programOf(handle));
}

at::Tensor callOne(int64_t handle, const at::Tensor& x) {
  const c10::intrusive_ptr<Program> program = programOf(handle);
  return checked([&] { return program->forwardOne(x); });
}

TORCH_LIBRARY(torch2hpvm, m) {
  m.class_<Program>("Program")
      .def(torch::init(
          [](const std::string& outDir, const std::string& library) {
            return checked(
                [&] { return c10::make_intrusive<Program>(outDir, library); });
          }))
      .def("forward",
           [](const c10::intrusive_ptr<Program>& self, const at::Tensor& x) {
             return checked([&] { return self->forward(x); });
           })
      .def("forward_one",
           [](const c10::intrusive_ptr<Program>& self, const at::Tensor& x) {
             return checked([&] { return self->forwardOne(x); });
           })
      .def("configure",
           [](const c10::intrusive_ptr<Program>& self,
              c10::optional<std::string> configFile,
              c10::optional<std::string> selector,
              c10::optional<double> qosLoss,
              c10::optional<std::string> calibration, bool exact) {
             auto opt = [](const auto& o) {
               return o ? std::optional(*o) : std::nullopt;
             };
             checked([&] {
               self->configure(opt(configFile), opt(selector), opt(qosLoss),
                               opt(calibration), exact);
             });
           })
      .def("description",
           [](const c10::intrusive_ptr<Program>& self) {
             return self->description();
           })
      .def("set_threads",
           [](const c10::intrusive_ptr<Program>& self, int64_t threads) {
             checked([&] { self->setThreads(threads); });
           })
      .def("threads",
           [](const c10::intrusive_ptr<Program>& self) {
             return self->threads();
           })
      .def("handle",
           [](const c10::intrusive_ptr<Program>& self) {
             return handleOf(self);
           })
      .def("last_run_ms",
           [](const c10::intrusive_ptr<Program>& self) {
             return self->lastRunMs();
           })
      .def("name",
           [](const c10::intrusive_ptr<Program>& self) { return self->name(); })
      .def("input_shape",
           [](const c10::intrusive_ptr<Program>& self) {
             return self->inputShape();
           })
      .def("output_shapes",
           [](const c10::intrusive_ptr<Program>& self) {
             return self->outputShapes();
           })
      .def("output_names",
           [](const c10::intrusive_ptr<Program>& self) {
             return self->outputNames();
           })
      .def("digest",
           [](const c10::intrusive_ptr<Program>& self) {
             return self->digest();
           })
      .def_pickle(
          [](const c10::intrusive_ptr<Program>& self) -> State {
            return self->state();
          },
          [](State state) -> c10::intrusive_ptr<Program> {
            return checked([&] { return c10::make_intrusive<Program>(state); });
          });
  m.def("run(Tensor images, __torch__.torch.classes.torch2hpvm.Program "
        "program) -> Tensor[]",
        run);
}

} // namespace torch2hpvm

// Pipeline.cpp - torch2hpvm-export's stages and the output directory's
// transactional creation.
#include "Pipeline.h"

#include "config/Config.h" // hpvm_rt's parser
#include "config/Match.h"
#include "support/InputFile.h"
#include "support/Interrupt.h"

#include "LowerToHpvm.h"
#include "Regeneration.h"
#include "RegenerationReport.h"
#include "Version.h"
#include "codegen/Datasets.h"
#include "codegen/HpvmCodegen.h"
#include "codegen/ModelConfig.h"
#include "codegen/OpsJson.h"
#include "codegen/OutputFiles.h"
#include "codegen/ProgramLayout.h"
#include "codegen/Sanitizer.h"
#include "ir/OpTable.h"
#include "ir/Printer.h"
#include "onnx/ModelLoader.h"
#include "support/Diagnostics.h"
#include "toolchain/Toolchain.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <set>
#include <thread>
#include <unistd.h>

namespace hpvm::fe {

namespace fs = std::filesystem;

namespace {

/// Removes a directory tree on destruction unless released.
class TempDirGuard {
public:
  explicit TempDirGuard(std::string dir) : dir_(std::move(dir)) {}
  TempDirGuard(const TempDirGuard&) = delete;
  TempDirGuard& operator=(const TempDirGuard&) = delete;
  ~TempDirGuard() {
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }
  void release() { dir_.clear(); }

private:
  std::string dir_;
};

void progress(const PipelineStreams& s, const std::string& line) {
  if (s.progress)
    *s.progress << "torch2hpvm-export: " << line << std::endl;
}

/// Moves \p tmp to \p out. With an existing \p out (--force) the two are
/// exchanged atomically where the kernel can (renameat2 RENAME_EXCHANGE),
/// and the old tree is removed afterwards.
void moveIntoPlace(const std::string& tmp, const std::string& out,
                   bool replace) {
  std::error_code ec;
  if (replace && fs::exists(fs::symlink_status(out, ec))) {
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, out.c_str(),
                    RENAME_EXCHANGE) == 0) {
      fs::remove_all(tmp, ec);
      return;
    }
    // Fallback: move the old tree aside, then the new one in.
    std::string old = tmp + ".old";
    if (std::rename(out.c_str(), old.c_str()) != 0)
      throw UserError("cannot replace '" + out + "': " + std::strerror(errno));
    if (std::rename(tmp.c_str(), out.c_str()) != 0) {
      std::string why = std::strerror(errno);
      std::rename(old.c_str(), out.c_str());
      throw UserError("cannot replace '" + out + "': " + why);
    }
    fs::remove_all(old, ec);
    return;
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0)
    throw UserError("cannot create '" + out + "': " + std::strerror(errno));
}

nlohmann::ordered_json fileEntry(const std::string& root,
                                 const std::string& rel, bool hash) {
  nlohmann::ordered_json e;
  e["path"] = rel;
  std::error_code ec;
  e["size"] = static_cast<int64_t>(fs::file_size(root + "/" + rel, ec));
  if (hash)
    e["sha256"] = sha256File(root + "/" + rel);
  return e;
}

/// The file that marks a temporary directory as ours: only directories
/// holding it are ever removed as stale (a user's directory that merely
/// looks like one is left alone). Removed before the directory is moved
/// into place.
const char* const kTempMarker = ".torch2hpvm-export-tmp";

/// Removes "<parent>/.<name>.tmp-<pid>" directories that carry our marker,
/// left by exports to the same place that were killed, once their process
/// is gone.
void removeStaleTempDirs(const fs::path& outPath) {
  const std::string prefix = tempPrefixFor(outPath.filename().string());
  std::error_code ec;
  for (const fs::directory_entry& e :
       fs::directory_iterator(outPath.parent_path(), ec)) {
    std::string name = e.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    std::string pid = name.substr(prefix.size());
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (pid.size() > 9 ||
        !fs::is_regular_file(fs::symlink_status(e.path() / kTempMarker, ec)))
      continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH)
      fs::remove_all(e.path(), ec);
  }
}

/// Writes every weight file into \p dir, spread over the cores (writing and
/// hashing 100 MB of ResNet-50 weights is most of an export's time);
/// returns their SHA-256 digests in layout order.
std::vector<std::string> writeWeights(const ProgramLayout& layout,
                                      const std::string& dir) {
  size_t n = layout.weights.size();
  std::vector<std::string> digests(n);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        const WeightLayout& w = layout.weights[i];
        digests[i] =
            writeWeightFile(dir + "/" + w.fileName, *w.value->constant);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  size_t threads =
      std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread& t : pool)
    t.join();
  for (const std::exception_ptr& e : errors)
    if (e)
      std::rethrow_exception(e);
  return digests;
}

/// Where the export goes: the output directory and the templates.
struct ExportPaths {
  fs::path outPath;        ///< Absolute, normalised output directory.
  std::string out;         ///< outPath as a string.
  std::string templateDir; ///< Templates to render.
  bool exists = false;     ///< The output directory exists (maybe empty).
  /// --config, parsed (empty without one).
  std::optional<hpvm::rt::ConfigFile> config;
  /// The export the output directory holds: this is a regeneration.
  std::optional<PreviousExport> prev;
};

/// The export's files rendered in memory.
struct RenderedFiles {
  CodegenOptions cg;
  std::string source;     ///< hpvm_c.cpp.
  std::string cmakeLists; ///< CMakeLists.txt.
  std::string opsJson;    ///< ops.json.
  /// tuner_confs.txt of a pre-quantized model without --config (its int8
  /// configuration), else "".
  std::string modelConfig;
};

/// Checks the output directory, --config and the templates before any work.
ExportPaths checkPaths(const Options& opts) {
  // Output directory: refuse an existing one before any work.
  ExportPaths t;
  std::string outArg =
      opts.outDir.empty() ? defaultOutDir(opts.model) : opts.outDir;
  std::error_code ec;
  t.outPath = fs::absolute(outArg, ec).lexically_normal();
  if (!t.outPath.has_filename())
    t.outPath = t.outPath.parent_path();
  t.out = t.outPath.string();
  const std::string& out = t.out;
  // Refused before any work, each character the path holds: CMake cannot
  // configure in a path holding ';' (its list separator), '"' or '\\' (its
  // escapes), '$' (variable references: "${", "$ENV{", "$("), '[' or ']'
  // (bracket arguments) or control bytes; its Makefiles, in one holding
  // ':' or '|' (make's rule separators).
  if (!opts.noBuild) {
    std::string held;
    for (char c : out)
      if ((std::strchr(";\"\\$[]:|", c) != nullptr && c != '\0') ||
          static_cast<unsigned char>(c) < 0x20) {
        const std::string shown = "'" + escapeName(std::string(1, c)) + "'";
        if (held.find(shown) == std::string::npos)
          held += (held.empty() ? "" : ", ") + shown;
      }
    if (!held.empty())
      throw UserError("output directory '" + escapeName(out) +
                      "': CMake cannot build in a path that holds " + held +
                      "; choose another -o, or only generate the sources "
                      "with --no-build");
  }
  fs::file_status st = fs::symlink_status(out, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st))
      throw UserError("output path '" + escapeName(out) +
                      "' exists and is not a directory");
    t.exists = true;
    t.prev = readPreviousExport(out);
    if (!t.prev && !fs::is_empty(out, ec))
      throw UserError("refusing to write into '" + escapeName(out) +
                      "': it is not empty and holds no manifest.json of "
                      "torch2hpvm-export (choose another -o, or remove it "
                      "yourself if you mean it)");
  }
  // A conflict of the last regeneration must be resolved first.
  if (t.prev && !opts.force)
    for (const std::string& c : t.prev->conflicts) {
      std::ifstream in(out + "/" + c);
      std::string line;
      while (std::getline(in, line))
        if (line.compare(0, 8, "<<<<<<< ") == 0) {
          std::vector<std::string> side = conflictSideFiles(c);
          throw UserError(
              escapeName(out + "/" + c) +
                  ": still holds the conflict markers of the last "
                  "regeneration; resolve them (the three versions are "
                  "beside it: " +
                  side[0] + ", " + side[1] + " and " + side[2] +
                  ") and run again, or use --force (which keeps your version "
                  "as " +
                  c + ".orig)",
              ExitConflict);
        }
    }
  if (!opts.configFile.empty()) {
    // A readable regular file (not a FIFO) in HPVM's configuration grammar
    // (hpvm_rt's own parser: op names, knob ids, knobs valid for each op).
    InputFile(opts.configFile,
              "--config '" + escapeName(opts.configFile) + "'");
    try {
      t.config = hpvm::rt::parseConfigFile(opts.configFile);
    } catch (const std::runtime_error& e) {
      // hpvm_rt's UserError (its internal errors are std::logic_error;
      // its Errors.h is not included here: its macros are the frontend's).
      throw UserError(std::string("--config: ") + e.what());
    }
  }
  t.templateDir =
      opts.templateDir.empty() ? defaultTemplateDir() : opts.templateDir;
  if (!fs::is_directory(t.templateDir, ec))
    throw UserError("template directory '" + t.templateDir +
                    "' does not exist");
  return t;
}

/// Loads the model and lowers it to HPVM tensor ops (--dump-ir on the way).
std::unique_ptr<Graph> loadAndLower(const Options& opts,
                                    const PipelineStreams& streams) {
  progress(streams, "loading " + opts.model);
  LoadOptions load;
  load.targetOpset = opts.opset;
  load.maxBytes = opts.maxBytes;
  load.inputShapeName = opts.inputShapeName;
  load.inputShape = opts.inputShape;
  // Without --input-shape, a .npy tune set's images give the input's
  // symbolic dims.
  if (opts.inputShape.empty())
    if (std::optional<std::vector<int64_t>> dims =
            numpyImageDims("tune", opts.tuneInput)) {
      load.inputShape = *dims;
      load.inputShapeFrom = "the tune set '" + escapeName(opts.tuneInput) +
                            "' (" + formatShape(*dims) + ")";
    }
  std::unique_ptr<Graph> g = loadModel(opts.model, load);
  progress(streams, "lowering to HPVM tensor ops");
  PipelineOptions passes;
  passes.maxBytes = opts.maxBytes;
  if (opts.dumpIr && streams.ir)
    passes.afterPass = [&](const std::string& pass, const Graph& graph) {
      *streams.ir << "; IR after " << pass << "\n" << dumpIr(graph) << "\n";
    };
  if (opts.dumpIr && streams.ir)
    *streams.ir << "; IR as loaded\n" << dumpIr(*g) << "\n";
  lowerToHpvm(*g, passes);
  return g;
}

/// --toolchain hpvm: refuses a graph using ops real HPVM does not have
/// (hpvm_rt extensions, Ops.def Hpvm column), naming each node once with
/// the intrinsic HPVM lacks.
void checkToolchain(const Options& opts, const Graph& g) {
  // Several graph outputs: an hpvm_rt extension, and more than the inspect
  // target's FIFO protocol carries (one tensor per batch).
  const bool inspect = opts.target == Target::HpvmTensorInspect;
  std::string outputs;
  if (g.outputs.size() > 1 && (opts.toolchain == Toolchain::Hpvm || inspect)) {
    std::vector<std::string> names;
    for (const GraphOutput& o : g.outputs)
      names.push_back(o.name);
    outputs = g.source.path + ": the model has " +
              std::to_string(g.outputs.size()) + " outputs (" +
              quotedList(names) + "); " +
              (inspect ? "the hpvm_tensor_inspect target's protocol carries "
                         "one (use --target hpvm_tensor)"
                       : "several outputs are an hpvm_rt extension "
                         "(--toolchain clang builds them)");
  }
  if (opts.toolchain != Toolchain::Hpvm) {
    if (!outputs.empty())
      throw UserError(outputs);
    return;
  }
  if (g.inputRank == 2)
    throw UserError(g.source.path + ": the input '" +
                    escapeName(g.input->name) +
                    "' is 2-D (N, K); feature-vector inputs are an hpvm_rt "
                    "extension (--toolchain clang builds them)");
  ErrorList errors(g.source.path);
  std::set<std::pair<int, std::string>> seen;
  for (const auto& n : g.nodes()) {
    const HpvmOpDesc& d = hpvmOpDesc(n->kind);
    const Origin& origin = n->origins.front();
    if (!d.facts->hpvm && seen.insert({origin.index, d.intrinsic}).second)
      errors.add(origin, std::string("HPVM has no ") + d.intrinsic + " (" +
                             d.confName +
                             " is an hpvm_rt extension; --toolchain clang "
                             "builds it)");
  }
  if (!outputs.empty())
    throw UserError(errors.empty() ? outputs
                                   : outputs + "\n" + errors.message());
  errors.throwIfAny();
}

/// Renders the program, its CMakeLists.txt and ops.json in memory.
RenderedFiles renderFiles(const Options& opts, const ExportPaths& where,
                          const Graph& g, const ProgramLayout& layout,
                          const std::string& modelSha, const Dataset& tune,
                          const Dataset& test) {
  const std::string& out = where.out;
  RenderedFiles r;
  std::string stem = fs::path(opts.model).stem().string();
  CodegenOptions& cg = r.cg;
  cg.target = opts.target;
  cg.toolVersion = TORCH2HPVM_VERSION;
  cg.modelFile = fs::path(opts.model).filename().string();
  cg.modelSha256 = modelSha;
  cg.producer = g.source.producer;
  cg.opset = g.source.opset;
  cg.modelName = stem;
  cg.binaryName = sanitizeIdentifier(stem);
  cg.tuneCount = tune.count;
  cg.testCount = test.count;
  cg.batchSize = opts.batchSize;
  bool inspect = opts.target == Target::HpvmTensorInspect;
  // A pre-quantized model runs its own int8 configuration by default.
  if (opts.configFile.empty() && opts.configAtRun.empty() &&
      opts.target == Target::HpvmTensor)
    r.modelConfig = preQuantizedConfig(layout);
  bool hasConfig = !opts.configFile.empty() || !r.modelConfig.empty();
  // --config-at-run: the file's absolute path, or tuner_confs.txt when it
  // is the export's own (which then moves with the export).
  std::string atRun;
  if (!opts.configAtRun.empty()) {
    atRun = fs::absolute(opts.configAtRun).lexically_normal().string();
    if (atRun == (fs::path(out) / "tuner_confs.txt").lexically_normal())
      atRun = "tuner_confs.txt";
  }
  cg.defaultConfig = hasConfig || inspect ? "tuner_confs.txt" : atRun;
  cg.templateDir = where.templateDir;
  r.source = renderProgram(layout, cg);
  r.cmakeLists = renderCMakeLists(cg);
  OpsJsonPaths paths;
  if (inspect) {
    paths.tuneLabelsPath = out + "/tune_labels.bin";
    paths.confPath = out + "/tuner_confs.txt";
    paths.fifoPathR = out + "/hpvm_fifo_r";
    paths.fifoPathW = out + "/hpvm_fifo_w";
  } else if (hasConfig || atRun == "tuner_confs.txt") {
    paths.configFile = out + "/tuner_confs.txt";
  } else {
    paths.configFile = atRun;
  }
  r.opsJson = makeOpsJson(layout, paths).dump(2) + "\n";
  return r;
}

/// Creates the temporary sibling directory the export is written into.
std::string makeTempDir(const fs::path& outPath) {
  std::error_code ec;
  fs::create_directories(outPath.parent_path(), ec);
  if (ec)
    throw UserError("cannot create '" + outPath.parent_path().string() +
                    "': " + ec.message());
  std::string tmp =
      (outPath.parent_path() / (tempPrefixFor(outPath.filename().string()) +
                                std::to_string(::getpid())))
          .string();
  removeStaleTempDirs(outPath);
  if (fs::exists(fs::symlink_status(tmp, ec))) {
    // Ours from an earlier process of the same pid, or not ours at all.
    if (!fs::is_regular_file(fs::symlink_status(tmp + "/" + kTempMarker, ec)))
      throw UserError("'" + tmp +
                      "' is in the way of the export's temporary directory "
                      "and is not one of ours; move it away");
    fs::remove_all(tmp, ec);
  }
  if (!fs::create_directory(tmp, ec) || ec)
    throw UserError("cannot create '" + tmp + "': " + ec.message());
  std::ofstream(tmp + "/" + kTempMarker)
      << "torch2hpvm-export " << ::getpid() << "\n";
  return tmp;
}

/// Writes weights, datasets, configuration and rendered files into \p tmp;
/// returns their manifest entries.
nlohmann::ordered_json writeFiles(const std::string& tmp, const Options& opts,
                                  const PipelineStreams& streams,
                                  const ProgramLayout& layout,
                                  const RenderedFiles& r, const Dataset& tune,
                                  const Dataset& test) {
  std::error_code ec;
  fs::create_directory(tmp + "/weights", ec);
  if (ec)
    throw UserError("cannot create '" + tmp + "/weights': " + ec.message());
  bool hasConfig = !opts.configFile.empty() || !r.modelConfig.empty();

  progress(streams, "writing " + std::to_string(layout.weights.size()) +
                        " weight files");
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  std::vector<std::string> digests = writeWeights(layout, tmp + "/weights");
  for (size_t i = 0; i < layout.weights.size(); ++i) {
    const WeightLayout& w = layout.weights[i];
    nlohmann::ordered_json e =
        fileEntry(tmp, "weights/" + w.fileName, /*hash=*/false);
    e["sha256"] = digests[i];
    e["tensor"] = w.value->name;
    e["shape"] = std::vector<int64_t>(w.dims.begin(), w.dims.end());
    files.push_back(e);
  }
  progress(streams, "copying the tune and test sets");
  // Labels where the sets have them (a model without classes has none).
  std::vector<std::string> sets;
  for (const Dataset* ds : {&tune, &test}) {
    const std::string input = ds->role + "_input.bin";
    const std::string labels =
        ds->labelsPath.empty() ? std::string() : ds->role + "_labels.bin";
    sets.push_back(input);
    if (!labels.empty())
      sets.push_back(labels);
    if (ds->numpy) {
      writeNumpyAsBin(*ds, tmp + "/" + input,
                      labels.empty() ? "" : tmp + "/" + labels,
                      layout.outputs.front().elems);
      continue;
    }
    copyFileAtomic(ds->inputPath, tmp + "/" + input);
    if (!labels.empty())
      copyFileAtomic(ds->labelsPath, tmp + "/" + labels);
  }
  if (!opts.configFile.empty())
    copyFileAtomic(opts.configFile, tmp + "/tuner_confs.txt");
  else if (!r.modelConfig.empty())
    writeFileAtomic(tmp + "/tuner_confs.txt", r.modelConfig);
  // The sources, and their copies as the next regeneration's merge base
  // (never touched by the build).
  std::string base = tmp + "/" + MergeBaseDir;
  fs::create_directories(base, ec);
  if (ec)
    throw UserError("cannot create '" + base + "': " + ec.message());
  for (const auto& [name, text] :
       {std::pair<const char*, const std::string&>{"hpvm_c.cpp", r.source},
        {"CMakeLists.txt", r.cmakeLists},
        {"ops.json", r.opsJson}}) {
    HPVM_ASSERT(isMergeable(name), name);
    writeFileAtomic(tmp + "/" + name, text);
    writeFileAtomic(base + "/" + name, text);
  }
  for (const char* f : {"hpvm_c.cpp", "CMakeLists.txt", "ops.json"})
    files.push_back(fileEntry(tmp, f, true));
  for (const std::string& f : sets)
    files.push_back(fileEntry(tmp, f, true));
  if (hasConfig)
    files.push_back(fileEntry(tmp, "tuner_confs.txt", true));
  return files;
}

/// The labels file of \p ds for the manifest: its path, or null.
nlohmann::ordered_json labelsJson(const Dataset& ds) {
  return ds.labelsPath.empty() ? nlohmann::ordered_json(nullptr)
                               : nlohmann::ordered_json(ds.labelsPath);
}

/// Writes manifest.json, which lists \p files, into \p tmp.
void writeManifest(const std::string& tmp, const Options& opts, const Graph& g,
                   const ProgramLayout& layout, const std::string& modelSha,
                   const std::string& binary, const Dataset& tune,
                   const Dataset& test, const nlohmann::ordered_json& files,
                   const std::vector<std::string>& conflicts) {
  nlohmann::ordered_json m;
  m["tool"] = {{"name", "torch2hpvm-export"}, {"version", TORCH2HPVM_VERSION}};
  m["command_line"] = opts.commandLine;
  m["model"] = {{"path", opts.model},
                {"sha256", modelSha},
                {"producer", g.source.producer},
                {"opset", g.source.opset},
                {"graph_name", g.source.graphName}};
  m["target"] = targetName(opts.target);
  m["toolchain"] = opts.toolchain == Toolchain::Hpvm ? "hpvm" : "clang";
  m["binary"] = binary;
  m["batch_size"] = opts.batchSize;
  m["input_shape"] = {layout.channels, layout.height, layout.width};
  m["classes"] = layout.numClasses;
  m["ops"] = layout.nodes.size();
  m["datasets"] = {{"tune",
                    {{"input", tune.inputPath},
                     {"labels", labelsJson(tune)},
                     {"images", tune.count}}},
                   {"test",
                    {{"input", test.inputPath},
                     {"labels", labelsJson(test)},
                     {"images", test.count}}}};
  m["config"] = opts.configFile;
  if (!opts.configAtRun.empty())
    m["config_at_run"] = opts.configAtRun;
  m["files"] = files;
  nlohmann::ordered_json merged = nlohmann::ordered_json::array();
  for (const auto& f : files)
    if (isMergeable(f["path"].get<std::string>()))
      merged.push_back(f["path"]);
  m["merge_base"] = {{"dir", MergeBaseDir}, {"files", merged}};
  m["conflicts"] = conflicts;
  writeFileAtomic(tmp + "/manifest.json", m.dump(2) + "\n");
}

/// Builds the program in \p tmp; on failure keeps \p tmp for inspection.
void buildInTempDir(const std::string& tmp, const std::string& out,
                    const std::string& binaryName, const Options& opts,
                    const PipelineStreams& streams, TempDirGuard& guard) {
  progress(streams, "building " + binaryName);
  BuildRequest req;
  req.toolchain = opts.toolchain;
  req.projectDir = tmp;
  req.binaryName = binaryName;
  req.configFile = "tuner_confs.txt";
  req.cxx = opts.cxx;
  req.cmake = opts.cmake;
  req.echo = opts.verbose ? streams.commands : nullptr;
  try {
    buildProgram(req);
  } catch (const UserError& e) {
    if (interruptSignal() != 0)
      throw; // interrupted: the guard removes everything
    // Keep the incomplete export (hidden name) for inspection.
    guard.release();
    throw UserError(std::string(e.what()) +
                        "(the incomplete export is kept in '" + tmp +
                        "'; nothing was written to '" + out + "')",
                    e.exitCode());
  }
}

/// True when regenerating into \p tmp would change nothing in \p out: every
/// file keeps its bytes, the manifest is the same, and the program (when
/// one is wanted) is at least as new as its sources.
bool isNoOp(const std::vector<FilePlan>& plan, const PreviousExport& prev,
            const std::string& out, const std::string& tmp,
            const std::string& binary) {
  for (const FilePlan& f : plan)
    if (f.action != FileAction::Same && f.action != FileAction::KeepEdits)
      return false;
  std::ifstream in(tmp + "/manifest.json", std::ios::binary);
  std::string manifest((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
  if (manifest != prev.manifest)
    return false;
  if (binary.empty())
    return true;
  std::error_code ec;
  auto built = fs::last_write_time(out + "/" + binary, ec);
  if (ec || hpvmRtBuiltAt() > built)
    return false; // (a runtime built since: the program links it anew)
  // The build's inputs (an edited ops.json is no reason to rebuild).
  for (const FilePlan& f : plan)
    if ((f.path == "hpvm_c.cpp" || f.path == "CMakeLists.txt") &&
        fs::last_write_time(out + "/" + f.path, ec) > built)
      return false;
  return !ec;
}

} // namespace

void listOps(const std::string& format, std::ostream& out) {
  if (format == "json")
    out << opsTableJson().dump(2) << "\n";
  else
    out << opsTableRst();
}

namespace {

/// Checks every configuration of --config against the program's fused
/// nodes (node ids, ops, knobs) as the program will at run time, so that a
/// configuration of another model is refused before anything is built.
/// (The tensor target calls the runtime directly: it has no fused nodes to
/// configure.)
void checkConfigAgainstProgram(const Options& opts, const ExportPaths& where,
                               const ProgramLayout& layout) {
  if (!where.config || opts.target == Target::Tensor)
    return;
  std::vector<hpvm::rt::FusedNodeInfo> nodes;
  for (const FusedNode& f : fuseLikeHpvm(layout)) {
    hpvm::rt::FusedNodeInfo n;
    n.ordinal = static_cast<int>(nodes.size()) + 1;
    n.firstOpId = f.firstId;
    for (int i : f.opIndices) {
      const NodeLayout& nl = layout.nodes[static_cast<size_t>(i)];
      n.ops.push_back(hpvmOpDesc(nl.node->kind).op);
      n.leafNames.push_back(nl.func);
    }
    nodes.push_back(std::move(n));
  }
  const std::vector<char> configurable(nodes.size(), 1);
  try {
    for (const hpvm::rt::Configuration& conf : where.config->configs)
      hpvm::rt::matchConfiguration(conf, opts.configFile, nodes, configurable,
                                   /*byId=*/true);
  } catch (const std::runtime_error& e) {
    // hpvm_rt's UserError (see checkPaths).
    throw UserError(std::string("--config: ") + e.what());
  }
}

} // namespace

ExportResult runExport(const Options& opts, const PipelineStreams& streams) {
  ExportPaths where = checkPaths(opts);
  std::unique_ptr<Graph> g = loadAndLower(opts, streams);
  checkToolchain(opts, *g);
  ProgramLayout layout = layoutProgram(*g, opts.model);
  checkConfigAgainstProgram(opts, where, layout);
  std::string modelSha =
      g->source.sha256.empty() ? sha256File(opts.model) : g->source.sha256;

  // Datasets, checked before anything is written.
  // (Labels name classes of output 0.)
  const int64_t classes = layout.outputs.front().elems;
  Dataset tune =
      checkDataset("tune", opts.tuneInput, opts.tuneLabels, layout.channels,
                   layout.height, layout.width, classes, !opts.noLabels);
  Dataset test =
      checkDataset("test", opts.testInput, opts.testLabels, layout.channels,
                   layout.height, layout.width, classes, !opts.noLabels);

  // Render everything in memory first, then write into a temporary sibling
  // directory, merge the user's edits there, build there, and move it into
  // place.
  RenderedFiles rendered =
      renderFiles(opts, where, *g, layout, modelSha, tune, test);
  throwIfInterrupted();
  std::string tmp = makeTempDir(where.outPath);
  TempDirGuard guard(tmp);
  nlohmann::ordered_json files =
      writeFiles(tmp, opts, streams, layout, rendered, tune, test);
  throwIfInterrupted();

  // Regeneration: each file's fate against what the directory holds.
  FileDigests generated;
  for (const auto& f : files)
    generated[f["path"].get<std::string>()] = f["sha256"].get<std::string>();
  const PreviousExport* prev = where.prev ? &*where.prev : nullptr;
  std::vector<FilePlan> plan =
      planRegeneration(where.out, prev, tmp, generated, opts.force,
                       opts.verbose ? streams.commands : nullptr);

  ExportResult result;
  result.outDir = where.out;
  if (opts.check) {
    result.status = checkReport(plan, where.out, result.checkReport);
    return result; // the guard removes tmp
  }
  throwIfRefused(plan, where.out);

  std::vector<std::string> conflicts;
  for (const FilePlan& f : plan)
    if (f.action == FileAction::Conflict)
      conflicts.push_back(f.path);
  std::string binary = opts.noBuild || !conflicts.empty()
                           ? std::string()
                           : "build/" + rendered.cg.binaryName;
  writeManifest(tmp, opts, *g, layout, modelSha, binary, tune, test, files,
                conflicts);

  // Nothing to do: the same files (edits included), the same manifest, and
  // a program at least as new as its sources and the hpvm_rt it links.
  if (prev && isNoOp(plan, *prev, where.out, tmp, binary)) {
    report(streams,
           "'" + where.out + "' is up to date (nothing to regenerate)");
    result.binary = binary.empty() ? "" : where.out + "/" + binary;
    return result;
  }
  if (prev) {
    carryOverUserFiles(where.out, *prev, tmp, plan);
    reportRegeneration(streams, plan);
  }

  if (!binary.empty()) {
    buildInTempDir(tmp, where.out, rendered.cg.binaryName, opts, streams,
                   guard);
    result.binary = where.out + "/" + binary;
  }
  throwIfInterrupted();
  fs::remove(tmp + "/" + kTempMarker);
  moveIntoPlace(tmp, where.out, where.exists);
  guard.release();
  progress(streams, "wrote " + where.out);
  if (prev)
    report(streams, regenerationSummary(plan, where.out));
  if (!conflicts.empty()) {
    std::string names;
    for (const std::string& c : conflicts)
      names += (names.empty() ? "" : ", ") + c;
    throw UserError(
        where.out + ": conflicts in " + std::to_string(conflicts.size()) +
            (conflicts.size() == 1 ? " file (" : " files (") + names +
            "); the program was not built. Resolve the <<<<<<< "
            "markers, then run the same command again",
        ExitConflict);
  }
  return result;
}

} // namespace hpvm::fe

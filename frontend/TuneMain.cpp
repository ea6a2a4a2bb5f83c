// TuneMain.cpp - torch2hpvm-tune OUT [options]: tunes an exported program
// on this machine. Finds the program of the output directory OUT (from its
// manifest.json) and replaces itself with `<program> tune-search`, giving
// it OUT's paths (tuner_confs.txt, tuning.json, tuning_front.png/.svg, the
// tuning.state cache) and the plotting script; every other option is
// passed on, and a later option overrides these defaults.
#include "support/Diagnostics.h"
#include "toolchain/Toolchain.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

const char* kUsage =
    "Usage: torch2hpvm-tune OUT [tune-search options]\n\n"
    "Tunes the approximations of the program exported to OUT (by\n"
    "torch2hpvm-export) on this machine and writes, in OUT:\n"
    "  tuner_confs.txt          the validated configurations (HPVM's "
    "format;\n"
    "                           fastest within the smallest --qos-loss "
    "first)\n"
    "  tuning.json              every evaluated and measured point\n"
    "  tuning_front.png/.svg    the Pareto plot\n"
    "  tuning.state/            measurements, reused by later runs "
    "(--resume)\n"
    "Example: torch2hpvm-tune out --qos-loss 1,2,3 --budget 2000\n"
    "The options are the program's: OUT/build/<model> tune-search --help\n";

std::string programOf(const fs::path& out) {
  const fs::path manifest = out / "manifest.json";
  std::ifstream in(manifest);
  if (!in)
    throw hpvm::fe::UserError(
        hpvm::fe::escapeName(out.string()) +
        ": not a torch2hpvm output directory (no readable manifest.json)");
  nlohmann::json j =
      nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("binary") ||
      !j["binary"].is_string())
    throw hpvm::fe::UserError(hpvm::fe::escapeName(manifest.string()) +
                              ": not a torch2hpvm manifest (no \"binary\")");
  if (j.value("target", "") == "hpvm_tensor_inspect")
    throw hpvm::fe::UserError(
        hpvm::fe::escapeName(out.string()) +
        ": exported for --target hpvm_tensor_inspect (HPVM's tuner "
        "protocol); export with the default target to tune here");
  std::string binary = j["binary"].get<std::string>();
  if (binary.empty() || binary.front() == '/' ||
      binary.find("..") != std::string::npos)
    throw hpvm::fe::UserError(hpvm::fe::escapeName(manifest.string()) +
                              ": bad \"binary\" path");
  const fs::path program = out / binary;
  if (::access(program.c_str(), X_OK) != 0)
    throw hpvm::fe::UserError(
        hpvm::fe::escapeName(program.string()) +
        ": the program was not built (export without --no-build)");
  return program.string();
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::cout << kUsage;
    return args.empty() ? 1 : 0;
  }
  try {
    const fs::path out = args[0];
    const std::string program = programOf(out);
    std::vector<std::string> words = {program,
                                      "tune-search",
                                      "--model-dir",
                                      out.string(),
                                      "-o",
                                      (out / "tuner_confs.txt").string(),
                                      "--json",
                                      (out / "tuning.json").string(),
                                      "--plot",
                                      (out / "tuning_front").string(),
                                      "--state",
                                      (out / "tuning.state").string(),
                                      "--plot-script",
                                      hpvm::fe::plotScriptPath()};
    words.insert(words.end(), args.begin() + 1, args.end());
    std::vector<char*> cargs;
    for (std::string& w : words)
      cargs.push_back(w.data());
    cargs.push_back(nullptr);
    ::execv(program.c_str(), cargs.data());
    throw hpvm::fe::UserError(hpvm::fe::escapeName(program) +
                              ": cannot run: " + std::strerror(errno));
  } catch (const hpvm::fe::UserError& e) {
    std::cerr << "torch2hpvm-tune: error: "
              << hpvm::fe::printableMessage(e.what()) << "\n";
    return e.exitCode();
  }
}

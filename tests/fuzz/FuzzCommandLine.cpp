// FuzzCommandLine.cpp - libFuzzer target: the command-line parsers of the
// exporter (parseOptions), the dataset tool (checkToolArgs: its options and
// the values that need no file) and the generated programs (the run modes,
// calibrate, tune-search, bench-knobs), on any words. Input: a byte choosing
// the parser, then the words, separated by NUL bytes. The error types are
// the expected answers to a bad command line; nothing here reads or writes
// a file.
#include "Options.h"
#include "base/Errors.h"
#include "driver/Calibration.h"
#include "driver/Options.h"
#include "hpvm_ds/Tool.h"
#include "support/Diagnostics.h"
#include "tuner/BenchKnobs.h"
#include "tuner/TuneOptions.h"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// The words of \p data: NUL-separated, after the program's name.
std::vector<std::string> wordsOf(const char* data, size_t size) {
  std::vector<std::string> words = {"program"};
  std::string word;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\0') {
      words.push_back(word);
      word.clear();
    } else {
      word += data[i];
    }
  }
  if (!word.empty())
    words.push_back(word);
  return words;
}

/// Runs a program's parser on argv[first..] of \p words.
template <class Parse>
void parseProgram(Parse parse, const std::vector<std::string>& words,
                  int first) {
  std::vector<const char*> argv;
  for (const std::string& w : words)
    argv.push_back(w.c_str());
  argv.push_back(nullptr);
  try {
    parse(static_cast<int>(words.size()) - first, argv.data() + first);
  } catch (const hpvm::rt::UserError&) {
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  const std::vector<std::string> words =
      wordsOf(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
  case 0:
    try {
      hpvm::fe::parseOptions(words);
    } catch (const hpvm::fe::UserError&) {
    }
    break;
  case 1: {
    std::ostringstream out, err;
    hpvm::ds::checkToolArgs(
        std::vector<std::string>(words.begin() + 1, words.end()), out, err);
    break;
  }
  case 2:
    parseProgram(hpvm::rt::parseRunOptions, words, 0);
    break;
  case 3:
    parseProgram(hpvm::rt::parseCalibrateOptions, words, 1);
    break;
  case 4:
    parseProgram(hpvm::rt::tuner::parseTuneOptions, words, 1);
    break;
  default:
    parseProgram(hpvm::rt::tuner::parseBenchOptions, words, 1);
    break;
  }
  return 0;
}

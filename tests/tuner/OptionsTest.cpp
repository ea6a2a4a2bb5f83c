// OptionsTest.cpp - the tune-search command line and the run modes'
// --qos-loss: values, defaults derived from -o, and every error message.
#include "driver/Options.h"
#include "base/Errors.h"
#include "tuner/TuneOptions.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace hpvm::rt;
using namespace hpvm::rt::tuner;

namespace {

TuneOptions parse(std::vector<const char*> words) {
  return parseTuneOptions(int(words.size()), words.data());
}

std::string tuneError(std::vector<const char*> words) {
  try {
    parse(words);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string runError(std::vector<const char*> words) {
  words.insert(words.begin(), "prog");
  try {
    parseRunOptions(int(words.size()), words.data());
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("tune-search options and the defaults derived from -o") {
  TuneOptions o =
      parse({"--qos-loss", "3,1,2,1", "--budget=500", "--seed", "9", "--qos",
             "top5", "--relative", "-o", "out/confs.txt", "--threads", "2",
             "--empirical", "--plot-python", "/opt/py/bin/python3"});
  CHECK(o.qosLoss == std::vector<double>{1, 2, 3});
  CHECK(o.budget == 500);
  CHECK(o.seed == 9);
  CHECK(o.metric == "top5");
  CHECK(o.relative);
  CHECK(o.empirical);
  CHECK(o.threads == 2);
  CHECK(o.jsonFile == "out/confs.json");
  CHECK(o.plotStem == "out/confs_front");
  CHECK(o.stateDir == "out/confs.state");
  CHECK(o.plotPython == "/opt/py/bin/python3");
  TuneOptions d = parse({});
  CHECK(d.qosLoss == std::vector<double>{1.0});
  CHECK(d.output == "tuner_confs.txt");
  CHECK(d.stateDir == "tuner_confs.state");
  CHECK(d.qosModel == "p1");
  CHECK(d.plotPython == "/usr/bin/python3");
}

TEST_CASE("tune-search option errors") {
  CHECK(tuneError({"--qos", "top7"}) ==
        "bad value 'top7' for --qos: expected top1, top5, psnr or relerr");
  CHECK(tuneError({"--qos-model", "p3"}) ==
        "bad value 'p3' for --qos-model: expected p1 or p2");
  CHECK(tuneError({"--qos-loss", "1,x"}) ==
        "bad value 'x' for --qos-loss: expected a number >= 0");
  CHECK(tuneError({"--qos-loss", "-1"}) ==
        "bad value '-1' for --qos-loss: expected a number >= 0");
  CHECK(tuneError({"--budget", "0"}) ==
        "bad value '0' for --budget: expected an integer >= 1");
  CHECK(tuneError({"--fresh", "--resume"}) ==
        "--fresh and --resume exclude each other");
  CHECK(tuneError({"--budget"}) == "option '--budget' needs a value (N)");
  CHECK(tuneError({"--empirical=1"}) == "option '--empirical' takes no value");
  CHECK(tuneError({"--bogus"}) == "unknown option '--bogus'");
  CHECK(tuneError({"test"}) == "unexpected argument 'test'");
}

TEST_CASE("run modes: --qos-loss") {
  std::vector<const char*> words = {"prog", "test", "--qos-loss", "1.5"};
  RunOptions o = parseRunOptions(int(words.size()), words.data());
  REQUIRE(o.qosLoss);
  CHECK(*o.qosLoss == 1.5);
  CHECK(runError({"--qos-loss", "nan"}) ==
        "bad value 'nan' for --qos-loss: expected a number >= 0");
  CHECK(runError({"--qos-loss", "1", "--config", "conf2"}) ==
        "--qos-loss and --config exclude each other");
  CHECK(runError({"--qos-loss", "1", "--all-configs"}) ==
        "--qos-loss and --all-configs exclude each other");
  CHECK(runError({"tune-search"}) ==
        "unexpected argument 'tune-search'; expected 'test' or 'tune'");
}

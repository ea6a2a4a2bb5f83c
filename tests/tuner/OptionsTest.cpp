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
        "bad value 'top7' for --qos: expected top1, top5, psnr, relerr or "
        "miou");
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

TEST_CASE("tune-search --time-limit, --keep-exact and --timing-batch") {
  TuneOptions d = parse({});
  CHECK(d.timeLimit == 240);
  CHECK(d.keepExact.empty());
  CHECK_FALSE(d.timingBatch);
  CHECK(parse({"--time-limit", "90"}).timeLimit == 90);
  CHECK(parse({"--time-limit", "90s"}).timeLimit == 90);
  CHECK(parse({"--time-limit", "5m"}).timeLimit == 300);
  CHECK(parse({"--time-limit", "1m30s"}).timeLimit == 90);
  CHECK(parse({"--time-limit", "1h"}).timeLimit == 3600);
  CHECK(parse({"--time-limit", "2.5m"}).timeLimit == 150);
  CHECK(parse({"--time-limit", "0"}).timeLimit == 0);
  CHECK(parse({"--time-limit", "none"}).timeLimit == 0);
  for (const char* bad : {"", "5x", "m", "1m30", "-5", "1..2s", "5 m"})
    CHECK(tuneError({"--time-limit", bad}) ==
          "bad value '" + std::string(bad) +
              "' for --time-limit: expected seconds (90, 90s), minutes (5m), "
              "hours (1h), a sum of them (1m30s), or 0 for no limit");
  TuneOptions k = parse(
      {"--keep-exact", "3,1", "--keep-exact=2,3", "--timing-batch", "16"});
  CHECK(k.keepExact == std::vector<int>{1, 2, 3});
  CHECK(k.timingBatch == 16);
  CHECK(tuneError({"--keep-exact", "1,,2"}) ==
        "bad value '1,,2' for --keep-exact: expected fused-node numbers as "
        "the summary prints them (1,3,4)");
  CHECK(tuneError({"--keep-exact", "0"}) ==
        "bad value '0' for --keep-exact: expected an integer >= 1");
  CHECK(tuneError({"--keep-exact", "conv1"}) ==
        "bad value 'conv1' for --keep-exact: expected an integer >= 1");
  CHECK(tuneError({"--timing-batch", "0"}) ==
        "bad value '0' for --timing-batch: expected an integer >= 1");
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

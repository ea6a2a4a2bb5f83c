// ConfigParserTest.cpp - HPVM configuration files: every shipped file
// parses, keys and knobs resolve, and every error has its exact message.
#include "base/Errors.h"
#include "config/Config.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace hpvm::rt;

namespace {

const std::string kDataDir = HPVM_SOURCE_DIR "/tests/runtime/data/";
const std::string kHpvmConfigs =
    HPVM_SOURCE_DIR "/../shared/reference/hpvm-configs/";

std::vector<std::string> opNames(const NodeConfig& node) {
  std::vector<std::string> names;
  for (const OpChoice& op : node.ops)
    names.push_back(opInfo(op.op).confName);
  return names;
}

/// Parses \p text as file "t.txt" and returns the error message.
std::string errorOf(const std::string& text) {
  try {
    parseConfigText(text, "t.txt");
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kHead = "1.5\n+++++\nc 1 1 90 0\n";

} // namespace

TEST_CASE("Runtime: every HPVM configuration file parses") {
  // Blocks per file, counted in the files themselves.
  const std::map<std::string, size_t> blocks = {
      {"alexnet2_cifar10.txt", 38},  {"alexnet_cifar10.txt", 51},
      {"alexnet_imagenet.txt", 19},  {"lenet_mnist.txt", 51},
      {"mobilenet_cifar10.txt", 37}, {"resnet18_cifar10.txt", 51},
      {"resnet50_imagenet.txt", 49}, {"vgg16_cifar10.txt", 48},
      {"vgg16_cifar100.txt", 51},    {"vgg16_imagenet.txt", 28}};
  REQUIRE(std::filesystem::is_directory(kHpvmConfigs));
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kHpvmConfigs)) {
    std::string name = entry.path().filename().string();
    CAPTURE(name);
    ConfigFile file = parseConfigFile(entry.path().string());
    REQUIRE(blocks.count(name) == 1);
    CHECK(file.configs.size() == blocks.at(name));
    CHECK(file.baselineTime > 0);
    // Every block of a file has the first block's op sequence and keys.
    const Configuration& first = file.configs.front();
    for (const Configuration& config : file.configs) {
      REQUIRE(config.nodes.size() == first.nodes.size());
      for (size_t i = 0; i < config.nodes.size(); ++i) {
        CHECK(opNames(config.nodes[i]) == opNames(first.nodes[i]));
        CHECK(config.nodes[i].key == first.nodes[i].key);
        CHECK(config.nodes[i].gpu);
      }
    }
    ++seen;
  }
  CHECK(seen == blocks.size());
}

TEST_CASE("Runtime: LeNet configuration keys, knobs and header") {
  ConfigFile file = parseConfigFile(kHpvmConfigs + "lenet_mnist.txt");
  CHECK(file.baselineTime == doctest::Approx(282.5141369999999));
  const Configuration& conf1 = file.configs[0];
  CHECK(conf1.name == "conf1");
  CHECK(conf1.line == 3);
  CHECK(conf1.accuracy == doctest::Approx(98.7));
  REQUIRE(conf1.nodes.size() == 5);
  const int keys[] = {1, 5, 9, 12, 15};
  for (size_t i = 0; i < 5; ++i) {
    CHECK(conf1.nodes[i].key == keys[i]);
    CHECK(conf1.nodes[i].name == std::to_string(i + 1));
    CHECK(conf1.nodes[i].line == static_cast<int>(4 + i));
  }
  CHECK(opNames(conf1.nodes[0]) ==
        std::vector<std::string>{"conv", "add", "tanh", "pool_max"});
  // "add fp32 1": the integer after fp32/fp16 is ignored, as HPVM does.
  for (const OpChoice& op : conf1.nodes[0].ops)
    CHECK(op.knobId == 11);
  CHECK(conf1.nodes[0].ops[1].column == 20);

  const Configuration& conf17 = selectConfiguration(file, "conf17");
  CHECK(conf17.speedup == doctest::Approx(2.2168527051833635));
  CHECK(conf17.accuracyLoss == doctest::Approx(0.0800000000000125));
  CHECK(conf17.nodes[0].ops[0].knobId == 264);
  CHECK(conf17.nodes[0].ops[1].knobId == 12); // "add fp16 1"
  CHECK(conf17.nodes[0].ops[3].knobId == 12); // "pool_max fp16 12"
  CHECK(conf17.nodes[4].ops[0].knobId == 11);
}

TEST_CASE("Runtime: ResNet-18 configuration uses cumulative op keys") {
  ConfigFile file = parseConfigFile(kHpvmConfigs + "resnet18_cifar10.txt");
  const Configuration& c = file.configs.front();
  REQUIRE(c.nodes.size() == 42);
  // Reference section 7.3: line:key pairs.
  const std::map<int, int> keys = {{1, 1},   {2, 4},   {3, 7},   {4, 9},
                                   {5, 10},  {14, 25}, {15, 28}, {16, 30},
                                   {17, 32}, {40, 71}, {41, 72}, {42, 74}};
  for (auto [line, key] : keys)
    CHECK(c.nodes[static_cast<size_t>(line - 1)].key == key);
}

TEST_CASE("Runtime: predtuner-style files, cpu lines and no final newline") {
  ConfigFile file = parseConfigFile(kDataDir + "predtuner_style.txt");
  REQUIRE(file.configs.size() == 2);
  const Configuration& c0 = file.configs[0];
  CHECK(c0.name == "conf0");
  CHECK_FALSE(c0.nodes[0].gpu);
  CHECK(c0.nodes[2].gpu);
  CHECK(c0.nodes[0].ops[0].knobId == 123);
  CHECK(c0.nodes[1].ops[0].op == HpvmOp::Mul);
  CHECK(c0.nodes[1].ops[0].knobId == 301);
  CHECK(c0.nodes[2].key == 6);
  CHECK(file.configs[1].nodes[0].ops[0].knobId == 236);
  CHECK(file.configs[1].nodes[1].ops[1].knobId == 12);
}

TEST_CASE("Runtime: configuration files round-trip through the writer") {
  for (const char* name : {"lenet_three.txt", "predtuner_style.txt"}) {
    ConfigFile file = parseConfigFile(kDataDir + name);
    std::string text = formatConfigFile(file);
    ConfigFile again = parseConfigText(text, "again.txt");
    CHECK(formatConfigFile(again) == text);
    REQUIRE(again.configs.size() == file.configs.size());
    CHECK(again.configs[1].speedup == file.configs[1].speedup);
    CHECK(again.configs[1].nodes[0].ops[0].knobId ==
          file.configs[1].nodes[0].ops[0].knobId);
  }
  ConfigFile pt = parseConfigFile(kDataDir + "predtuner_style.txt");
  CHECK(formatConfigFile(pt) ==
        "0\n+++++\nconf0 1 1 1 0\n"
        "1 cpu conv perf 123 add fp32 11 relu fp32 11\n"
        "2 cpu mul bf16 301 add fp32 11\n3 gpu softmax fp32 11\n-----\n"
        "+++++\nconf1 2.5 1 0.9 0.1\n"
        "1 cpu conv samp 236 add fp32 11 relu fp32 11\n"
        "2 cpu mul fp16 12 add fp16 12\n3 cpu softmax fp16 12\n-----");
}

TEST_CASE("Runtime: configurations are selected by name or index") {
  ConfigFile file = parseConfigFile(kDataDir + "lenet_three.txt");
  CHECK(selectConfiguration(file, "conf2").name == "conf2");
  CHECK(selectConfiguration(file, "0").name == "conf1");
  CHECK(selectConfiguration(file, "2").name == "conf3");
  CHECK_THROWS_WITH(selectConfiguration(file, "conf9"),
                    (kDataDir +
                     "lenet_three.txt: no configuration named 'conf9' (the "
                     "file has 3 configurations: conf1, conf2, conf3)")
                        .c_str());
  CHECK_THROWS_WITH(selectConfiguration(file, "3"),
                    (kDataDir +
                     "lenet_three.txt: no configuration named '3' and no "
                     "index 3 (0-based) (the file has 3 configurations: "
                     "conf1, conf2, conf3)")
                        .c_str());
}

TEST_CASE("Runtime: configuration file structure errors") {
  CHECK(errorOf("") == "t.txt:1:1: expected the baseline time (a number) on "
                       "the first line, found end of file");
  CHECK(errorOf("abc\n") == "t.txt:1:1: bad baseline time 'abc': expected a "
                            "number");
  CHECK(errorOf("1.5 x\n") == "t.txt:1:5: unexpected 'x' after the baseline "
                              "time; expected end of line");
  CHECK(errorOf("1.5\n") == "t.txt:2:1: expected '+++++' to open a "
                            "configuration, found end of file");
  CHECK(errorOf("1.5\nconf1 1 1 1 0\n") ==
        "t.txt:2:1: expected '+++++' to open a configuration, found 'conf1'");
  CHECK(errorOf("1.5\n+++++ x\n") == "t.txt:2:7: unexpected 'x' after "
                                     "'+++++'; expected end of line");
  CHECK(errorOf("1.5\n+++++\n") ==
        "t.txt:3:1: expected a configuration header '<name> <speedup> "
        "<energy> <accuracy> <accuracy-loss>', found end of file");
  CHECK(errorOf("1.5\n+++++\n-----\n") ==
        "t.txt:3:1: expected a configuration header '<name> <speedup> "
        "<energy> <accuracy> <accuracy-loss>', found '-----'");
  CHECK(errorOf("1.5\n+++++\nc 1 1 90\n") ==
        "t.txt:3:9: expected the accuracy loss in the header of "
        "configuration 'c', found end of line");
  CHECK(errorOf("1.5\n+++++\nc 1 x 90 0\n") ==
        "t.txt:3:5: bad energy 'x': expected a number");
  CHECK(errorOf("1.5\n+++++\nc 1 1 90 0 extra\n") ==
        "t.txt:3:12: unexpected 'extra' after the accuracy loss; expected "
        "end of line");
  CHECK(errorOf(kHead + "1 gpu softmax fp32 1\n") ==
        "t.txt:5:1: configuration 'c' (line 3) is not closed: expected "
        "'-----', found end of file");
  CHECK(errorOf(kHead + "1 gpu softmax fp32 1\n+++++\n") ==
        "t.txt:5:1: configuration 'c' (line 3) is not closed: expected "
        "'-----', found '+++++'");
  CHECK(errorOf(kHead + "-----\n") ==
        "t.txt:4:1: configuration 'c' has no node lines");
  CHECK(errorOf(kHead + "1 gpu softmax fp32 1\n----- x\n") ==
        "t.txt:5:7: unexpected 'x' after '-----'; expected end of line");
  CHECK(errorOf(kHead + "1 gpu softmax fp32 1\n\n-----\n") ==
        "t.txt:5:1: empty line; configuration files have no blank lines");
  CHECK(errorOf(kHead + "1 gpu softmax fp32 1\n-----\n\n") ==
        "t.txt:6:1: empty line; configuration files have no blank lines");
  CHECK(errorOf(kHead + "1 gpu softmax fp32 1\n-----\n+++++\nc 2 1 80 1\n"
                        "1 gpu softmax fp32 1\n-----\n") ==
        "t.txt:7:1: duplicate configuration name 'c' (first on line 3)");
}

TEST_CASE("Runtime: configuration node line errors") {
  auto line = [](const std::string& node) {
    return errorOf(kHead + node + "\n-----\n");
  };
  CHECK(line("x gpu softmax fp32 1") ==
        "t.txt:4:1: bad node id 'x': expected a positive integer");
  CHECK(line("0 gpu softmax fp32 1") ==
        "t.txt:4:1: bad node id '0': expected a positive integer");
  CHECK(line("1") == "t.txt:4:2: expected a device ('gpu' or 'cpu') after "
                     "node id '1', found end of line");
  CHECK(line("1 tpu softmax fp32 1") ==
        "t.txt:4:3: unknown device 'tpu'; expected 'gpu' or 'cpu'");
  CHECK(line("1 gpu") ==
        "t.txt:4:6: expected an op after device 'gpu', found end of line");
  // Every op of the table, sorted by name.
  std::vector<std::string> ops;
  for (const OpInfo& info : allOps())
    ops.push_back(info.confName);
  std::sort(ops.begin(), ops.end());
  std::string expected;
  for (const std::string& op : ops)
    expected += (expected.empty() ? "" : ", ") + op;
  CHECK(line("1 gpu convv fp32 11") ==
        "t.txt:4:7: unknown op 'convv'; expected one of: " + expected);
  CHECK(line("1 gpu pool_min fp32 11") ==
        "t.txt:4:7: op 'pool_min' is not supported: HPVM has no kernel for "
        "it");
  CHECK(line("1 gpu conv") == "t.txt:4:11: expected a knob after op 'conv' "
                              "('<knob-name> <knob-id>'), found end of line");
  CHECK(line("1 gpu conv add fp32 1") ==
        "t.txt:4:12: expected a knob after op 'conv', found op 'add'");
  CHECK(line("1 gpu conv fp64 11") ==
        "t.txt:4:12: unknown knob 'fp64' for op 'conv'; expected one of: "
        "bf16, fp16, fp32, int8, int8_dyn, perf, perf_bf16, perf_fp16, "
        "perf_int8, samp, samp_bf16, samp_fp16, samp_int8");
  CHECK(line("1 gpu conv red_samp 41") ==
        "t.txt:4:12: knob 'red_samp' is not supported: HPVM's reduction "
        "sampling (ids 41-46) has no tensor op in HPVM-C programs");
  CHECK(line("1 gpu conv swing_level 3") ==
        "t.txt:4:12: knob 'swing_level' is not supported: it selects "
        "PROMISE accelerator voltage levels (ids 1-7), hardware hpvm_rt "
        "does not target");
  CHECK(line("1 gpu conv perf") ==
        "t.txt:4:16: expected a knob id after 'perf', found end of line");
  CHECK(line("1 gpu conv perf x") ==
        "t.txt:4:17: bad knob id 'x' for 'perf': expected an integer");
  CHECK(line("1 gpu conv fp32 1x") ==
        "t.txt:4:17: bad knob id '1x' for 'fp32': expected an integer");
  CHECK(line("1 gpu conv perf 500") ==
        "t.txt:4:17: unknown knob id 500 for 'perf'; expected one of "
        "121-138");
  CHECK(line("1 gpu conv samp_fp16 231") ==
        "t.txt:4:22: knob id 231 is 'samp', not 'samp_fp16'");
  CHECK(line("1 gpu add perf 121") ==
        "t.txt:4:11: knob 'perf' (121) does not apply to op 'add'; it "
        "applies to conv only");
  CHECK(line("1 gpu relu bf16 301") ==
        "t.txt:4:12: knob 'bf16' (301) does not apply to op 'relu'; it "
        "applies to conv, group_conv and mul only");
  CHECK(line("1 gpu conv fp32 11 fp16 12") ==
        "t.txt:4:20: expected an op, found knob 'fp16'; each op takes "
        "exactly one knob");
  CHECK(errorOf(kHead + "1 gpu softmax fp32 1\n2 gpu relu fp32 1\n"
                        "1 gpu softmax fp32 1\n-----\n") ==
        "t.txt:6:1: duplicate node '1' in configuration 'c' (first on line "
        "4)");
}

TEST_CASE("Runtime: configuration lexing accepts tabs, CRLF and runs of "
          "spaces") {
  ConfigFile f = parseConfigText(
      "2.5\r\n+++++\r\nc\t1 1  90 0\r\n1  gpu\tconv perf 124 add fp32 1\r\n"
      "2 cpu softmax fp32 1\r\n-----\r\n",
      "crlf.txt");
  REQUIRE(f.configs.size() == 1);
  CHECK(f.configs[0].nodes[0].ops[0].knobId == 124);
  CHECK(f.configs[0].nodes[0].ops[1].column == 22);
  CHECK(f.configs[0].nodes[1].key == 3);
  CHECK_FALSE(f.configs[0].nodes[1].gpu);
}

TEST_CASE("Runtime: unreadable configuration file") {
  CHECK_THROWS_WITH(parseConfigFile("/nonexistent/conf.txt"),
                    "/nonexistent/conf.txt: cannot open configuration file: "
                    "No such file or directory");
  CHECK_THROWS_WITH(parseConfigFile("/tmp"), "/tmp: cannot open configuration "
                                             "file: it is a directory");
  CHECK_THROWS_WITH(parseConfigFile("/dev/zero"),
                    "/dev/zero: cannot open configuration file: not a "
                    "regular file");
  // A FIFO is refused at once, not waited on.
  const std::string fifo = std::string(HPVM_BINARY_DIR) + "/conf.fifo";
  ::unlink(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(parseConfigFile(fifo),
                    (fifo + ": cannot open configuration file: not a regular "
                            "file")
                        .c_str());
  ::unlink(fifo.c_str());
}

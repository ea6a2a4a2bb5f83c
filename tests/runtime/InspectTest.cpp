// InspectTest.cpp - HPVM's tuner protocol (ModelInfo.inspect == 1): a small
// driver plays the tuner over the two FIFOs and checks the raw output
// records, final_accuracy, configuration re-reading and "stop".
#include "hpvm_rt/RunModel.h"

#include "tensor_runtime.h"

#include <doctest/doctest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <poll.h>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto kTimeout = 20s;

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeBytes(const std::string& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  REQUIRE(out.good());
}

/// Writes \p word into the FIFO once the program has opened it for reading
/// (the tuner writes the word with no newline).
void sendRequest(const std::string& fifo, const std::string& word) {
  auto deadline = std::chrono::steady_clock::now() + kTimeout;
  int fd = -1;
  while ((fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK)) < 0) {
    REQUIRE(errno == ENXIO); // No reader yet.
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(5ms);
  }
  REQUIRE(write(fd, word.data(), word.size()) ==
          static_cast<ssize_t>(word.size()));
  close(fd);
}

/// Reads the program's result FIFO until it closes it.
std::string readResults(const std::string& fifo) {
  int fd = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(fd >= 0);
  auto deadline = std::chrono::steady_clock::now() + kTimeout;
  std::string data;
  bool connected = false;
  while (true) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0)
      continue;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      data.append(buf, static_cast<size_t>(n));
      connected = true;
    } else if (n == 0 && (connected || (p.revents & POLLHUP))) {
      break;
    } else if (n < 0) {
      REQUIRE(errno == EAGAIN);
    }
  }
  close(fd);
  return data;
}

/// One batch record: uint64 ndims, uint64 dims[ndims], float32 data.
struct Record {
  std::vector<uint64_t> dims;
  std::vector<float> values;
};

std::vector<Record> decode(const std::string& bytes) {
  std::vector<Record> records;
  size_t pos = 0;
  auto take = [&](void* dst, size_t n) {
    REQUIRE(pos + n <= bytes.size());
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
  };
  while (pos < bytes.size()) {
    Record r;
    uint64_t ndims = 0;
    take(&ndims, 8);
    REQUIRE(ndims <= 8);
    r.dims.resize(ndims);
    take(r.dims.data(), ndims * 8);
    uint64_t count = 1;
    for (uint64_t d : r.dims)
      count *= d;
    r.values.resize(count);
    take(r.values.data(), count * 4);
    records.push_back(std::move(r));
  }
  return records;
}

/// A 1x1x2 -> 2-class model returning its pixels; 5 test images (3 right
/// under label = index % 2, so 60%), 2 tune images (both right).
struct InspectFixture {
  fs::path dir, oldCwd;
  hpvm_rt::ModelInfo info{};
  std::string dirText;
  hpvm_rt::RunBatchFn run;
  hpvm_rt::LoadWeightsFn load = [](const std::string&) {};

  InspectFixture() {
    char tmpl[] = "/tmp/hpvm_rt_inspect_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    dirText = dir.string() + "/";
    oldCwd = fs::current_path();
    fs::current_path(dir);
    REQUIRE(mkfifo((dir / "hpvm_fifo_r").c_str(), 0600) == 0);
    REQUIRE(mkfifo((dir / "hpvm_fifo_w").c_str(), 0600) == 0);
    // Test images: pixels (i, 2 - i) for i < 5 -> predictions 1,0,0,0,0
    // (a tie keeps the lower index).
    float test[10], tune[4] = {1, 0, 0, 1};
    for (int i = 0; i < 5; ++i) {
      test[2 * i] = static_cast<float>(i);
      test[2 * i + 1] = static_cast<float>(2 - i);
    }
    int32_t testLabels[] = {1, 1, 0, 0, 1}, tuneLabels[] = {0, 1};
    writeBytes(dirText + "test_input.bin", test, sizeof(test));
    writeBytes(dirText + "test_labels.bin", testLabels, sizeof(testLabels));
    writeBytes(dirText + "tune_input.bin", tune, sizeof(tune));
    writeBytes(dirText + "tune_labels.bin", tuneLabels, sizeof(tuneLabels));
    writeConfig("mul fp32 11 add fp32 11");
    info.name = "inspect";
    info.modelDir = dirText.c_str();
    info.channels = 1;
    info.height = 1;
    info.width = 2;
    info.numClasses = 2;
    info.tuneCount = 2;
    info.testCount = 5;
    info.defaultBatch = 2;
    info.defaultConfig = "";
    info.numOps = 2;
    info.inspect = 1;
    run = [](void* in) -> void* {
      auto* x = static_cast<Tensor*>(in);
      hpvm_request_tensor(x, 0);
      size_t n = x->dims.dim_sizes[0];
      void* out = create4DTensor(0, 0, n, 2, 1, 1);
      initTensorData(out, x->host_data, n * 2 * sizeof(float));
      return out;
    };
  }
  ~InspectFixture() {
    fs::current_path(oldCwd);
    fs::remove_all(dir);
  }

  void writeConfig(const std::string& ops) {
    std::string text =
        "0.0\n+++++\nconf0 1.0 1.0 1.0 0.0\n1 gpu " + ops + "\n-----";
    writeBytes(dirText + "tuner_confs.txt", text.data(), text.size());
  }

  /// Starts the program on its own thread.
  std::future<int> start() {
    return std::async(std::launch::async, [this] {
      std::string arg0 = "inspect", arg1 = "--quiet";
      char* argv[] = {arg0.data(), arg1.data(), nullptr};
      return hpvm_rt::runModel(2, argv, info, load, run);
    });
  }
};

} // namespace

TEST_CASE("Runtime: inspect protocol serves test, tune and stop") {
  InspectFixture fx;
  std::future<int> program = fx.start();
  const std::string in = fx.dirText + "hpvm_fifo_r";
  const std::string out = fx.dirText + "hpvm_fifo_w";

  sendRequest(in, "test");
  std::vector<Record> records = decode(readResults(out));
  REQUIRE(records.size() == 3); // Batches of 2, 2 and the partial 1.
  CHECK(records[0].dims == std::vector<uint64_t>{2, 2, 1, 1});
  CHECK(records[2].dims == std::vector<uint64_t>{1, 2, 1, 1});
  CHECK(records[0].values == std::vector<float>{0, 2, 1, 1});
  CHECK(records[2].values == std::vector<float>{4, -2});
  CHECK(readText("final_accuracy") == "60.000000");

  // The tuner rewrites the configuration before each request.
  fx.writeConfig("mul fp16 12 add fp16 12");
  sendRequest(in, "tune\n");
  records = decode(readResults(out));
  REQUIRE(records.size() == 1);
  CHECK(records[0].values == std::vector<float>{1, 0, 0, 1});
  CHECK(readText("final_accuracy") == "100.000000");

  sendRequest(in, "stop");
  REQUIRE(program.wait_for(kTimeout) == std::future_status::ready);
  CHECK(program.get() == 0);
}

TEST_CASE("Runtime: inspect protocol rejects bad requests and configs") {
  InspectFixture fx;
  const std::string in = fx.dirText + "hpvm_fifo_r";
  // The program's stderr goes to a file for the checks.
  std::fflush(stderr);
  int savedErr = dup(2);
  int errFile = open("stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(errFile, 2);
  close(errFile);
  std::string expected;
  std::future<int> program;
  SUBCASE("unknown request") {
    program = fx.start();
    sendRequest(in, "train");
    expected = "inspect: error: " + in +
               ": invalid request 'train'; expected 'test', 'tune' or "
               "'stop'\n";
  }
  SUBCASE("configuration for another program") {
    fx.writeConfig("mul fp32 11");
    program = fx.start();
    sendRequest(in, "test");
    expected = "inspect: error: " + fx.dirText +
               "tuner_confs.txt:3:1: configuration 'conf0' covers 1 op but "
               "the program has 2\n";
  }
  bool ready = program.wait_for(kTimeout) == std::future_status::ready;
  std::fflush(stderr);
  dup2(savedErr, 2);
  close(savedErr);
  REQUIRE(ready);
  CHECK(program.get() == 1);
  CHECK(readText("stderr.txt") == expected);
  CHECK_FALSE(fs::exists("final_accuracy"));
}

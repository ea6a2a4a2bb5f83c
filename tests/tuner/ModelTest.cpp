// ModelTest.cpp - QoS metrics against hand-computed values, the P1/P2
// predictors and calibration.
#include "tuner/Model.h"
#include "tuner/NodeKnobs.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace hpvm::rt;
using namespace hpvm::rt::tuner;

TEST_CASE("top-1 and top-5 accuracy follow HPVM's first-maximum rule") {
  // 3 images x 6 classes.
  std::vector<float> out = {
      0.1f, 0.9f, 0.0f, 0.0f, 0.0f, 0.0f, // argmax 1
      0.5f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f, // tie: first maximum, 0
      0.6f, 0.5f, 0.4f, 0.3f, 0.2f, 0.1f, // label 5 is 6th
  };
  std::vector<int32_t> labels = {1, 1, 5};
  QosSpec top1;
  CHECK(qosValue(top1, out.data(), out.data(), labels.data(), 3, 6) ==
        doctest::Approx(100.0 / 3));
  QosSpec top5;
  top5.metric = QosSpec::Metric::Top5;
  // Image 2: label 1 ties with class 0 (earlier, beats it): rank 2, in.
  CHECK(qosValue(top5, out.data(), out.data(), labels.data(), 3, 6) ==
        doctest::Approx(200.0 / 3));
  CHECK(qosLoss(top1, 90, 88.5) == doctest::Approx(1.5));
  top1.relative = true;
  CHECK(qosLoss(top1, 90, 81) == doctest::Approx(10.0));
}

TEST_CASE("PSNR violations and relative error against the exact outputs") {
  std::vector<float> exact = {1, 0, 0, 0, 0, 1, 0, 0};
  std::vector<float> out = exact;
  out[0] = 0.9f; // image 0: mse 0.0025 -> PSNR 20*log10(1/0.05) = 26 dB
  QosSpec psnr;
  psnr.metric = QosSpec::Metric::Psnr;
  psnr.psnrThreshold = 30;
  CHECK(qosValue(psnr, out.data(), exact.data(), nullptr, 2, 4) ==
        doctest::Approx(50.0));
  psnr.psnrThreshold = 25;
  CHECK(qosValue(psnr, out.data(), exact.data(), nullptr, 2, 4) ==
        doctest::Approx(100.0));
  QosSpec rel;
  rel.metric = QosSpec::Metric::RelErr;
  // Image 0: |d| / |e| = 0.1; image 1: 0 -> mean 0.05 -> QoS 95.
  CHECK(qosValue(rel, out.data(), exact.data(), nullptr, 2, 4) ==
        doctest::Approx(95.0));
}

TEST_CASE("mIoU of the per-pixel classes against the exact map") {
  // 2 images, each 3 classes x 4 pixels (C-major), then 2 more values (a
  // second output) the metric does not read.
  const std::vector<int> exactClasses = {0, 0, 1, 2, 0, 1, 1, 1};
  const std::vector<int> outClasses = {0, 1, 1, 2, 0, 1, 1, 2};
  auto rows = [](const std::vector<int>& classes) {
    std::vector<float> v(2 * 14, 0.5f);
    for (size_t i = 0; i < 2; ++i)
      for (size_t p = 0; p < 4; ++p) {
        for (size_t c = 0; c < 3; ++c)
          v[i * 14 + c * 4 + p] = 0.f;
        v[i * 14 + size_t(classes[i * 4 + p]) * 4 + p] = 1.f;
      }
    return v;
  };
  const std::vector<float> exact = rows(exactClasses), out = rows(outClasses);
  QosSpec miou;
  miou.metric = QosSpec::Metric::MIoU;
  miou.mapChannels = 3;
  miou.mapPixels = 4;
  // Class 0: both {0, 4}, either {0, 1, 4} -> 2/3; class 1: both {2, 5,
  // 6}, either {1, 2, 5, 6, 7} -> 3/5; class 2: both {3}, either {3, 7}
  // -> 1/2. Mean: (2/3 + 3/5 + 1/2) / 3.
  CHECK(qosValue(miou, out.data(), exact.data(), nullptr, 2, 14) ==
        doctest::Approx(100.0 * (2.0 / 3 + 3.0 / 5 + 0.5) / 3));
  CHECK(qosValue(miou, exact.data(), exact.data(), nullptr, 2, 14) == 100.0);
  CHECK(std::string(metricName(miou.metric)) == "miou");
}

TEST_CASE("P1 adds output changes, P2 adds losses, times add up") {
  // 2 images x 2 classes, labels 0 and 1; exact is right on both.
  std::vector<float> exact = {1, 0, 0, 1};
  Predictor pred(QosSpec{}, {2, 2}, exact, {0, 1}, 2, 10.0);
  CHECK(pred.exactQos() == 100.0);
  // Gene 0 knob 1 moves image 0 halfway to class 1 (still right);
  // gene 1 knob 1 does the same: together they flip image 0 (tie -> first
  // maximum is class 0... so push a little further).
  pred.setChoice(0, 1, {0.4f, 0.6f, 0, 1}, 50.0, -2.0);
  pred.setChoice(1, 1, {0.7f, 0.3f, 0, 1}, 0.0, -3.0);
  Point both = pred.predict({1, 1}, Predictor::Kind::P1);
  // Sum of deltas: image 0 = (1 - 0.6 - 0.3, 0 + 0.6 + 0.3) -> class 1.
  CHECK(both.loss == doctest::Approx(50.0));
  CHECK(both.speedup == doctest::Approx(10.0 / 5.0));
  Point p2 = pred.predict({1, 1}, Predictor::Kind::P2);
  CHECK(p2.loss == doctest::Approx(50.0));
  Point none = pred.predict({0, 0}, Predictor::Kind::P1);
  CHECK(none.loss == 0.0);
  CHECK(none.speedup == 1.0);
  // Gene 1 alone keeps image 0 right under P1.
  CHECK(pred.predict({0, 1}, Predictor::Kind::P1).loss == 0.0);
}

TEST_CASE("calibration recovers a linear bias and reports rank quality") {
  std::vector<Point> predicted, measured;
  for (int i = 0; i < 8; ++i) {
    double l = 0.25 * i;
    double s = 1.0 + 0.1 * i;
    predicted.push_back({l, s});
    // Measured loss is 1.5x the prediction plus 0.2; time ratio 1.1x.
    measured.push_back({0.2 + 1.5 * l, 1.0 / (1.1 / s)});
  }
  Calibration cal = calibrate(predicted, measured);
  CHECK(cal.samples == 8);
  CHECK(cal.loss.a == doctest::Approx(0.2));
  CHECK(cal.loss.b == doctest::Approx(1.5));
  CHECK(cal.time.b == doctest::Approx(1.1));
  CHECK(cal.lossSpearman == doctest::Approx(1.0));
  CHECK(cal.speedupSpearman == doctest::Approx(1.0));
  CHECK(cal.lossMaeCal == doctest::Approx(0.0).epsilon(1e-9));
  CHECK(cal.lossMae > 0.5);
  Point c = cal.apply({1.0, 2.0});
  CHECK(c.loss == doctest::Approx(1.7));
  CHECK(c.speedup == doctest::Approx(2.0 / 1.1));
}

TEST_CASE("a fused node's knobs and configuration line") {
  FusedNodeInfo conv;
  conv.ordinal = 2;
  conv.firstOpId = 5;
  conv.ops = {HpvmOp::Conv, HpvmOp::Add, HpvmOp::Relu, HpvmOp::MaxPool};
  std::vector<int> knobs = nodeKnobs(conv);
  REQUIRE(!knobs.empty());
  CHECK(knobs.front() == 11);
  CHECK(std::find(knobs.begin(), knobs.end(), 121) != knobs.end());
  CHECK(std::find(knobs.begin(), knobs.end(), 269) != knobs.end());
  CHECK(std::find(knobs.begin(), knobs.end(), 301) != knobs.end());
  NodeConfig line = nodeLine(conv, 125);
  CHECK(line.name == "2");
  CHECK(line.key == 5);
  CHECK_FALSE(line.gpu);
  REQUIRE(line.ops.size() == 4);
  CHECK(line.ops[0].knobId == 125);
  CHECK(line.ops[1].knobId == 11);
  // fp16 knobs keep their fused ops in half precision too.
  NodeConfig half = nodeLine(conv, 152);
  CHECK(half.ops[3].knobId == 12);
  FusedNodeInfo pool;
  pool.ops = {HpvmOp::MaxPool};
  CHECK(nodeKnobs(pool) == std::vector<int>{11, 12});
  // HPVM's own CPU parser knows fp32, perf and samp only.
  CHECK(hpvmParsesCpuLine(nodeLine(conv, 125)));
  CHECK(hpvmParsesCpuLine(nodeLine(conv, 231)));
  CHECK_FALSE(hpvmParsesCpuLine(nodeLine(conv, 152)));
  CHECK_FALSE(hpvmParsesCpuLine(nodeLine(conv, 301)));
  // The summary names the knobs HPVM cannot parse as they are (the int8
  // blocks it once called "fp16, bf16").
  CHECK(hpvmUnparsedKnobs({nodeLine(conv, 125), nodeLine(conv, 231)}).empty());
  const int int8 = knobIdByName("int8"), bf16 = knobIdByName("bf16");
  REQUIRE(int8 != 0);
  REQUIRE(bf16 != 0);
  CHECK(hpvmUnparsedKnobs({nodeLine(conv, int8), nodeLine(conv, 125),
                           nodeLine(conv, int8)}) ==
        std::vector<std::string>{"int8"});
  CHECK(hpvmUnparsedKnobs({nodeLine(conv, int8), nodeLine(conv, bf16),
                           nodeLine(conv, 152)}) == // fp16 on fused ops
        std::vector<std::string>{"bf16", "fp16", "int8", "perf_fp16"});
  std::vector<int> compatible = nodeKnobs(conv, true);
  CHECK(compatible.size() == 1 + 18 + 9);
  for (int id : compatible)
    CHECK(hpvmParsesCpuLine(nodeLine(conv, id)));
}

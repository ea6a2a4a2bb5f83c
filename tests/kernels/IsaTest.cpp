// IsaTest.cpp - the runtime's instruction-set level and the convolution
// implementations it may use (approx/Isa.h).
#include "approx/Isa.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <string>

using namespace hpvm::rt::approx;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

TEST_CASE("Isa: the level follows oneDNN's effective ISA, capped by "
          "ONEDNN_MAX_CPU_ISA") {
  const IsaLevel level = isaLevel();
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  auto has = [&](dnnl::cpu_isa need) {
    return (isa & static_cast<unsigned>(need)) == static_cast<unsigned>(need);
  };
  CHECK((level >= IsaLevel::Amx) == has(dnnl::cpu_isa::avx512_core_amx));
  CHECK((level >= IsaLevel::Avx512Vnni) ==
        has(dnnl::cpu_isa::avx512_core_vnni));
  CHECK(haveAvx512() == (level >= IsaLevel::Avx512));
  CHECK(int8Vnni() == (level >= IsaLevel::Avx512Vnni));
  if (!haveAvx512())
    CHECK_FALSE(haveAvx512Vbmi2());
  // A cap names the level exactly (the ISA matrix runs these).
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string name = isaName(level);
  const std::string capped = cap ? cap : "unset";
  MESSAGE("isa level " << name << " (ONEDNN_MAX_CPU_ISA " << capped << ")");
  if (cap && std::strcmp(cap, "AVX2") == 0)
    CHECK(name == "avx2");
  if (cap && std::strcmp(cap, "AVX512_CORE") == 0)
    CHECK(name == "avx512");
  if (cap && std::strcmp(cap, "AVX512_CORE_VNNI") == 0)
    CHECK(name == "avx512_vnni");
}

TEST_CASE("Isa: convolutions whose stride exceeds the kernel never run on "
          "oneDNN's AMX brgconv, which computes them wrong") {
  // oneDNN 2.6's AMX int8/bf16 brgconv skips or crashes on windows with gaps
  // between them (3x3 stride 4 on 13x13: 64 of 1152 outputs wrong); the
  // kernel tests check the results, this checks the choice on every
  // machine.
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  struct Case {
    int64_t k, s, pad, padEnd, h;
    bool gaps;
  };
  for (const Case& c :
       {Case{3, 4, 0, 0, 13, true}, Case{2, 5, 1, 1, 16, true},
        Case{1, 3, 0, -1, 13, true}, Case{3, 2, 1, 1, 16, false},
        Case{3, 3, 1, 1, 16, false}})
    for (dt type : {dt::u8, dt::s8, dt::bf16}) {
      const bool i8 = type != dt::bf16;
      const int64_t o = (c.h + c.pad + c.padEnd - c.k) / c.s + 1;
      dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_direct,
          dnnl::memory::desc({2, 32, c.h, c.h}, type, tag::nhwc),
          dnnl::memory::desc({64, 32, c.k, c.k}, i8 ? dt::s8 : type, tag::any),
          dnnl::memory::desc({2, 64, o, o}, dt::f32, tag::nhwc), {c.s, c.s},
          {c.pad, c.pad}, {c.padEnd, c.padEnd});
      bool exists = true; // (no bf16 convolution below avx512)
      try {
        dnnl::convolution_forward::primitive_desc(d, {}, eng);
      } catch (const dnnl::error&) {
        exists = false;
      }
      if (!exists) {
        CHECK_THROWS_AS(convolutionPd(d, {}, eng), dnnl::error);
        continue;
      }
      const auto pd = convolutionPd(d, {}, eng);
      const std::string impl = pd.impl_info_str();
      INFO("k" << c.k << " s" << c.s << " type " << int(type) << ": " << impl);
      if (c.gaps)
        CHECK_FALSE((impl.rfind("brgconv:", 0) == 0 &&
                     impl.find("amx") != std::string::npos));
      if (!c.gaps) // the choice is oneDNN's own
        CHECK(impl == dnnl::convolution_forward::primitive_desc(d, {}, eng)
                          .impl_info_str());
    }
}

TEST_CASE("Isa: convolutions with two eltwise post-ops in a row (a hard "
          "sigmoid) never run on oneDNN's AMX brgconv, which crashes on them") {
  // oneDNN 2.6's AMX int8 brgconv reads out of bounds while creating a
  // kernel with bias, linear and clip (a MobileNet v3 gate on a 3x2
  // kernel, seen under AddressSanitizer); one eltwise keeps oneDNN's
  // choice. The kernel tests check the results, this the choice.
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::primitive_attr one, two, apart;
  {
    dnnl::post_ops p1, p2, p3;
    p1.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    p2.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, 0.4f, 0.45f);
    p2.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, 0.f, 1.f);
    p3.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, 0.f, 0.5f);
    p3.append_sum(1.f);
    p3.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    one.set_post_ops(p1);
    two.set_post_ops(p2);
    apart.set_post_ops(p3);
  }
  for (dt type : {dt::u8, dt::bf16}) {
    const bool i8 = type != dt::bf16;
    dnnl::convolution_forward::desc d(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        dnnl::memory::desc({2, 32, 9, 11}, type, tag::nhwc),
        dnnl::memory::desc({64, 32, 3, 2}, i8 ? dt::s8 : type, tag::any),
        dnnl::memory::desc({2, 64, 9, 5}, dt::f32, tag::nhwc), {1, 2}, {1, 0},
        {1, 0});
    for (const dnnl::primitive_attr* attr : {&one, &two, &apart}) {
      std::string own;
      try {
        own = dnnl::convolution_forward::primitive_desc(d, *attr, eng)
                  .impl_info_str();
      } catch (const dnnl::error&) { // (no bf16 convolution below avx512)
        CHECK_THROWS_AS(convolutionPd(d, *attr, eng), dnnl::error);
        continue;
      }
      const std::string impl = convolutionPd(d, *attr, eng).impl_info_str();
      INFO("type " << int(type) << ": oneDNN's " << own << ", ours " << impl);
      if (attr == &two)
        CHECK_FALSE((impl.rfind("brgconv:", 0) == 0 &&
                     impl.find("amx") != std::string::npos));
      else
        CHECK(impl == own);
    }
  }
}

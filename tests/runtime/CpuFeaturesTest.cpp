// CpuFeaturesTest.cpp - hpvm_rt/CpuFeatures.h: the build's baseline and
// the features a CPU lacks (what a saved TorchScript module is refused
// with on another CPU).
#include "hpvm_rt/CpuFeatures.h"

#include "approx/Isa.h"

#include <doctest/doctest.h>

#include <string>

using namespace hpvm_rt;

TEST_CASE("CpuFeatures: this CPU has this build's baseline") {
  const std::string features = hpvm::rt::approx::buildFeatures();
  // hpvm_rt is built for x86-64-v3 at least (-march=native here).
  CHECK(features.find(" avx2") != std::string::npos);
  CHECK(features.find(" fma") != std::string::npos);
  CHECK(missingCpuFeatures(features) == "");
  CHECK(missingCpuFeatures("") == "");
}

TEST_CASE("CpuFeatures: unknown and absent features are listed as missing") {
  CHECK(missingCpuFeatures("avx2 nosuchfeature fma") == "nosuchfeature");
  CHECK(missingCpuFeatures("nosuch  other") == "nosuch, other");
  CHECK(cpuHasFeature("avx2"));
  CHECK_FALSE(cpuHasFeature("avx1024"));
  // Each known name answers as CPUID does (whatever this CPU is).
  CHECK(cpuHasFeature("avx512f") == bool(__builtin_cpu_supports("avx512f")));
  CHECK(cpuHasFeature("avx512bf16") ==
        bool(__builtin_cpu_supports("avx512bf16")));
}

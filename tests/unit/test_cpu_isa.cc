// The SIMD paths of our own kernels follow oneDNN's effective ISA, so
// ONEDNN_MAX_CPU_ISA caps the whole engine. ctest runs this test uncapped
// and again under ONEDNN_MAX_CPU_ISA=AVX2 and =SSE41 (with the kernel tests
// whose fallbacks those caps reach), where it checks the cap took hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "worker/engine/cpu_isa.h"
#include "worker/runner/job_runner.h"

namespace torq::engine {
namespace {

std::string cap() {
  const char* c = std::getenv("ONEDNN_MAX_CPU_ISA");
  std::string s = c ? c : "";
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

TEST(CpuIsa, TheKernelsFollowOneDnnsEffectiveIsaAndItsCap) {
  const bool avx2 = simd_allowed(Simd::kAvx2), avx512 = simd_allowed(Simd::kAvx512),
             bf16 = simd_allowed(Simd::kAvx512Bf16);
  // Nested: a level implies the ones below it.
  EXPECT_TRUE(!bf16 || avx512);
  EXPECT_TRUE(!avx512 || avx2);
  const std::string isa = effective_isa_name();
  if (cap() == "sse41") {
    EXPECT_EQ(isa, "sse41");
    EXPECT_FALSE(avx2);
  } else if (cap() == "avx2") {
    EXPECT_EQ(isa, __builtin_cpu_supports("avx2") ? "avx2" : "sse41");
    EXPECT_EQ(avx2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
    EXPECT_FALSE(avx512);
  } else {
    ASSERT_EQ(cap(), "") << "this test knows the caps sse41 and avx2";
    EXPECT_EQ(avx2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
    if (!__builtin_cpu_supports("avx512f")) {
      EXPECT_FALSE(avx512);
    }
  }
  // Every result says which ISA computed it.
  const std::string id = runner::toolchain_identity();
  EXPECT_NE(id.find(", " + isa + ")"), std::string::npos) << id;
}

}  // namespace
}  // namespace torq::engine

// isa_cap(): the ISA cap the coordinator keys its cache and run ids on, read
// as oneDNN reads it (ONEDNN_MAX_CPU_ISA first, then DNNL_MAX_CPU_ISA; "all"
// is no cap), case-blind. ctest also runs this binary capped: the test puts
// the variables back as it found them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "coordinator/fleet/unit_run.h"

namespace torq::coordinator {
namespace {

class Var {
 public:
  explicit Var(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
  }
  ~Var() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  void set(const char* v) const { v ? setenv(name_, v, 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(IsaCap, ReadAsOneDnnReadsIt) {
  const Var onednn("ONEDNN_MAX_CPU_ISA"), dnnl("DNNL_MAX_CPU_ISA");
  onednn.set(nullptr);
  dnnl.set(nullptr);
  EXPECT_EQ(isa_cap(), "");
  onednn.set("AVX2");
  EXPECT_EQ(isa_cap(), "avx2");
  onednn.set("ALL");
  EXPECT_EQ(isa_cap(), "");
  onednn.set(nullptr);
  dnnl.set("Sse41");
  EXPECT_EQ(isa_cap(), "sse41");
  onednn.set("avx512_core");
  EXPECT_EQ(isa_cap(), "avx512_core");  // the newer name wins
}

}  // namespace
}  // namespace torq::coordinator

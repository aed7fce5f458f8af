// A user's decisions stick and nothing is a silent no-op (issue 29), through
// the real torq-gen-config: edit --executor pins what a later discover
// keeps; --force is needed to pin an executor that failed; auto and
// --recompute-cache release pins; a -k or --layer that selects nothing is
// an error naming the closest ids; numeric options are range-checked; edit
// --list shows each layer's index and whole id.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/proc.h"

using namespace torq::test;
using json = nlohmann::ordered_json;

namespace {

class Decisions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("decisions_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + model()).code, 0);
  }
  std::string model() const { return dir_ + "/demo.onnx"; }
  std::string out() const { return dir_ + "/out"; }
  json report() const { return read_json(out() + "/torq_gen_config_demo.json"); }
  json compiler() const { return read_json(out() + "/torq_gen_config_demo_compiler.json"); }
  ProcResult gen(const std::string& args) const {
    return run_cmd("timeout 600 " + bin("torq-gen-config") + " " + args + " 2>&1");
  }
  ProcResult discover(const std::string& extra = "") const {
    return gen("discover --model " + model() + " --output-dir " + out() + " --auto-convert-bf16 --workers 2" + extra);
  }
  ProcResult edit(const std::string& extra) const { return gen("edit --model " + model() + " -o " + out() + extra); }
  std::string dir_;
};

}  // namespace

TEST_F(Decisions, PinnedExecutorsSurviveDiscoverUntilReleased) {
  ASSERT_EQ(discover().code, 0);
  ASSERT_EQ(report()["ops"]["Conv_conv1"]["recommended_executor"], "nss");
  const auto e = edit(" --layer 'Conv_*' --executor host");
  ASSERT_EQ(e.code, 0) << e.output;
  EXPECT_NE(e.output.find("pinned "), std::string::npos) << e.output;
  int convs = 0;
  const json pinned = report();
  for (const auto& [id, op] : pinned["ops"].items())
    if (id.rfind("Conv_", 0) == 0) {
      ++convs;
      EXPECT_EQ(op["recommended_executor"], "host") << id;
      EXPECT_EQ(op["pinned"], true) << id;
    }
  ASSERT_GT(convs, 1);
  // The seed's remedy, rerun: the pins are kept, and said so.
  const auto d = discover(" --skip-mode");
  ASSERT_EQ(d.code, 0) << d.output;
  EXPECT_NE(d.output.find("pinned: " + std::to_string(convs) + " layer(s) keep"), std::string::npos) << d.output;
  const json rep = report();
  const std::string loc = rep["ops"]["Conv_conv1"]["mlir_location"];
  EXPECT_EQ(rep["ops"]["Conv_conv1"]["recommended_executor"], "host");
  EXPECT_EQ(compiler()["op_assignments"][loc]["executor"], "host");
  const auto v = gen("view --model " + model() + " --output-dir " + out() + " Conv_conv1");
  EXPECT_NE(v.output.find("Recommended Executor: host (pinned by edit"), std::string::npos) << v.output;
  // Released: the results decide again.
  const auto a = edit(" --layer Conv_conv1 --executor auto");
  ASSERT_EQ(a.code, 0) << a.output;
  EXPECT_EQ(report()["ops"]["Conv_conv1"]["recommended_executor"], "nss");
  EXPECT_FALSE(report()["ops"]["Conv_conv1"].contains("pinned"));
  EXPECT_EQ(report()["ops"]["Conv_conv2"]["pinned"], true);
  // --recompute-cache releases every pin, and says so.
  const auto r = discover(" --recompute-cache");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("pin(s) released by --recompute-cache"), std::string::npos) << r.output;
  EXPECT_EQ(report()["ops"]["Conv_conv2"]["recommended_executor"], "nss");
}

TEST_F(Decisions, PinningAnExecutorThatFailedNeedsForce) {
  ASSERT_EQ(discover().code, 0);
  ASSERT_EQ(report()["ops"]["Softmax_probabilities"]["executors"]["nss"]["status"], "error");
  const json before = report();
  const auto e = edit(" --layer Softmax_probabilities --executor nss");
  EXPECT_EQ(e.code, 2) << e.output;
  EXPECT_NE(e.output.find("its result is an error on 1 of the layers: Softmax_probabilities"), std::string::npos)
      << e.output;
  EXPECT_NE(e.output.find("--force"), std::string::npos) << e.output;
  EXPECT_EQ(report(), before);  // nothing written
  const auto f = edit(" --layer Softmax_probabilities --executor nss --force");
  ASSERT_EQ(f.code, 0) << f.output;
  EXPECT_EQ(report()["ops"]["Softmax_probabilities"]["recommended_executor"], "nss");
}

TEST_F(Decisions, SelectionsThatMatchNothingAreErrorsNamingTheClosest) {
  ASSERT_EQ(discover().code, 0);
  const auto k = discover(" -k Conv_conv9_nss");
  EXPECT_EQ(k.code, 2) << k.output;
  EXPECT_NE(k.output.find("-k 'Conv_conv9_nss' selects no layer and executor of demo"), std::string::npos) << k.output;
  EXPECT_NE(k.output.find("closest: Conv_conv1_nss"), std::string::npos) << k.output;
  EXPECT_EQ(k.output.find("No critical failures"), std::string::npos) << k.output;
  const auto l = edit(" --layer Cnv_conv1 --executor css");
  EXPECT_EQ(l.code, 2) << l.output;
  EXPECT_NE(l.output.find("no layer matches 'Cnv_conv1'; closest layer ids: Conv_conv1"), std::string::npos)
      << l.output;
  // The seed's <OpType>_<index>, as -k accepts it.
  const auto s = edit(" --layer Conv_0 --executor css");
  ASSERT_EQ(s.code, 0) << s.output;
  EXPECT_NE(s.output.find("pinned 1 layer(s): Conv_conv1"), std::string::npos) << s.output;
}

TEST_F(Decisions, NumericOptionsAreRangeCheckedWithTheirOwnMessage) {
  const auto t = discover(" --collect-timing --timing-runs 0");
  EXPECT_EQ(t.code, 2) << t.output;
  EXPECT_NE(t.output.find("--timing-runs"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("not in range"), std::string::npos) << t.output;
  ASSERT_EQ(discover().code, 0);
  const auto a = edit(" --layer Conv_conv1 --tolerance-avg=-1");
  EXPECT_EQ(a.code, 2) << a.output;
  EXPECT_NE(a.output.find("--tolerance-avg must be a non-negative number"), std::string::npos) << a.output;
  const auto w = discover(" --allowed-wrong 2");
  EXPECT_EQ(w.code, 2) << w.output;
  EXPECT_NE(w.output.find("--allowed-wrong"), std::string::npos) << w.output;
}

TEST_F(Decisions, EditListShowsIndexAndWholeId) {
  ASSERT_EQ(discover().code, 0);
  const auto l = edit(" --list");
  ASSERT_EQ(l.code, 0) << l.output;
  EXPECT_NE(l.output.find("Index"), std::string::npos) << l.output;
  const json rep = report();
  for (const auto& [id, op] : rep["ops"].items()) {
    const std::string row_start = std::to_string(op["_node_index"].get<int>());
    const size_t at = l.output.find(" " + id + " ");
    ASSERT_NE(at, std::string::npos) << id << "\n" << l.output;
    const size_t line = l.output.rfind('\n', at) + 1;
    EXPECT_EQ(l.output.substr(line, at - line).find(row_start), 2u) << l.output.substr(line, 80);
  }
}

// One report, one variant: the report records what it was made from; a
// discover, -k retest or run of another variant is refused naming the flag
// (or, with --recompute-cache, replaces the report whole).
TEST_F(Decisions, VariantsNeverShareAReport) {
  const auto fp32 = gen("discover --model " + model() + " --output-dir " + out() + " --workers 2");
  ASSERT_EQ(fp32.code, 0) << fp32.output;
  const json rep = report();
  ASSERT_TRUE(rep.contains("variant")) << rep.dump().substr(0, 300);
  EXPECT_EQ(rep["variant"]["dtype"], "fp32");
  EXPECT_EQ(rep["variant"]["executors"], "sim");
  EXPECT_EQ(rep["variant"]["model_sha256"].get<std::string>().size(), 64u);
  // The seed manual's remedy for "FP32 not supported" into the same folder.
  const auto bf16 = discover(" --skip-mode");
  EXPECT_EQ(bf16.code, 2) << bf16.output;
  EXPECT_NE(bf16.output.find("was made from the fp32 variant; this one is bf16"), std::string::npos) << bf16.output;
  EXPECT_NE(bf16.output.find("another --output-dir, or --recompute-cache"), std::string::npos) << bf16.output;
  EXPECT_EQ(report(), rep);
  // Replaced whole by --recompute-cache: nothing of the fp32 results stays.
  const auto replaced = discover(" --recompute-cache");
  ASSERT_EQ(replaced.code, 0) << replaced.output;
  EXPECT_NE(replaced.output.find("replacing "), std::string::npos) << replaced.output;
  const json b = report();
  EXPECT_EQ(b["variant"]["dtype"], "bf16");
  EXPECT_EQ(b["variant"]["bf16_rounding"], "truncate");
  EXPECT_EQ(b["ops"]["Softmax_probabilities"]["executors"]["nss"]["status"], "error");
  EXPECT_EQ(b["ops"]["Conv_conv1"]["executors"]["nss"]["status"], "success");
  // A -k retest, a run, and another rounding, each without the bf16 report's flags.
  const auto k = gen("discover --model " + model() + " --output-dir " + out() + " -k Conv_conv1_nss");
  EXPECT_EQ(k.code, 2) << k.output;
  EXPECT_NE(k.output.find("this one is fp32 (add --auto-convert-bf16)"), std::string::npos) << k.output;
  const auto r = gen("run --model " + model() + " --output-dir " + out());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("this one is fp32 (add --auto-convert-bf16)"), std::string::npos) << r.output;
  const auto rne = discover(" --bf16-rounding rne -k Conv_conv1_nss");
  EXPECT_EQ(rne.code, 2) << rne.output;
  EXPECT_NE(rne.output.find("--bf16-rounding truncate; this one asks for rne"), std::string::npos) << rne.output;
  EXPECT_EQ(report(), b);
  // The matching flags go through.
  const auto ok = gen("run --model " + model() + " --output-dir " + out() + " --auto-convert-bf16");
  EXPECT_EQ(ok.code, 0) << ok.output;
}

// End-to-end accuracy (issue 29): a converted model's assigned run of the
// whole model is compared with its fp32 original on the same input, beside
// the executors' error against the converted model's own reference. Real
// torq-gen-config, workers and store; the figure checked against the
// outputs torq-sim computes for both models on that input, compared by
// numpy.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "tests/integration/proc.h"

using namespace torq::test;
using json = nlohmann::ordered_json;

namespace {

std::string gen() { return bin("torq-gen-config"); }

class EndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("e2e_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + model()).code, 0);
  }
  std::string model() const { return dir_ + "/demo.onnx"; }
  std::string out() const { return dir_ + "/out"; }
  std::string report(const std::string& name = "demo") const { return out() + "/torq_gen_config_" + name + ".json"; }
  std::string dir_;
};

// A python3 one-off (numpy, onnx: ci/install-deps.sh), its stdout.
std::string python(const std::string& dir, const std::string& code) {
  const std::string path = dir + "/helper.py";
  std::ofstream(path) << code;
  const auto r = run_cmd("/usr/bin/python3 " + path);
  EXPECT_EQ(r.code, 0) << r.output;
  return r.output;
}

}  // namespace

TEST_F(EndToEnd, ABf16RunReportsItsErrorAgainstTheFp32OriginalBesideTheExecutorsError) {
  auto d = run_cmd(gen() + " discover -q --model " + model() + " --output-dir " + out() + " --auto-convert-bf16");
  ASSERT_EQ(d.code, 0) << d.output;
  const auto r = run_cmd(gen() + " run --model " + model() + " --output-dir " + out() + " --auto-convert-bf16");
  ASSERT_EQ(r.code, 0) << r.output;
  const json fm = read_json(report())["full_model"];
  ASSERT_TRUE(fm.contains("end_to_end")) << fm.dump(2);
  const json& e = fm["end_to_end"];
  ASSERT_FALSE(e.contains("error")) << e.dump(2);
  EXPECT_NE(e["reference"].get<std::string>().find("fp32 original"), std::string::npos) << e.dump(2);
  // The sim's nss computes as the converted model's reference does: the
  // executors cost nothing against it, the conversion costs something
  // against the original.
  EXPECT_EQ(fm["metrics"]["max_abs_diff"], 0.0) << fm.dump(2);
  EXPECT_EQ(fm["metrics"]["reference"], "this (converted) model on the fp32 host reference");
  // (The demo's outputs are probabilities: within tt-xla's allclose(1e-2,
  // 1e-2), whose PCC is then 1.)
  EXPECT_GT(e["max_abs_diff"].get<double>(), 1e-4) << e.dump(2);
  EXPECT_GT(e["max_rel_diff"].get<double>(), 1e-3) << e.dump(2);
  EXPECT_GT(e["pcc"].get<double>(), 0.99) << e.dump(2);
  EXPECT_EQ(e["outputs"].size(), fm["metrics"]["outputs"].size());
  EXPECT_NE(r.output.find("end to end: the outputs are also compared with the fp32 original " + model()),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("End to end, against the fp32 original"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(above: against this converted model on the fp32 host reference)"), std::string::npos)
      << r.output;
}

TEST_F(EndToEnd, AnInt8RunIsComparedWithTheModelItWasQuantizedFrom) {
  auto d = run_cmd(gen() + " discover -q --model " + model() + " --output-dir " + out() + " --quantize");
  ASSERT_EQ(d.code, 0) << d.output;
  const auto r = run_cmd(gen() + " run -q --model " + model() + " --output-dir " + out() + " --quantize");
  ASSERT_EQ(r.code, 0) << r.output;
  const json fm = read_json(report("demo_quant"))["full_model"];
  ASSERT_TRUE(fm.contains("end_to_end")) << fm.dump(2);
  const json& e = fm["end_to_end"];
  ASSERT_FALSE(e.contains("error")) << e.dump(2);
  // int8 rounds every activation: a real loss, far from noise.
  EXPECT_GT(e["max_abs_diff"].get<double>(), 1e-3) << e.dump(2);
  EXPECT_GT(e["max_rel_diff"].get<double>(), 1e-2) << e.dump(2);
  EXPECT_GT(e["pcc"].get<double>(), 0.9) << e.dump(2);
}

// The figure is what it says: the original's outputs on the run's input.
// An fp32 model run with --original naming a perturbed copy: the executors
// reproduce the model exactly, so the end-to-end figure is the model's
// outputs against the copy's, which torq-sim computes on the same seeded
// input (the run's --seed) and numpy compares.
TEST_F(EndToEnd, TheFigureIsTheOriginalsOutputsOnTheSameInputComparedIndependently) {
  const std::string other = dir_ + "/other.onnx";
  python(dir_, "import onnx, numpy as np\nfrom onnx import numpy_helper as nh\n"
               "m = onnx.load('" + model() + "')\n"
               "for i, t in enumerate(m.graph.initializer):\n"
               "    a = nh.to_array(t)\n"
               "    if a.dtype == np.float32 and a.ndim == 4:\n"
               "        m.graph.initializer[i].CopyFrom(nh.from_array((a * 1.05).astype(np.float32), t.name))\n"
               "        break\n"
               "onnx.save(m, '" + other + "')\n");
  auto d = run_cmd(gen() + " discover -q --model " + model() + " --output-dir " + out() + " --seed 7");
  ASSERT_EQ(d.code, 0) << d.output;
  const auto r = run_cmd(gen() + " run -q --model " + model() + " --output-dir " + out() + " --seed 7 --original " + other);
  ASSERT_EQ(r.code, 0) << r.output;
  const json fm = read_json(report())["full_model"];
  ASSERT_EQ(fm["metrics"]["max_abs_diff"], 0.0) << fm.dump(2);  // fp32 executors: the model's own outputs
  ASSERT_TRUE(fm.contains("end_to_end")) << fm.dump(2);
  const json& e = fm["end_to_end"];
  ASSERT_FALSE(e.contains("error")) << e.dump(2);
  for (const char* m : {"demo", "other"}) {
    const auto s = run_cmd(bin("torq-sim") + " run " + dir_ + "/" + m + ".onnx --seed 7 -o " + dir_ + "/" + m + ".npy");
    ASSERT_EQ(s.code, 0) << s.output;
  }
  const std::string figures = python(dir_, "import numpy as np\n"
                                           "a = np.load('" + dir_ + "/demo.npy').astype(np.float64).ravel()\n"
                                           "b = np.load('" + dir_ + "/other.npy').astype(np.float64).ravel()\n"
                                           "print(repr(np.corrcoef(a, b)[0, 1]), repr(np.abs(a - b).max()),\n"
                                           "      int(np.allclose(a, b, rtol=1e-2, atol=1e-2)))\n");
  double pcc = 0, max_abs = 0;
  int allclose = 1;
  ASSERT_EQ(std::sscanf(figures.c_str(), "%lf %lf %d", &pcc, &max_abs, &allclose), 3) << figures;
  // Beyond tt-xla's allclose(1e-2, 1e-2) (whose PCC would be 1): the
  // figure is the correlation.
  ASSERT_EQ(allclose, 0) << "the perturbation is too small: " << figures;
  EXPECT_NEAR(e["pcc"].get<double>(), pcc, 1e-9) << e.dump(2);
  EXPECT_NEAR(e["max_abs_diff"].get<double>(), max_abs, 1e-6 * max_abs) << e.dump(2);
}

TEST_F(EndToEnd, ASubgraphRunSaysItMeasuresNoEndToEndFigure) {
  auto d = run_cmd(gen() + " discover -q --model " + model() + " --output-dir " + out() +
                   " --auto-convert-bf16 --subgraph-from 1 --subgraph-to 3");
  ASSERT_EQ(d.code, 0) << d.output;
  const auto r = run_cmd(gen() + " run --model " + model() + " --output-dir " + out() +
                         " --auto-convert-bf16 --subgraph-from 1 --subgraph-to 3");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("end to end: not measured for a subgraph"), std::string::npos) << r.output;
}

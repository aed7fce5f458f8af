// Hostile inputs (issue 30), each the reproduction of a finding, run
// against the real binaries with a time limit: models that crashed ONNX's
// shape inference (SIGFPE) or every worker, JSON nested deep enough to
// overflow the stack, preset expressions likewise, out-of-range report
// values and a config string that is not UTF-8. Each must be one clear
// error naming the file and the field, node or tensor, exit 2: no signal,
// no hang.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>

#include <onnx/onnx_pb.h>

#include "tests/integration/proc.h"

using namespace torq::test;

namespace {

std::string gen() { return bin("torq-gen-config"); }

// `cmd` under a 60 s limit (timeout(1) exits 124 on a hang).
ProcResult limited(const std::string& cmd) { return run_cmd("timeout -s KILL 60 " + cmd); }

class HostileInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("hostile_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  // The demo model with `mutate` applied, saved as NAME.onnx.
  std::string mutated(const std::string& name, const std::function<void(onnx::ModelProto&)>& mutate) {
    const std::string demo = dir_ + "/demo.onnx";
    if (!std::ifstream(demo)) {
      EXPECT_EQ(run_cmd(bin("torq-sim") + " demo --save " + demo).code, 0);
    }
    onnx::ModelProto m;
    std::ifstream in(demo, std::ios::binary);
    EXPECT_TRUE(m.ParseFromIstream(&in));
    mutate(m);
    const std::string path = dir_ + "/" + name + ".onnx";
    std::ofstream out(path, std::ios::binary);
    EXPECT_TRUE(m.SerializeToOstream(&out));
    return path;
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string dir_;
};

onnx::NodeProto* first_node(onnx::ModelProto& m, const std::string& op) {
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == op) return &n;
  ADD_FAILURE() << "no " << op << " node";
  return nullptr;
}

// The first initializer with 4 dimensions (a Conv weight).
onnx::TensorProto* weight(onnx::ModelProto& m) {
  for (auto& t : *m.mutable_graph()->mutable_initializer())
    if (t.dims_size() == 4) return &t;
  ADD_FAILURE() << "no 4-D initializer";
  return nullptr;
}

void set_ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  onnx::AttributeProto* a = nullptr;
  for (auto& x : *n->mutable_attribute())
    if (x.name() == name) a = &x;
  if (!a) {
    a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
  }
  a->clear_ints();
  for (int64_t x : v) a->add_ints(x);
}

}  // namespace

// Each model is refused at import by discover, quantize and the
// coordinator, within seconds, naming the file and what is wrong.
TEST_F(HostileInputs, MalformedModelsAreRefusedAtImportNamingTheTensorOrNode) {
  struct Case {
    std::string name, expect;
    std::function<void(onnx::ModelProto&)> mutate;
  };
  const std::vector<Case> cases = {
      {"zero_strides", "attribute strides holds 0 (must be >= 1)",
       [](onnx::ModelProto& m) { set_ints(first_node(m, "Conv"), "strides", {0, 0}); }},
      {"half_bytes", "bytes of data for shape",
       [](onnx::ModelProto& m) {
         onnx::TensorProto* t = weight(m);
         if (t->has_raw_data()) {
           t->mutable_raw_data()->resize(t->raw_data().size() / 2);
         } else {
           t->mutable_float_data()->Truncate(t->float_data_size() / 2);
           std::string raw(static_cast<size_t>(t->float_data_size()) * 4, '\0');
           t->clear_float_data();
           t->set_raw_data(raw);
         }
       }},
      {"negative_dim", "negative dimension in shape", [](onnx::ModelProto& m) { weight(m)->set_dims(0, -8); }},
      {"huge_dim", "has more than 2147483648 elements",
       [](onnx::ModelProto& m) { weight(m)->set_dims(0, int64_t{1} << 40); }},
      {"external_data", "external data is not accepted",
       [](onnx::ModelProto& m) {
         onnx::TensorProto* t = weight(m);
         t->clear_raw_data();
         t->clear_float_data();
         t->set_data_location(onnx::TensorProto::EXTERNAL);
         auto* e = t->add_external_data();
         e->set_key("location");
         e->set_value("/dev/zero");
       }},
      {"huge_input", "has more than 2147483648 elements",
       [](onnx::ModelProto& m) {
         auto* shape = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
         shape->mutable_dim(shape->dim_size() - 1)->set_dim_value(int64_t{1} << 62);
       }},
  };
  for (const Case& c : cases) {
    const std::string model = mutated(c.name, c.mutate);
    for (const std::string& cmd :
         {gen() + " discover -q --model " + model + " --output-dir " + dir_ + "/out-" + c.name,
          gen() + " quantize --model " + model + " --output " + dir_ + "/" + c.name + "_q.onnx",
          bin("torq-coordinator") + " --model " + model + " --bind tcp://127.0.0.1:0 --db " + dir_ + "/db-" +
              c.name + " --export " + dir_ + "/exp-" + c.name}) {
      const auto r = limited(cmd);
      EXPECT_EQ(r.code, 2) << c.name << ": " << cmd << "\n" << r.output;
      EXPECT_NE(r.output.find(model), std::string::npos) << c.name << ": names no file\n" << r.output;
      EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.name << ": " << cmd << "\n" << r.output;
      EXPECT_EQ(r.output.find("crash"), std::string::npos) << c.name << "\n" << r.output;
    }
  }
}

// A report nested 10^5 deep overflowed the stack of view, edit and run;
// one 10^4 deep was rewritten by edit at 1000 times its size.
TEST_F(HostileInputs, JsonNestedTooDeepIsRefusedWithItsFileName) {
  for (const int depth : {100000, 10000, 65}) {
    const std::string deep = std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']');
    const std::string report = write("torq_gen_config_deep.json", "{\"version\": \"1.1\", \"x\": " + deep + ", \"ops\": {}}");
    for (const std::string& cmd : {gen() + " view " + report, gen() + " edit " + report + " --list",
                                   gen() + " compare " + report + " " + report}) {
      const auto r = limited(cmd);
      EXPECT_EQ(r.code, 2) << depth << ": " << cmd << "\n" << r.output.substr(0, 2000);
      EXPECT_NE(r.output.find(report + ": JSON nested deeper than 64 levels (line 1)"), std::string::npos)
          << depth << ": " << cmd << "\n" << r.output.substr(0, 2000);
    }
  }
}

TEST_F(HostileInputs, OutOfRangeReportValuesNameTheirFileAndField) {
  const std::string ok_op =
      R"("Conv_a": {"_node_index": 0, "op_type": "Conv", "executors": {"nss": {"status": "success", "pcc": 1.0}}})";
  struct Case {
    std::string body, expect;
  };
  const std::vector<Case> cases = {
      {R"({"ops": {"Conv_a": {"_node_index": 0, "executors": {"nss": {"status": "success", "pcc": 1.2e29}}}}})",
       "ops.Conv_a.executors.nss.pcc: 1.2e+29 out of range (a PCC is within -1 .. 1)"},
      {R"({"default_tolerance": {"fp_max_tol": -0.5}, "ops": {)" + ok_op + "}}",
       "default_tolerance.fp_max_tol: -0.5 out of range (expected 0 .. inf)"},
      {R"({"default_tolerance": {"allowed_wrong": 2}, "ops": {)" + ok_op + "}}",
       "default_tolerance.allowed_wrong: 2 out of range (expected 0 .. 1)"},
      {R"({"ops": {)" + ok_op + R"(, "Relu_b": {"op_type": "Relu"}}})",
       "ops.Relu_b: no _node_index, while 1 of the 2 layers have one"},
      {R"({"ops": {"Conv_a": {"_node_index": 0, "executors": {"nss": {"status": "success", "pcc": 1e400}}}}})",
       "number overflow"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string report = write("torq_gen_config_r" + std::to_string(i++) + ".json", c.body);
    const auto r = limited(gen() + " view " + report);
    EXPECT_EQ(r.code, 2) << c.body << "\n" << r.output;
    EXPECT_NE(r.output.find(report + ": "), std::string::npos) << "names no file: " << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.body << "\n" << r.output;
  }
}

// A preset of 10^5 nested parentheses overflowed the stack of validate,
// --collect-only and runs; a test_config reason that is not UTF-8 passed
// validate, then failed every run at its last write.
TEST_F(HostileInputs, SpecExpressionsAndConfigStringsAreCheckedByValidate) {
  const std::string demo = dir_ + "/demo.onnx";
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + demo).code, 0);
  const std::string deep = std::string(100000, '(') + "demo" + std::string(100000, ')');
  const std::string spec = write("deep.yaml", "models: [" + demo + "]\npresets:\n  deep: {k: \"" + deep + "\"}\n");
  // (validate's exit for an invalid file is 1)
  auto r = limited(bin("torq-coordinator") + " validate " + spec);
  EXPECT_EQ(r.code, 1) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("more than 1000 words and parentheses"), std::string::npos) << r.output.substr(0, 2000);
  EXPECT_LT(r.output.size(), 2000u) << "the expression is not echoed whole";
  const std::string nested = std::string(65, '(') + "demo" + std::string(65, ')');
  const std::string spec2 = write("nested.yaml", "models: [" + demo + "]\npresets:\n  deep: {k: \"" + nested + "\"}\n");
  r = limited(bin("torq-coordinator") + " validate " + spec2);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("nested deeper than 64 levels of '(' and 'not'"), std::string::npos) << r.output;
  r = limited(bin("torq-coordinator") + " --spec " + spec2 + " --collect-only -k \"" + nested + "\"");
  EXPECT_EQ(r.code, 2) << r.output;
  const std::string config = write("cfg.yaml", "test_config:\n  demo-fp32-sim-discover:\n    reason: \"bad \xff byte\"\n");
  const std::string spec3 =
      write("utf8.yaml", "models: [" + demo + "]\nmodes: [discover]\ntest_config: [" + config + "]\n");
  r = limited(bin("torq-coordinator") + " validate " + spec3);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(config + ":3:13: reason is not valid UTF-8 (byte 4 of the string)"), std::string::npos)
      << r.output;
}

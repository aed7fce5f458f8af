// Op keys (pipeline/model/op_key.h) of the demo CNN in fp32, bf16 and int8 QDQ,
// and the op-support matrix (pipeline/report/op_matrix.h): grouping, occurrences
// counted once per model, blocked / falling-back models, order, CSV.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "pipeline/model/model_import.h"
#include "pipeline/model/op_key.h"
#include "pipeline/report/op_matrix.h"
#include "worker/quant/quantize_model.h"
#include "worker/sim/demo_model.h"

using namespace torq::pipeline;
using namespace torq::pipeline::history;

namespace {

LayerRecord occurrence(const std::string& id, const std::string& op, std::map<Executor, Status> st) {
  LayerRecord l;
  l.id = id;
  l.op = op;
  for (const auto& [e, s] : st)
    l.executors[e] = ExecRecord{s, s == Status::kError ? std::string("unsupported: ") + executor_name(e) : "", -1, -1};
  return l;
}

TestRecord model_test(const std::string& model, std::vector<LayerRecord> layers, const std::string& mode = "discover") {
  TestRecord t;
  t.id = model + "-fp32-sim-" + mode;
  t.model = model;
  t.variant = "fp32";
  t.target = "sim";
  t.mode = mode;
  t.layers = std::move(layers);
  return t;
}

constexpr auto S = Status::kSuccess;
constexpr auto D = Status::kDifference;
constexpr auto E = Status::kError;
constexpr auto N = Executor::kNss;
constexpr auto C = Executor::kCss;
constexpr auto H = Executor::kHost;

}  // namespace

TEST(OpKey, NamesTypeAttributesAndInputsOfEachLayer) {
  const auto fp32 = ImportedModel::from_bytes(torq::sim::build_demo_model(), "demo");
  const auto keys = layer_op_keys(*fp32);
  ASSERT_EQ(keys.size(), 14u);
  EXPECT_EQ(keys[0],
            "Conv(group=1, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]) f32[1,3,64,64], "
            "f32[16,3,3,3], f32[16]");
  EXPECT_EQ(keys[2], "MaxPool(kernel_shape=[2,2], strides=[2,2]) f32[1,16,64,64]");
  EXPECT_EQ(keys[13], "Softmax(axis=1) f32[1,10]");
  ImportOptions bf16;
  bf16.convert_bf16 = true;
  EXPECT_EQ(layer_op_keys(*ImportedModel::from_bytes(torq::sim::build_demo_model(), "demo", bf16))[13],
            "Softmax(axis=1) bf16[1,10]");
  // A QDQ layer: the compute op on its quantized inputs.
  torq::quant::QuantizeOptions q;
  q.num_calib = 2;
  const auto int8 =
      ImportedModel::from_bytes(torq::quant::quantize_model(fp32->proto(), q).qdq.model.SerializeAsString(), "d");
  const std::string conv = layer_op_keys(*int8)[0];
  EXPECT_EQ(conv.rfind("QDQ Conv(group=1, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]) i8[1,3,64,64], "
                       "i8[16,3,3,3], i32[16]",
                       0),
            0u)
      << conv;
}

TEST(OpMatrix, GroupsOpsAcrossModelsAndSortsByModelsBlocked) {
  const std::string conv = "Conv(group=1) f32[1,3,8,8], f32[4,3,3,3]", relu = "Relu() f32[1,4,8,8]",
                    lp = "LpNormalization(axis=1) f32[1,4]", sm = "Softmax(axis=1) f32[1,4]";
  const std::vector<TestRecord> tests = {
      model_test("a", {occurrence("Conv_c", conv, {{N, S}, {C, S}, {H, S}}), occurrence("Relu_r", relu, {{N, S}}),
                       occurrence("Softmax_s", sm, {{N, E}, {C, S}, {H, S}})}),
      // The run test of model a: the same layers, not counted again.
      model_test("a", {occurrence("Conv_c", conv, {{N, S}, {C, S}, {H, S}})}, "run"),
      model_test("b", {occurrence("Conv_c", conv, {{N, D}, {C, S}, {H, S}}), occurrence("Relu_r1", relu, {{N, S}}),
                       occurrence("Relu_r2", relu, {{N, S}}), occurrence("Lp_l", lp, {{N, E}, {C, E}, {H, E}})})};
  const OpMatrix m = op_matrix(tests);
  EXPECT_EQ(m.executors, (std::vector<Executor>{N, C, H}));
  ASSERT_EQ(m.rows.size(), 4u);
  EXPECT_EQ(m.rows[0].op, lp);  // blocks b
  EXPECT_EQ(m.rows[0].blocked, std::set<std::string>{"b"});
  EXPECT_EQ(m.rows[0].op_type, "LpNormalization");
  EXPECT_EQ(m.rows[1].op, sm);  // falls back in a
  EXPECT_EQ(m.rows[1].falls_back, std::set<std::string>{"a"});
  EXPECT_EQ(m.rows[2].op, relu);  // 2 models, 3 occurrences
  EXPECT_EQ(m.rows[2].occurrences, 3);
  EXPECT_EQ(m.rows[3].op, conv);  // 2 models, 2 occurrences
  EXPECT_EQ(m.rows[3].models, (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(cell_text(m.rows[3].executors.at(N)), "success 1, difference 1");
  EXPECT_EQ(cell_text(m.rows[0].executors.at(C)), "error");
  EXPECT_EQ(ops_csv(m),
            "target,op_type,op,nss,css,host,occurrences,models,blocked_models,fallback_models,nss_error,css_error,"
            "host_error\n"
            "sim,LpNormalization,\"LpNormalization(axis=1) f32[1,4]\",error,error,error,1,b,b,,unsupported: nss,"
            "unsupported: css,unsupported: host\n"
            "sim,Softmax,\"Softmax(axis=1) f32[1,4]\",error,success,success,1,a,,a,unsupported: nss,,\n"
            "sim,Relu,\"Relu() f32[1,4,8,8]\",success,-,-,3,a;b,,,,,\n"
            "sim,Conv,\"Conv(group=1) f32[1,3,8,8], f32[4,3,3,3]\",\"success 1, difference 1\",success,success,2,"
            "a;b,,,,,\n");
}

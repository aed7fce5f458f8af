// Concat -> BatchNormalization -> Relu in one pass (act_fusion.h,
// kernels/concat_norm.h). ConcatNormRelu on nhwc inputs (its fast path),
// plain ones and other layouts (made plain) against a scalar reference of
// the formula it documents; in a session, run() (fused where planned)
// against run_all() (never fused: oneDNN's BatchNormalization, then Relu),
// and the cases the planner must leave alone. bf16: test_concat_norm_bf16.cc.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/engine/dnnl_util.h"
#include "worker/engine/kernels/concat_norm.h"
#include "worker/engine/profile.h"
#include "worker/engine/session.h"
#include "tests/unit/graph_builder.h"

using namespace torq::engine;

using namespace torq::test;

namespace {

Tensor random_tensor(Shape shape, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

Tensor in_layout(const Tensor& plain, dnnl::memory::format_tag tag, DnnlEnv& env) {
  return reorder_to(plain, dnnl::memory::desc(to_dims(plain.shape()), dnnl::memory::data_type::f32, tag), DType::kF32,
                    env);
}

struct Params {
  Tensor scale, bias, mean, var;
  float eps = 1e-5f;
  FusedNorm norm() const { return {&scale, &bias, &mean, &var, eps}; }
};

Params random_params(int64_t c) {
  return {random_tensor({c}, 11, 0.5f, 1.5f), random_tensor({c}, 12, -1.f, 1.f), random_tensor({c}, 13, -0.5f, 0.5f),
          random_tensor({c}, 14, 0.1f, 2.f)};
}

// relu(BN(concat)) by the formula concat_norm.h documents, one element at a time.
Tensor reference(const std::vector<Tensor>& plain_ins, const Params& p) {
  Shape shape = plain_ins[0].shape();
  shape[1] = 0;
  for (const Tensor& t : plain_ins) shape[1] += t.dim(1);
  Tensor out(DType::kF32, shape);
  const int64_t n = shape[0], c = shape[1], inner = out.numel() / (n * c);
  for (int64_t b = 0; b < n; ++b) {
    int64_t off = 0;
    for (const Tensor& t : plain_ins) {
      for (int64_t k = 0; k < t.dim(1); ++k) {
        const int64_t ch = off + k;
        const float mul = p.scale.data<float>()[ch] * (1.f / std::sqrt(p.var.data<float>()[ch] + p.eps));
        for (int64_t i = 0; i < inner; ++i) {
          const float x = t.data<float>()[(b * t.dim(1) + k) * inner + i];
          const float v = std::fma(x - p.mean.data<float>()[ch], mul, p.bias.data<float>()[ch]);
          out.data<float>()[(b * c + ch) * inner + i] = v < 0.f ? 0.f : v;
        }
      }
      off += t.dim(1);
    }
  }
  return out;
}

void expect_identical(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_TRUE(a.is_plain() && b.is_plain());
  ASSERT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

TEST(ConcatNorm, NhwcInputsGiveNhwcOutputEqualToReference) {
  DnnlEnv env;
  // Channel counts off the vector width (16, 32, 5) exercise the tails.
  const std::vector<Tensor> plain{random_tensor({2, 16, 7, 9}, 1, -2, 2), random_tensor({2, 32, 7, 9}, 2, -2, 2),
                                  random_tensor({2, 5, 7, 9}, 3, -2, 2)};
  const Params p = random_params(53);
  std::vector<Tensor> nhwc;
  std::vector<const Tensor*> ins;
  for (const Tensor& t : plain) nhwc.push_back(in_layout(t, dnnl::memory::format_tag::acdb, env));
  for (const Tensor& t : nhwc) ins.push_back(&t);
  ConcatNormRelu k;
  const Tensor y = k.run(ins, {2, 53, 7, 9}, p.norm(), env);
  ASSERT_FALSE(y.is_plain());
  EXPECT_TRUE(md_of(y) == dnnl::memory::desc({2, 53, 7, 9}, dnnl::memory::data_type::f32,
                                             dnnl::memory::format_tag::acdb));
  const Tensor ref = reference(plain, p);
  expect_identical(to_plain(y, env), ref);
  // Relu did clamp something, and something stayed positive.
  int zeros = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) zeros += ref.data<float>()[i] == 0.f;
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, ref.numel());
}

TEST(ConcatNorm, PlainAndBlockedInputsGivePlainOutputEqualToReference) {
  DnnlEnv env;
  const std::vector<Tensor> plain{random_tensor({1, 16, 4, 6}, 4, -2, 2), random_tensor({1, 32, 4, 6}, 5, -2, 2)};
  const Params p = random_params(48);
  const Tensor ref = reference(plain, p);
  ConcatNormRelu k;
  // Both plain.
  expect_identical(k.run({&plain[0], &plain[1]}, {1, 48, 4, 6}, p.norm(), env), ref);
  // Channel-blocked (nChw16c): no input is nhwc, so plain.
  const Tensor a16 = in_layout(plain[0], dnnl::memory::format_tag::nChw16c, env);
  const Tensor b16 = in_layout(plain[1], dnnl::memory::format_tag::nChw16c, env);
  expect_identical(k.run({&a16, &b16}, {1, 48, 4, 6}, p.norm(), env), ref);
  // Rank 3 (plain path with another inner size).
  const std::vector<Tensor> r3{random_tensor({2, 3, 10}, 6, -2, 2), random_tensor({2, 4, 10}, 7, -2, 2)};
  const Params p7 = random_params(7);
  expect_identical(k.run({&r3[0], &r3[1]}, {2, 7, 10}, p7.norm(), env), reference(r3, p7));
}

TEST(ConcatNorm, OtherLayoutsBesideNhwcAreReorderedToIt) {
  DnnlEnv env;
  // A pooling's plain or channel-blocked output before conv outputs in nhwc.
  const std::vector<Tensor> plain{random_tensor({1, 16, 5, 3}, 9, -2, 2), random_tensor({1, 32, 5, 3}, 10, -2, 2),
                                  random_tensor({1, 16, 5, 3}, 15, -2, 2)};
  const Params p = random_params(64);
  const Tensor ref = reference(plain, p);
  const Tensor b_nhwc = in_layout(plain[1], dnnl::memory::format_tag::acdb, env);
  const Tensor c16 = in_layout(plain[2], dnnl::memory::format_tag::nChw16c, env);
  ConcatNormRelu k;
  const Tensor y = k.run({&plain[0], &b_nhwc, &c16}, {1, 64, 5, 3}, p.norm(), env);
  ASSERT_FALSE(y.is_plain());
  EXPECT_TRUE(md_of(y) == dnnl::memory::desc({1, 64, 5, 3}, dnnl::memory::data_type::f32,
                                             dnnl::memory::format_tag::acdb));
  expect_identical(to_plain(y, env), ref);
}

TEST(ConcatNorm, NewParametersAreReloaded) {
  DnnlEnv env;
  const std::vector<Tensor> plain{random_tensor({1, 8, 3, 3}, 8, -2, 2)};
  const Params p1 = random_params(8);
  Params p2 = random_params(8);
  p2.bias = random_tensor({8}, 21, 2.f, 3.f);
  ConcatNormRelu k;
  expect_identical(k.run({&plain[0]}, {1, 8, 3, 3}, p1.norm(), env), reference(plain, p1));
  expect_identical(k.run({&plain[0]}, {1, 8, 3, 3}, p2.norm(), env), reference(plain, p2));
}

// ---------------------------------------------------------------- in a session

void add_init(onnx::GraphProto* g, const std::string& name, const Tensor& t) {
  torq::test::add_init(g, name, t.shape(), std::vector<float>(t.data<float>(), t.data<float>() + t.numel()));
}

void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

struct Spec {
  bool convs = false;         // pieces come from 1x1 Convs (oneDNN picks their layout)
  int64_t axis = 1;
  bool mean_is_input = false;  // BN's mean is a graph input, not an initializer
  std::vector<std::string> outputs{"y"};
  bool extra_cat_reader = false, extra_bn_reader = false;
};

// a [1,16,6,6], b [1,32,6,6] (or Conv 1x1 of them) -> Concat -> cat -> BN
// -> bn -> Relu -> y; Spec says what else.
onnx::ModelProto model(const Spec& s) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "a", {1, 16, 6, 6});
  add_value(g->mutable_input(), "b", {1, 32, 6, 6});
  std::string pa = "a", pb = "b";
  if (s.convs) {
    add_init(g, "wa", random_tensor({16, 16, 1, 1}, 31, -0.5f, 0.5f));
    add_init(g, "wb", random_tensor({32, 32, 1, 1}, 32, -0.5f, 0.5f));
    add_node(g, "Conv", {"a", "wa"}, {"ca"});
    add_node(g, "Conv", {"b", "wb"}, {"cb"});
    pa = "ca";
    pb = "cb";
  }
  const int64_t c = s.axis == 1 ? 48 : 16;
  if (s.axis != 1) pb = pa;  // same shapes on axis 0
  set_int(add_node(g, "Concat", {pa, pb}, {"cat"}), "axis", s.axis);
  const Params p = random_params(c);
  add_init(g, "scale", p.scale);
  add_init(g, "B", p.bias);
  add_init(g, "var", p.var);
  if (s.mean_is_input) add_value(g->mutable_input(), "mean", {c});
  else add_init(g, "mean", p.mean);
  add_node(g, "BatchNormalization", {"cat", "scale", "B", "mean", "var"}, {"bn"});
  add_node(g, "Relu", {"bn"}, {"y"});
  const Shape cat = s.axis == 1 ? Shape{1, 48, 6, 6} : Shape{2, 16, 6, 6};
  if (s.extra_cat_reader) add_node(g, "Neg", {"cat"}, {"z"});
  if (s.extra_bn_reader) add_node(g, "Neg", {"bn"}, {"z"});
  for (const auto& o : s.outputs) add_value(g->mutable_output(), o, cat);
  return m;
}

struct Both {
  std::vector<Tensor> fused, unfused;
  RunStats stats;
};

Both run_both(const onnx::ModelProto& m, Numerics num = Numerics::kAsModel) {
  SessionOptions so;
  so.numerics = num;
  so.threads = 2;
  so.profile = std::make_shared<const ExecutorProfile>(ExecutorProfile::resolve("host"));
  auto s = Session::from_proto(m, so);
  const auto in = s->random_inputs(3, -2.f, 2.f);
  Both r;
  r.fused = s->run(in);
  r.stats = s->last_stats();
  const auto all = s->run_all(in);
  for (const auto& o : s->outputs()) r.unfused.push_back(all.at(o.name));
  return r;
}

const NodeStat& stat_of(const RunStats& s, const std::string& op) {
  for (const auto& n : s.nodes)
    if (n.op_type == op) return n;
  throw std::runtime_error("no stat for " + op);
}

// Fused and unfused agree to the rounding of the last step (oneDNN's
// BatchNormalization may order the multiply-add differently).
void expect_close(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  const Tensor fa = to_f32(a), fb = to_f32(b);
  for (int64_t i = 0; i < fa.numel(); ++i) {
    const float x = fa.data<float>()[i], y = fb.data<float>()[i];
    ASSERT_NEAR(x, y, 1e-6f * (1.f + std::fabs(y))) << "at " << i;
  }
}

TEST(ConcatNorm, SessionFusesConcatNormReluAndMatchesUnfused) {
  for (bool convs : {false, true}) {
    SCOPED_TRACE(convs ? "conv pieces" : "input pieces");
    Spec s;
    s.convs = convs;
    const Both r = run_both(model(s));
    expect_close(r.fused[0], r.unfused[0]);
    EXPECT_EQ(stat_of(r.stats, "BatchNormalization").wall_ms, 0);  // ran inside the Concat
    EXPECT_EQ(stat_of(r.stats, "Relu").wall_ms, 0);
    EXPECT_GT(stat_of(r.stats, "BatchNormalization").cost.cycles, 0u);  // still priced
  }
}

TEST(ConcatNorm, NotFusedWhereAValueIsSeenOrTheNodesDoNotFit) {
  std::vector<std::pair<std::string, Spec>> cases;
  Spec s;
  s.outputs = {"y", "cat"};
  cases.push_back({"concat is a graph output", s});
  s = {};
  s.outputs = {"y", "bn"};
  cases.push_back({"bn is a graph output", s});
  s = {};
  s.extra_cat_reader = true;
  s.outputs = {"y", "z"};
  cases.push_back({"concat has a second reader", s});
  s = {};
  s.extra_bn_reader = true;
  s.outputs = {"y", "z"};
  cases.push_back({"bn has a second reader", s});
  s = {};
  s.mean_is_input = true;
  cases.push_back({"mean is not constant", s});
  s = {};
  s.axis = 0;
  cases.push_back({"concat on axis 0", s});
  for (const auto& [what, spec] : cases) {
    SCOPED_TRACE(what);
    const Both r = run_both(model(spec));
    for (size_t i = 0; i < r.fused.size(); ++i) {
      ASSERT_EQ(std::memcmp(r.fused[i].raw(), r.unfused[i].raw(), r.fused[i].nbytes()), 0);
    }
    EXPECT_GT(stat_of(r.stats, "BatchNormalization").wall_ms, 0);
    EXPECT_GT(stat_of(r.stats, "Relu").wall_ms, 0);
  }
}

}  // namespace

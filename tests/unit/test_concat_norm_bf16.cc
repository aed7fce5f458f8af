// Concat -> BatchNormalization -> Relu in bf16 numerics (kernels/concat_norm.h,
// run_bf16): in a session, run() (fused where the Concat finds it can match)
// against run_all() (never fused: oneDNN's BatchNormalization, then Relu),
// bit for bit, on edge values (NaN, infinities, -0, denormals, results that
// tie between two bf16 numbers, underflow and overflow), and the cases where
// the Concat must decline.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/engine/cpu_isa.h"
#include "worker/engine/dnnl_util.h"
#include "worker/engine/profile.h"
#include "worker/engine/session.h"
#include "tests/unit/graph_builder.h"

using namespace torq::engine;

using namespace torq::test;

namespace {

// Where the fused bf16 path runs at all: oneDNN's native bf16 (else the
// session feeds f32 and does not fuse in bf16) and our AVX-512 BF16 kernel
// (else the Concat declines). ONEDNN_MAX_CPU_ISA=AVX2 turns both off.
bool fuses_in_bf16() { return dnnl_bf16_supported() && simd_allowed(Simd::kAvx512Bf16); }

float bits_f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

float from_bf16(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

// Per-channel BN parameters: every value exact in bf16 (the session rounds
// initializers to bf16 in bf16 numerics).
struct Params {
  std::vector<float> scale, bias, mean, var;
  float eps = 0.25f;
};

// Channels 5-7 (eps 0.25, the input x everywhere): numbers where the
// formula's details show in the bf16 result. `want` is the result of
// ncsp's m = scale / sqrt(var + eps), m * (x - mean) rounded to fp32, then
// + bias; a fused multiply-add gives another bf16 number on 5 and 6, and
// m = scale * (1 / sqrt(var + eps)) (oneDNN's jit) another on 7.
struct Formula {
  float x, mean, scale, bias, var, want;
};
constexpr Formula kFormula[] = {
    {1.2421875f, -0.6171875f, 0.71875f, -0.435546875f, 1.0859375f, 0.71875f},      // fma: 0.72265625
    {3.359375f, 0.96875f, 1.796875f, -0.80078125f, 0.87890625f, 3.25f},            // fma: 3.234375
    {2.5f, 0.6640625f, 1.6640625f, -2.65625f, 1.0703125f, 0.0025787353515625f},  // jit: 0.0025634765625
};

// Random bf16-exact parameters, with channels 0-3 made to hit edges
// (var + eps = 1 there, so the multiplier is the scale itself):
// 0: y = x + 2^-8, a tie for x = 1 + k 2^-7; 1: y = x * 1.5 2^-126, denormal
// in fp32 (flushed to a signed zero by the conversion); 2: y = x * 2^100,
// overflow; 3: y = x - 2^-8, a tie below; 5-7: kFormula.
Params edge_params(int64_t c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-64, 64);
  const auto bf = [&](float lo, float hi) {
    const float f = lo + (hi - lo) * static_cast<float>(u(rng) + 64) / 128.f;
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return bits_f32(b & 0xffff0000u);
  };
  Params p;
  for (int64_t i = 0; i < c; ++i) {
    p.scale.push_back(bf(0.5f, 1.5f));
    p.bias.push_back(bf(-1.f, 1.f));
    p.mean.push_back(bf(-0.5f, 0.5f));
    p.var.push_back(bf(0.1f, 2.f));
  }
  const float special_scale[4] = {1.f, 1.5f * std::ldexp(1.f, -126), std::ldexp(1.f, 100), 1.f};
  const float special_bias[4] = {std::ldexp(1.f, -8), 0.f, 0.f, -std::ldexp(1.f, -8)};
  for (size_t i = 0; i < 4; ++i) {
    p.scale[i] = special_scale[i];
    p.bias[i] = special_bias[i];
    p.mean[i] = 0.f;
    p.var[i] = 0.75f;
  }
  for (size_t i = 0; i < std::size(kFormula); ++i) {
    const Formula& f = kFormula[i];
    p.scale[5 + i] = f.scale;
    p.bias[5 + i] = f.bias;
    p.mean[5 + i] = f.mean;
    p.var[5 + i] = f.var;
  }
  return p;
}

// Pieces (graph inputs, optionally through 1x1 Convs: oneDNN picks their
// nhwc layout) -> Concat -> BN -> Relu -> y, optionally -> Conv 1x1 -> z.
struct Spec {
  std::vector<int64_t> channels{16, 32};
  std::vector<bool> conv_piece{false, false};
  bool conv_after = false;  // Relu's output read by a Conv only; z is the graph output
  bool finite = false;      // inputs in [-2, 2] (else edge_inputs' bit patterns)
  int64_t h = 6, w = 5;
};

onnx::ModelProto model(const Spec& s, const Params& p) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  std::vector<std::string> pieces;
  int64_t c = 0;
  std::mt19937 rng(77);
  std::uniform_int_distribution<int> u(-8, 8);
  for (size_t i = 0; i < s.channels.size(); ++i) {
    const int64_t ci = s.channels[i];
    const std::string in = "in" + std::to_string(i);
    add_value(g->mutable_input(), in, {1, ci, s.h, s.w});
    std::string piece = in;
    if (s.conv_piece[i]) {
      std::vector<float> wt;
      for (int64_t k = 0; k < ci * ci; ++k) wt.push_back(static_cast<float>(u(rng)) / 16.f);
      add_init(g, "w" + std::to_string(i), {ci, ci, 1, 1}, wt);
      piece = "conv" + std::to_string(i);
      add_node(g, "Conv", {in, "w" + std::to_string(i)}, {piece});
    }
    pieces.push_back(piece);
    c += ci;
  }
  auto* cat = add_node(g, "Concat", pieces, {"cat"});
  auto* axis = cat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  add_init(g, "scale", {c}, p.scale);
  add_init(g, "B", {c}, p.bias);
  add_init(g, "mean", {c}, p.mean);
  add_init(g, "var", {c}, p.var);
  auto* bn = add_node(g, "BatchNormalization", {"cat", "scale", "B", "mean", "var"}, {"bn"});
  auto* eps = bn->add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(p.eps);
  add_node(g, "Relu", {"bn"}, {"y"});
  if (s.conv_after) {
    std::vector<float> wt;
    for (int64_t k = 0; k < 8 * c; ++k) wt.push_back(static_cast<float>(u(rng)) / 32.f);
    add_init(g, "wz", {8, c, 1, 1}, wt);
    add_node(g, "Conv", {"y", "wz"}, {"z"});
    add_value(g->mutable_output(), "z", {1, 8, s.h, s.w});
  } else {
    add_value(g->mutable_output(), "y", {1, c, s.h, s.w});
  }
  return m;
}

// Inputs of bf16-exact values: channels 0 and 3 of the first input get
// 1 + k 2^-7 (ties after the bias), the rest random bf16 bit patterns
// (NaN, infinities, denormals and huge values among them), and the first
// values of channel 4 the named edges.
std::vector<Tensor> edge_inputs(const Spec& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffff);
  std::vector<Tensor> ins;
  const uint16_t named[] = {0x7fc0, 0x7f81, 0xffc1, 0x7f80, 0xff80, 0x0000, 0x8000, 0x0001,
                            0x8001, 0x007f, 0x807f, 0x7f7f, 0xff7f, 0x0080, 0x8080};
  for (size_t i = 0; i < s.channels.size(); ++i) {
    Tensor t(DType::kF32, {1, s.channels[i], s.h, s.w});
    float* d = t.data<float>();
    const int64_t hw = s.h * s.w;
    for (int64_t k = 0; k < t.numel(); ++k) {
      const int64_t ch = k / hw, pix = k % hw;
      if (s.finite) d[k] = std::ldexp(static_cast<float>(static_cast<int>(bits(rng) % 257) - 128), -6);
      else if (i == 0 && (ch == 0 || ch == 3)) d[k] = 1.f + std::ldexp(static_cast<float>(pix % 16 - 4), -7);
      else if (i == 0 && ch == 4 && pix < static_cast<int64_t>(std::size(named))) d[k] = from_bf16(named[pix]);
      else if (i == 0 && ch >= 5 && ch < 5 + static_cast<int64_t>(std::size(kFormula))) d[k] = kFormula[ch - 5].x;
      else if (i == 0 && ch == 1) d[k] = std::ldexp(static_cast<float>(pix) - 15.f, -4);  // underflow, both signs
      else d[k] = from_bf16(static_cast<uint16_t>(bits(rng)));
    }
    ins.push_back(std::move(t));
  }
  return ins;
}

struct Both {
  Tensor fused, unfused;
  RunStats stats;
};

Both run_both(const Spec& s, const Params& p, Rounding rounding = Rounding::kNearestEven) {
  SessionOptions so;
  so.numerics = Numerics::kBF16;
  so.rounding = rounding;
  so.threads = 2;
  so.profile = std::make_shared<const ExecutorProfile>(ExecutorProfile::resolve("host"));
  auto sess = Session::from_proto(model(s, p), so);
  const auto in = edge_inputs(s, 5);
  Both r;
  r.fused = sess->run(in).at(0);
  r.stats = sess->last_stats();
  const auto all = sess->run_all(in);
  r.unfused = all.at(sess->outputs().at(0).name);
  return r;
}

const NodeStat& stat_of(const RunStats& s, const std::string& op) {
  for (const auto& n : s.nodes)
    if (n.op_type == op) return n;
  throw std::runtime_error("no stat for " + op);
}

void expect_bit_identical(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), DType::kBF16);
  ASSERT_EQ(b.dtype(), DType::kBF16);
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  const uint16_t* x = static_cast<const uint16_t*>(a.raw());
  const uint16_t* y = static_cast<const uint16_t*>(b.raw());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(x[i], y[i]) << "at " << i;
}

// How many outputs have each bit pattern class: shows the edges were hit.
struct Census {
  int nan = 0, pos_inf = 0, neg_zero = 0, pos_zero = 0, other = 0;
};

Census census(const Tensor& t) {
  Census c;
  const uint16_t* x = static_cast<const uint16_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint16_t b = x[i];
    if ((b & 0x7f80) == 0x7f80 && (b & 0x7f)) ++c.nan;
    else if (b == 0x7f80) ++c.pos_inf;
    else if (b == 0x8000) ++c.neg_zero;
    else if (b == 0) ++c.pos_zero;
    else ++c.other;
  }
  return c;
}

void expect_fused(const RunStats& st, bool fused) {
  if (fused) {
    EXPECT_EQ(stat_of(st, "BatchNormalization").wall_ms, 0);  // ran inside the Concat
    EXPECT_EQ(stat_of(st, "Relu").wall_ms, 0);
  } else {
    EXPECT_GT(stat_of(st, "BatchNormalization").wall_ms, 0);
    EXPECT_GT(stat_of(st, "Relu").wall_ms, 0);
  }
}

TEST(ConcatNormBf16, PlainPiecesFuseBitIdenticalOnEdgeValues) {
  const Spec s;
  const Both r = run_both(s, edge_params(48, 3));
  expect_bit_identical(r.fused, r.unfused);
  expect_fused(r.stats, fuses_in_bf16());
  const Census c = census(r.fused);
  EXPECT_GT(c.nan, 0);
  EXPECT_GT(c.pos_inf, 0);
  // -0 inputs and negative underflow pass native bf16 Relu as -0 (oneDNN's
  // f32 Relu, which emulated bf16 runs under AVX2, gives +0: equal values).
  if (dnnl_bf16_supported()) {
    EXPECT_GT(c.neg_zero, 0);
  }
  EXPECT_GT(c.pos_zero, 0);
  EXPECT_GT(c.other, 0);
}

TEST(ConcatNormBf16, TiesRoundToEvenAndUnderflowKeepsItsSign) {
  const Spec s;
  const Both r = run_both(s, edge_params(48, 4));
  expect_bit_identical(r.fused, r.unfused);
  const uint16_t* y = static_cast<const uint16_t*>(r.fused.raw());
  const int64_t hw = s.h * s.w;
  for (int64_t pix = 0; pix < hw; ++pix) {
    // Channel 0: x = 1 + k 2^-7 plus 2^-8, half a bf16 step: to the even neighbour.
    // Channel 3: x - 2^-8, the same ties below.
    const int k = static_cast<int>(pix % 16) - 4;
    const float x = 1.f + std::ldexp(static_cast<float>(k), -7);
    const float step = std::ldexp(1.f, -7);  // bf16's step in [1, 2)
    if (k >= 1) {  // x - 2^-8 and x + 2^-8 both in [1, 2)
      // 1 + k 2^-7 has an even last bit for even k.
      EXPECT_EQ(from_bf16(y[pix]), k % 2 == 0 ? x : x + step) << "tie above, k=" << k;
      EXPECT_EQ(from_bf16(y[3 * hw + pix]), k % 2 == 0 ? x : x - step) << "tie below, k=" << k;
    }
    // Channel 1: x * 1.5 2^-126 is below fp32's normals for |x| < 2/3:
    // native bf16 flushes it to a zero of the product's sign (Relu keeps
    // -0). Emulated bf16 (oneDNN's f32 kernels, without native bf16) keeps
    // the subnormal, and its Relu gives +0 for a negative.
    const float x1 = std::ldexp(static_cast<float>(pix) - 15.f, -4);
    if (x1 < 0 && x1 > -2.f / 3) {
      EXPECT_EQ(y[hw + pix], dnnl_bf16_supported() ? 0x8000 : 0) << "x=" << x1;
    } else if (x1 > 0 && x1 < 2.f / 3 && dnnl_bf16_supported()) {
      EXPECT_EQ(y[hw + pix], 0x0000) << "x=" << x1;
    } else if (x1 > 0 && x1 < 2.f / 3) {
      EXPECT_EQ(from_bf16(y[hw + pix]), round_to_bf16(x1 * std::ldexp(1.5f, -126), Rounding::kNearestEven))
          << "x=" << x1;
    }
  }
}

TEST(ConcatNormBf16, ProductAndSumRoundedApartWithTheMultiplierByDivision) {
  const Spec s;
  const Both r = run_both(s, edge_params(48, 10));
  expect_bit_identical(r.fused, r.unfused);
  expect_fused(r.stats, fuses_in_bf16());
  const uint16_t* y = static_cast<const uint16_t*>(r.fused.raw());
  const int64_t hw = s.h * s.w;
  for (size_t i = 0; i < std::size(kFormula); ++i)
    for (int64_t pix = 0; pix < hw; ++pix)
      ASSERT_EQ(from_bf16(y[(5 + static_cast<int64_t>(i)) * hw + pix]), kFormula[i].want) << "channel " << 5 + i;
}

TEST(ConcatNormBf16, NhwcPiecesAfterAPlainOneFuseBitIdentical) {
  // A pooling's plain output first, Conv outputs after: the Concat would
  // write plain (oneDNN's concat follows its first input), so it fuses.
  Spec s;
  s.channels = {16, 32, 5};
  s.conv_piece = {false, true, true};
  s.finite = true;
  const Both r = run_both(s, edge_params(53, 6));
  expect_bit_identical(r.fused, r.unfused);
  expect_fused(r.stats, fuses_in_bf16());
}

TEST(ConcatNormBf16, ConvReaderGetsNhwcAndTheSameNumbers) {
  Spec s;
  s.conv_piece = {false, true};
  s.conv_after = true;
  s.finite = true;
  const Both r = run_both(s, edge_params(48, 7));
  expect_bit_identical(r.fused, r.unfused);
  expect_fused(r.stats, fuses_in_bf16());
  EXPECT_GT(census(r.fused).other, 0);
}

TEST(ConcatNormBf16, DeclinesWhereTheUnfusedConcatIsNotPlainOrRoundingTruncates) {
  {
    SCOPED_TRACE("every piece nhwc: the unfused BatchNormalization runs oneDNN's jit on nhwc");
    Spec s;
    s.conv_piece = {true, true};
    s.finite = true;
    const Both r = run_both(s, edge_params(48, 8));
    expect_bit_identical(r.fused, r.unfused);
    expect_fused(r.stats, false);
  }
  {
    SCOPED_TRACE("truncating rounding");
    const Both r = run_both(Spec{}, edge_params(48, 9), Rounding::kTruncate);
    expect_bit_identical(r.fused, r.unfused);
    expect_fused(r.stats, false);
  }
}

}  // namespace

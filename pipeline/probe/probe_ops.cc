#include "pipeline/probe/probe_ops.h"

namespace torq::pipeline::probe {

namespace {

ProbeAxis int_axis(const std::string& name, const std::string& fallback, int64_t min, int64_t max) {
  return ProbeAxis{name, fallback, {}, min, max};
}
ProbeAxis enum_axis(const std::string& name, const std::vector<std::string>& choices) {
  return ProbeAxis{name, choices.front(), choices, 1, 1};
}

// The activation tensor most families take: [1, channels, spatial...] of
// `rank` dims (rank 1: [spatial]; 2: [channels, spatial]).
std::vector<ProbeAxis> activation(const std::string& channels, const std::string& spatial, const std::string& rank) {
  return {int_axis("channels", channels, 1, 4096), int_axis("spatial", spatial, 1, 4096),
          int_axis("rank", rank, 1, 6)};
}

std::vector<ProbeAxis> join(std::vector<ProbeAxis> a, const std::vector<ProbeAxis>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<std::string> kAll{"fp32", "bf16", "int8"};
const std::vector<std::string> kFloat{"fp32", "bf16"};

std::vector<ProbeFamily> make_families() {
  std::vector<ProbeFamily> f;
  f.push_back({"conv", {"Conv"},
               join({int_axis("kernel", "3", 1, 64), int_axis("stride", "1", 1, 16), int_axis("dilation", "1", 1, 8),
                     enum_axis("pad", {"same", "valid"}), enum_axis("groups", {"1", "2", "half", "depthwise"})},
                    activation("16", "14", "4")),
               kAll});
  f.push_back({"pool", {"MaxPool", "AveragePool"},
               join({int_axis("kernel", "3", 1, 64), int_axis("stride", "1", 1, 16), enum_axis("pad", {"valid", "same"}),
                     enum_axis("ceil_mode", {"0", "1"})},
                    activation("16", "14", "4")),
               kAll});
  f.push_back({"global_pool", {"GlobalAveragePool", "GlobalMaxPool"}, activation("64", "7", "4"), kAll});
  f.push_back({"matmul", {"MatMul"},
               {int_axis("M", "16", 1, 65536), int_axis("K", "64", 1, 65536), int_axis("N", "32", 1, 65536),
                int_axis("batch", "0", 0, 64)},
               kAll});
  f.push_back({"gemm", {"Gemm"},
               {int_axis("M", "1", 1, 65536), int_axis("K", "256", 1, 65536), int_axis("N", "64", 1, 65536),
                enum_axis("transA", {"0", "1"}), enum_axis("transB", {"1", "0"}), enum_axis("bias", {"1", "0"})},
               kAll});
  f.push_back({"binary",
               {"Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"},
               join({enum_axis("broadcast", {"none", "channel", "scalar", "row", "rank_mismatch"})},
                    activation("16", "14", "4")),
               kAll});
  f.push_back({"unary", {"Relu", "Abs", "Neg", "Ceil", "Floor", "Sigmoid", "Tanh", "Erf", "Reciprocal", "Identity",
                         "Clip", "Cast", "Flatten"},
               activation("16", "14", "4"), kAll});
  f.push_back({"concat", {"Concat"},
               join({int_axis("axis", "1", -6, 5), int_axis("inputs", "2", 1, 16)}, activation("16", "14", "4")), kAll});
  f.push_back({"reduce", {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSum", "ArgMax"},
               join({enum_axis("axes", {"hw", "c", "last", "all"}), enum_axis("keepdims", {"1", "0"})},
                    activation("64", "7", "4")),
               kAll});
  f.push_back({"normalize", {"Softmax", "LayerNormalization"},
               join({enum_axis("axis", {"last", "channel"})}, activation("16", "14", "4")), kFloat});
  f.push_back({"transpose", {"Transpose"}, join({enum_axis("perm", {"reverse", "nhwc"})}, activation("16", "14", "4")),
               kAll});
  f.push_back({"reshape", {"Reshape"}, join({enum_axis("to", {"flat", "split"})}, activation("16", "14", "4")), kAll});
  f.push_back({"expand", {"Expand"}, join({enum_axis("from", {"channel", "scalar"})}, activation("16", "14", "4")),
               kAll});
  f.push_back({"gather", {"Gather"},
               join({enum_axis("axis", {"channel", "first", "last"}), int_axis("indices", "4", 1, 4096)},
                    activation("16", "14", "4")),
               kAll});
  f.push_back({"resize", {"Resize"},
               join({enum_axis("mode", {"nearest", "linear"}), enum_axis("scale", {"2", "0.5", "3", "1.5"})},
                    activation("16", "14", "4")),
               kAll});
  return f;
}

}  // namespace

const std::vector<ProbeFamily>& probe_families() {
  static const std::vector<ProbeFamily> f = make_families();
  return f;
}

const ProbeFamily* family_of(const std::string& op) {
  for (const auto& f : probe_families())
    for (const auto& o : f.ops)
      if (o == op) return &f;
  return nullptr;
}

std::vector<std::string> probe_ops() {
  std::vector<std::string> out;
  for (const auto& f : probe_families()) out.insert(out.end(), f.ops.begin(), f.ops.end());
  return out;
}

const ProbeAxis* axis_of(const ProbeFamily& f, const std::string& name) {
  for (const auto& a : f.axes)
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace torq::pipeline::probe

// build_point (probe_model.h): each family's graph from a point's parameters.
#include "pipeline/probe/probe_model.h"

#include <map>
#include <stdexcept>

#include "pipeline/probe/point_graph.h"
#include "pipeline/probe/probe_families.h"

namespace torq::pipeline::probe {

namespace {

base::DType dtype_of(const std::string& d) {
  return d == "int8" ? base::DType::kI8 : d == "bf16" ? base::DType::kBF16 : base::DType::kF32;
}

uint64_t weight_seed(const ProbePoint& p) {
  uint64_t h = p.seed * 0x9e3779b97f4a7c15ULL;
  for (char c : p.id) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

Params::Params(const ProbePoint& p) {
  for (const auto& [k, v] : p.params) values_[k] = v;
}

int64_t Params::i(const std::string& k) const { return std::stoll(s(k)); }

const std::string& Params::s(const std::string& k) const {
  auto it = values_.find(k);
  if (it == values_.end()) throw std::logic_error("probe point lacks parameter " + k);
  return it->second;
}

Shape Params::activation() const {
  const int64_t c = i("channels"), sp = i("spatial"), r = i("rank");
  if (r == 1) return {sp};
  if (r == 2) return {c, sp};
  Shape s{1, c};
  for (int64_t k = 2; k < r; ++k) s.push_back(sp);
  return s;
}

namespace {

// The point's graph in `g` and its features; "" or why it makes no model.
std::string build_into(const ProbePoint& p, PointGraph& g, PointFeatures& f) {
  f.op = p.op;
  f.dtype = dtype_of(p.dtype);
  std::string invalid = build_family(p.op, Params(p), g, f);
  if (invalid.empty() && !g.too_big().empty()) invalid = "the tensor " + g.too_big() + " is over the probe's limit";
  if (!invalid.empty()) return invalid;
  for (const auto& s : g.node_input_shapes()) f.max_rank = std::max<int64_t>(f.max_rank, static_cast<int64_t>(s.size()));
  return "";
}

}  // namespace

BuiltPoint build_point(const ProbePoint& p) {
  BuiltPoint b;
  PointGraph g(p.dtype == "int8", weight_seed(p));
  b.invalid = build_into(p, g, b.features);
  if (b.invalid.empty()) b.bytes = g.serialize(&b.invalid);
  return b;
}

PointFeatures point_features(const ProbePoint& p, std::string* invalid) {
  PointFeatures f;
  PointGraph g(p.dtype == "int8", 0, true);
  *invalid = build_into(p, g, f);
  return f;
}

}  // namespace torq::pipeline::probe

#include "worker/engine/kernel.h"

#include <algorithm>
#include <onnx/onnx_pb.h>

namespace torq::engine {

NodeInfo::NodeInfo(const onnx::NodeProto& proto, int opset)
    : proto_(&proto), opset_(opset), name_(proto.name()), op_type_(proto.op_type()) {
  if (name_.empty() && proto.output_size() > 0) name_ = proto.output(0);
  for (const auto& i : proto.input()) inputs_.push_back(i);
  for (const auto& o : proto.output()) outputs_.push_back(o);
}

const onnx::AttributeProto* NodeInfo::attr(const std::string& name) const {
  for (const auto& a : proto_->attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool NodeInfo::has_attr(const std::string& name) const { return attr(name) != nullptr; }

static void expect_type(const onnx::AttributeProto& a, int type, const char* what) {
  if (a.type() != type && a.type() != 0)
    throw_invalid("attribute '" + a.name() + "' must be " + what);
}

int64_t NodeInfo::attr_int(const std::string& name, int64_t def) const {
  const auto* a = attr(name);
  if (!a) return def;
  expect_type(*a, onnx::AttributeProto::INT, "an int");
  return a->i();
}

float NodeInfo::attr_float(const std::string& name, float def) const {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() == onnx::AttributeProto::INT) return static_cast<float>(a->i());
  expect_type(*a, onnx::AttributeProto::FLOAT, "a float");
  return a->f();
}

std::string NodeInfo::attr_string(const std::string& name, const std::string& def) const {
  const auto* a = attr(name);
  if (!a) return def;
  expect_type(*a, onnx::AttributeProto::STRING, "a string");
  return a->s();
}

std::vector<int64_t> NodeInfo::attr_ints(const std::string& name,
                                         const std::vector<int64_t>& def) const {
  const auto* a = attr(name);
  if (!a) return def;
  expect_type(*a, onnx::AttributeProto::INTS, "a list of ints");
  return {a->ints().begin(), a->ints().end()};
}

std::vector<float> NodeInfo::attr_floats(const std::string& name,
                                         const std::vector<float>& def) const {
  const auto* a = attr(name);
  if (!a) return def;
  expect_type(*a, onnx::AttributeProto::FLOATS, "a list of floats");
  return {a->floats().begin(), a->floats().end()};
}

const onnx::TensorProto* NodeInfo::attr_tensor(const std::string& name) const {
  const auto* a = attr(name);
  if (!a || !a->has_t()) return nullptr;
  return &a->t();
}

void NodeInfo::expect_attrs(std::initializer_list<const char*> known) const {
  for (const auto& a : proto_->attribute()) {
    bool ok = std::any_of(known.begin(), known.end(),
                          [&](const char* k) { return a.name() == k; });
    if (!ok) throw_unsupported("attribute '" + a.name() + "' is not supported");
  }
}

const Tensor& KernelContext::in(size_t i) const {
  const Tensor* t = input(i);
  if (!t) throw_invalid("required input " + std::to_string(i) + " is missing");
  return *t;
}

void KernelRegistry::add(const std::string& op_type, int since, int until,
                         KernelFactory factory) {
  table_[op_type].push_back({since, until, std::move(factory)});
}

const KernelFactory* KernelRegistry::find(const std::string& op_type, int opset) const {
  auto it = table_.find(op_type);
  if (it == table_.end()) return nullptr;
  for (const auto& e : it->second)
    if (opset >= e.since && opset <= e.until) return &e.factory;
  return nullptr;
}

std::vector<std::string> KernelRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : table_) out.push_back(k);
  return out;
}

// Kernel files beyond the families declared in kernel.h.
void register_loss_kernels(KernelRegistry& r);         // kernels/loss.cc
void register_unary_math_kernels(KernelRegistry& r);   // kernels/unary_math.cc
void register_matrix_misc_kernels(KernelRegistry& r);  // kernels/matrix_misc.cc
void register_scatter_kernels(KernelRegistry& r);      // kernels/scatter.cc
void register_select_kernels(KernelRegistry& r);       // kernels/select.cc
void register_nms_kernels(KernelRegistry& r);          // kernels/nms.cc
void register_reverse_sequence_kernels(KernelRegistry& r);  // kernels/reverse_sequence.cc
void register_quant_kernels(KernelRegistry& r);        // kernels/quant*.cc
void register_control_kernels(KernelRegistry& r);      // kernels/control.cc
void register_roi_align_kernels(KernelRegistry& r);    // kernels/roi_align.cc
void register_einsum_kernels(KernelRegistry& r);       // kernels/einsum.cc

const KernelRegistry& KernelRegistry::global() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_conv_kernels(r);
    register_gemm_kernels(r);
    register_pool_kernels(r);
    register_norm_kernels(r);
    register_softmax_kernels(r);
    register_unary_kernels(r);
    register_binary_kernels(r);
    register_reduce_kernels(r);
    register_shape_kernels(r);
    register_movement_kernels(r);
    register_resize_kernels(r);
    register_misc_kernels(r);
    register_loss_kernels(r);
    register_unary_math_kernels(r);
    register_matrix_misc_kernels(r);
    register_einsum_kernels(r);
    register_scatter_kernels(r);
    register_select_kernels(r);
    register_nms_kernels(r);
    register_reverse_sequence_kernels(r);
    register_quant_kernels(r);
    register_control_kernels(r);
    register_roi_align_kernels(r);
    return r;
  }();
  return registry;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  const int64_t lo = -rank, hi = rank - 1;
  if (axis < lo || axis > hi)
    throw_invalid("axis " + std::to_string(axis) + " out of range for rank " +
                  std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw_invalid("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

}  // namespace torq::engine

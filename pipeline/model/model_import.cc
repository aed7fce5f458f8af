#include "pipeline/model/model_import.h"
#include "pipeline/base/file_bytes.h"

#include <limits>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include <google/protobuf/io/zero_copy_stream.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "pipeline/base/error.h"
#include "pipeline/model/model_limits.h"
#include "pipeline/core/sha256.h"

namespace torq::pipeline {

namespace fs = std::filesystem;


namespace {

// The value a layer id names: its compute node's first output, or, when the
// layer's own QuantizeLinear of that output is dequantized into a graph
// output, the graph output. A quantizer renames the producer of a graph
// output (ours to <name>_prequant, onnxruntime's to
// <name>_QuantizeLinear_Input) so that the output keeps its name; the layer
// keeps the id it has in the fp32 model, as the seed's `_quant` reports do.
// The DQ need not be the layer's own: later layers that read the output
// borrow it. `output_dq`: a DQ's input -> the graph output it writes.
std::string layer_value(const onnx::GraphProto& g, const LayerNodes& ln,
                        const std::unordered_map<std::string, std::string>& output_dq) {
  const auto& n = g.node(ln.compute);
  if (n.output_size() == 0) return std::to_string(ln.compute);
  for (int k : ln.owned) {
    const auto& q = g.node(k);
    if (k == ln.compute || !is_qdq_node(q) || q.op_type() != "QuantizeLinear" || q.input_size() == 0 ||
        q.input(0) != n.output(0) || q.output_size() == 0)
      continue;
    auto it = output_dq.find(q.output(0));
    if (it != output_dq.end()) return it->second;
  }
  return n.output(0);
}

}  // namespace

std::vector<LayerInfo> list_layers(const onnx::ModelProto& model, std::vector<LayerNodes>* groups) {
  const onnx::GraphProto& g = model.graph();
  std::vector<LayerNodes> nodes = layer_nodes(g);
  std::set<std::string> graph_outputs;
  for (const auto& o : g.output()) graph_outputs.insert(o.name());
  std::unordered_map<std::string, std::string> output_dq;
  for (const auto& n : g.node())
    if (is_qdq_node(n) && n.op_type() == "DequantizeLinear" && n.input_size() && n.output_size() &&
        graph_outputs.count(n.output(0)))
      output_dq.emplace(n.input(0), n.output(0));
  std::vector<LayerInfo> out;
  for (const auto& ln : nodes) {
    const auto& n = g.node(ln.compute);
    LayerInfo l;
    l.index = static_cast<int>(out.size());
    l.op_type = n.op_type();
    l.id = n.op_type() + "_" + layer_value(g, ln, output_dq);
    out.push_back(l);
  }
  if (groups) *groups = std::move(nodes);
  return out;
}

namespace {

// The values of an fp32 initializer (raw_data or float_data).
std::vector<float> f32_values(const onnx::TensorProto& t, const std::string& name) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  if (t.has_raw_data()) {
    if (t.raw_data().size() != v.size() * sizeof(float))
      throw PipelineError("initializer '" + name + "': raw data of " + std::to_string(t.raw_data().size()) +
                          " bytes for " + std::to_string(n) + " floats");
    std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
  } else if (t.float_data_size() == n) {
    std::copy(t.float_data().begin(), t.float_data().end(), v.begin());
  } else if (n != 0) {
    throw PipelineError("initializer '" + name + "': " + std::to_string(t.float_data_size()) + " floats for " +
                        std::to_string(n) + " elements (external data is not supported)");
  }
  return v;
}

void convert_tensor(onnx::TensorProto* t, engine::Rounding r, std::vector<ConversionError>* errs,
                    const std::string& name) {
  if (t->data_type() != onnx::TensorProto::FLOAT) return;
  const std::vector<float> f = f32_values(*t, name);
  // On this thread, not OpenMP's: the coordinator converts beside workers
  // that keep every core busy, where a team of threads only spun at its
  // barriers, and the error sums below are one pass over f anyway (issue 32).
  std::vector<engine::bf16_t> b(f.size());
  for (size_t i = 0; i < f.size(); ++i) b[i] = engine::f32_to_bf16(f[i], r);
  ConversionError e;
  e.tensor = name;
  e.size = static_cast<int64_t>(f.size());
  double sum_abs = 0, sum_sq = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const double a = f[i], c = engine::bf16_to_f32(b[i]);
    const double d = std::fabs(a - c);
    e.max_abs = std::max(e.max_abs, d);
    if (a != 0) e.max_rel = std::max(e.max_rel, d / std::fabs(a));
    sum_abs += d;
    sum_sq += d * d;
  }
  if (e.size) {
    e.mean_abs = sum_abs / static_cast<double>(e.size);
    e.rmse = std::sqrt(sum_sq / static_cast<double>(e.size));
  }
  errs->push_back(e);
  t->clear_float_data();
  t->set_data_type(onnx::TensorProto::BFLOAT16);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(b.data()), b.size() * sizeof(engine::bf16_t)));
}

void mark_bf16(onnx::ValueInfoProto* v) {
  if (!v->type().has_tensor_type()) return;
  auto* tt = v->mutable_type()->mutable_tensor_type();
  if (tt->elem_type() == onnx::TensorProto::FLOAT) tt->set_elem_type(onnx::TensorProto::BFLOAT16);
}

}  // namespace

std::vector<ConversionError> convert_to_bf16(onnx::ModelProto* model, engine::Rounding rounding) {
  std::vector<ConversionError> errs;
  auto* g = model->mutable_graph();
  std::set<std::string> shape_like;
  for (const auto& n : g->node()) {
    if (n.op_type() == "Resize")
      for (int i = 1; i < std::min(3, n.input_size()); ++i) shape_like.insert(n.input(i));
    if (n.op_type() == "Upsample" && n.input_size() > 1) shape_like.insert(n.input(1));
  }
  for (auto& t : *g->mutable_initializer())
    if (!shape_like.count(t.name())) convert_tensor(&t, rounding, &errs, t.name());
  for (auto& n : *g->mutable_node()) {
    if (n.op_type() != "Constant" || (n.output_size() && shape_like.count(n.output(0)))) continue;
    for (auto& a : *n.mutable_attribute())
      if (a.name() == "value" && a.has_t()) convert_tensor(a.mutable_t(), rounding, &errs, n.output(0));
  }
  for (auto& v : *g->mutable_input()) mark_bf16(&v);
  for (auto& v : *g->mutable_output()) mark_bf16(&v);
  for (auto& v : *g->mutable_value_info())
    if (!shape_like.count(v.name())) mark_bf16(&v);
  return errs;
}

ImportedModel::~ImportedModel() = default;

std::unique_ptr<onnx::ModelProto> ImportedModel::take_proto() { return std::move(proto_); }

void ImportedModel::check_whole() const {
  if (data_dropped_)
    throw PipelineError("model '" + name_ + "': its tensor data was released after planning (a bug: ask for "
                        "its bytes before drop_tensor_data)");
}

const std::string& ImportedModel::bytes() const {
  check_whole();
  std::call_once(bytes_once_, [this] { bytes_ = proto_->SerializeAsString(); });
  return bytes_;
}

void ImportedModel::serialize_to(const base::ByteSink& sink) const {
  check_whole();
  serialize_to_sink(*proto_, sink);
}

size_t ImportedModel::drop_tensor_data(size_t min_bytes) {
  size_t freed = 0;
  auto drop = [&](onnx::TensorProto* t) {
    if (!t->has_raw_data() || t->raw_data().size() < min_bytes) return;
    freed += t->raw_data().size();
    std::string().swap(*t->mutable_raw_data());  // present (the MLIR's dense_resource), empty, its memory freed
  };
  auto* g = proto_->mutable_graph();
  for (auto& t : *g->mutable_initializer()) drop(&t);
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute())
      if (a.has_t()) drop(a.mutable_t());
  data_dropped_ = data_dropped_ || freed > 0;
  return freed;
}

void ImportedModel::write_file(const std::string& path) const {
  check_whole();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (f && !proto_->SerializeToOstream(&f)) f.setstate(std::ios::badbit);
  f.close();
  if (!f) throw PipelineError(path + ": cannot write");
}

std::string model_name_from_path(const std::string& path) {
  const fs::path p(path);
  std::string name = p.stem().string();
  if (name == "model" && p.has_parent_path()) name = p.parent_path().filename().string();
  return name;
}

void require_model_file(const std::string& path) {
  const std::string why = base::not_a_regular_file(path);
  if (!why.empty()) throw PipelineError(path + ": cannot open model: " + why);
}

std::unique_ptr<ImportedModel> ImportedModel::from_file(const std::string& path, const ImportOptions& opts) {
  try {
    std::unique_ptr<onnx::ModelProto> proto;
    {
      // Parsed straight from the mapped file: no copy of a 30 MB model on
      // the way into protobuf; the pages parsed are given back as it goes,
      // so a 346 MB model's file is not held with its proto (issue 32).
      const base::MappedFile map(path, base::MappedFile::Mode::kStream);
      if (map.data()) {
        proto = parse_mapped(map);
      } else {  // empty, not a regular file, or not mappable: read it
        std::string why;
        const std::optional<std::string> bytes = base::read_file_bytes(path, &why);
        if (!bytes) throw PipelineError(path + ": cannot open model: " + why);
        proto = parse(bytes->data(), bytes->size());
      }
    }
    return finish(std::move(proto), model_name_from_path(path), opts);
  } catch (const PipelineError& e) {
    const std::string what = e.what();
    if (what.rfind(path + ": ", 0) == 0) throw;
    throw PipelineError(path + ": " + what);
  }
}

std::unique_ptr<ImportedModel> ImportedModel::from_bytes(const std::string& bytes, const std::string& name,
                                                         const ImportOptions& opts) {
  return from_data(bytes.data(), bytes.size(), name, opts);
}

std::unique_ptr<ImportedModel> ImportedModel::from_data(const void* data, size_t size, const std::string& name,
                                                        const ImportOptions& opts) {
  return finish(parse(data, size), name, opts);
}

namespace {

// The mapped file in blocks for protobuf's stream parser; each block two
// behind the one handed out is parsed (protobuf keeps at most the tail of
// the previous one) and its pages are given back.
class ReleasingMapStream : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit ReleasingMapStream(const base::MappedFile& map) : map_(map) {}
  bool Next(const void** data, int* size) override {
    if (pos_ >= map_.size()) return false;
    if (pos_ >= 2 * kBlock) {
      const size_t upto = (pos_ - kBlock) / kBlock * kBlock;
      if (upto > released_) map_.release(released_, upto - released_);
      released_ = std::max(released_, upto);
    }
    const size_t n = std::min(kBlock, map_.size() - pos_);
    *data = map_.data() + pos_;
    *size = static_cast<int>(n);
    pos_ += n;
    return true;
  }
  void BackUp(int count) override { pos_ -= static_cast<size_t>(count); }
  bool Skip(int count) override {
    pos_ = std::min(map_.size(), pos_ + static_cast<size_t>(count));
    return pos_ < map_.size() || count == 0;
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(pos_); }

 private:
  static constexpr size_t kBlock = size_t{4} << 20;
  const base::MappedFile& map_;
  size_t pos_ = 0, released_ = 0;
};

}  // namespace

std::unique_ptr<onnx::ModelProto> ImportedModel::parse_mapped(const base::MappedFile& map) {
  if (map.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw PipelineError("not an ONNX model (protobuf parse failed; truncated or another format?)");
  auto model = std::make_unique<onnx::ModelProto>();
  ReleasingMapStream in(map);
  if (!model->ParseFromZeroCopyStream(&in) || !model->has_graph())
    throw PipelineError("not an ONNX model (protobuf parse failed; truncated or another format?)");
  if (model->graph().node_size() == 0) throw PipelineError("the model graph has no nodes");
  return model;
}

std::unique_ptr<onnx::ModelProto> ImportedModel::parse(const void* data, size_t size) {
  auto model = std::make_unique<onnx::ModelProto>();
  if (size == 0) throw PipelineError("empty file, not an ONNX model");
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !model->ParseFromArray(data, static_cast<int>(size)) || !model->has_graph())
    throw PipelineError("not an ONNX model (protobuf parse failed; truncated or another format?)");
  if (model->graph().node_size() == 0) throw PipelineError("the model graph has no nodes");
  return model;
}

std::unique_ptr<ImportedModel> ImportedModel::finish(std::unique_ptr<onnx::ModelProto> proto, const std::string& name,
                                                     const ImportOptions& opts) {
  std::unique_ptr<ImportedModel> m(new ImportedModel());
  m->name_ = name;
  m->proto_ = std::move(proto);
  onnx::ModelProto& model = *m->proto_;
  // Before the checker and shape inference read the model (a zero stride
  // is their SIGFPE): tensors whose data fits their shape, sizes within the
  // limits, windows of at least 1. Also a preload's (opts.check false).
  check_model_limits(model);
  try {
    if (opts.check) onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (msg.size() > 400) msg = msg.substr(0, 400) + "...";
    throw PipelineError("invalid ONNX model: " + msg);
  }
  // Fix unset or symbolic batch dimensions to 1.
  std::set<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.insert(t.name());
  for (auto& in : *model.mutable_graph()->mutable_input()) {
    if (inits.count(in.name()) || !in.type().has_tensor_type()) continue;
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() == 0) continue;
    auto* d0 = shape->mutable_dim(0);
    if (opts.batch > 0) {
      d0->set_dim_value(opts.batch);
    } else if (!d0->has_dim_value()) {
      m->warnings_.push_back("input '" + in.name() + "': batch dimension " +
                             (d0->has_dim_param() ? "'" + d0->dim_param() + "'" : std::string("(unset)")) +
                             " fixed to 1");
      d0->set_dim_value(1);
    }
    for (int i = 1; i < shape->dim_size(); ++i)
      if (!shape->dim(i).has_dim_value())
        m->warnings_.push_back("input '" + in.name() + "': dimension " + std::to_string(i) +
                               " is symbolic; layers that depend on it take their shape from the run");
  }
  if (opts.batch > 0)
    for (auto& out : *model.mutable_graph()->mutable_output()) {
      if (!out.type().has_tensor_type() || !out.type().tensor_type().has_shape()) continue;
      auto* shape = out.mutable_type()->mutable_tensor_type()->mutable_shape();
      if (shape->dim_size() > 0) shape->mutable_dim(0)->clear_dim_value();
    }
  try {
    model.mutable_graph()->clear_value_info();
    if (opts.batch > 0) {
      onnx::ShapeInferenceOptions so;
      so.check_type = true;
      so.error_mode = 1;  // a batch the graph cannot take is an import error
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), so);
    } else {
      onnx::shape_inference::InferShapes(model);
    }
  } catch (const std::exception& e) {
    if (opts.batch > 0)
      throw PipelineError("batch " + std::to_string(opts.batch) + ": shape inference failed: " + e.what());
    m->warnings_.push_back(std::string("shape inference failed: ") + e.what());
  }
  if (opts.convert_bf16) m->conversion_ = convert_to_bf16(&model, opts.rounding);
  m->layers_ = list_layers(model, &m->layer_nodes_);
  for (const auto& l : m->layer_nodes_) m->node_pos_.push_back(l.compute);
  if (opts.hash) m->hash_ = sha256_hex_of(model, opts.copy_to);  // bytes() serialises again only if asked
  return m;
}

}  // namespace torq::pipeline

// Model import: parse and check an ONNX model, infer shapes, fix symbolic
// batch dimensions to 1, optionally convert it to bf16 (DESIGN §4,
// "Converted models"), and list its layers (one per non-Constant node; in a
// QDQ model one per compute op with its Q/DQ neighbours, layer_nodes.h).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/base/byte_sink.h"
#include "pipeline/model/layer_nodes.h"
#include "pipeline/core/sha256.h"
#include "pipeline/core/types.h"
#include "pipeline/base/dtype.h"

namespace onnx {
class ModelProto;
}
namespace torq::base {
class MappedFile;
}

namespace torq::pipeline {

struct ImportOptions {
  bool convert_bf16 = false;
  engine::Rounding rounding = engine::Rounding::kTruncate;  // of the conversion
  // Batch size: 0 keeps fixed batch dimensions (symbolic ones become 1); N
  // sets the first dimension of every data input to N and re-infers shapes
  // (graph outputs' batch dimensions are reset). A model whose graph
  // hard-codes its batch (a Reshape to [1, ...]) then fails shape inference:
  // a PipelineError naming the batch.
  int batch = 0;
  // A worker's preload re-imports a model its coordinator has checked and
  // hashed: it skips onnx::checker, and hashes the proto itself while it
  // sets up the model's reference run (hash() is then empty).
  bool check = true;
  bool hash = true;
  // With hash: the imported model is also written to this file, in the
  // pass that hashes it (a coordinator's model cache for its workers).
  std::string copy_to;
};

// Error the conversion introduced in one fp32 tensor.
struct ConversionError {
  std::string tensor;
  int64_t size = 0;
  double max_abs = 0, mean_abs = 0, rmse = 0, max_rel = 0;
};

// Throws PipelineError "<path>: cannot open model: <why>" unless `path` is
// a regular file this process can open: a FIFO, a device or a directory is
// refused by its kind without blocking (base::not_a_regular_file). The
// commands call it before any thread depends on the model.
void require_model_file(const std::string& path);

class ImportedModel {
 public:
  // Throws PipelineError "<path>: ..." for a missing, truncated, non-ONNX or
  // invalid model.
  static std::unique_ptr<ImportedModel> from_file(const std::string& path, const ImportOptions& opts = {});
  static std::unique_ptr<ImportedModel> from_bytes(const std::string& bytes, const std::string& name,
                                                   const ImportOptions& opts = {});
  ~ImportedModel();

 private:
  static std::unique_ptr<ImportedModel> from_data(const void* data, size_t size, const std::string& name,
                                                  const ImportOptions& opts);
  static std::unique_ptr<onnx::ModelProto> parse(const void* data, size_t size);
  static std::unique_ptr<onnx::ModelProto> parse_mapped(const base::MappedFile& map);
  static std::unique_ptr<ImportedModel> finish(std::unique_ptr<onnx::ModelProto> proto, const std::string& name,
                                               const ImportOptions& opts);
  void check_whole() const;  // throws once drop_tensor_data() took data

 public:

  // Model name: the file name without directory and extension ("model" files
  // take their directory's name).
  const std::string& name() const { return name_; }
  // The imported (batch-fixed, possibly converted) model, serialized (on
  // the first call; thread-safe). Not after take_proto().
  const std::string& bytes() const;
  // The same bytes handed to `sink` in pieces, never held whole (into the
  // store: Store::put_model).
  void serialize_to(const base::ByteSink& sink) const;
  // Writes bytes() to `path` without holding them (streamed). Throws
  // PipelineError "<path>: cannot write".
  void write_file(const std::string& path) const;
  // Releases the data of every tensor (initializer or Constant value) held
  // as raw_data of at least `min_bytes`: the weights, once nothing needs
  // them (a unit after planning keeps the graph, shapes and small
  // constants for its report's MLIR and op keys; issue 32). The tensors
  // keep their raw_data field, empty. Returns the bytes released. After
  // it, bytes(), serialize_to() and write_file() throw
  // PipelineError: the model is no longer the one hash() names.
  size_t drop_tensor_data(size_t min_bytes = 1024);
  // SHA-256 (hex) of bytes(): names the model in jobs and the store.
  const std::string& hash() const { return hash_; }
  const std::vector<LayerInfo>& layers() const { return layers_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::vector<ConversionError>& conversion() const { return conversion_; }
  const onnx::ModelProto& proto() const { return *proto_; }
  // Hands the proto over (a worker's preload keeps only it); proto() is
  // invalid after.
  std::unique_ptr<onnx::ModelProto> take_proto();
  // Position in graph.node() of each layer's compute node (the node naming it).
  const std::vector<int>& node_positions() const { return node_pos_; }
  // Every node of each layer (layer_nodes.h).
  const std::vector<LayerNodes>& layer_nodes() const { return layer_nodes_; }

 private:
  ImportedModel() = default;
  std::string name_, hash_;
  mutable std::string bytes_;
  mutable std::once_flag bytes_once_;
  std::unique_ptr<onnx::ModelProto> proto_;
  std::vector<LayerInfo> layers_;
  std::vector<int> node_pos_;
  std::vector<LayerNodes> layer_nodes_;
  std::vector<std::string> warnings_;
  std::vector<ConversionError> conversion_;
  bool data_dropped_ = false;
};


// A model's name from its path: the file name without directory and
// extension; "model.onnx" takes its directory's name.
std::string model_name_from_path(const std::string& path);

// Layers of a model in graph order with their ids "<OpType>_<first output>"
// of the compute node, and (if asked) their nodes.
std::vector<LayerInfo> list_layers(const onnx::ModelProto& model, std::vector<LayerNodes>* groups);

// Converts fp32 initializers and Constant values to bf16 and marks fp32
// graph inputs, outputs and value_info bf16 (Resize/Upsample scales and roi
// keep fp32: they are sizes, not data). Returns the per-tensor errors.
std::vector<ConversionError> convert_to_bf16(onnx::ModelProto* model, engine::Rounding rounding);

}  // namespace torq::pipeline

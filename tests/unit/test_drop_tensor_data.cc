// A unit's model with its weights released after planning (issue 32,
// ImportedModel::drop_tensor_data): on the shared models, fp32 and bf16,
// what the coordinator still needs of it afterwards (the torch-mlir text
// and each layer's location in it, the op keys, the layers) is exactly
// what it was, the weights' memory is gone, and the model can no longer be
// mistaken for the one its hash names.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>
#include <vector>

#include "pipeline/base/error.h"
#include "pipeline/model/mlir.h"
#include "pipeline/model/model_import.h"
#include "pipeline/model/op_key.h"
#include "tests/shared_models.h"

#ifdef TORQ_SHARED_MODELS

using namespace torq::pipeline;

namespace {

struct Kept {
  std::string mlir;
  std::vector<std::string> locations, op_keys, layer_ids;
};

Kept what_is_kept(const ImportedModel& m) {
  Kept k;
  k.mlir = emit_torch_mlir(m.proto());
  k.locations = map_layer_locations(k.mlir, m.proto()).locations;
  k.op_keys = layer_op_keys(m);
  for (const auto& l : m.layers()) k.layer_ids.push_back(l.id);
  return k;
}

class DropTensorData : public ::testing::TestWithParam<std::string> {};

TEST_P(DropTensorData, KeepsTheMlirLocationsAndOpKeysAndReleasesTheWeights) {
  const std::string path = std::string(TORQ_SHARED_MODELS) + "/" + GetParam() + "/model.onnx";
  const auto file_bytes = std::filesystem::file_size(path);
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "fp32");
    ImportOptions io;
    io.convert_bf16 = bf16;
    auto m = ImportedModel::from_file(path, io);
    const Kept before = what_is_kept(*m);
    const std::string hash = m->hash();
    const size_t whole = m->proto().ByteSizeLong();
    const size_t freed = m->drop_tensor_data();
    // The weights are nearly all of the model: at least 95% of it released.
    EXPECT_GE(freed, whole * 95 / 100) << "of " << whole;
    EXPECT_LE(freed, bf16 ? file_bytes / 2 + 1024 : file_bytes);
    EXPECT_LE(m->proto().ByteSizeLong(), whole - freed + 1024);
    const Kept after = what_is_kept(*m);
    EXPECT_EQ(after.mlir, before.mlir);
    EXPECT_EQ(after.locations, before.locations);
    EXPECT_EQ(after.op_keys, before.op_keys);
    EXPECT_EQ(after.layer_ids, before.layer_ids);
    EXPECT_EQ(m->hash(), hash);
    EXPECT_GT(before.mlir.size(), 1000u);
    // Its bytes are no longer the model's: asking for them is an error, not a wrong model.
    for (auto ask : {+[](const ImportedModel& x) { (void)x.bytes(); },
                     +[](const ImportedModel& x) { x.serialize_to([](const char*, size_t) {}); }}) {
      try {
        ask(*m);
        ADD_FAILURE() << "no error";
      } catch (const PipelineError& e) {
        EXPECT_NE(std::string(e.what()).find("its tensor data was released after planning"), std::string::npos);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TorqSharedModel, DropTensorData, torq::test::shared_model_names(),
                         torq::test::SharedModelTestName());

}  // namespace

#endif  // TORQ_SHARED_MODELS

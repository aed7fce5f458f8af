// A model's identity: the SHA-256 of its serialisation, computed by
// streaming the serialisation through a small buffer (and, for a
// coordinator's cache, into a file in the same pass) instead of holding it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "pipeline/model/model_import.h"
#include "pipeline/core/sha256.h"
#include "pipeline/core/types.h"
#include "tests/unit/temp_dir.h"
#include "worker/sim/demo_model.h"

namespace fs = std::filesystem;
using torq::pipeline::ImportedModel;
using torq::pipeline::ImportOptions;
using torq::pipeline::PipelineError;

namespace {

// The demo CNN with an unused 2.8 MB initializer: its serialisation spans
// many of the stream's buffers.
std::string big_model() {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(torq::sim::build_demo_model()));
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("big");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(700001);
  std::string raw(700001 * 4, '\0');
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<char>((i * 2654435761u) >> 13);
  t->set_raw_data(raw);
  return m.SerializeAsString();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST(ModelHash, TheStreamedHashIsThatOfTheSerialisedModelAndItsCopyIsTheModel) {
  const std::string bytes = big_model();
  const torq::test::TempDir dir("torq-model-hash");
  ImportOptions io;
  io.copy_to = dir.path("copy.onnx");
  const auto m = ImportedModel::from_bytes(bytes, "big", io);
  ASSERT_GT(m->bytes().size(), 2800000u);
  EXPECT_EQ(m->hash(), torq::pipeline::sha256_hex(m->bytes()));
  EXPECT_EQ(m->hash().size(), 64u);
  EXPECT_EQ(slurp(io.copy_to), m->bytes());
  // Another model, another hash (the import changes the model: not the input's).
  const auto demo = ImportedModel::from_bytes(torq::sim::build_demo_model(), "demo");
  EXPECT_NE(demo->hash(), m->hash());
  EXPECT_EQ(demo->hash(), torq::pipeline::sha256_hex(demo->bytes()));
}

TEST(ModelHash, IncrementalHashEqualsOneShotAndWithoutHashNothingIsWritten) {
  const std::string bytes = big_model();
  torq::pipeline::Sha256 h;
  for (size_t at = 0; at < bytes.size(); at += 100003) h.update(bytes.data() + at, std::min<size_t>(100003, bytes.size() - at));
  EXPECT_EQ(h.hex(), torq::pipeline::sha256_hex(bytes));
  EXPECT_EQ(torq::pipeline::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const torq::test::TempDir dir("torq-model-hash");
  ImportOptions io;
  io.hash = false;
  io.copy_to = dir.path("never.onnx");
  const auto m = ImportedModel::from_bytes(bytes, "big", io);
  EXPECT_TRUE(m->hash().empty());
  EXPECT_FALSE(fs::exists(io.copy_to));
}

TEST(ModelHash, AnUnwritableCopyIsAnErrorNamingIt) {
  ImportOptions io;
  io.copy_to = "/nonexistent-dir-torq/copy.onnx";
  try {
    ImportedModel::from_bytes(big_model(), "big", io);
    FAIL() << "no error";
  } catch (const PipelineError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-torq/copy.onnx: cannot write"), std::string::npos)
        << e.what();
  }
}

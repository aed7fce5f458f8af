#include "coordinator/fleet/fp32_original.h"

namespace torq::coordinator {

std::string store_fp32_original(const std::string& path, pipeline::ImportOptions io, pipeline::Store& store) {
  io.convert_bf16 = false;
  io.copy_to.clear();
  io.hash = true;
  const auto original = pipeline::ImportedModel::from_file(path, io);
  store.put_model(original->hash(), [&](const base::ByteSink& sink) { original->serialize_to(sink); });
  return original->hash();
}

}  // namespace torq::coordinator

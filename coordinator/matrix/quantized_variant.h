// The matrix's int8 variants ({dtype: int8[, per_channel: true]}): the
// model quantized by `torq-gen-config quantize` (a sibling tool: the
// coordinator holds no tensors), with the variant's seed held out as
// discover's own input. Cached by content: <cache_dir>/<key>/<name>_quant.onnx
// where key hashes the fp32 bytes and the options, written under a
// temporary name and renamed, so a killed run never leaves half a model.
#pragma once

#include <cstdint>
#include <string>

namespace torq::coordinator {

// Path of the quantized model (made if not cached). Throws PipelineError
// with the tool's message when it cannot quantize the model.
std::string quantized_model(const std::string& fp32_path, bool per_channel, uint64_t seed,
                            const std::string& cache_dir);

}  // namespace torq::coordinator

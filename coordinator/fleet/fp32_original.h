// The fp32 original of a converted variant (bf16, int8), for the
// end-to-end comparison of an assigned run of the whole model (issue 29):
// a figure against the converted model's own reference hides what the
// conversion cost; tt-xla judges against the framework's fp32 golden.
#pragma once

#include <string>

#include "pipeline/model/model_import.h"
#include "pipeline/store/store.h"

namespace torq::coordinator {

// Imports the model at `path` as the variant was imported (`io`: batch)
// but without converting it, and puts it into `store` for the workers to
// fetch. Returns its model hash. Throws PipelineError for a model that
// cannot be imported.
std::string store_fp32_original(const std::string& path, pipeline::ImportOptions io, pipeline::Store& store);

}  // namespace torq::coordinator

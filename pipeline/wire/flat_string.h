// pipeline/wire: the codecs' one reading of an optional FlatBuffers string
// (an absent field reads as empty, as the schema's default).
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <string>

namespace torq::pipeline {

inline std::string flat_string(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

}  // namespace torq::pipeline

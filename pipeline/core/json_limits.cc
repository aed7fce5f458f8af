#include "pipeline/core/json_limits.h"

#include "pipeline/core/types.h"

namespace torq::pipeline {

void check_json_depth(std::string_view text, const std::string& what) {
  int depth = 0, line = 1;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw PipelineError(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (line " +
                            std::to_string(line) + ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

}  // namespace torq::pipeline

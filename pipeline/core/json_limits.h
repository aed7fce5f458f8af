// How deep a JSON file this tool reads may nest (issue 30): nlohmann's
// parser, and the code that walks what it parsed (a report's unknown keys
// kept and written back), recurse once per level, so a file nested 10^5
// deep overflowed the stack and one 10^4 deep was rewritten 1000 times its
// size. Reports, compiler JSONs, summaries and run histories nest a few
// levels; the limit leaves room for what other tools add.
#pragma once

#include <string>
#include <string_view>

namespace torq::pipeline {

inline constexpr int kMaxJsonDepth = 64;

// Throws PipelineError "<what>: JSON nested deeper than 64 levels (line L)"
// when arrays and objects in `text` nest deeper than kMaxJsonDepth (strings
// are skipped). Says nothing of the rest of the syntax: the parser does.
void check_json_depth(std::string_view text, const std::string& what);

}  // namespace torq::pipeline

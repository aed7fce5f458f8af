// HTML text and attribute values: & < > " ' as character references. The
// matrix report's pages and the coordinator's live page (issue 33) use it.
#pragma once

#include <string>

namespace torq::base {

std::string html_escape(const std::string& s);

}  // namespace torq::base

// Wall-clock time as the reports and logs write it.
#pragma once

#include <string>

namespace torq::base {

// Now, UTC, ISO 8601 to the second: "2026-11-23T17:46:35Z".
std::string utc_now();

}  // namespace torq::base

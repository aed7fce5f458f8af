// pipeline/base: the process's own peak resident set (getrusage's
// ru_maxrss), which a long command prints in its summary (issue 32).
#pragma once

namespace torq::base {

// Peak RSS of this process so far, in MiB (0 when getrusage fails).
double peak_rss_mb();

}  // namespace torq::base

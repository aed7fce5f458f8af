#include "pipeline/base/peak_rss.h"

#include <sys/resource.h>

namespace torq::base {

double peak_rss_mb() {
  struct rusage u {};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

}  // namespace torq::base

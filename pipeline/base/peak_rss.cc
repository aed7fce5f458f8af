#include "pipeline/base/peak_rss.h"

#include <malloc.h>
#include <sys/resource.h>

// gperftools' C API, present only in programs linked with tcmalloc.
extern "C" void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));

namespace torq::base {

double peak_rss_mb() {
  struct rusage u {};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

void release_free_memory() {
  if (MallocExtension_ReleaseFreeMemory) MallocExtension_ReleaseFreeMemory();
  else ::malloc_trim(0);
}

}  // namespace torq::base

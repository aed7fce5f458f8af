#include "pipeline/base/peak_rss.h"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

// gperftools' C API, present only in programs linked with tcmalloc.
extern "C" void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));
extern "C" int MallocExtension_GetNumericProperty(const char* property, size_t* value) __attribute__((weak));
extern "C" int MallocExtension_SetNumericProperty(const char* property, size_t value) __attribute__((weak));

namespace torq::base {

double peak_rss_mb() {
  struct rusage u {};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

double current_rss_mb() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

namespace {

double tcmalloc_mb(const char* property) {
  size_t bytes = 0;
  if (!MallocExtension_GetNumericProperty || !MallocExtension_GetNumericProperty(property, &bytes)) return 0;
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

}  // namespace

double heap_in_use_mb() {
  if (MallocExtension_GetNumericProperty) return tcmalloc_mb("generic.current_allocated_bytes");
  return static_cast<double>(::mallinfo2().uordblks) / (1024.0 * 1024.0);
}

double cpu_seconds(bool children) {
  struct rusage u {};
  if (getrusage(children ? RUSAGE_CHILDREN : RUSAGE_SELF, &u) != 0) return 0;
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

double thread_cache_mb() { return tcmalloc_mb("tcmalloc.thread_cache_free_bytes"); }
double thread_cache_limit_mb() { return tcmalloc_mb("tcmalloc.max_total_thread_cache_bytes"); }

void limit_thread_caches(size_t bytes) {
  if (MallocExtension_SetNumericProperty) MallocExtension_SetNumericProperty("tcmalloc.max_total_thread_cache_bytes", bytes);
}

void release_free_memory() {
  if (MallocExtension_ReleaseFreeMemory) MallocExtension_ReleaseFreeMemory();
  else ::malloc_trim(0);
}

}  // namespace torq::base

#include "worker/runner/job_env.h"

#include <cstring>

namespace torq::runner {

namespace {

constexpr const char kVar[] = "GLIBC_TUNABLES=";

// True when the ':'-separated `value` has an entry for tunable `name`.
bool sets(const std::string& value, const std::string& name) {
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(':', start);
    if (end == std::string::npos) end = value.size();
    const std::string entry = value.substr(start, end - start);
    if (entry.substr(0, entry.find('=')) == name) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

std::string job_tunables(const std::string& value) {
  std::string out = value;
  for (const char* t : kJobMallocTunables) {
    const std::string tunable = t;
    if (sets(value, tunable.substr(0, tunable.find('=')))) continue;
    if (!out.empty()) out += ':';
    out += tunable;
  }
  return out;
}

std::vector<std::string> job_environment(char* const* env) {
  std::vector<std::string> out;
  bool found = false;
  const size_t n = std::strlen(kVar);
  for (char* const* e = env; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, kVar, n) != 0) {
      out.emplace_back(*e);
    } else if (!found) {  // (a second one, which getenv would not see, is dropped)
      found = true;
      out.push_back(kVar + job_tunables(*e + n));
    }
  }
  if (!found) out.push_back(kVar + job_tunables(""));
  return out;
}

}  // namespace torq::runner

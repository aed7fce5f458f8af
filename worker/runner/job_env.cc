#include "worker/runner/job_env.h"

#include <cstdlib>
#include <cstring>
#include <optional>

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
  std::optional<std::string> caller;
  const size_t n = std::strlen(kVar);
  const std::string saved = std::string(kCallerTunablesVar) + "=";
  for (char* const* e = env; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, saved.c_str(), saved.size()) == 0) continue;  // set below
    if (std::strncmp(*e, kVar, n) != 0) {
      out.emplace_back(*e);
    } else if (!caller) {  // (a second one, which getenv would not see, is dropped)
      caller = *e + n;
      out.push_back(kVar + job_tunables(*caller));
    }
  }
  if (!caller) out.push_back(kVar + job_tunables(""));
  out.push_back(saved + caller.value_or(""));
  return out;
}

void restore_caller_tunables() {
  const char* caller = std::getenv(kCallerTunablesVar);
  if (caller == nullptr) return;
  if (*caller == '\0') unsetenv("GLIBC_TUNABLES");
  else setenv("GLIBC_TUNABLES", caller, 1);
  unsetenv(kCallerTunablesVar);
}

}  // namespace torq::runner

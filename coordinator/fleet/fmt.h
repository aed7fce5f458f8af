// Fixed-point text of a number, for log lines and summaries.
#pragma once

#include <cstdio>
#include <string>

namespace torq::coordinator {

inline std::string fmt(double v, int prec = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

}  // namespace torq::coordinator

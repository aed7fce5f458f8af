// Text helpers of the HTML pages (matrix_internal.h): element ids,
// URL fragments and the way numbers are shown.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

#include "pipeline/matrix/matrix_internal.h"

namespace torq::pipeline::matrix::detail {

std::string element_id(const std::string& prefix, const std::string& id) {
  std::string out = prefix;
  for (const char c : id) out += (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') ? '_' : c;
  return out;
}

std::string url_fragment(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string printf_str(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string metric(double v, bool negative_unknown, const char* unknown) {
  if (std::isnan(v) || (negative_unknown && v < 0)) return unknown;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return printf_str("%.6g", v);
}

// Rounded here rather than by printf, whose halves go to even (37.5% would
// show as 38% but 62.5% as 62%).
std::string percent(double share) { return printf_str("%.0f%%", std::floor(share * 100 + 0.5)); }

}  // namespace torq::pipeline::matrix::detail

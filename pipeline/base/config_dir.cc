#include "pipeline/base/config_dir.h"

#include <cstdlib>

namespace torq::base {

std::string config_dir() {
  if (const char* env = std::getenv("TORQ_CONFIG_DIR")) return env;
  return std::string(TORQ_SOURCE_DIR) + "/configs";
}

std::string targets_dir() { return config_dir() + "/targets"; }

}  // namespace torq::base

// Where the configs live (configs/targets/*.yaml executor profiles,
// configs/toolchains/*.yaml): $TORQ_CONFIG_DIR, else the source tree's
// configs/ (TORQ_SOURCE_DIR, set by the build).
#pragma once

#include <string>

namespace torq::base {

// The configs directory (no trailing slash).
std::string config_dir();
// <config_dir>/targets: the built-in executor profiles.
std::string targets_dir();

}  // namespace torq::base

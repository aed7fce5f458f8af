// Names the calling thread (Linux: at most 15 characters, longer names are
// cut), so `top -H`, `ps -L`, perf and /proc/PID/task/*/comm tell a
// coordinator's threads apart: the preparer, the exporter, the commit
// writer, ... (all "torq-coordinato" before). Best effort: a name the
// kernel refuses changes nothing.
#pragma once

#include <string_view>

namespace torq::base {

void name_this_thread(std::string_view name);

}  // namespace torq::base

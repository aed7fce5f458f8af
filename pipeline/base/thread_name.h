// Names the calling thread (Linux: at most 15 characters, longer names are
// cut), so `top -H`, `ps -L`, perf and /proc/PID/task/*/comm tell a
// coordinator's threads apart: the preparer, the exporter, the commit
// writer, ... (all "torq-coordinato" before). Best effort: a name the
// kernel refuses changes nothing.
// And what the process's threads have cost in CPU, by name, including the
// named threads that have ended (issue 32: where a coordinator's CPU goes).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace torq::base {

void name_this_thread(std::string_view name);

// CPU seconds (user + system) of this process's threads by name, largest
// first: the live threads (/proc/self/task, the main thread as "main"),
// plus the threads named with name_this_thread that have ended (their own
// CPU clock read as they ended). Threads of one name are summed (RocksDB's
// "rocksdb:high" pool, one "torq-quantize" per model). Empty when
// /proc/self/task cannot be read.
std::vector<std::pair<std::string, double>> cpu_by_thread();

}  // namespace torq::base

// The job process of a local pool (`torq-worker --stdio`): Job frames in on
// stdin, Result frames out on stdout, in the order jobs finish. With
// lanes > 1 it runs that many jobs at once on threads of one process, so
// they share the JobRunner's models, each model's reference run and
// oneDNN's compiled kernels; the pool (local_pool.h) matches results to
// jobs by id and decides what a crash or a hang of the process costs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "worker/runner/job_runner.h"

namespace torq::runner {

struct StdioServeOptions {
  std::string id;  // worker id, for messages
  int lanes = 1;   // jobs run at once
  // Fault injection for tests of the supervision (DESIGN §6): "hang" or
  // "crash" when a job id contains the string.
  std::vector<std::pair<std::string, std::string>> faults;
  int delay_ms = 0;  // test aid: every job takes this much longer
};

// Serves until stdin ends (returns 0 once the jobs taken have finished) or
// a frame is broken (returns 2). Exits the process at once when stdout is
// gone (the pool died or killed us): nothing is left to answer.
int serve_stdio(JobRunner& runner, const StdioServeOptions& o);

// Faults and delay from TORQ_WORKER_FAULT ("hang:SUBSTR,crash:SUBSTR") and
// TORQ_WORKER_DELAY_MS; off unless set.
void faults_from_env(StdioServeOptions* o);

}  // namespace torq::runner

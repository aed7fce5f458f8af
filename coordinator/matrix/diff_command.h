// `torq-coordinator diff [--spec S] [--db DIR | --export DIR] [RUN_A] [RUN_B]`
// (issue 13): what changed between two runs of a matrix spec, from the run
// history in the store (pipeline/store/run_history.h, pipeline/store/run_diff.h).
//
//   store     --db DIR, else EXPORT/.torq-store (EXPORT: --export, default
//             torq-results), as `torq-coordinator --spec` keeps it
//   spec      --spec S; without it, the only spec with a history in the store
//   runs      RUN_A RUN_B are run numbers (1, 2, ...); none: the last two;
//             RUN_A alone: RUN_A against the last run
//
// Prints diff_text (or with --json diff_json) on `out`. Returns 0 (changes
// or not), 2 on bad input — no store there, no history, an unknown spec or
// run (the message lists the known ones), fewer than two runs.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "pipeline/store/run_diff.h"

namespace torq::coordinator {

struct DiffCommand {
  std::string spec;
  std::string db, export_dir;
  std::vector<std::string> runs;  // at most two
  bool json = false;
  pipeline::history::DiffThresholds thresholds;
};

int diff_command(const DiffCommand& c, std::ostream& out, std::ostream& err);

}  // namespace torq::coordinator

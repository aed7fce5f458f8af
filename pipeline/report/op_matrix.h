// The op-support matrix of a run (tt-torch's op-by-op report, across
// models): every unique op (target + op key, op_key.h: op type, attributes,
// input dtypes and shapes) × executor, with its status over the layers that
// have that op, how often it occurs, the models using it and the models it
// blocks. Built from the run's test records (run_history.h); pure data.
//
// A layer counts once per (model, variant, target): a discover test and a
// run test of one model share their layers, and a subgraph test's layers
// are the model's. For one occurrence, with E the first executor tested:
//   blocked    every tested executor errors (the model cannot be placed)
//   falls back E errors, another executor runs it
// Rows are sorted by the number of models blocked, then falling back, then
// models using the op, then occurrences (all descending), then target and op.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "pipeline/store/run_history.h"
#include "pipeline/core/types.h"

namespace torq::pipeline {

struct OpCell {
  std::map<Status, int> counts;  // occurrences by status
  std::string error;             // the first error seen ("class: message")
};

struct OpRow {
  std::string target, op, op_type;
  int occurrences = 0;
  std::set<std::string> models, blocked, falls_back;
  std::map<Executor, OpCell> executors;
};

struct OpMatrix {
  std::vector<Executor> executors;  // every executor tested, priority order
  std::vector<OpRow> rows;
};

OpMatrix op_matrix(const std::vector<history::TestRecord>& tests);

// The same, a test at a time (a coordinator does not keep every test's
// layers until the end of its run): add each record, then finish once.
class OpMatrixBuilder {
 public:
  void add(const history::TestRecord& t);
  OpMatrix finish();

 private:
  std::map<std::pair<std::string, std::string>, OpRow> rows_;  // (target, op)
  std::set<std::string> seen_;                                  // model|variant|target|layer
  std::set<Executor> executors_;
};

// "success", "error", or for a mix "success 3, error 1" (status order);
// "-" when the executor never ran the op.
std::string cell_text(const OpCell& c);

// ops.csv (RFC 4180 quoting): target,op_type,op,<executor>...,occurrences,
// models,blocked_models,fallback_models,<executor>_error... — models as
// "a;b", one row per OpRow in matrix order.
std::string ops_csv(const OpMatrix& m);

}  // namespace torq::pipeline

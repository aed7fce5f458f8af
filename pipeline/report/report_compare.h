// `torq-gen-config compare A.json B.json`: how far two discovery reports of
// the same model agree (sim vs board, tonight vs last week, two exports).
// Pure functions, no I/O; thread-safe.
//
// Alignment of the layers:
// - by layer id when at least 90% of A's layer ids are layers of B; the
//   others (of A and of B) are unaligned;
// - otherwise by op-type sequence: a global (Needleman-Wunsch) alignment of
//   the two layer lists in _node_index order, scoring +2 for equivalent op
//   types, -1 for a mismatch (two different ops at the same place, kept as
//   an aligned pair and counted as an op-type mismatch) and -1 for a gap (a
//   layer present in one model only, e.g. a Flatten one export lacks). Op
//   types are compared through a small equivalence map of ops exported
//   differently: GlobalAveragePool = ReduceMean (over H,W), Gemm = MatMul,
//   Flatten = Reshape, Clip = Relu6 (a Relu6 exported as Clip). At most
//   kMaxSequenceLayers layers per report: beyond that, the id alignment is
//   used whatever its coverage (CompareResult::note says so).
// A layer's op type is LayerInfo::op_type, else its id's prefix before the
// first '_' (ids are `<OpType>_<first output>`).
//
// Per executor tested in both reports: a layer `runs` when its status is
// success or difference and `fails` when it is error; an executor absent
// from a layer (not tested) is not counted. Agreement = aligned layers
// tested on it in both reports whose class (runs/fails) is the same, over
// those tested in both. Confusion matrices (rows A runs/fails, columns B
// runs/fails) are kept per op type of A's layer and in total; disagreeing
// layers are listed in A's order.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/core/types.h"

namespace torq::pipeline {

inline constexpr size_t kMaxSequenceLayers = 5000;

struct CompareOptions {
  std::optional<Executor> executor;  // only this one (default: all in both)
  std::string a_label, b_label;      // names shown for A and B (e.g. paths); default model_name
};

// counts[a_fails][b_fails]: [0][0] both run, [0][1] A runs / B fails,
// [1][0] A fails / B runs, [1][1] both fail.
struct Confusion {
  std::array<std::array<int, 2>, 2> counts{};
  int total() const { return counts[0][0] + counts[0][1] + counts[1][0] + counts[1][1]; }
  int agreed() const { return counts[0][0] + counts[1][1]; }
};

struct Disagreement {
  std::string a_id, b_id, op_type;  // op_type "A" or "A/B" when they differ
  Status a_status = Status::kError, b_status = Status::kError;
  std::string a_failure, b_failure;  // failure summaries, one line, cut to ~100 chars
};

struct ExecutorCompare {
  Executor executor = Executor::kNss;
  Confusion total;                            // compared = total.total()
  std::map<std::string, Confusion> by_op_type;  // A's op type
  std::vector<Disagreement> disagreements;
  // agreed / compared; NaN when no aligned layer was tested in both.
  double agreement() const;
};

struct CompareSide {
  std::string label, model_name;
  int layers = 0;
  std::vector<std::string> only_here;  // unaligned layer ids, in layer order
};

struct OpTypeMismatch {
  std::string a_id, b_id, a_op, b_op;
};

enum class AlignMethod { kById, kByOpSequence };
const char* align_method_name(AlignMethod m);  // "id" | "op_sequence"

struct CompareResult {
  CompareSide a, b;
  AlignMethod method = AlignMethod::kById;
  std::string note;                      // why the method was forced, if it was
  std::vector<std::pair<int, int>> pairs;  // aligned (A index, B index) into layers
  std::vector<OpTypeMismatch> mismatches;  // aligned pairs of non-equivalent op types
  std::vector<ExecutorCompare> executors;  // priority order (nss, css, host)
};

// The op type of `l`: info.op_type, else the id's prefix before '_'.
std::string layer_op_type(const LayerReport& l);
// True when op types `x` and `y` are equal or equivalent (map above).
bool op_types_equivalent(const std::string& x, const std::string& y);

// Aligns `a` and `b` and compares their statuses. The executors compared are
// o.executor when set (even when a report lacks it: then nothing is
// compared), else every executor with a result in both reports.
CompareResult compare_reports(const ModelReport& a, const ModelReport& b, const CompareOptions& o = {});

// Human text: A and B, the alignment (method, aligned, only in A, only in B,
// op-type mismatches, up to 20 unaligned/mismatched ids each), then per
// executor the agreement (percent and counts), the confusion matrix per op
// type with a total row, and the disagreeing layers (the first 50; failure
// summaries of the failing side).
std::string render_compare(const CompareResult& r);

// The same for machines: {"a": {label, model_name, layers}, "b": {...},
// "alignment": {method, note?, aligned, only_in_a, only_in_b,
// op_type_mismatches, only_in_a_ids[], only_in_b_ids[], mismatched[{a_id,
// b_id, a_op_type, b_op_type}]}, "executors": {<name>: {compared, agreed,
// agreement (null when nothing compared), confusion: {total: M, by_op_type:
// {<op>: M}}, disagreements[{a_id, b_id, op_type, a_status, b_status,
// a_failure, b_failure}]}}} with M = {a_runs_b_runs, a_runs_b_fails,
// a_fails_b_runs, a_fails_b_fails}.
nlohmann::ordered_json compare_json(const CompareResult& r);

}  // namespace torq::pipeline

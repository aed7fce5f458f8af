// Run history of matrix specs (issue 13): every completed run of a spec is
// kept in the store — per test its outcome, bring-up status, PCC and
// timing, per layer its op, each executor's status and the recommendation —
// so that two runs can be compared (run_diff.h), the failed tests rerun
// (--last-failed) and each report say what changed since the previous run.
// No sockets, no tensors.
//
// Storage, in the store's `runs` column family (store.h):
//   history/<spec key>/runs/<seq>              the run (RunRecord without tests), JSON
//   history/<spec key>/tests/<seq>/<test id>   one test of it (TestRecord), JSON
//   history/<spec key>/latest/<test id>        {"seq": n}: the run of the test's latest record
//   history-specs/<spec key>                   {"spec": "<absolute path>"}
// <seq> is the run's number (1, 2, ...) zero-padded to 8 digits; <spec key>
// is 16 hex digits of the SHA-256 of the spec's absolute path.
//
// Contracts:
//  - A run is appended in one synced WriteBatch: after a crash or a kill
//    either all of it is in the store or none of it, and earlier runs are
//    never rewritten (only the latest/ index moves forward).
//  - Every failure is a PipelineError naming the key: a record that does
//    not decode, or a run that names a test record that is not there, is a
//    StoreReadError with the store's repair hint (the store's damage, never
//    a test's outcome: the run stops with exit 2, issue 60).
//  - History loss is detected: each append counts the spec's runs in the
//    store's seal (Store::seal_count), so a store that comes back from a
//    MANIFEST cut short with fewer runs than it had fails to open, naming
//    the spec and how many runs are gone, instead of the next run taking
//    a lost run's number.
//  - Not thread-safe: one History per thread (the Store itself is).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/store/store.h"
#include "pipeline/core/types.h"

namespace torq::pipeline::history {

// One executor's result for one layer.
struct ExecRecord {
  Status status = Status::kError;
  std::string error;  // error: "<class>: <message>" (cut to 300 characters)
  double pcc = -1;    // -1: unknown
  double ms = -1;     // device / simulated run time; -1: unknown
  bool operator==(const ExecRecord&) const = default;
};

struct LayerRecord {
  std::string id;  // <OpType>_<first output>
  std::string op;  // the op key (op_key.h)
  std::optional<Executor> recommended;
  std::map<Executor, ExecRecord> executors;
  bool operator==(const LayerRecord&) const = default;
};

// One test of a run. Names as matrix.h writes them (outcome "failed",
// bringup "PASSED", status "EXPECTED_PASSING", mode "discover").
struct TestRecord {
  std::string id, model, variant, target, mode;
  std::string outcome, bringup, status;
  std::string message, failed_step;
  bool ran = false;
  double pcc = -1;  // -1: unknown
  double required_pcc = 0.99;
  double device_ms = -1;  // the assigned full-model run's device time; -1: unknown
  double wall_s = 0;
  std::vector<LayerRecord> layers;
  bool operator==(const TestRecord&) const = default;
};

struct RunRecord {
  int seq = 0;         // 1, 2, ... per spec (set by append)
  std::string spec;    // absolute path
  std::string run_id;  // the fleet run (store results), empty when nothing ran
  std::string started_utc, finished_utc;
  std::string k, m, preset;           // the selection
  bool last_failed = false;           // a --last-failed rerun
  std::map<std::string, int> counts;  // outcome -> tests
  // The mean over the run's tests with layers of the share of layers
  // recommended on nss (the report's trend); -1: no test had layers, or a
  // run recorded before this was kept. Set by append, like counts.
  double nss_coverage = -1;
  std::vector<std::string> test_ids;  // in run order
  std::vector<TestRecord> tests;      // filled by History::load
};

nlohmann::json to_json(const TestRecord& t);
TestRecord test_from_json(const nlohmann::json& j);  // PipelineError on a malformed record
nlohmann::json to_json(const RunRecord& r);          // without tests
RunRecord run_from_json(const nlohmann::json& j);

class History {
 public:
  // The history of the spec at `spec_path` (made absolute and normal) in
  // `store`, which must outlive this object.
  History(Store& store, const std::string& spec_path);

  const std::string& spec() const { return spec_; }
  // Completed runs, oldest first, without their tests.
  std::vector<RunRecord> runs() const;
  // One run with its tests (in run order); nullopt when no run has `seq`.
  std::optional<RunRecord> load(int seq) const;
  // Each test's latest record over every run, by test id (a run that did
  // not select a test keeps its earlier record: pytest's cache).
  std::map<std::string, TestRecord> latest() const;
  // Test `id`'s latest record; nullopt when no run has it.
  std::optional<TestRecord> latest_of(const std::string& id) const;
  // Appends `run` with its tests as the next run (seq = last + 1); returns
  // its seq. The tests' records go in synced batches of a few MB each,
  // then the run's record and the tests' "latest" pointers in a last one:
  // until it is written no reader sees the run, and a run stopped before
  // it leaves records that the next append of that seq writes over.
  int append(RunRecord run);
  // The same with the tests given apart (run.tests is ignored): a
  // coordinator's thousands of records are not copied into the run.
  int append(RunRecord run, const std::vector<TestRecord>& tests);
  // The same with `count` tests made one at a time by test_at(0 ..
  // count - 1), in order, each written and dropped before the next is made.
  int append(RunRecord run, size_t count, const std::function<TestRecord(size_t)>& test_at);

  // Every spec with a history in `store`: absolute paths, sorted.
  static std::vector<std::string> specs(const Store& store);

 private:
  std::string key(const std::string& tail) const { return "history/" + key_ + "/" + tail; }
  TestRecord latest_record(const std::string& k, const std::string& v) const;
  Store& store_;
  std::string spec_, key_;
};

}  // namespace torq::pipeline::history

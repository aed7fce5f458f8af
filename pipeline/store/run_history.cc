// The run history in the store (run_history.h): key layout, appending a run
// in one batch, listing and loading runs, the latest record of each test.
#include "pipeline/store/run_history.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "pipeline/core/json_limits.h"
#include "pipeline/model/model_import.h"
#include "pipeline/store/store_io.h"

namespace torq::pipeline::history {

namespace {

std::string padded(int seq) {
  char b[16];
  std::snprintf(b, sizeof b, "%08d", seq);
  return b;
}

nlohmann::json parse(const std::string& key, const std::string& text) {
  check_json_depth(text, "run history: record '" + key + "'");
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw PipelineError("run history: record '" + key + "' is not JSON");
  return j;
}

// A record decoded by `from`; any malformation is a StoreReadError naming the key.
template <class From>
auto decode(const std::string& dir, const std::string& key, const std::string& text, From from) {
  try {
    return from(parse(key, text));
  } catch (const std::exception& e) {
    store_detail::throw_damage(dir, "runs", "run history record '" + key + "': " + e.what());
  }
}

RunRecord decode_run(const std::string& dir, const std::string& key, const std::string& text) {
  return decode(dir, key, text, [](const nlohmann::json& j) { return run_from_json(j); });
}

TestRecord decode_test(const std::string& dir, const std::string& key, const std::string& text) {
  return decode(dir, key, text, [](const nlohmann::json& j) { return test_from_json(j); });
}

// The seq of a key ending in "/<8 digits>" (or "/<8 digits>/..." after `prefix`).
int seq_of(const std::string& dir, const std::string& key, const std::string& prefix) {
  const std::string digits = key.substr(prefix.size(), 8);
  if (digits.size() != 8 || digits.find_first_not_of("0123456789") != std::string::npos)
    store_detail::throw_damage(dir, "runs", "run history: malformed key '" + key + "'");
  return std::stoi(digits);
}

// Test `t`'s share of layers recommended on nss; -1 without layers.
double nss_share(const TestRecord& t) {
  if (t.layers.empty()) return -1;
  size_t nss = 0;
  for (const LayerRecord& l : t.layers) nss += l.recommended == Executor::kNss;
  return static_cast<double>(nss) / static_cast<double>(t.layers.size());
}

}  // namespace

History::History(Store& store, const std::string& spec_path)
    : store_(store), spec_(std::filesystem::absolute(spec_path).lexically_normal().string()) {
  key_ = sha256_hex(spec_).substr(0, 16);
}

std::vector<RunRecord> History::runs() const {
  std::vector<RunRecord> out;
  for (const auto& [k, v] : store_.run_records(key("runs/"))) out.push_back(decode_run(store_.dir(), k, v));
  return out;
}

std::optional<RunRecord> History::load(int seq) const {
  const std::string k = key("runs/" + padded(seq));
  const auto v = store_.get_run_record(k);
  if (!v) return std::nullopt;
  RunRecord r = decode_run(store_.dir(), k, *v);
  std::map<std::string, TestRecord> by_id;
  const std::string prefix = key("tests/" + padded(seq) + "/");
  for (const auto& [tk, tv] : store_.run_records(prefix))
    by_id[tk.substr(prefix.size())] = decode_test(store_.dir(), tk, tv);
  for (const auto& id : r.test_ids) {
    const auto it = by_id.find(id);
    if (it == by_id.end())  // the run's record is written last: its tests were there
      store_detail::throw_damage(store_.dir(), "runs",
                                 "run history: run " + std::to_string(seq) + " (" + k + ") names test '" + id +
                                     "', whose record " + prefix + id + " is missing");
    r.tests.push_back(it->second);
  }
  return r;
}

std::map<std::string, TestRecord> History::latest() const {
  std::map<std::string, TestRecord> out;
  const std::string prefix = key("latest/");
  for (const auto& [k, v] : store_.run_records(prefix)) out[k.substr(prefix.size())] = latest_record(k, v);
  return out;
}

std::optional<TestRecord> History::latest_of(const std::string& id) const {
  const std::string k = key("latest/" + id);
  const auto v = store_.get_run_record(k);
  if (!v) return std::nullopt;
  return latest_record(k, *v);
}

// The test record that the "latest" pointer `k` (value `v`) names; throws.
TestRecord History::latest_record(const std::string& k, const std::string& v) const {
  const nlohmann::json j = decode(store_.dir(), k, v, [](const nlohmann::json& p) { return p; });
  if (!j.is_object() || !j.contains("seq") || !j["seq"].is_number_integer())
    store_detail::throw_damage(store_.dir(), "runs", "run history: record '" + k + "' has no seq");
  const std::string id = k.substr(key("latest/").size());
  const std::string tk = key("tests/" + padded(j["seq"].get<int>()) + "/" + id);
  const auto tv = store_.get_run_record(tk);
  if (!tv) store_detail::throw_damage(store_.dir(), "runs", "run history: '" + k + "' names a missing record '" + tk + "'");
  return decode_test(store_.dir(), tk, *tv);
}

int History::append(RunRecord run) {
  const std::vector<TestRecord> tests = std::move(run.tests);
  run.tests.clear();
  return append(std::move(run), tests);
}

int History::append(RunRecord run, const std::vector<TestRecord>& tests) {
  return append(std::move(run), tests.size(), [&](size_t i) { return tests[i]; });
}

int History::append(RunRecord run, size_t count, const std::function<TestRecord(size_t)>& test_at) {
  constexpr size_t kBatchBytes = size_t{8} << 20;
  const auto existing = store_.run_records(key("runs/"));
  run.seq = existing.empty() ? 1 : seq_of(store_.dir(), existing.back().first, key("runs/")) + 1;
  run.spec = spec_;
  run.tests.clear();
  run.test_ids.clear();
  run.counts.clear();
  std::vector<std::pair<std::string, std::string>> batch, last;
  size_t bytes = 0, with_layers = 0;
  double shares = 0;
  for (size_t i = 0; i < count; ++i) {
    const TestRecord t = test_at(i);
    run.test_ids.push_back(t.id);
    ++run.counts[t.outcome];
    if (const double share = nss_share(t); share >= 0) shares += share, ++with_layers;
    batch.emplace_back(key("tests/" + padded(run.seq) + "/" + t.id), to_json(t).dump());
    bytes += batch.back().second.size();
    if (bytes >= kBatchBytes) {
      store_.put_run_records(batch);
      batch.clear();
      bytes = 0;
    }
    last.emplace_back(key("latest/" + t.id), nlohmann::json({{"seq", run.seq}}).dump());
  }
  store_.put_run_records(batch);
  run.nss_coverage = with_layers ? shares / static_cast<double>(with_layers) : -1;
  last.emplace_back(key("runs/" + padded(run.seq)), to_json(run).dump());
  last.emplace_back("history-specs/" + key_, nlohmann::json({{"spec", spec_}}).dump());
  store_.put_run_records(last);
  // Runs 1 .. seq, counted in the store's seal: a MANIFEST cut short that
  // drops some of them is said at the next open (store.h: The seal).
  store_.seal_count(key("runs/"), "runs in the history of spec '" + spec_ + "'", existing.size() + 1);
  return run.seq;
}

std::vector<std::string> History::specs(const Store& store) {
  std::vector<std::string> out;
  for (const auto& [k, v] : store.run_records("history-specs/"))
    out.push_back(decode(store.dir(), k, v, [](const nlohmann::json& j) { return j; }).value("spec", k));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace torq::pipeline::history

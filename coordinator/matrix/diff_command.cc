// `torq-coordinator diff` (diff_command.h): the store, the spec, the two
// runs, then the diff as text or JSON.
#include "coordinator/matrix/diff_command.h"

#include <filesystem>
#include <memory>

#include "pipeline/store/run_history.h"
#include "pipeline/store/store.h"

namespace torq::coordinator {

namespace fs = std::filesystem;
using namespace pipeline;
using namespace pipeline::history;

namespace {

std::unique_ptr<Store> open_store(const DiffCommand& c) {
  const std::string db =
      !c.db.empty() ? c.db : (c.export_dir.empty() ? std::string("torq-results") : c.export_dir) + "/.torq-store";
  if (!fs::exists(fs::path(db) / "CURRENT"))
    throw PipelineError("no store at '" + db + "' (run torq-coordinator --spec FILE" +
                        (c.db.empty() ? " --export DIR" : " --db DIR") + " first, or give --db / --export)");
  return Store::open(db);
}

std::string spec_of(const DiffCommand& c, const Store& store) {
  if (!c.spec.empty()) return c.spec;
  const auto specs = History::specs(store);
  if (specs.size() == 1) return specs.front();
  if (specs.empty()) throw PipelineError("no run history in store '" + store.dir() + "'");
  std::string names;
  for (const auto& s : specs) names += "\n  " + s;
  throw PipelineError("the store '" + store.dir() + "' holds the history of several specs; give --spec:" + names);
}

std::string known_runs(const std::vector<RunRecord>& runs) {
  std::string s;
  for (const auto& r : runs) {
    int tests = 0;
    for (const auto& [o, n] : r.counts) tests += n;
    s += "\n  " + std::to_string(r.seq) + "  " + r.started_utc + "  tests " + std::to_string(tests) +
         (r.last_failed ? " (--last-failed)" : "");
  }
  return s;
}

RunRecord run_of(const History& h, const std::vector<RunRecord>& runs, const std::string& id) {
  size_t used = 0;
  int seq = -1;
  try {
    seq = std::stoi(id, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::optional<RunRecord> r;
  if (used == id.size() && seq > 0) r = h.load(seq);
  if (!r) throw PipelineError("unknown run '" + id + "' of " + h.spec() + "; known runs:" + known_runs(runs));
  return *r;
}

}  // namespace

int diff_command(const DiffCommand& c, std::ostream& out, std::ostream& err) {
  try {
    if (c.runs.size() > 2) throw PipelineError("give at most two runs (RUN_A RUN_B)");
    const auto store = open_store(c);
    const History h(*store, spec_of(c, *store));
    const auto runs = h.runs();
    if (runs.empty()) {
      std::string specs;
      for (const auto& s : History::specs(*store)) specs += "\n  " + s;
      throw PipelineError("no run of " + h.spec() + " in the store '" + store->dir() + "'" +
                          (specs.empty() ? "" : "; specs with a history:" + specs));
    }
    if (runs.size() < 2 && c.runs.size() < 2)
      throw PipelineError(h.spec() + " has one run in the history; diff needs two:" + known_runs(runs));
    const std::string last = std::to_string(runs.back().seq);
    const std::string prev = runs.size() >= 2 ? std::to_string(runs[runs.size() - 2].seq) : last;
    const RunRecord a = run_of(h, runs, c.runs.empty() ? prev : c.runs[0]);
    const RunRecord b = run_of(h, runs, c.runs.size() == 2 ? c.runs[1] : last);
    const RunDiff d = diff_runs(a, b, c.thresholds);
    out << (c.json ? diff_json(d).dump(2) + "\n" : diff_text(d)) << std::flush;
    return 0;
  } catch (const std::exception& e) {
    err << "torq-coordinator diff: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace torq::coordinator

// The fleet worker's model cache (fleet_worker_impl.h): models verified
// where they lie, fetched in chunks (blob_fetch.h) under a claim shared
// with the other processes using the cache (cache_claim.h), and jobs
// parked until their models are in.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "pipeline/base/file_bytes.h"
#include "pipeline/core/sha256.h"
#include "pipeline/wire/fleet_codec.h"
#include "worker/runner/fleet_worker_impl.h"

namespace torq::runner {

namespace fs = std::filesystem;
using namespace pipeline;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool FleetWorker::Impl::have_model(const std::string& hash) {
  if (verified.count(hash)) return true;
  const std::string path = opt.cache_dir + "/" + hash + ".onnx";
  if (opt.trusted_cache) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return false;
    verified.insert(hash);
    return true;
  }
  const base::MappedFile file(path);  // hashed where it lies: no 30 MB copy
  if (!file.data()) return false;
  if (sha256_hex(file.data(), file.size()) != hash) {
    log("cached model " + path + " is corrupt; fetching it again");
    std::error_code ec;
    fs::remove(path, ec);
    return false;
  }
  verified.insert(hash);
  return true;
}

void FleetWorker::Impl::store_model(const std::string& hash, const std::string& bytes) {
  const std::string path = opt.cache_dir + "/" + hash + ".onnx";
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw PipelineError(tmp + ": cannot write the model cache");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw PipelineError(path + ": cannot write the model cache (" + ec.message() + ")");
  verified.insert(hash);
}

void FleetWorker::Impl::submit_or_park(const JobSpec& job) {
  for (const std::string* hash : {&job.model_hash, &job.original_hash}) {
    if (hash->empty() || have_model(*hash)) continue;
    if (!fetch_under_way(*hash) && !fetch_or_wait(*hash)) continue;  // (under way: a hint's fetch)
    parked[*hash].push_back(job);
    return;
  }
  pool->submit(job);
}

bool FleetWorker::Impl::fetch_under_way(const std::string& hash) const {
  return fetches.count(hash) != 0 || sibling_fetches.count(hash) != 0;
}

bool FleetWorker::Impl::fetch_or_wait(const std::string& hash) {
  std::optional<CacheClaim> claim = CacheClaim::try_take(opt.cache_dir, hash);
  if (!claim) {
    sibling_fetches.insert(hash);
    log("model " + hash.substr(0, 16) + ": another process sharing the cache " + opt.cache_dir +
        " is fetching it; its jobs wait for that");
    return true;
  }
  if (have_model(hash)) return false;
  start_fetch(hash, std::move(*claim));
  return true;
}

void FleetWorker::Impl::start_fetch(const std::string& hash, CacheClaim claim) {
  claims.insert_or_assign(hash, std::move(claim));
  fetches[hash] = std::make_unique<BlobFetch>(hash, opt.cache_dir, kBlobChunkBytes, kBlobWindow,
                                              [this](const std::string& msg) { send(msg); });
}

void FleetWorker::Impl::poll_sibling_fetches() {
  if (sibling_fetches.empty() || Clock::now() - siblings_checked < milliseconds(kSiblingPollMs)) return;
  siblings_checked = Clock::now();
  std::vector<std::string> ended;
  for (const std::string& hash : sibling_fetches) {
    std::optional<CacheClaim> claim = CacheClaim::try_take(opt.cache_dir, hash);
    if (!claim) continue;
    ended.push_back(hash);
    if (!have_model(hash)) {
      log("model " + hash.substr(0, 16) + ": the other process let go without it; fetching it here");
      start_fetch(hash, std::move(*claim));
    }
  }
  for (const std::string& hash : ended) {
    sibling_fetches.erase(hash);
    if (fetches.count(hash)) continue;
    log("cached model " + hash.substr(0, 16) + " (fetched by another process sharing the cache)");
    std::vector<JobSpec> jobs = std::move(parked[hash]);
    parked.erase(hash);
    for (const auto& j : jobs) submit_or_park(j);
  }
}

void FleetWorker::Impl::on_hint(const std::string& hash) {
  if (!pool || no_room.count(hash) || fetch_under_way(hash) || have_model(hash)) return;
  fetch_or_wait(hash);
}

void FleetWorker::Impl::on_blob(const FleetMessage& m) {
  auto f = fetches.find(m.hash);
  if (f == fetches.end()) return;  // not fetching it (a late or duplicate reply)
  const BlobFetch::State state = f->second->on_chunk(m);
  if (state == BlobFetch::State::kRunning) return;
  const std::string problem = state == BlobFetch::State::kFailed ? f->second->error() : "";
  const bool full = state == BlobFetch::State::kFailed && f->second->no_room();
  if (full) no_room[m.hash] = f->second->total();
  if (problem.empty()) {
    verified.insert(m.hash);
    log("cached model " + m.hash.substr(0, 16) + " (" + std::to_string(f->second->total()) + " bytes)");
  }
  fetches.erase(f);
  claims.erase(m.hash);  // after the rename: a waiting process finds the model
  std::vector<JobSpec> jobs = std::move(parked[m.hash]);
  parked.erase(m.hash);
  // A model that cannot be fetched or cached (a full or read-only disk,
  // a corrupt transfer) says nothing about the op (issue 30): its jobs go
  // back as infrastructure errors (requeued, not attempts) and the device
  // checks its health, which probes the cache, before it takes another.
  // A cache with no room for the model is Bad at once (issue 60: its
  // check passed, the model failed again, 250 times a second), until the
  // check finds room for it.
  if (full) {
    if (health.fault(problem, Clock::now())) health_changed();
    else health_unchanged();
  } else if (!problem.empty() &&
             health.infrastructure_error("model " + m.hash.substr(0, 16) + ": " + problem, Clock::now())) {
    health_changed();
  }
  for (const auto& j : jobs) {
    if (problem.empty()) submit_or_park(j);
    else fail(j, kInfrastructureClass, "model " + m.hash.substr(0, 16) + " could not be fetched: " + problem);
  }
}

}  // namespace torq::runner

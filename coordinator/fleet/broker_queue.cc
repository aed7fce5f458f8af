// The fleet broker's the job queue, leases and the group commit
// (broker_impl.h; the poll loop that calls them is fleet_broker.cc).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/fleet/broker_impl.h"

namespace torq::coordinator {

bool FleetBroker::Impl::commit_due(Clock::time_point now) const {
  if (committing.empty()) return !acks.empty();
  return committing.size() >= kCommitBatch || leased == 0 || now - *committing_since >= kCommitDelay;
}

bool FleetBroker::Impl::send(const std::string& identity, const std::string& payload) {
  auto it = workers.find(identity);
  bool ok = false;
  try {
    ok = router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait) &&
         router.send(zmq::buffer(payload), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    ok = false;
  }
  if (it != workers.end()) {
    if (ok) it->second.last_sent = Clock::now();
    else it->second.unreachable = true;
  }
  return ok;
}

const QueueKey& FleetBroker::Impl::queue_of(Job& j) const {
  if (!j.queue) j.queue = queue_key(j.spec);
  return *j.queue;
}

void FleetBroker::Impl::enqueue(Job& j) {
  j.state = Job::State::kQueued;
  j.worker.clear();
  queues[queue_of(j)].emplace(j.seq, j.spec.id);
  ++queued;
}

void FleetBroker::Impl::unqueue(Job& j) {
  queues[queue_of(j)].erase({j.seq, j.spec.id});
  --queued;
}

Job* FleetBroker::Impl::next_for(const Worker& w) {
  const std::pair<uint64_t, std::string>* best = nullptr;
  const std::string target = queue_target(w.info.target);
  for (auto& [key, q] : queues) {
    const auto& [qt, tags, e] = key;
    if (q.empty() || qt != target) continue;
    if (std::find(w.info.executors.begin(), w.info.executors.end(), e) == w.info.executors.end()) continue;
    if (!tags.empty() && !offers(w.info.tags, tags)) continue;
    if (!best || q.begin()->first < best->first) best = &*q.begin();
  }
  return best ? &jobs.at(best->second) : nullptr;
}

void FleetBroker::Impl::take(Worker& w, Job& j) {
  unqueue(j);
  j.state = Job::State::kLeased;
  j.worker = w.identity;
  j.holder_id = w.info.worker_id;
  ++j.leases;
  w.leased.insert(j.spec.id);
  j.deadline = lease_deadline(w, j);
  j.starts = 0;
  ++leased;
}

Clock::time_point FleetBroker::Impl::lease_deadline(const Worker& w, const Job& j) const {
  auto d = Clock::now() + milliseconds(j.spec.timeout_ms) + milliseconds(opt.lease_slack_ms);
  if (w.prefetch() == 0) return d;
  uint32_t longest = j.spec.timeout_ms;
  for (const auto& id : w.leased) {
    auto it = jobs.find(id);
    if (it != jobs.end()) longest = std::max(longest, it->second.spec.timeout_ms);
  }
  const uint32_t cap = std::max<uint32_t>(1, w.info.capacity);
  return d + milliseconds(static_cast<int64_t>(longest) * ((w.prefetch() + cap - 1) / cap));
}

void FleetBroker::Impl::send_leases(const std::vector<Job*>& round) {
  if (round.empty()) return;
  if (opt.persist_leases) {
    // With their holders: after a restart only they may claim them.
    std::vector<pipeline::Store::Lease> states;
    states.reserve(round.size());
    for (const Job* j : round) states.push_back({j->spec.id, j->encoded, j->holder_id});
    store.put_leases(run, states);
    ++stats.lease_commits;
  }
  for (Job* j : round) {
    if (j->state != Job::State::kLeased) continue;
    auto w = workers.find(j->worker);
    if (w == workers.end() || !send(j->worker, encode_job_message(j->encoded))) {
      // Never reached the worker (now marked unreachable): not an attempt.
      --j->leases;
      if (w != workers.end()) w->second.leased.erase(j->spec.id);
      --leased;
      enqueue(*j);
      continue;
    }
    j->sent = Clock::now();
    if (!first_sent) first_sent = stats.first_dispatch = j->sent;
    ++stats.dispatched;
  }
}

void FleetBroker::Impl::unlease(Job& j, bool holder_died) {
  auto w = workers.find(j.worker);
  if (w != workers.end()) w->second.leased.erase(j.spec.id);
  const std::string holder = w != workers.end() ? w->second.info.worker_id : hex(j.worker);
  --leased;
  if (holder_died) j.died_on.insert(holder);
  if (holder_died && j.died_on.size() >= static_cast<size_t>(opt.max_attempts)) {
    ExecResult r;
    r.job_id = j.spec.id;
    r.executor = j.spec.executor;
    r.status = Status::kError;
    r.error_class = "crash";
    r.error_message = "the job was running on " + std::to_string(j.died_on.size()) +
                      " workers that died or went silent (last: " + holder + "); not retried";
    r.worker_id = holder;
    r.attempts = j.leases;
    ++stats.crashed;
    log("job " + j.spec.id + ": " + r.error_message);
    complete(j, std::move(r));
    return;
  }
  ++stats.requeued;
  enqueue(j);
}

void FleetBroker::Impl::complete(Job& j, ExecResult r) {
  r.job_id = j.spec.id;
  j.state = Job::State::kDone;
  j.worker.clear();
  if (committing.empty()) committing_since = Clock::now();
  committing.emplace_back(j.spec.id, std::move(r));
}

void FleetBroker::Impl::start_commit() {
  std::vector<Store::KeyedCommit> commits;
  commits.reserve(committing.size());
  for (const auto& [id, r] : committing) {
    const Job& j = jobs.at(id);
    commits.push_back({result_key_of(j.spec), {static_cast<int>(j.spec.first_node), r, id, j.encoded}});
  }
  in_flight.swap(committing);
  committing_since.reset();
  in_flight_acks.swap(acks);
  if (commits.empty()) return finish_commit();  // acknowledgements only: their results are on disk
  writer.start(std::move(commits));
}

void FleetBroker::Impl::finish_commit() {
  if (!in_flight.empty()) {
    ++stats.result_commits;
    stats.last_commit = Clock::now();
    if (first_sent) stats.dispatch_window_s = std::chrono::duration<double>(*stats.last_commit - *first_sent).count();
    std::vector<std::pair<std::string, ExecResult>> batch;
    batch.swap(in_flight);
    for (const auto& [id, r] : batch) {
      ++stats.completed;
      auto it = jobs.find(id);
      if (it == jobs.end()) continue;  // never: a job is completed once
      Job& j = it->second;
      if (j.wanted) {
        j.wanted = false;
        --wanted_open;
        (*done)(j.spec, r);
        it = jobs.find(id);  // the callback may have asked for more jobs (a rehash)
      }
      if (it != jobs.end()) retire(it);
    }
    if (*batch_done) (*batch_done)();
  }
  for (const auto& [identity, id] : in_flight_acks) send(identity, encode_result_ack(id));
  in_flight_acks.clear();
}

void FleetBroker::Impl::pump(bool wait, bool force) {
  for (;;) {
    if (writer.busy()) {
      if (!writer.done(wait)) return;
      finish_commit();
    }
    const bool any = !committing.empty() || !acks.empty();
    if (!((wait || force) ? any : commit_due(Clock::now()))) return;
    start_commit();
    if (!wait) return;
  }
}

void FleetBroker::Impl::retire(std::unordered_map<std::string, Job>::iterator it) {
  done_ids.insert(id_hash(it->first));
  jobs.erase(it);
}

void FleetBroker::Impl::want(const JobSpec& spec) {
  auto it = jobs.find(spec.id);
  if (it != jobs.end()) {  // queued, leased, held, or done and being committed
    Job& j = it->second;
    if (!j.wanted) ++wanted_open;
    j.wanted = true;
    return;
  }
  if (was_done(spec.id)) {
    for (const auto& r : store.layer_results(run, result_key_of(spec), static_cast<int>(spec.first_node)))
      if (r.executor == spec.executor && r.tolerance_used == spec.tolerance && !infrastructure_error(r)) {
        ++stats.reported_from_store;
        (*done)(spec, r);
        return;
      }
    log("job " + spec.id + " is marked done but has no stored result for its tolerance; running it again");
  }
  Job j;
  j.spec = spec;
  j.encoded = encode_job(spec);
  j.seq = next_seq++;
  j.wanted = true;
  ++wanted_open;
  enqueue(jobs.emplace(spec.id, std::move(j)).first->second);
  stats.table_peak = std::max(stats.table_peak, jobs.size());
  hint_models(spec);
}

void FleetBroker::Impl::hint_queued_models(const Worker& w) {
  // The next jobs of each queue (in dispatch order) are the ones that
  // matter soon; a queue of 100,000 is not walked for each registration.
  constexpr size_t kLookAhead = 4096;
  const std::string target = queue_target(w.info.target);
  std::set<std::string> named;
  for (const auto& [key, q] : queues) {
    if (std::get<0>(key) != target) continue;
    size_t seen = 0;
    for (auto it = q.begin(); it != q.end() && seen < kLookAhead; ++it, ++seen) {
      const auto j = jobs.find(it->second);
      if (j == jobs.end()) continue;
      for (const std::string* h : {&j->second.spec.model_hash, &j->second.spec.original_hash})
        if (!h->empty() && named.insert(*h).second) send(w.identity, encode_model_hint(*h));
    }
  }
}

void FleetBroker::Impl::hint_models(const JobSpec& spec) {
  for (const std::string* hash : {&spec.model_hash, &spec.original_hash}) {
    if (hash->empty() || !hinted.insert(*hash).second) continue;
    const std::string target = queue_target(spec);
    const std::string msg = encode_model_hint(*hash);
    for (auto& [id, w] : workers)
      if (w.takes_jobs() && queue_target(w.info.target) == target) send(id, msg);
  }
}

void FleetBroker::Impl::unserved(const std::string& what) {
  stats.missing_tags += (stats.missing_tags.empty() ? "" : "; ") + what;
  log("error: " + what + (opt.fail_on_missing_tags ? "; stopping" : "; waiting for such a worker"));
}

bool FleetBroker::Impl::missing_tags(Clock::time_point now) {
  if (!tags_check_from) tags_check_from = now + milliseconds(opt.missing_tags_wait_ms);
  if (now < *tags_check_from || now < next_tags_check) return false;
  next_tags_check = now + milliseconds(1000);
  bool stop = no_usable_worker(now);
  for (const auto& [key, q] : queues) {
    const auto& [target, tags, e] = key;
    if (q.empty() || tags.empty()) continue;
    bool served = false;
    for (const auto& [id, w] : workers)
      served = served || (queue_target(w.info.target) == target && offers(w.info.tags, tags) &&
                          std::find(w.info.executors.begin(), w.info.executors.end(), e) != w.info.executors.end());
    if (served || !tags_reported.insert(key).second) continue;
    unserved("no registered worker of target " + target + " offers tags [" + tags + "] for " + executor_name(e) +
             " (" + std::to_string(q.size()) + " jobs wait)");
    stop = stop || opt.fail_on_missing_tags;
  }
  return stop;
}

bool FleetBroker::Impl::no_usable_worker(Clock::time_point now) {
  bool stop = false;
  for (const auto& [key, q] : queues) {
    const auto& [target, tags, e] = key;
    bool registered = false, usable = false;
    std::string unusable;  // the registered ones, with why
    for (const auto& [id, w] : workers) {
      if (queue_target(w.info.target) != target || (!tags.empty() && !offers(w.info.tags, tags)) ||
          std::find(w.info.executors.begin(), w.info.executors.end(), e) == w.info.executors.end())
        continue;
      registered = true;
      const bool bad = w.quarantined || w.info.health == "Bad" || w.info.health == "Maintenance";
      usable = usable || (!bad && !w.unreachable);
      if (bad)
        unusable += (unusable.empty() ? "" : ", ") + w.info.worker_id + " " +
                    (w.quarantined ? std::string("quarantined") : w.info.health) +
                    (w.info.health_reason.empty() || w.quarantined ? "" : " (" + w.info.health_reason + ")");
    }
    if (q.empty() || !registered || usable) {  // nothing waits, nobody there (waited for), or served
      unusable_since.erase(key);
      unusable_reported.erase(key);
      continue;
    }
    const auto since = unusable_since.try_emplace(key, now).first->second;
    if (now - since < milliseconds(opt.missing_tags_wait_ms) || !unusable_reported.insert(key).second) continue;
    unserved("no usable worker of target " + target + (tags.empty() ? "" : " with tags [" + tags + "]") + " for " +
             executor_name(e) + " (" + std::to_string(q.size()) + " jobs wait): " + unusable);
    stop = stop || opt.fail_on_missing_tags;
  }
  return stop;
}

}  // namespace torq::coordinator

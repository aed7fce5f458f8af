// The fleet broker: one ROUTER socket, one poll loop (see fleet_broker.h).
// Read FleetBroker::run top to bottom: pull jobs, dispatch by credit, poll,
// handle each frame by type, then purge silent workers and overdue leases
// and send heartbeats. Every transition is written where it happens.
#include "coordinator/fleet/fleet_broker.h"

#include <algorithm>
#include <cstdio>

#include "coordinator/fleet/broker_impl.h"

namespace torq::coordinator {

namespace {

// Where ZeroMQ looks for the ZAP handler (RFC 27).
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// Messages queued to one worker before a send fails (ZMQ_SNDHWM).
constexpr int kSendQueueMessages = 100000;
// Jobs pulled from the source between two dispatch rounds.
constexpr size_t kPullSlice = 4096;

}  // namespace

namespace broker {

std::string tag_key(const std::vector<std::string>& tags) {
  std::vector<std::string> t = tags;
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  std::string k;
  for (const auto& x : t) k += (k.empty() ? "" : ",") + x;
  return k;
}

bool offers(const std::vector<std::string>& offered, const std::string& key) {
  size_t at = 0;
  while (at < key.size()) {
    size_t end = key.find(',', at);
    if (end == std::string::npos) end = key.size();
    if (std::find(offered.begin(), offered.end(), key.substr(at, end - at)) == offered.end()) return false;
    at = end + 1;
  }
  return true;
}

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

std::string executors_csv(const std::vector<Executor>& v) {
  std::string s;
  for (Executor e : v) s += (s.empty() ? "" : ",") + std::string(executor_name(e));
  return s;
}

bool valid_z85_key(const std::string& k) {
  uint8_t raw[32];
  return k.size() == 40 && zmq_z85_decode(raw, k.c_str()) != nullptr;
}

}  // namespace broker

double BrokerStats::dispatch_latency_ms(double q) const {
  if (dispatch_latency_us.empty()) return -1;
  std::vector<uint32_t> v = dispatch_latency_us;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k] / 1000.0;
}

bool is_loopback_endpoint(const std::string& ep) {
  if (ep.rfind("ipc://", 0) == 0 || ep.rfind("inproc://", 0) == 0) return true;
  if (ep.rfind("tcp://", 0) != 0) return false;
  std::string host = ep.substr(6);
  const auto colon = host.rfind(':');
  if (colon == std::string::npos) return false;
  host = host.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}


FleetBroker::FleetBroker(Store& store, std::string run, BrokerOptions opts) {
  if (!opts.log) opts.log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  if (opts.heartbeat_ms < 1) opts.heartbeat_ms = 1;
  if (opts.liveness < 1) opts.liveness = 1;
  if (opts.max_attempts < 1) opts.max_attempts = 1;
  const bool curve = !opts.curve_secret_key.empty();
  if (!curve && !opts.insecure && !is_loopback_endpoint(opts.bind))
    throw PipelineError("refusing to bind " + opts.bind +
                        " without CURVE keys: use a loopback address, give keys, or pass --insecure");
  impl_ = std::make_unique<Impl>(store, std::move(run), std::move(opts), stats_);
  Impl& m = *impl_;
  try {
    if (curve) {
      if (!zmq_has("curve")) throw PipelineError("this libzmq has no CURVE support");
      if (!valid_z85_key(m.opt.curve_secret_key)) throw PipelineError("bad CURVE secret key (need 40 z85 chars)");
      for (const auto& k : m.opt.allowed_client_keys)
        if (!valid_z85_key(k)) throw PipelineError("bad CURVE public key on the allow-list: '" + k + "'");
      m.zap.emplace(m.ctx, zmq::socket_type::rep);
      m.zap->set(zmq::sockopt::linger, 0);
      m.zap->bind(kZapEndpoint);
      m.router.set(zmq::sockopt::curve_server, true);
      m.router.set(zmq::sockopt::curve_secretkey, m.opt.curve_secret_key);
      m.router.set(zmq::sockopt::zap_domain, "torq");
    }
    m.router.set(zmq::sockopt::linger, 500);
    m.router.set(zmq::sockopt::router_mandatory, true);
    // A full queue to a live worker fails a send and drops the worker as
    // unreachable. What one worker is owed is bounded by the protocol (a JOB
    // per credit, an ACK per result, a few blob chunks, heartbeats), but
    // ZeroMQ's default of 1000 messages is less than the ACKs and JOBs of a
    // round to a busy worker of capacity 256 can reach (the fleet bench lost
    // a worker so when they were sent back to back).
    m.router.set(zmq::sockopt::sndhwm, kSendQueueMessages);
    // Far larger frames never reach the application (ZeroMQ drops the peer).
    m.router.set(zmq::sockopt::maxmsgsize,
                 static_cast<int64_t>(std::max<size_t>(m.opt.max_inbound_bytes * 4, size_t{64} << 20)));
    m.router.bind(m.opt.bind);
    endpoint_ = m.router.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    throw PipelineError("cannot bind " + m.opt.bind + ": " + e.what());
  }
  // Resume: done jobs stay done; unfinished ones are held for one liveness
  // interval (their workers may reconnect and claim them), then queued first.
  // Done jobs are only remembered by id (the store has their results).
  const auto scan_start = Clock::now();
  store.for_each_job(m.run, [&](std::string id, Store::StoredJob st) {
    if (st.state == 'D') {
      m.done_ids.insert(Impl::id_hash(id));
      return;
    }
    Job j;
    j.spec = decode_job(st.encoded.data(), st.encoded.size());
    j.encoded = std::move(st.encoded);
    j.holder_id = st.holder;  // '' for a job stored queued, or by an older build
    j.seq = m.next_seq++;
    j.state = Job::State::kHeld;
    m.held.push_back(id);
    m.jobs.emplace(std::move(id), std::move(j));
    ++stats_.recovered;
  }, /*done_jobs_encoded=*/false);
  if (stats_.recovered || !m.done_ids.empty())
    m.log("resuming: " + std::to_string(m.done_ids.size()) + " jobs done, " + std::to_string(stats_.recovered) +
          " unfinished, queued again unless their workers claim them within " +
          std::to_string(m.opt.heartbeat_ms * m.opt.liveness) + " ms (store read in " +
          std::to_string(std::chrono::duration_cast<milliseconds>(Clock::now() - scan_start).count()) + " ms)");
}

FleetBroker::~FleetBroker() {
  if (!impl_) return;
  std::vector<std::string> ids;
  for (auto& [id, w] : impl_->workers) ids.push_back(id);
  for (auto& id : ids) impl_->send(id, encode_disconnect("coordinator shutting down"));
}

size_t FleetBroker::Impl::held_count() const {
  size_t n = 0;
  for (const auto& id : held) {
    auto it = jobs.find(id);  // claimed, done and retired meanwhile: gone
    n += it != jobs.end() && it->second.state == Job::State::kHeld;
  }
  return n;
}

size_t FleetBroker::pending() const { return impl_->queued + impl_->leased + impl_->held_count(); }

bool FleetBroker::run(const Source& next, const Done& done, const std::function<void()>& batch_done) {
  Impl& m = *impl_;
  m.done = &done;
  m.batch_done = &batch_done;
  const milliseconds hb(m.opt.heartbeat_ms);
  std::optional<Clock::time_point> stop_by;
  if (!m.release_at)
    m.release_at = Clock::now() + (m.opt.recovered_hold_ms >= 0 ? milliseconds(m.opt.recovered_hold_ms)
                                                                : hb * m.opt.liveness);
  for (;;) {
    auto now = Clock::now();
    size_t pulled = 0;  // from the source this round
    // Recovered jobs nobody claimed go back to the queue.
    if (!m.held.empty() && now >= *m.release_at) {
      for (const auto& id : m.held)
        if (auto it = m.jobs.find(id); it != m.jobs.end() && it->second.state == Job::State::kHeld)
          m.enqueue(it->second);
      m.held.clear();
    }
    // Winding down: no more dispatch; wait for the leased jobs, up to the grace period.
    if ((stop_.load() || (m.opt.stop_flag && m.opt.stop_flag->load()) ||
         (m.opt.workers_gone && m.opt.workers_gone->load()) || (m.opt.halt_flag && m.opt.halt_flag->load())) &&
        !stop_by) {
      stop_by = now + milliseconds(m.opt.grace_ms);
      m.log("stop requested: dispatching stopped, waiting up to " + std::to_string(m.opt.grace_ms) + " ms for " +
            std::to_string(m.leased) + " leased jobs");
    }
    if (stop_by && (m.leased == 0 || now >= *stop_by)) {
      m.flush();
      m.observe(true);
      return false;
    }
    if (!stop_by && m.missing_tags(now)) {
      stop_by = now;  // opt.fail_on_missing_tags: nothing can serve them
      continue;
    }

    // Pull from the source, hand out jobs by credit (one per worker per round).
    if (!stop_by) {
      bool source_empty = false;
      // In slices, each followed by a dispatch round: a resumed run whose
      // every next job is a store lookup sends its first jobs after one
      // slice, not once the whole queue is full (100,000 lookups took 3.5 s
      // of a resumed million-job run's 8 s before its first job, issue 32).
      while (m.queued < m.opt.max_queued && pulled++ < kPullSlice) {
        auto j = next();
        if (!j) {
          source_empty = true;
          break;
        }
        m.want(*j);
      }
      if (source_empty && m.queued == 0 && m.leased == 0 && m.wanted_open == 0 && m.held.empty() &&
          !(m.opt.source_open && m.opt.source_open())) {
        m.flush();
        m.observe(true);
        return true;
      }
      std::vector<Job*> round;
      if (!m.min_workers_met) m.min_workers_met = m.workers.size() >= static_cast<size_t>(std::max(0, m.opt.min_workers));
      // Beyond its capacity a worker takes prefetched jobs only up to its
      // share of the work in hand (issue 30): no peer holds more than that.
      size_t serving = 0;
      for (auto& [id, w] : m.workers) serving += w.credits() > 0 || !w.leased.empty();
      const size_t share = serving ? (m.queued + m.leased + serving - 1) / serving : 0;
      for (bool progress = m.min_workers_met; progress && m.queued > 0;) {
        progress = false;
        for (auto& [id, w] : m.workers)
          if (w.credits() > 0 && (w.leased.size() < w.info.capacity || w.leased.size() < share))
            if (Job* j = m.next_for(w)) {
              m.take(w, *j);
              round.push_back(j);
              progress = true;
            }
      }
      m.send_leases(round);
    }

    m.observe(false);  // after the dispatch round: the leases just given are seen

    // Wait for traffic until the next heartbeat or expiry is due.
    auto wake = now + hb;
    if (pulled > kPullSlice) wake = now;  // the slice ended with jobs left to pull: no wait
    if (!m.held.empty()) wake = std::min(wake, *m.release_at);
    for (auto& [id, w] : m.workers) wake = std::min({wake, w.expiry, w.last_sent + hb});
    // A commit due by its delay; while a batch is being written, the
    // writer's fd wakes the loop instead (a past deadline would spin it).
    if (m.committing_since && !m.writer.busy()) wake = std::min(wake, *m.committing_since + Impl::kCommitDelay);
    const long wait_ms = std::max<long>(0, std::chrono::duration_cast<milliseconds>(wake - now).count());
    // The router, the ZAP handler if any, the commit writer's batch, a
    // blob read ending, and a source being filled (while the queue has room
    // to pull from it).
    zmq_pollitem_t items[5] = {{m.router.handle(), 0, ZMQ_POLLIN, 0}};
    int n_items = 1, zap_item = -1;
    if (m.zap) items[zap_item = n_items++] = {m.zap->handle(), 0, ZMQ_POLLIN, 0};
    if (m.writer.busy()) items[n_items++] = {nullptr, m.writer.fd(), ZMQ_POLLIN, 0};
    if (m.blobs.loading()) items[n_items++] = {nullptr, m.blobs.wake_fd(), ZMQ_POLLIN, 0};
    if (m.opt.source_fd >= 0 && !stop_by && m.queued < m.opt.max_queued)
      items[n_items++] = {nullptr, m.opt.source_fd, ZMQ_POLLIN, 0};
    if (zmq_poll(items, n_items, wait_ms) < 0 && zmq_errno() != EINTR)
      throw PipelineError(std::string("zmq_poll: ") + zmq_strerror(zmq_errno()));
    if (zap_item >= 0 && (items[zap_item].revents & ZMQ_POLLIN)) m.serve_zap();
    // Handle what arrived (bounded, so a flood cannot starve the purge).
    for (int n = 0; n < 10000 && m.receive_one(); ++n) {
    }
    m.pump(false);  // collect a written batch; start the next when due
    m.serve_blobs();

    // Purge: silent workers and overdue leases; then heartbeats.
    now = Clock::now();
    std::vector<std::pair<std::string, std::string>> dead;  // identity, why
    const bool scan_leases = now >= m.next_deadline_scan;
    if (scan_leases) m.next_deadline_scan = now + milliseconds(50);
    for (auto& [id, w] : m.workers) {
      if (w.unreachable) {
        dead.emplace_back(id, "connection lost");
        continue;
      }
      if (now >= w.expiry) {
        dead.emplace_back(id, "silent for " + std::to_string(m.opt.heartbeat_ms * m.opt.liveness) + " ms");
        continue;
      }
      if (scan_leases)
        for (const auto& jid : w.leased)
          if (now >= m.jobs.at(jid).deadline) {
            dead.emplace_back(id, "job " + jid + " overran its timeout");
            // A worker whose leases keep overrunning (one that takes jobs
            // and never answers, re-registering when dropped) is
            // quarantined: it gets no more jobs this run (issue 30).
            if (++m.overruns[w.info.worker_id] == Impl::kQuarantineOverruns &&
                std::find(stats_.quarantined.begin(), stats_.quarantined.end(), w.info.worker_id) ==
                    stats_.quarantined.end()) {
              stats_.quarantined.push_back(w.info.worker_id);
              m.log("worker " + w.info.worker_id + " quarantined: " + std::to_string(Impl::kQuarantineOverruns) +
                    " of its leases overran their timeout; it gets no more jobs this run");
            }
            break;
          }
    }
    for (auto& [id, why] : dead) {
      ++stats_.workers_expired;
      const size_t held = m.workers.at(id).leased.size();
      m.log(m.name(id) + " expired (" + why + "); " + std::to_string(held) + " leased jobs back to the queue");
      m.forget(id, "expired: " + why, true, true);
    }
    m.pump(false, !dead.empty());  // and at once for jobs the purge ended as error/crash
    for (auto& [id, w] : m.workers)
      if (now - w.last_sent >= hb) m.send(id, encode_heartbeat());
  }
}

}  // namespace torq::coordinator

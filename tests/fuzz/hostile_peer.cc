// torq_hostile_peer: a seeded hostile fleet peer for tests/fuzz/fuzz_inputs.py
// (issue 30). It connects to a coordinator as a DEALER, registers as a
// worker (or not), and for --seconds sends what a broken or hostile peer
// would: garbage and multi-frame messages, valid envelopes with corrupted
// bytes, READYs with extreme fields and claims of others' jobs, RESULTs and
// STARTEDs for jobs it does not hold, blob requests past the end, leases
// taken and never answered, and DISCONNECTs. It never answers a job it
// holds with a made-up result: a registered worker that lies about its own
// lease is the CURVE allow-list's business, not the broker's. The fuzz
// script then compares the run's export with a clean run's.
//
// Usage: torq_hostile_peer --connect tcp://127.0.0.1:PORT --seed N --seconds S
// Prints one line: what it sent, by kind. Exit 0, 2 on bad arguments.
#include <zmq.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pipeline/wire/fleet_codec.h"

using namespace torq::pipeline;
using Clock = std::chrono::steady_clock;

namespace {

struct Peer {
  zmq::socket_t sock;
  std::mt19937 rng;
  std::vector<std::string> seen_jobs;    // ids of every JOB received
  std::set<std::string> ever_held;       // the same, as a set
  std::map<std::string, int> sent;       // kind -> count
  std::string id;

  Peer(zmq::context_t& ctx, const std::string& ep, uint32_t seed) : sock(ctx, zmq::socket_type::dealer), rng(seed) {
    sock.set(zmq::sockopt::linger, 0);
    sock.connect(ep);
    id = "hostile-" + std::to_string(seed);
  }
  void send(const std::string& kind, const std::string& payload) {
    sock.send(zmq::buffer(payload), zmq::send_flags::dontwait);
    ++sent[kind];
  }
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }
  std::string junk(size_t n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    return s;
  }
  // The id of a job that can never be leased to us (a result for one of
  // ours would be our own word on our own lease): we offer only nss, and
  // this is one of our jobs, ids being <model>/<layers>/<executor>, with
  // its executor made css or host and perhaps its layer number changed.
  std::string others_job() {
    if (seen_jobs.empty()) return "no/such/job";
    std::string j = seen_jobs[pick(seen_jobs.size())];
    const size_t slash = j.rfind('/');
    if (slash == std::string::npos) return "no/such/job";
    if (pick(2))
      for (size_t i = slash; i-- > 0;)
        if (j[i] >= '0' && j[i] <= '9') {
          j[i] = static_cast<char>('0' + pick(10));
          break;
        }
    return j.substr(0, slash + 1) + (pick(2) ? "css" : "host");
  }
  std::vector<std::string> others_jobs(size_t n) {
    std::vector<std::string> v;
    for (size_t i = 0; i < n; ++i) v.push_back(others_job());
    return v;
  }

  void ready(uint32_t capacity, uint32_t prefetch, std::vector<std::string> running = {}) {
    WorkerInfo w;
    w.worker_id = id;
    w.executors = {Executor::kNss};
    w.capacity = capacity;
    w.prefetch = prefetch;
    w.toolchain = "hostile";
    w.running = std::move(running);
    send("ready", encode_ready(w));
  }
  void result_for(const std::string& job_id) {
    ExecResult r;
    r.job_id = job_id;
    const size_t slash = job_id.rfind('/');
    r.executor = slash != std::string::npos && job_id.substr(slash + 1) == "host" ? Executor::kHost : Executor::kCss;
    r.status = Status::kSuccess;
    r.max_abs = 1e30;
    r.worker_id = "forged";
    send("foreign result", encode_result_message(r));
  }
  // A valid message with a few bytes flipped.
  void corrupted() {
    std::string m = pick(2) ? encode_job_started(others_job()) : encode_blob_request(std::string(64, 'a'), 0, 1024);
    for (int i = 0; i < 3; ++i) m[pick(m.size())] = static_cast<char>(rng());
    send("corrupted envelope", m);
  }

  void act() {
    switch (pick(11)) {
      case 0: send("garbage", junk(1 + pick(200))); break;
      case 1:
        sock.send(zmq::buffer(encode_heartbeat()), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        send("multi-frame", encode_heartbeat());
        break;
      case 2: corrupted(); break;
      case 3: ready(static_cast<uint32_t>(1 + pick(4096)), static_cast<uint32_t>(pick(4097))); break;
      case 4: ready(1, 0, others_jobs(1 + pick(8))); break;  // claims others' jobs as running
      case 5:  // a burst: some may land while their jobs are still queued or leased
        for (size_t n = 1 + pick(8); n-- > 0;) result_for(others_job());
        break;
      case 6: send("stray started", encode_job_started(others_job())); break;
      case 7: send("blob request past the end", encode_blob_request(std::string(64, 'f'), 1ull << 40, 1 << 20)); break;
      case 8: send("disconnect", encode_disconnect("hostile")); break;
      case 9: ready(0, 0); break;  // draining
      default: send("heartbeat", encode_heartbeat());
    }
  }

  void drain() {
    zmq::message_t m;
    while (sock.recv(m, zmq::recv_flags::dontwait)) {
      try {
        auto msg = decode_fleet_message(m.data(), m.size(), kMaxFleetBlobBytes);
        if (msg.type == FleetType::kJob) {
          if (ever_held.insert(msg.job.id).second) seen_jobs.push_back(msg.job.id);
        }
      } catch (const PipelineError&) {
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string ep;
  uint32_t seed = 1;
  double seconds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--connect")) ep = argv[i + 1];
    else if (!std::strcmp(argv[i], "--seed")) seed = static_cast<uint32_t>(std::stoul(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--seconds")) seconds = std::stod(argv[i + 1]);
    else {
      std::fprintf(stderr, "torq_hostile_peer: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (ep.empty()) {
    std::fprintf(stderr, "usage: torq_hostile_peer --connect ENDPOINT [--seed N] [--seconds S]\n");
    return 2;
  }
  zmq::context_t ctx;
  Peer p(ctx, ep, seed);
  p.ready(2, 2);  // a worker first, so that it is given jobs to misuse
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    zmq::pollitem_t item{p.sock.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(5 + p.pick(40)));
    p.drain();
    p.act();
  }
  std::string line;
  for (const auto& [kind, n] : p.sent) line += (line.empty() ? "" : ", ") + kind + " " + std::to_string(n);
  std::printf("hostile peer %s: %zu jobs leased to it; sent %s\n", p.id.c_str(), p.seen_jobs.size(), line.c_str());
  return 0;
}

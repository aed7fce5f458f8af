// Issue 60, finding 4: a worker whose model cache has room for the health
// check's 64 KiB probe but not for the model it is sent. It flapped
// Good -> Unknown with no backoff and never turned Bad (15,140 flips in
// 60 s, 0 jobs, ~30% of a core each for coordinator and worker, 11 MB of
// log a minute), and alone the run never ended.
//
// Real processes on loopback: torq-coordinator, torq-worker whose --cache
// is a tmpfs of 200 KiB mounted in a mount namespace of its own (unshare:
// the mount goes with the worker, whatever becomes of the test), and a
// real ONNX model of 512 KiB of weights.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "pipeline/store/store.h"
#include "tests/fleet/fleet_harness.h"
#include "tests/fleet/matmul_model.h"

using namespace torq;
using namespace torq::fleet_test;

namespace {

constexpr int kHeartbeatMs = 200;

// The worker `id` with its cache on a fresh 200 KiB tmpfs: room for the
// probe and the health check's demo model (28 KiB), not for the 512 KiB model.
Proc full_cache_worker(const std::string& dir, const std::string& ep, const std::string& id,
                       const std::string& extra = "") {
  const std::string cache = dir + "/cache-" + id;
  std::filesystem::create_directories(cache);
  return Proc({"/usr/bin/unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c",
               "mount -t tmpfs -o size=200k tmpfs " + cache + " && exec " + bin("torq-worker") + " --connect " + ep +
                   " --id " + id + " --cache " + cache + " --capacity 1 --heartbeat-ms " +
                   std::to_string(kHeartbeatMs) + " --liveness 5 --health-retry-s 1 -v " + extra},
              dir + "/" + id + ".log");
}

Proc room_worker(const std::string& dir, const std::string& ep, const std::string& id) {
  return Proc({bin("torq-worker"), "--connect", ep, "--id", id, "--cache", dir + "/cache-" + id, "--capacity", "1",
               "--heartbeat-ms", std::to_string(kHeartbeatMs), "--liveness", "5", "-v"},
              dir + "/" + id + ".log");
}

// CPU seconds (user + system) of `pid` and of its children.
double tree_cpu_seconds(pid_t pid) {
  std::vector<pid_t> all{pid};
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string st = slurp(e.path().string() + "/stat");
    if (st.empty()) continue;
    int ppid = 0;
    if (std::sscanf(st.c_str() + st.rfind(')') + 2, "%*c %d", &ppid) == 1 && ppid == pid) all.push_back(std::stoi(name));
  }
  double ticks = 0;
  for (pid_t p : all) {
    const std::string st = slurp("/proc/" + std::to_string(p) + "/stat");
    if (st.empty()) continue;
    unsigned long utime = 0, stime = 0;
    // After "(comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime.
    if (std::sscanf(st.c_str() + st.rfind(')') + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                    &stime) == 2)
      ticks += static_cast<double>(utime + stime);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The health transitions of worker `id` the store recorded.
size_t stored_transitions(const std::string& db, const std::string& id) {
  auto store = pipeline::Store::open(db);
  size_t n = 0;
  for (const auto& h : store->health_log()) n += h.worker == id;
  return n;
}

const std::regex kNoRoom(
    "cache [^ ]*/cache-full: no room for model [0-9a-f]{16} \\(([0-9]+) bytes, ([0-9]+) free\\)");

}  // namespace

// Alone: the worker turns Bad with the reason within seconds, stays quiet
// (a few transitions, little CPU, a small log) while its check backs off,
// and the run says no worker is usable and ends with exit 2, no job
// recorded as an op's result.
TEST(FleetCacheFull, AWorkerWithNoRoomForTheModelTurnsBadQuietlyAndTheRunEnds) {
  const std::string dir = fresh_dir("cache_full_alone");
  const std::string ep = endpoint(free_port());
  matmul_relu_model(dir + "/big.onnx", 256, 512);  // 512 KiB of weights
  std::ofstream(dir + "/spec.yaml") << "models: [big.onnx]\n"
                                       "options: {missing_tags: fail, missing_tags_wait_s: 15}\n";
  Proc coord({bin("torq-coordinator"), "--spec", dir + "/spec.yaml", "--bind", ep, "--db", dir + "/db", "--export",
              dir + "/out", "--heartbeat-ms", std::to_string(kHeartbeatMs), "--liveness", "5"},
             dir + "/coordinator.log");
  Proc worker = full_cache_worker(dir, ep, "full");
  ASSERT_TRUE(coord.wait_for("worker full health Unknown -> Good", 60000)) << coord.output() << worker.output();
  const auto good_at = Clock::now();
  EXPECT_TRUE(coord.wait_for("worker full health Good -> Bad", 5000)) << coord.output().substr(0, 8192);
  std::smatch m;
  const std::string wlog = worker.output();
  const bool no_room = std::regex_search(wlog, m, kNoRoom);
  EXPECT_TRUE(no_room) << wlog.substr(0, 8192);
  if (no_room) {
    EXPECT_GT(std::stol(m[1]), 512L * 1024) << m[0];
    EXPECT_LT(std::stol(m[2]), std::stol(m[1])) << m[0];
    EXPECT_NE(wlog.find("health Bad: " + m[0].str() + "; next check in 1 s"), std::string::npos) << wlog;
  }

  // 10 s of a Bad worker retrying its check (1, 2, 4, 8 s): quiet.
  std::this_thread::sleep_for(good_at + std::chrono::seconds(5) - Clock::now());
  const double coord_cpu = tree_cpu_seconds(coord.pid()), worker_cpu = tree_cpu_seconds(worker.pid());
  const size_t flips = count(coord.output(), "worker full health "), log_bytes = coord.output().size() + wlog.size();
  std::this_thread::sleep_for(std::chrono::seconds(10));
  ASSERT_FALSE(coord.wait(0).has_value()) << "the run ended before the window: " << coord.output();
  const double coord_used = tree_cpu_seconds(coord.pid()) - coord_cpu;
  const double worker_used = tree_cpu_seconds(worker.pid()) - worker_cpu;
  const std::string out = coord.output();
  const size_t window_flips = count(out, "worker full health ") - flips;
  const size_t window_bytes = out.size() + worker.output().size() - log_bytes;
  std::printf("[cache-full] over 10 s: %zu health transitions, CPU coordinator %.2f s, worker %.2f s, log +%zu bytes\n",
              window_flips, coord_used, worker_used, window_bytes);
  EXPECT_LT(coord_used, 1.0) << "coordinator: " << coord_used << " s of CPU in 10 s";
  EXPECT_LT(worker_used, 1.0) << "worker: " << worker_used << " s of CPU in 10 s";
  EXPECT_LE(count(out, "worker full health "), 5u) << out.substr(0, 8192);
  EXPECT_LT(window_bytes, 4096u) << "log growth in 10 s";
  EXPECT_GE(count(worker.output(), "; next check in "), 2u) << worker.output().substr(0, 8192);  // it retries, says when

  // missing_tags_wait_s on end with no usable worker: exit 2, said.
  const auto code = coord.wait(60000);
  ASSERT_TRUE(code) << coord.output().substr(0, 8192);
  EXPECT_EQ(*code, 2) << coord.output();
  const std::string end = coord.output();
  EXPECT_NE(end.find("torq-coordinator: error: no usable worker of target sim for "), std::string::npos) << end;
  EXPECT_TRUE(std::regex_search(end, std::regex("jobs wait\\): full Bad \\(cache [^ ]*/cache-full: no room for model")))
      << end;
  EXPECT_LE(count(end, "; stopping"), 3u) << end;  // once per executor's queue at most
  EXPECT_LE(stored_transitions(dir + "/db", "full"), 5u);
  // An infrastructure failure is never an op's result: nothing stored, no outcome.
  EXPECT_TRUE(pipeline::Store::open(dir + "/db")->result_runs().empty());
  EXPECT_FALSE(std::filesystem::exists(dir + "/out/junit.xml"));
  worker.signal(SIGTERM);
  EXPECT_EQ(worker.wait(20000), 0) << worker.output();
}

// With a second worker that has room, the jobs go there; the full one
// (with its health checks, or without: `extra` "--no-health-check") is Bad
// with its reason in the summary and flapped no more.
static void second_worker_takes_the_jobs(const std::string& name, const std::string& extra) {
  const std::string dir = fresh_dir(name);
  const std::string ep = endpoint(free_port());
  const std::string model = matmul_relu_model(dir + "/big.onnx", 256, 512);
  Proc coord({bin("torq-coordinator"), "--model", model, "--bind", ep, "--db", dir + "/db", "--export", dir + "/out",
              "--heartbeat-ms", std::to_string(kHeartbeatMs), "--liveness", "5"},
             dir + "/coordinator.log");
  Proc full = full_cache_worker(dir, ep, "full", extra);
  ASSERT_TRUE(coord.wait_for("worker full health Good -> Bad", 60000)) << coord.output() << full.output();
  Proc room = room_worker(dir, ep, "room");
  const auto code = coord.wait(120000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string out = coord.output();
  // The full one ran nothing: the jobs parked on the model went back unrun.
  EXPECT_EQ(count(full.output(), "finished "), count(full.output(), ": error infrastructure")) << full.output();
  EXPECT_EQ(count(room.output(), "finished "), 6u) << room.output();  // 2 layers x 3 executors
  EXPECT_TRUE(std::regex_search(out, std::regex("board     full Bad \\(target sim\\): cache [^ ]*/cache-full: no room "
                                                "for model [0-9a-f]{16} \\([0-9]+ bytes, [0-9]+ free\\)")))
      << out;
  EXPECT_NE(out.find("board     room Good (target sim): health check passed"), std::string::npos) << out;
  EXPECT_LE(count(out, "worker full health "), 5u) << out;
  EXPECT_EQ(out.find("no usable worker"), std::string::npos) << out;
  auto store = pipeline::Store::open(dir + "/db");
  const auto runs = store->result_runs();
  ASSERT_EQ(runs.size(), 1u);
  size_t results = 0;
  for (const auto& [id, job] : store->jobs(runs[0])) {
    EXPECT_EQ(job.state, 'D') << id;
    const auto spec = pipeline::decode_job(job.encoded.data(), job.encoded.size());
    for (const auto& [layer, rs] : store->model_results(runs[0], spec.model_hash))
      for (const auto& r : rs) {
        ++results;
        EXPECT_EQ(r.worker_id, "room") << layer;
        EXPECT_NE(r.error_class, "infrastructure") << layer;
        EXPECT_NE(r.error_class, "fetch") << layer;
      }
    break;  // one model: its results are all read once
  }
  EXPECT_EQ(results, 6u);
  store.reset();
  for (Proc* w : {&full, &room}) {
    w->signal(SIGTERM);
    EXPECT_EQ(w->wait(20000), 0) << w->output();
  }
}

TEST(FleetCacheFull, ASecondWorkerWithRoomTakesTheJobs) { second_worker_takes_the_jobs("cache_full_second", ""); }

// A worker without health checks is Good from the start, and still Bad for
// a cache with no room (it flapped the same way, never even Unknown).
TEST(FleetCacheFull, AWorkerWithoutHealthChecksIsBadForNoRoomToo) {
  second_worker_takes_the_jobs("cache_full_no_checks", "--no-health-check");
}

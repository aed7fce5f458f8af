// Board workers end to end (issue 10, "Boards over ssh" and "Health"): a
// torq-coordinator and torq-worker processes with --backend toolchain
// --board, the stand-in toolchain compiling here and its torq-run-module
// running "on the board" over ssh: a real sshd on 127.0.0.1 (TestSshd), so
// the board is this machine and its /tmp is looked at directly.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "coordinator/fleet/unit_run.h"
#include "pipeline/store/store.h"
#include "tests/board/board_fleet.h"
#include "tests/board/sshd_fixture.h"
#include "tests/fleet/fleet_harness.h"
#include "tests/integration/models.h"
#include "tests/toolchain/toolchain_helpers.h"
#include "worker/board/address.h"
#include "worker/toolchain/toolchain_backend.h"

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using torq::board::testing::TestSshd;
using torq::fleet_test::Proc;
using namespace torq::board::testing;

namespace {

std::string demo_model(const std::string& dir) {
  const std::string path = dir + "/demo.onnx";
  Proc p({bin("torq-sim"), "demo", "--save", path}, dir + "/sim.log");
  EXPECT_EQ(p.wait(60000), 0) << p.output();
  return path;
}
long summary_number(const std::string& out, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(pattern))) return -1;
  return std::stol(m[1]);
}
// Mean of host_ms over every executor result of a report that has timing.
double mean_host_ms(const ordered_json& report, size_t* n) {
  double sum = 0;
  *n = 0;
  for (const auto& [id, op] : report["ops"].items())
    for (const auto& [e, r] : op["executors"].items())
      if (r.contains("timing") && r.contains("host_ms")) {
        sum += r["host_ms"].get<double>();
        ++*n;
      }
  return *n ? sum / *n : 0;
}
class BoardWorker : public BoardSshdTest {
 protected:
  // The sim backend's report of the same model (torq-gen-config discover).
  ordered_json sim_report(const std::string& model, const std::string& dir, const std::string& flags = "") {
    const auto r = torq::test::discover(model, dir, flags);
    EXPECT_LE(r.code, 1) << r.output;
    return torq::test::read_json(dir + "/torq_gen_config_demo.json");
  }
};

// (a) The demo over one board worker: the same statuses, metrics and
// recommendations as the sim backend; the staging folder appears on the
// board while a job runs; the lock is taken during the run and released
// after; runtime_ms is the board's wall time.
TEST_F(BoardWorker, DemoOverSshGivesTheSimBackendsResults) {
  BoardFleet f("demo");
  const std::string model = demo_model(f.dir);
  const ordered_json sim = sim_report(model, f.dir + "/sim");
  // The stand-in toolchain run locally (no ssh): the ssh path's own overhead.
  const auto local = torq::test::discover(model, f.dir + "/local-toolchain",
                                          "--backend toolchain --toolchain " + torq::test::standin_yaml());
  ASSERT_LE(local.code, 1) << local.output;
  const ordered_json local_tc = torq::test::read_json(f.dir + "/local-toolchain/torq_gen_config_demo.json");

  std::atomic<bool> done{false};
  std::set<std::string> seen_dirs;
  bool seen_module = false, seen_lock = false;
  std::thread watch([&] {
    while (!done) {
      for (const auto& d : board_dirs()) {
        seen_dirs.insert(d);
        seen_module = seen_module || fs::exists(d + "/model.vmfb");
      }
      seen_lock = seen_lock || fs::exists(kLock);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  Proc coord = f.coordinator(model);
  f.add_worker(*sshd_, torq::test::standin_yaml());
  auto code = coord.wait(240000);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // A board target's jobs get the real tools' step budgets added up (import
  // 300 + compile 300 + run 240 + 1 s), not 120 s for all three (issue 28).
  EXPECT_NE(coord.output().find("job timeout 841 s"), std::string::npos) << coord.output();
  done = true;
  watch.join();
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output() << f.workers[0].output();
  f.stop_workers();
  const std::string wlog = f.workers[0].output();

  const ordered_json board = torq::test::read_json(f.dir + "/out/torq_gen_config_demo.json");
  ASSERT_EQ(board["ops"].size(), 14u);
  torq::test::expect_same_results(sim, board);
  EXPECT_NE(board["ops"].begin().value()["executors"]["host"]["toolchain"].get<std::string>().find(
                "on board " + sshd_->address().user + "@127.0.0.1:" + std::to_string(sshd_->port())),
            std::string::npos);
  // It names the engine of its reference run, this build's: its results may
  // be cached under this coordinator's keys.
  const std::string tc = board["ops"].begin().value()["executors"]["host"]["toolchain"];
  EXPECT_NE(tc.find(std::string("[engine ") + torq::coordinator::engine_identity() + " (oneDNN "), std::string::npos)
      << tc;
  EXPECT_FALSE(torq::coordinator::foreign_engine(tc, torq::coordinator::engine_identity())) << tc;
  // Runtime = the board's wall time (bash `time`), in ms: > 0 everywhere it ran.
  size_t timed = 0;
  for (const auto& [id, op] : board["ops"].items())
    for (const auto& [e, r] : op["executors"].items())
      if (r["status"] != "error") {
        ASSERT_TRUE(r.contains("timing")) << id << " " << e;
        EXPECT_GT(r["timing"]["runtime_ms"].get<double>(), 0.0) << id << " " << e;
        ++timed;
      }
  EXPECT_GT(timed, 0u);
  // Staged on the board, under the lock, and cleaned up after.
  EXPECT_FALSE(seen_dirs.empty()) << "no /tmp/torq-board-* folder seen during the run";
  EXPECT_TRUE(seen_module) << "no staged model.vmfb seen on the board";
  EXPECT_TRUE(seen_lock) << "the board lock was never seen held";
  EXPECT_FALSE(fs::exists(kLock)) << "the board lock is still held after the run";
  EXPECT_TRUE(board_dirs().empty()) << "staging folders left on the board";
  EXPECT_EQ(count(wlog, "health Good"), 1u) << wlog;

  size_t nb = 0, ns = 0, nl = 0;
  const double board_ms = mean_host_ms(board, &nb), sim_ms = mean_host_ms(sim, &ns),
               local_ms = mean_host_ms(local_tc, &nl);
  std::printf("[board] demo over ssh: %zu timed results; mean host_ms per job: board %.1f, local toolchain %.1f, "
              "sim %.1f\n",
              nb, board_ms, local_ms, sim_ms);
  std::printf("[board] ssh path overhead per job: %.1f ms vs the sim backend, %.1f ms vs the same toolchain run "
              "locally; run wall %.2f s for %zu jobs (%.1f jobs/s, one worker, health check included)\n",
              board_ms - sim_ms, board_ms - local_ms, wall_s, count(wlog, "finished "),
              count(wlog, "finished ") / wall_s);
}

// (b) sshd killed while a job runs on the board: the job is an
// infrastructure error, requeued by the coordinator (not an attempt); the
// worker goes Unknown, its check fails while sshd is down (Bad); sshd back on
// the same port, the retried check passes and the run completes.
TEST_F(BoardWorker, SshdKilledMidJobIsRequeuedAndTheBoardRecovers) {
  BoardFleet f("sshd_killed");
  const std::string model = demo_model(f.dir);
  const ordered_json sim = sim_report(model, f.dir + "/sim");
  // The stand-in, with a runner that takes a second while the flag file exists
  // (so the test can kill sshd mid-run).
  const std::string flag = f.dir + "/slow";
  const std::string yaml = f.dir + "/slow-standin.yaml";
  {
    std::ifstream in(torq::test::standin_yaml());
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::string from = "argv: [\"{torq_sim}\", torq-run-module,";
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, from.size(), "argv: [bash, -c, 'if [ -e \"$0\" ]; then sleep 1; fi; shift; exec \"$@\"', \"" +
                                       flag + "\", x, \"{torq_sim}\", torq-run-module,");
    std::ofstream(yaml) << text;
  }
  Proc coord = f.coordinator(model);
  f.add_worker(*sshd_, yaml, {"--health-retry-s", "1"});
  Proc& w = f.workers[0];
  ASSERT_TRUE(w.wait_for("health Good", 60000)) << w.output();
  std::ofstream(flag) << "1";
  // Mid-run: the run script records its process group while the command runs.
  std::string running;
  for (int i = 0; i < 3000 && running.empty(); ++i) {
    for (const auto& d : board_dirs())
      if (fs::exists(d + "/.torq-run.pgid")) running = d;
    if (running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(running.empty()) << "no run seen on the board\n" << w.output();
  sshd_->kill_all();
  fs::remove(flag);
  ASSERT_TRUE(w.wait_for("health Unknown", 30000)) << w.output();
  ASSERT_TRUE(w.wait_for("health Bad", 30000)) << w.output();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  sshd_->start();
  auto code = coord.wait(240000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output() << w.output();
  f.stop_workers();
  const std::string out = coord.output(), wlog = w.output();
  EXPECT_NE(out.find("lost to an infrastructure error on worker b1"), std::string::npos) << out;
  EXPECT_GE(summary_number(out, "infra     (\\d+) jobs lost to infrastructure errors"), 1) << out;
  EXPECT_EQ(summary_number(out, "(\\d+) crashed"), 0) << out;
  EXPECT_NE(out.find("board     b1 Good (target astra)"), std::string::npos) << out;
  // The infrastructure error is the ssh link's (InfraError kind ssh), never an op's.
  EXPECT_TRUE(std::regex_search(out, std::regex("lost to an infrastructure error on worker b1 \\([^\n]*ssh: ")))
      << out;
  // Every layer has its result, the same as the sim backend's.
  const ordered_json board = torq::test::read_json(f.dir + "/out/torq_gen_config_demo.json");
  ASSERT_EQ(board["ops"].size(), 14u);
  torq::test::expect_same_results(sim, board);
  // Health: Unknown (start), Good, Unknown (the infrastructure error, once
  // per job in flight: the worker holds its lane's job and the board's
  // queue), Bad (the check while sshd was down, maybe more than once), then
  // Good.
  auto store = torq::pipeline::Store::open(f.dir + "/db");
  std::vector<std::string> h;
  for (const auto& e : store->health_log())
    if (e.worker == "b1") h.push_back(e.health + ": " + e.reason);
  std::string all;
  for (const auto& s : h) all += "  " + s + "\n";
  std::printf("[board] health of b1:\n%s", all.c_str());
  ASSERT_GE(h.size(), 5u) << all;
  EXPECT_EQ(h[0].rfind("Unknown", 0), 0u) << all;
  EXPECT_EQ(h[1].rfind("Good", 0), 0u) << all;
  EXPECT_EQ(h[2].rfind("Unknown", 0), 0u) << all;
  size_t next = 3;
  while (next < h.size() && h[next].rfind("Unknown: infrastructure error", 0) == 0) ++next;
  ASSERT_LT(next, h.size()) << all;
  EXPECT_LE(next, 5u) << "more Unknowns than jobs in flight: " << all;
  EXPECT_EQ(h[next].rfind("Bad: health check failed: infrastructure", 0), 0u) << all;
  EXPECT_EQ(h.back().rfind("Good: health check passed", 0), 0u) << all;
  EXPECT_FALSE(fs::exists(kLock)) << "the board lock is still held after the run";
}

// Issue 30: a run that hung on the board was recorded as the op's timeout,
// with no health check and the board still Good, and an interrupted job
// left its folder on the board. The first timeout of a job is the board's
// (requeued, not an attempt; the board checked before its next job), and
// the folders and process groups interrupted jobs left are swept under the
// next job's lock.
TEST_F(BoardWorker, AHungBoardRunIsCheckedAndRequeuedAndInterruptedFoldersAreSwept) {
  BoardFleet f("hung_run");
  const std::string model = demo_model(f.dir);
  const ordered_json sim = sim_report(model, f.dir + "/sim");
  // What an interrupted job leaves: its folder, and its process group still running.
  const std::string stale = "/tmp/torq-board-interrupted-" + std::to_string(getpid());
  fs::create_directories(stale);
  const pid_t sleeper = fork();
  if (sleeper == 0) {
    setsid();
    execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::ofstream(stale + "/.torq-run.pgid") << sleeper << "\n";
  // The stand-in's runner hangs once, on the first run after the flag
  // file appears (it removes the flag).
  const std::string flag = f.dir + "/hang-once";
  const std::string yaml = f.dir + "/hang-standin.yaml";
  {
    std::ifstream in(torq::test::standin_yaml());
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::string from = "argv: [\"{torq_sim}\", torq-run-module,";
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, from.size(),
                 "argv: [bash, -c, 'if [ -e \"$0\" ]; then rm -f \"$0\"; sleep 1000; fi; shift; exec \"$@\"', \"" + flag +
                     "\", x, \"{torq_sim}\", torq-run-module,");
    std::ofstream(yaml) << text;
  }
  Proc coord = f.coordinator(model, {"--job-timeout-ms", "15000"});
  f.add_worker(*sshd_, yaml, {"--health-retry-s", "1"});
  Proc& w = f.workers[0];
  ASSERT_TRUE(w.wait_for("health Good", 60000)) << w.output();
  std::ofstream(flag) << "1";
  auto code = coord.wait(240000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output() << w.output();
  f.stop_workers();
  const std::string out = coord.output(), wlog = w.output();
  EXPECT_FALSE(fs::exists(flag)) << "the run never hung";
  EXPECT_NE(out.find("timed out on the board, which is checked before its next job"), std::string::npos) << out;
  EXPECT_EQ(summary_number(out, "(\\d+) crashed"), 0) << out;
  // The board went through a check after the timeout.
  EXPECT_GE(torq::fleet_test::count(wlog, "health check health-check/"), 2u) << wlog;
  // Every op has its result, the sim backend's: no timeout became one.
  const ordered_json board = torq::test::read_json(f.dir + "/out/torq_gen_config_demo.json");
  torq::test::expect_same_results(sim, board);
  // The interrupted job's folder is gone and its process group killed.
  EXPECT_FALSE(fs::exists(stale)) << wlog;
  EXPECT_NE(wlog.find("removed " + stale + ", the folder of an interrupted job"), std::string::npos) << wlog;
  int status = 0;
  pid_t got = 0;
  for (int i = 0; i < 100 && (got = waitpid(sleeper, &status, WNOHANG)) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (got == 0) {
    ::kill(sleeper, SIGKILL);
    waitpid(sleeper, &status, 0);
    ADD_FAILURE() << "the interrupted job's process group was not killed";
  } else {
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
  for (const auto& d : board_dirs()) EXPECT_EQ(d.find("torq-board-interrupted"), std::string::npos) << d;
}

// Throughput: two board workers on the same board (the board lock
// serialises their runs) against one, without health checks.
TEST_F(BoardWorker, TwoBoardWorkersThroughput) {
  std::map<int, double> rate;
  for (int n : {1, 2}) {
    BoardFleet f("throughput" + std::to_string(n));
    const std::string model = demo_model(f.dir);
    const auto t0 = std::chrono::steady_clock::now();
    Proc coord = f.coordinator(model);
    for (int i = 0; i < n; ++i) f.add_worker(*sshd_, torq::test::standin_yaml(), {"--no-health-check"});
    auto code = coord.wait(240000);
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(code) << coord.output();
    EXPECT_EQ(*code, 0) << coord.output();
    f.stop_workers();
    size_t jobs = 0;
    std::string per;
    for (auto& w : f.workers) {
      const size_t k = count(w.output(), "finished ");
      jobs += k;
      per += " " + std::to_string(k);
    }
    rate[n] = jobs / wall_s;
    std::printf("[board] %d board worker(s), same board: %zu jobs (per worker:%s) in %.2f s = %.1f jobs/s\n", n,
                jobs, per.c_str(), wall_s, rate[n]);
    EXPECT_FALSE(fs::exists(kLock));
  }
  EXPECT_GT(rate[2], 0.0);
}

// Runs the coordinator and one board worker (--capacity N, the toolchain
// file tc) to the end, calling `sample` every period_ms on a thread of its
// own meanwhile; the worker's log. *wall_s: the run's wall time.
std::string run_sampled(BoardFleet& f, const TestSshd& sshd, const std::string& model, const std::string& tc,
                        int capacity,
                        const std::function<void()>& sample, int period_ms, double* wall_s) {
  std::atomic<bool> done{false};
  std::thread watch([&] {
    while (!done) {
      sample();
      std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  Proc coord = f.coordinator(model);
  f.add_worker(sshd, tc, {"--no-health-check", "--capacity", std::to_string(capacity)});
  auto code = coord.wait(240000);
  *wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  done = true;
  watch.join();
  EXPECT_TRUE(code) << coord.output();
  if (code) {
    EXPECT_EQ(*code, 0) << coord.output();
  }
  f.stop_workers();
  return f.workers[0].output();
}

// Issue 32: a board worker with --capacity 4 compiles on 4 lanes while the
// board runs one module at a time. With the stand-in's latencies (1.5 s a
// compile, 0.05 s a run; the ssh path adds ~0.2 s of board time a job) the
// night takes under half the jobs' latencies end to end, the lanes queue on
// their local lock and never meet at the board lock, and every op still has
// the sim backend's result.
TEST_F(BoardWorker, LanesCompileWhileTheBoardRunsOneModuleAtATime) {
  BoardFleet f("lanes");
  const std::string model = demo_model(f.dir);
  const ordered_json sim = sim_report(model, f.dir + "/sim");
  const std::string tc = f.dir + "/standin-latency.yaml";
  std::ofstream(tc) << torq::fleet_test::slurp(torq::test::standin_yaml())
                    << "\nstand_in_latency: {compile_s: 1.5, run_s: 0.05}\n";
  size_t most_dirs = 0;  // job folders on the board at once: one job there at a time
  double wall_s = 0;
  const std::string wlog =
      run_sampled(f, *sshd_, model, tc, 4, [&] { most_dirs = std::max(most_dirs, board_dirs().size()); }, 2, &wall_s);
  const size_t jobs = count(wlog, "finished ");
  ASSERT_GT(jobs, 20u) << wlog;
  EXPECT_LT(wall_s, 0.5 * jobs * 1.55) << "the lanes did not compile while the board ran";
  EXPECT_EQ(wlog.find("waiting for the board lock"), std::string::npos) << wlog;
  EXPECT_LE(most_dirs, 1u) << "two jobs on the board at once";
  const ordered_json board = torq::test::read_json(f.dir + "/out/torq_gen_config_demo.json");
  torq::test::expect_same_results(sim, board);
  std::printf("[board] 4 lanes, one board: %zu jobs in %.2f s (latencies alone, one at a time: %.2f s)\n", jobs,
              wall_s, jobs * 1.55);
  EXPECT_FALSE(fs::exists(kLock));
}

// Processes whose command line holds both needles (the stand-in's personas
// of one test: their paths are under its folder).
size_t processes_with(const std::string& a, const std::string& b) {
  size_t n = 0;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    // read(2): a process that ends meanwhile is an error, not an exception.
    const int fd = ::open((it->path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string cmd;
    char buf[4096];
    for (ssize_t r; (r = ::read(fd, buf, sizeof buf)) > 0;) cmd.append(buf, static_cast<size_t>(r));
    ::close(fd);
    if (cmd.find(a) != std::string::npos && cmd.find(b) != std::string::npos) ++n;
  }
  return n;
}

// A board worker holds jobs beyond its compile lanes (issue 32's farm
// bench): while one job runs on the board and another waits for it, its
// --capacity lanes go on compiling, and never more than --capacity compile
// at once. With a job process per lane only, a lane sat idle while its job
// waited for the board.
TEST_F(BoardWorker, JobsWaitingForTheBoardLeaveTheLanesCompiling) {
  BoardFleet f("compile_lanes");
  const std::string model = demo_model(f.dir);
  const ordered_json sim = sim_report(model, f.dir + "/sim");
  const std::string work = f.dir + "/work", tc = f.dir + "/standin-lanes.yaml";
  fs::create_directories(work);
  std::ofstream(tc) << torq::fleet_test::slurp(torq::test::standin_yaml()) << "\nwork_dir: " << work
                    << "\nstand_in_latency: {compile_s: 0.6, run_s: 0.4}\n";
  size_t most_compiles = 0, most_busy = 0, most_dirs = 0;
  double wall_s = 0;
  const std::string wlog = run_sampled(f, *sshd_, model, tc, 2, [&] {
    const size_t compiles = processes_with("torq-compile", work), dirs = board_dirs().size();
    most_compiles = std::max(most_compiles, compiles);
    most_dirs = std::max(most_dirs, dirs);
    most_busy = std::max(most_busy, compiles + dirs);
  }, 5, &wall_s);
  ASSERT_GT(count(wlog, "finished "), 20u) << wlog;
  EXPECT_NE(wlog.find("capacity 4"), std::string::npos) << "2 lanes and 2 jobs for the board: " << wlog;
  EXPECT_EQ(most_compiles, 2u) << "--capacity 2: two lanes compile at once, no more";
  EXPECT_GE(most_busy, 3u) << "both lanes never compiled while a job was on the board";
  EXPECT_LE(most_dirs, 1u) << "two jobs on the board at once";
  torq::test::expect_same_results(sim, torq::test::read_json(f.dir + "/out/torq_gen_config_demo.json"));
  EXPECT_FALSE(fs::exists(kLock));
}

// A lane that waits too long for its sibling lanes (the worker's lanes'
// lock held, here by the test as a stuck sibling would) gives its job back
// declined: requeued, not an attempt, and the board's health untouched, for
// neither the board nor the op is at fault. It once made the board Unknown
// and started a health check.
TEST_F(BoardWorker, ALaneThatWaitsTooLongForItsSiblingsDeclinesTheJob) {
  BoardFleet f("lane_wait");
  const std::string model = demo_model(f.dir);
  const ordered_json sim = sim_report(model, f.dir + "/sim");
  const auto a = sshd_->address();
  const std::string control = torq::toolchain::board_control_dir(
      f.dir + "/cache-b1", torq::board::parse_board("127.0.0.1:" + std::to_string(a.port)));
  Proc coord = f.coordinator(model);
  f.add_worker(*sshd_, torq::test::standin_yaml(), {"--board-lock-timeout-s", "0.5"});
  Proc& w = f.workers[0];
  ASSERT_TRUE(w.wait_for("health Good", 60000)) << w.output();
  fs::create_directories(control);
  const int fd = ::open((control + "/board.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << control;
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // after the lane's job in hand, if any
  const bool declined = coord.wait_for("declined by worker b1", 30000);
  ::close(fd);  // the stuck sibling lets go
  ASSERT_TRUE(declined) << coord.output() << w.output();
  auto code = coord.wait(240000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output() << w.output();
  f.stop_workers();
  const std::string out = coord.output(), wlog = w.output();
  EXPECT_NE(out.find("another lane of this worker kept the board"), std::string::npos) << out;
  EXPECT_GE(summary_number(out, "declined  (\\d+) leases given back unrun"), 1) << out;
  EXPECT_EQ(out.find("lost to an infrastructure error"), std::string::npos) << out;
  EXPECT_EQ(wlog.find("health Unknown"), std::string::npos) << wlog;
  torq::test::expect_same_results(sim, torq::test::read_json(f.dir + "/out/torq_gen_config_demo.json"));
  EXPECT_FALSE(fs::exists(kLock));
}

}  // namespace

// --collect-profile over a board: the compile-time trace is written where
// the module is compiled (here), the runtime host profile on the board and
// pulled back with the outputs; the matrix test's assigned run exports them
// as one Perfetto trace.
TEST_F(BoardWorker, ProfilesOfABoardRunArePulledBack) {
  BoardFleet f("profile");
  torq::test::save_chain_model(f.dir + "/chain.onnx", 2);
  {
    std::ofstream spec(f.dir + "/spec.yaml");
    spec << "models: [chain.onnx]\nexecutors: [host]\ntargets: {astra: {board: astra}}\n"
            "options: {collect_profile: true}\n";
  }
  Proc coord({bin("torq-coordinator"), "--spec", f.dir + "/spec.yaml", "--bind", f.ep, "--db", f.dir + "/db",
              "--export", f.dir + "/out", "--heartbeat-ms", std::to_string(kHeartbeatMs)},
             f.dir + "/coordinator.log");
  f.add_worker(*sshd_, std::string(TORQ_SOURCE_DIR) + "/configs/toolchains/standin.yaml");
  auto code = coord.wait(180000);
  ASSERT_TRUE(code) << coord.output();
  EXPECT_EQ(*code, 0) << coord.output();
  const std::string dir = f.dir + "/out/reports/chain-fp32-astra-discover";
  ASSERT_TRUE(fs::exists(dir + "/chain.trace.json")) << coord.output();
  const std::string host = torq::fleet_test::slurp(dir + "/chain.host_profile.csv");
  EXPECT_EQ(host.rfind("dispatch_name,invocation_id,action_id,timestamp_us,event\n", 0), 0u) << host;
  EXPECT_NE(host.find("_BEGIN"), std::string::npos) << host;  // written on the board, pulled back
  f.stop_workers();
}

// Temporary files and output directories through the real binaries
// (issue 60, finding 9): a writer killed with SIGKILL mid-write leaves
// <name>.tmp.<pid> (pipeline/base/temp_files.h) that the next writer in that
// directory removes, saying so, while a live process's stays (its pid runs,
// or it holds the file's lock); an output directory that is a dangling
// symbolic link, and a full disk, are errors that say the real reason.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/integration/proc.h"

using namespace torq::test;
namespace fs = std::filesystem;

namespace {

std::string gen() { return bin("torq-gen-config"); }
std::string config(const std::string& rel) { return std::string(TORQ_SOURCE_DIR) + "/configs/" + rel; }

void touch(const std::string& path) { std::ofstream(path) << "partial"; }

// A pid that no longer runs: a child that exited and was reaped.
pid_t dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

// A child process for the test's length: asleep, or holding the flock of
// `locked` (a writer whose pid means nothing here: another pid namespace,
// another host on a shared directory). Killed and reaped when it goes.
class LiveChild {
 public:
  explicit LiveChild(const std::string& locked = "") {
    int ready[2];
    if (pipe(ready) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      if (!locked.empty()) {
        const int fd = open(locked.c_str(), O_RDWR | O_CREAT, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
      }
      if (write(ready[1], "x", 1) != 1) _exit(1);
      for (;;) pause();
    }
    close(ready[1]);
    char c = 0;
    if (read(ready[0], &c, 1) != 1) pid_ = -1;
    close(ready[0]);
  }
  ~LiveChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// Starts `argv` with its output into `log`; returns its pid.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// Runs `argv` and kills it with SIGKILL the moment it creates a file in
// `dir` whose name starts with `prefix` and has ".tmp.<its pid>" in it, i.e.
// mid-write. Returns the file's path, "" when the writer finished first.
std::string kill_mid_write(const std::vector<std::string>& argv, const std::string& dir, const std::string& prefix,
                           const std::string& log) {
  const int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (in < 0 || inotify_add_watch(in, dir.c_str(), IN_CREATE) < 0) return "";
  const pid_t pid = spawn(argv, log);
  const std::string tail = ".tmp." + std::to_string(pid);
  std::string seen;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (seen.empty() && std::chrono::steady_clock::now() < give_up) {
    pollfd p{in, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) {
      if (waitpid(pid, nullptr, WNOHANG) == pid) break;  // done without one
      continue;
    }
    alignas(inotify_event) char buf[4096];
    const ssize_t n = read(in, buf, sizeof buf);
    for (ssize_t at = 0; n > 0 && at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      const std::string name = e->len ? e->name : "";
      if (name.rfind(prefix, 0) == 0 && name.size() > tail.size() &&
          name.compare(name.size() - tail.size(), tail.size(), tail) == 0) {
        kill(pid, SIGKILL);
        seen = dir + "/" + name;
        break;
      }
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(in);
  return seen.empty() || !fs::exists(seen) ? "" : seen;
}

// A tmpfs of `kib` KiB mounted at `dir` for the test's length, unmounted
// when it goes; ok() is false when mounting is not permitted.
class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& dir, int kib) : dir_(dir) {
    fs::create_directories(dir_);
    ok_ = mount("tmpfs", dir_.c_str(), "tmpfs", 0, ("size=" + std::to_string(kib) + "k").c_str()) == 0;
  }
  ~SmallTmpfs() {
    if (ok_) umount2(dir_.c_str(), MNT_DETACH);
  }
  bool ok() const { return ok_; }
  // Fills it: every data write in it fails with ENOSPC from now on.
  void fill() const {
    std::ofstream f(dir_ + "/filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (f.write(block.data(), static_cast<std::streamsize>(block.size())) && f.flush()) {
    }
  }

 private:
  std::string dir_;
  bool ok_ = false;
};

std::string test_dir() {
  return fresh_dir(std::string("temp_files_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

}  // namespace

// A discover killed with SIGKILL while it writes its report leaves the
// report's <name>.tmp.<pid>; the next discover in that directory removes it
// and says so, keeps the temporary files of live processes (one whose pid
// runs, one whose writer holds its lock under a pid that runs nowhere here),
// and writes the report whole.
TEST(TempFiles, ADiscoverKilledMidWriteLeavesATempFileTheNextDiscoverRemoves) {
  const std::string dir = test_dir(), out = dir + "/out", model = dir + "/demo.onnx";
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + model).code, 0);
  fs::create_directories(out);
  const std::vector<std::string> argv{gen(), "discover", "--model", model, "--auto-convert-bf16", "-o", out, "-q"};
  std::string left;
  for (int attempt = 0; attempt < 10 && left.empty(); ++attempt)
    left = kill_mid_write(argv, out, "torq_gen_config_demo", dir + "/killed.log");
  ASSERT_FALSE(left.empty()) << "no discover was caught mid-write in 10 attempts: " << slurp(dir + "/killed.log");

  const LiveChild sleeper;
  ASSERT_GT(sleeper.pid(), 0);
  const std::string live = out + "/torq_gen_config_demo.json.tmp." + std::to_string(sleeper.pid());
  touch(live);
  const std::string locked = out + "/torq_gen_config_demo.json.tmp." + std::to_string(dead_pid());
  const LiveChild holder(locked);
  ASSERT_GT(holder.pid(), 0);
  const std::string dead = out + "/torq_gen_config_demo_compiler.json.tmp." + std::to_string(dead_pid());
  touch(dead);

  const auto again = run_cmd(gen() + " discover --model " + model + " --auto-convert-bf16 -o " + out + " -q");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_FALSE(fs::exists(left)) << left;
  EXPECT_FALSE(fs::exists(dead)) << dead;
  EXPECT_TRUE(fs::exists(live)) << "the file of a running pid was removed";
  EXPECT_TRUE(fs::exists(locked)) << "a file whose lock is held was removed";
  const std::string left_pid = left.substr(left.rfind('.') + 1);
  EXPECT_NE(again.output.find("torq: removed " + left + ": the temporary file of process " + left_pid +
                              ", which no longer runs"),
            std::string::npos)
      << again.output;
  const auto report = read_json(out + "/torq_gen_config_demo.json");
  EXPECT_EQ(report["ops"].size(), 14u);
  EXPECT_EQ(read_json(out + "/torq_gen_config_demo_compiler.json")["model_name"], "demo");
  size_t temps = 0;
  for (const auto& e : fs::directory_iterator(out)) temps += e.path().filename().string().find(".tmp.") != std::string::npos;
  EXPECT_EQ(temps, 2u);  // the live two only
}

// A probe's outputs (probe.csv, the profiles) go through the same form: a
// killed probe's are removed by the next probe into that directory.
TEST(TempFiles, TheNextProbeRemovesAKilledProbesTempFilesAndKeepsLiveOnes) {
  const std::string dir = test_dir(), out = dir + "/out";
  fs::create_directories(out + "/profiles");
  const std::string dead = std::to_string(dead_pid());
  const LiveChild sleeper;
  ASSERT_GT(sleeper.pid(), 0);
  const std::string live = out + "/probe.csv.tmp." + std::to_string(sleeper.pid());
  for (const auto& p : {out + "/probe.csv.tmp." + dead, out + "/profiles/nss.yaml.tmp." + dead, live}) touch(p);
  const auto r = run_cmd(gen() + " probe --spec " + config("probe/smoke.yaml") + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_FALSE(fs::exists(out + "/probe.csv.tmp." + dead));
  EXPECT_FALSE(fs::exists(out + "/profiles/nss.yaml.tmp." + dead));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_NE(r.output.find("torq: removed " + out + "/probe.csv.tmp." + dead), std::string::npos) << r.output;
  EXPECT_NE(slurp(out + "/probe.csv").find("executor"), std::string::npos);
}

// An output directory that is a dangling symbolic link (or below one) is
// named as such, exit 2 (it said "File exists").
TEST(TempFiles, ADanglingSymlinkAsOutputDirSaysWhereItPoints) {
  const std::string dir = test_dir(), model = dir + "/demo.onnx";
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + model).code, 0);
  fs::create_symlink(dir + "/gone", dir + "/out");
  for (const std::string& o : {dir + "/out", dir + "/out/sub"}) {
    const auto r = run_cmd(gen() + " discover --model " + model + " -o " + o + " -q");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(dir + "/out is a symbolic link to " + dir + "/gone, which does not exist"), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("File exists"), std::string::npos) << r.output;
  }
  const auto q = run_cmd(gen() + " quantize --model " + model + " --no-measure -o " + dir + "/out");
  EXPECT_EQ(q.code, 2) << q.output;
  EXPECT_NE(q.output.find(dir + "/out is a symbolic link to " + dir + "/gone, which does not exist"), std::string::npos)
      << q.output;
  EXPECT_FALSE(fs::exists(dir + "/gone"));
  // A regular file in the way is named too.
  touch(dir + "/plain");
  const auto f = run_cmd(gen() + " discover --model " + model + " -o " + dir + "/plain/sub -q");
  EXPECT_EQ(f.code, 2) << f.output;
  EXPECT_NE(f.output.find(dir + "/plain is a regular file, not a directory"), std::string::npos) << f.output;
}

// A full disk (a 64 KiB tmpfs, filled) says why the write failed, and leaves
// no temporary file: the quantized model (it said "cannot write").
TEST(TempFiles, AFullDiskSaysNoSpaceLeftOnDevice) {
  const std::string dir = test_dir(), model = dir + "/demo.onnx";
  ASSERT_EQ(run_cmd(bin("torq-sim") + " demo --save " + model).code, 0);
  const SmallTmpfs full(dir + "/full", 64);
  if (!full.ok()) GTEST_SKIP() << "mount -t tmpfs is not permitted here (needs root): the full disk is not tested";
  full.fill();
  const auto r = run_cmd(gen() + " quantize --model " + model + " --no-measure --output " + dir + "/full/q.onnx");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(dir + "/full/q.onnx: cannot write: No space left on device"), std::string::npos) << r.output;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir + "/full")) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"filler"});
}

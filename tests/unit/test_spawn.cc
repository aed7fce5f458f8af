// base::spawn_process with real child processes: what the child gets
// (argv, cwd, environment, process group, stdin, signal dispositions),
// what a program that cannot start reports, and PR_SET_PDEATHSIG.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "pipeline/base/spawn.h"

namespace torq::base {
namespace {

struct Finished {
  int status = 0;
  std::string out;
};

// Runs argv to its end with stdout captured.
Finished run(const std::vector<std::string>& argv, SpawnOptions o = {}, Spawned* spawned = nullptr) {
  int p[2];
  EXPECT_EQ(pipe2(p, O_CLOEXEC), 0);
  o.stdout_fd = p[1];
  Spawned s = spawn_process(argv, o);
  close(p[1]);
  Finished f;
  char buf[4096];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) f.out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  EXPECT_EQ(waitpid(s.pid, &f.status, 0), s.pid);
  if (spawned) *spawned = s;
  return f;
}

TEST(Spawn, ChildGetsArgvCwdEnvironmentAndItsOwnGroup) {
  std::vector<std::string> env = {"TORQ_SPAWN_TEST=a b", "PATH=/usr/bin:/bin"};
  SpawnOptions o;
  o.cwd = "/usr";
  o.env = &env;
  Finished f = run({"sh", "-c", "echo \"$1|$(pwd)|$TORQ_SPAWN_TEST|$HOME\"; read -r _ _ _ _ g _ < /proc/$$/stat; echo $g", "sh", "x'y"}, o);
  ASSERT_TRUE(WIFEXITED(f.status));
  EXPECT_EQ(WEXITSTATUS(f.status), 0);
  // $HOME is not in the given environment: the child has only that one.
  ASSERT_EQ(f.out.substr(0, f.out.find('\n')), "x'y|/usr|a b|");
  const std::string pgid = f.out.substr(f.out.find('\n') + 1);
  EXPECT_NE(std::stol(pgid), static_cast<long>(getpgrp()));
}

TEST(Spawn, WithoutANewGroupTheChildStaysInThisOne) {
  SpawnOptions o;
  o.new_process_group = false;
  Finished f = run({"sh", "-c", "read -r _ _ _ _ g _ < /proc/$$/stat; echo $g"}, o);
  EXPECT_EQ(std::stol(f.out), static_cast<long>(getpgrp()));
}

TEST(Spawn, StdinIsDevNullAndHandledOrIgnoredSignalsAreDefault) {
  struct sigaction old_pipe, old_usr1, sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, &old_pipe);
  sa.sa_handler = [](int) {};
  sigaction(SIGUSR1, &sa, &old_usr1);
  // The child's own masks, as the kernel reports them after exec.
  Finished f = run({"sh", "-c", "cat; grep -E '^(SigIgn|SigBlk):' /proc/self/status"});
  sigaction(SIGPIPE, &old_pipe, nullptr);
  sigaction(SIGUSR1, &old_usr1, nullptr);
  // cat read /dev/null (nothing); SIGPIPE (bit 13) is not ignored in the
  // child, and nothing is blocked.
  const size_t ign_at = f.out.find("SigIgn:"), blk_at = f.out.find("SigBlk:");
  ASSERT_NE(ign_at, std::string::npos) << f.out;
  ASSERT_NE(blk_at, std::string::npos) << f.out;
  const unsigned long long ign = std::stoull(f.out.substr(ign_at + 7), nullptr, 16);
  EXPECT_EQ(ign & (1ull << (SIGPIPE - 1)), 0u) << f.out;
  EXPECT_EQ(std::stoull(f.out.substr(blk_at + 7), nullptr, 16), 0u) << f.out;
}

TEST(Spawn, AProgramThatCannotStartExits127AndSaysWhy) {
  Spawned s;
  Finished f = run({"/nonexistent/torq-tool", "x"}, {}, &s);
  ASSERT_TRUE(WIFEXITED(f.status));
  EXPECT_EQ(WEXITSTATUS(f.status), 127);
  EXPECT_EQ(s.start_errno, ENOENT);
  EXPECT_FALSE(s.cwd_failed);
  char dir[] = "/tmp/torq-spawn-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string plain = std::string(dir) + "/not-executable";
  close(open(plain.c_str(), O_WRONLY | O_CREAT, 0644));
  f = run({plain}, {}, &s);
  unlink(plain.c_str());
  rmdir(dir);
  EXPECT_EQ(WEXITSTATUS(f.status), 127);
  EXPECT_EQ(s.start_errno, EACCES);
  SpawnOptions o;
  o.cwd = "/nonexistent-dir";
  f = run({"true"}, o, &s);
  EXPECT_EQ(WEXITSTATUS(f.status), 127);
  EXPECT_EQ(s.start_errno, ENOENT);
  EXPECT_TRUE(s.cwd_failed);
  f = run({"true"}, {}, &s);  // found in PATH
  EXPECT_EQ(WEXITSTATUS(f.status), 0);
  EXPECT_EQ(s.start_errno, 0);
}

TEST(Spawn, DieWithParentKillsTheChildWhenTheSpawningThreadEnds) {
  pid_t pid = -1;
  for (bool die : {true, false}) {
    std::thread t([&] {
      SpawnOptions o;
      o.die_with_parent = die;
      pid = spawn_process({"sleep", "30"}, o).pid;
    });
    t.join();
    int status = 0;
    pid_t w = 0;
    for (int i = 0; i < 100 && (w = waitpid(pid, &status, WNOHANG)) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (die) {
      ASSERT_EQ(w, pid) << "the child outlived the thread that started it";
      ASSERT_TRUE(WIFSIGNALED(status));
      EXPECT_EQ(WTERMSIG(status), SIGKILL);
    } else {
      EXPECT_EQ(w, 0) << "without die_with_parent the child keeps running";
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
}

}  // namespace
}  // namespace torq::base

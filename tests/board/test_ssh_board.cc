// SshBoard against a real sshd on 127.0.0.1 (TestSshd). The "board" is this
// machine, so the tests look at its /tmp directly to check what arrived.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/board/sshd_fixture.h"
#include "worker/board/process.h"
#include "worker/board/ssh_board.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace torq::board {
namespace {

using testing::TestSshd;

const char* kLock = "/tmp/torq_board_test.lock";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

InfraKind kind_of(const std::function<void()>& f) {
  try { f(); } catch (const InfraError& e) {
    std::cout << "  InfraError: " << e.what() << std::endl;
    return e.kind();
  }
  ADD_FAILURE() << "no InfraError";
  return InfraKind::ssh;
}

class SshBoardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(testing::make_temp_dir("torq-board"));
    sshd_ = new TestSshd(*root_ + "/sshd");
    sshd_->start();
  }
  static void TearDownTestSuite() {
    delete sshd_;
    std::error_code ec;  // an exiting ssh master may unlink its socket meanwhile
    fs::remove_all(*root_, ec);
    delete root_;
  }
  void SetUp() override {
    work_ = testing::make_temp_dir("torq-board-work");
    remote_dir_ = work_ + "/remote";  // "on the board": same machine
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(work_, ec);
  }

  BoardOptions quiet_options() {
    BoardOptions o;
    o.log = [this](const std::string& line) { notes_ += line + "\n"; };
    o.connect_timeout_s = 5;
    o.control_persist_s = 60;  // a killed test leaves no master for long
    return o;
  }
  std::unique_ptr<SshBoard> board(const std::string& owner = "torq-board test") {
    static int n = 0;
    return std::make_unique<SshBoard>(sshd_->address(), work_ + "/ctl" + std::to_string(n++), owner,
                                      quiet_options());
  }

  static std::string* root_;
  static TestSshd* sshd_;
  std::string work_, remote_dir_, notes_;
};
std::string* SshBoardTest::root_ = nullptr;
TestSshd* SshBoardTest::sshd_ = nullptr;

TEST_F(SshBoardTest, StagesRunsAndPullsIdenticalBytes) {
  std::string a, b;
  for (int i = 0; i < 256 * 40; ++i) a += static_cast<char>(i % 256);
  for (int i = 0; i < 1000; ++i) b += static_cast<char>((i * 7) % 256);
  write_file(work_ + "/in.0.bin", a);
  write_file(work_ + "/in.1.bin", b);
  auto bd = board();
  bd->open();
  bd->stage({work_ + "/in.0.bin", work_ + "/in.1.bin"}, remote_dir_);
  RunResult r = bd->run({"sh", "-c", "cat in.0.bin in.1.bin > out.0.bin && echo done"}, remote_dir_, 20000);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  EXPECT_EQ(r.err, "");
  EXPECT_GE(r.wall_s, 0.0);
  bd->pull({remote_dir_ + "/out.0.bin"}, work_ + "/pulled");
  EXPECT_EQ(read_file(work_ + "/pulled/out.0.bin"), a + b);
}

// The real tool's remote runner sources the board's setup script when the
// board has it; so does every run here (issue 28).
TEST_F(SshBoardTest, TheBoardsSetupScriptIsSourcedBeforeTheRunWhenPresent) {
  BoardOptions o = quiet_options();
  o.setup_script = work_ + "/setup-test-environment";
  SshBoard bd(sshd_->address(), work_ + "/ctl-setup", "torq-board test", o);
  bd.open();
  bd.stage({}, remote_dir_);
  RunResult absent = bd.run({"sh", "-c", "echo \"[$TORQ_TEST_SETUP]\""}, remote_dir_, 20000);
  EXPECT_EQ(absent.exit_code, 0) << absent.err;
  EXPECT_EQ(absent.out, "[]\n");
  write_file(o.setup_script, "export TORQ_TEST_SETUP=sourced\n");
  RunResult present = bd.run({"sh", "-c", "echo \"[$TORQ_TEST_SETUP]\""}, remote_dir_, 20000);
  EXPECT_EQ(present.exit_code, 0) << present.err;
  EXPECT_EQ(present.out, "[sourced]\n");
  EXPECT_GE(present.wall_s, 0.0);  // the time report still parsed
}

// A reflashed board (a new host key) is an infrastructure error that says
// how to accept the key; "ignore" connects as the real tool does, and after
// the suggested ssh-keygen -R the next contact records the new key.
TEST_F(SshBoardTest, AChangedHostKeyIsClassifiedAndSaysHowToAcceptIt) {
  const std::string ctl = work_ + "/ctl-hostkey";
  {
    SshBoard first(sshd_->address(), ctl, "torq-board test", quiet_options());
    first.open();  // records the key; the destructor closes
  }
  sshd_->replace_host_key();
  std::string message;
  {
    SshBoard again(sshd_->address(), ctl, "torq-board test", quiet_options());
    try {
      again.open();
      ADD_FAILURE() << "a changed host key was accepted";
    } catch (const InfraError& e) {
      EXPECT_EQ(e.kind(), InfraKind::host_key_changed) << e.what();
      message = e.what();
    }
  }
  const std::string hint = "ssh-keygen -R '[127.0.0.1]:" + std::to_string(sshd_->port()) + "' -f '";
  ASSERT_NE(message.find(hint), std::string::npos) << message;
  EXPECT_NE(message.find("--board-host-keys ignore"), std::string::npos) << message;
  {
    BoardOptions o = quiet_options();
    o.host_key_policy = "ignore";
    SshBoard ignoring(sshd_->address(), ctl, "torq-board test", o);
    EXPECT_NO_THROW(ignoring.open());
  }
  // The command the message gives, run as a user would.
  const size_t at = message.find("ssh-keygen");
  const std::string cmd = message.substr(at, message.find(" (the next contact", at) - at);
  ASSERT_EQ(std::system((cmd + " >/dev/null 2>&1").c_str()), 0) << cmd;
  SshBoard accepted(sshd_->address(), ctl, "torq-board test", quiet_options());
  EXPECT_NO_THROW(accepted.open());
}

TEST_F(SshBoardTest, ExitCodeOutputAndStderrOfTheCommandAreReturned) {
  auto bd = board();
  bd->open();
  bd->stage({}, remote_dir_);
  RunResult r = bd->run({"sh", "-c", "echo out; echo err >&2; exit 3"}, remote_dir_, 20000);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");  // without bash's time report
}

TEST_F(SshBoardTest, BoardWallTimeIsParsedFromTime) {
  auto bd = board();
  bd->open();
  bd->stage({}, remote_dir_);
  RunResult r = bd->run({"sleep", "0.3"}, remote_dir_, 20000);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GE(r.wall_s, 0.3);
  EXPECT_LT(r.wall_s, 2.0);
  EXPECT_GE(r.local_ms, r.wall_s * 1000 - 1);
  std::cout << "[ board ] sleep 0.3: board wall " << r.wall_s << " s, local " << r.local_ms << " ms" << std::endl;
}

TEST_F(SshBoardTest, TrivialRunOverheadOverTheMaster) {
  auto bd = board();
  bd->open();
  bd->stage({}, remote_dir_);
  const int n = 20;
  double total = 0, best = 1e9;
  for (int i = 0; i < n; ++i) {
    RunResult r = bd->run({"true"}, remote_dir_, 20000);
    ASSERT_EQ(r.exit_code, 0);
    total += r.local_ms;
    best = std::min(best, r.local_ms);
  }
  std::cout << "[ board ] per-call overhead of a trivial `true` run over the master: mean " << total / n
            << " ms, min " << best << " ms (" << n << " runs)" << std::endl;
  EXPECT_LT(total / n, 1000.0);
}

TEST_F(SshBoardTest, ArgvItemsArriveVerbatim) {
  std::string canary = work_ + "/pwned";
  std::vector<std::string> items = {"it's a \"quoted\" arg", "$(touch " + canary + ")", "a; touch " + canary,
                                    "`touch " + canary + "`", "*", "$HOME", "two\nlines", "", "\\back\\",
                                    "--flag=va lue", "&& | > <", "'"};
  std::vector<std::string> argv = {"printf", "%s\\0"};
  argv.insert(argv.end(), items.begin(), items.end());
  auto bd = board();
  bd->open();
  bd->stage({}, remote_dir_);
  RunResult r = bd->run(argv, remote_dir_, 20000);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> got;
  for (size_t s = 0, e; (e = r.out.find('\0', s)) != std::string::npos; s = e + 1) got.push_back(r.out.substr(s, e - s));
  EXPECT_EQ(got, items);
  EXPECT_FALSE(fs::exists(canary));
}

TEST_F(SshBoardTest, LockIsVisibleAndASecondBoardTimesOut) {
  auto first = board("torq-worker w1 pid " + std::to_string(getpid()) + " on test");
  first->open();
  first->lock(2s);
  ASSERT_TRUE(fs::exists(std::string(kLock) + "/owner"));
  std::string owner = read_file(std::string(kLock) + "/owner");
  EXPECT_NE(owner.find("owner=torq-worker w1 pid"), std::string::npos) << owner;
  EXPECT_NE(owner.find("pid=" + std::to_string(getpid())), std::string::npos) << owner;
  EXPECT_NE(owner.find("time="), std::string::npos) << owner;
  EXPECT_EQ(read_file(std::string(kLock) + "/info"), owner);  // the real tool reads info

  auto second = board("torq-worker w2");
  second->open();
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(kind_of([&] { second->lock(700ms); }), InfraKind::lock_timeout);
  EXPECT_GE(ms_since(t0), 700);
  EXPECT_LT(ms_since(t0), 10000);
  EXPECT_NE(notes_.find("waiting for the board lock held by 'torq-worker w1"), std::string::npos) << notes_;

  first->unlock();
  EXPECT_FALSE(fs::exists(kLock));
  second->lock(2s);
  EXPECT_TRUE(second->locked());
  second->close();
  EXPECT_FALSE(fs::exists(kLock));
}

// A lane whose connection was cut while it held the board lock could not
// release it, and its process lives on, idle. A sibling lane of the same
// worker (the same lanes' lock, which it holds while it is on the board)
// recovers that lock at once; a board of another worker (another lanes'
// lock) or one without lanes still waits for it.
TEST_F(SshBoardTest, ALockLeftByASiblingLaneIsRecoveredByTheNextLane) {
  BoardOptions lanes = quiet_options();
  lanes.lanes_lock = work_ + "/ctl-lanes/board.lock";
  SshBoard cut(sshd_->address(), work_ + "/ctl-cut", "torq-worker w1-0 pid " + std::to_string(getpid()), lanes);
  cut.open();
  cut.lock(2s, remote_dir_);
  EXPECT_NE(read_file(std::string(kLock) + "/owner").find("lanes=" + lanes.lanes_lock), std::string::npos);
  BoardOptions other = quiet_options();
  other.lanes_lock = work_ + "/ctl-other/board.lock";
  SshBoard stranger(sshd_->address(), work_ + "/ctl-stranger", "torq-worker w2-0", other);
  stranger.open();
  EXPECT_EQ(kind_of([&] { stranger.lock(600ms); }), InfraKind::lock_timeout);
  auto plain = board("torq-worker w3");
  plain->open();
  EXPECT_EQ(kind_of([&] { plain->lock(600ms); }), InfraKind::lock_timeout);
  EXPECT_EQ(notes_.find("recovered"), std::string::npos) << notes_;

  SshBoard sibling(sshd_->address(), work_ + "/ctl-sibling", "torq-worker w1-1", lanes);
  sibling.open();
  auto t0 = std::chrono::steady_clock::now();
  sibling.lock(2s);
  EXPECT_LT(ms_since(t0), 1500) << "the sibling waited for the lock";
  EXPECT_TRUE(sibling.locked());
  EXPECT_NE(read_file(std::string(kLock) + "/owner").find("owner=torq-worker w1-1"), std::string::npos);
  EXPECT_NE(notes_.find("a lane of this worker (pid " + std::to_string(getpid()) + ") whose connection was cut"),
            std::string::npos) << notes_;
  ASSERT_TRUE(fs::is_directory(remote_dir_));
  cut.unlock(remote_dir_);  // its token is no longer the lock's: the sibling's lock stays, its own folder goes
  EXPECT_TRUE(fs::exists(kLock));
  EXPECT_FALSE(fs::exists(remote_dir_));
  EXPECT_NE(read_file(std::string(kLock) + "/owner").find("owner=torq-worker w1-1"), std::string::npos);
  sibling.close();
  EXPECT_FALSE(fs::exists(kLock));
}

// A job's round trips folded: the lock makes the job's folder, the unlock
// removes it; a folder that cannot be made releases the lock.
TEST_F(SshBoardTest, LockMakesTheJobFolderAndUnlockRemovesIt) {
  write_file(work_ + "/in.0.bin", "abc");
  auto bd = board();
  bd->open();
  bd->lock(2s, remote_dir_);
  EXPECT_TRUE(fs::is_directory(remote_dir_));
  EXPECT_TRUE(fs::exists(std::string(kLock) + "/owner"));
  bd->stage({work_ + "/in.0.bin"}, remote_dir_);
  EXPECT_EQ(read_file(remote_dir_ + "/in.0.bin"), "abc");
  bd->unlock(remote_dir_);
  EXPECT_FALSE(fs::exists(remote_dir_));
  EXPECT_FALSE(fs::exists(kLock));
  EXPECT_FALSE(bd->locked());

  write_file(work_ + "/plain", "a file, not a folder");
  EXPECT_EQ(kind_of([&] { bd->lock(2s, work_ + "/plain/job"); }), InfraKind::staging);
  EXPECT_FALSE(bd->locked());
  EXPECT_FALSE(fs::exists(kLock)) << "a failed job folder left the lock held";
  bd->lock(2s);  // the board is free again
  EXPECT_TRUE(bd->locked());
  bd->close();
  EXPECT_FALSE(fs::exists(kLock));
}

pid_t dead_pid() {
  pid_t p = fork();
  if (p == 0) _exit(0);
  waitpid(p, nullptr, 0);
  return p;
}

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

TEST_F(SshBoardTest, StaleLockOfADeadPidIsRecovered) {
  ASSERT_FALSE(fs::exists(kLock)) << "someone holds " << kLock;
  fs::create_directory(kLock);
  write_file(std::string(kLock) + "/owner", "owner=crashed worker\nuser=x\nhost=" + hostname() +
                                                "\npid=" + std::to_string(dead_pid()) + "\ntime=then\n");
  auto bd = board("torq-worker w3");
  bd->open();
  bd->lock(3s);
  EXPECT_NE(read_file(std::string(kLock) + "/owner").find("owner=torq-worker w3"), std::string::npos);
  EXPECT_NE(notes_.find("recovered the stale lock"), std::string::npos) << notes_;
  EXPECT_NE(notes_.find("is gone"), std::string::npos) << notes_;
  bd->close();
  EXPECT_FALSE(fs::exists(kLock));
}

TEST_F(SshBoardTest, RealToolLockInfoOfADeadPidIsRecoveredToo) {
  ASSERT_FALSE(fs::exists(kLock)) << "someone holds " << kLock;
  fs::create_directory(kLock);  // the real tool writes only info
  write_file(std::string(kLock) + "/info", "user=someone\nhost=" + hostname() + "\npid=" +
                                               std::to_string(dead_pid()) + "\ntime=2026-01-01T00:00:00\n");
  auto bd = board();
  bd->open();
  bd->lock(3s);
  EXPECT_NE(notes_.find("user someone on"), std::string::npos) << notes_;
  bd->close();
}

TEST_F(SshBoardTest, LockOlderThanTheStaleAgeIsRecovered) {
  ASSERT_FALSE(fs::exists(kLock)) << "someone holds " << kLock;
  fs::create_directory(kLock);
  write_file(std::string(kLock) + "/owner", "owner=someone elsewhere\nhost=other-machine\npid=1\ntime=then\n");
  utimbuf old{time(nullptr) - 7200, time(nullptr) - 7200};
  utime(kLock, &old);
  BoardOptions o = quiet_options();
  o.lock_stale_age = 3600s;
  SshBoard bd(sshd_->address(), work_ + "/ctl-age", "torq-worker w4", o);
  bd.open();
  bd.lock(3s);
  EXPECT_NE(notes_.find("s old (stale after 3600 s)"), std::string::npos) << notes_;
  bd.close();
  EXPECT_FALSE(fs::exists(kLock));
}

TEST_F(SshBoardTest, MissingRunnerIsInfraErrorRunnerMissing) {
  auto bd = board();
  bd->open();
  bd->stage({}, remote_dir_);
  EXPECT_EQ(kind_of([&] { bd->run({"torq-run-module-not-installed", "--module=x.vmfb"}, remote_dir_, 20000); }),
            InfraKind::runner_missing);
}

TEST_F(SshBoardTest, MissingRemoteDirectoryIsInfraErrorStaging) {
  auto bd = board();
  bd->open();
  EXPECT_EQ(kind_of([&] { bd->run({"true"}, remote_dir_ + "/never-staged", 20000); }), InfraKind::staging);
}

TEST_F(SshBoardTest, UnreachablePortIsInfraErrorUnreachableWithinConnectTimeout) {
  BoardAddress a = sshd_->address();
  a.port = testing::free_port();
  BoardOptions o = quiet_options();
  o.connect_timeout_s = 3;
  SshBoard bd(a, work_ + "/ctl-x", "t", o);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(kind_of([&] { bd.open(); }), InfraKind::unreachable);
  EXPECT_LT(ms_since(t0), 3000 + 1000);
}

TEST_F(SshBoardTest, UnknownKeyIsInfraErrorAuth) {
  BoardAddress a = sshd_->address();
  a.key_file = work_ + "/stranger";
  testing::make_key(a.key_file);
  SshBoard bd(a, work_ + "/ctl-k", "t", quiet_options());
  EXPECT_EQ(kind_of([&] { bd.open(); }), InfraKind::auth);
}

TEST_F(SshBoardTest, CommandTimeoutKillsTheRunAndReportsTimedOut) {
  auto bd = board();
  bd->open();
  bd->stage({}, remote_dir_);
  auto t0 = std::chrono::steady_clock::now();
  // 2 s: time enough for a loaded machine's sshd to start the shell that
  // writes sleeper.pid, far less than the sleep.
  RunResult r = bd->run({"sh", "-c", "echo $$ > sleeper.pid; exec sleep 30"}, remote_dir_, 2000);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(ms_since(t0), 8000);
  // The sleep on the "board" was killed too (gone, or a zombie nobody reaped).
  const std::string pid_text = read_file(remote_dir_ + "/sleeper.pid");
  ASSERT_FALSE(pid_text.empty()) << "the remote shell never started";
  pid_t sleeper = std::stoi(pid_text);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::string stat = read_file("/proc/" + std::to_string(sleeper) + "/stat");
    gone = stat.empty() || stat.find(") Z") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(gone) << "remote sleep " << sleeper << " still runs";
  RunResult after = bd->run({"true"}, remote_dir_, 20000);  // the master is fine
  EXPECT_EQ(after.exit_code, 0);
}

TEST_F(SshBoardTest, AMasterGoneWhileIdleIsReopened) {
  auto bd = board();
  bd->open();
  bd->stage({}, remote_dir_);
  ProcResult x = run_process({"ssh", "-o", "ControlPath=" + bd->control_path(), "-O", "exit", "x"}, 5000);
  ASSERT_EQ(x.exit_code, 0) << x.err;
  for (int i = 0; i < 100 && fs::exists(bd->control_path()); ++i) std::this_thread::sleep_for(10ms);
  RunResult r = bd->run({"true"}, remote_dir_, 20000);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(notes_.find("reconnecting"), std::string::npos) << notes_;
}

// Its own sshd, killed (with its sessions) while `sleep 5` runs.
TEST_F(SshBoardTest, SshdKilledMidRunIsInfraErrorPromptly) {
  TestSshd own(work_ + "/own-sshd");
  own.start();
  SshBoard bd(own.address(), work_ + "/ctl-own", "t", quiet_options());
  bd.open();
  bd.stage({}, remote_dir_);
  std::thread killer([&] {
    std::this_thread::sleep_for(700ms);
    own.kill_all();
  });
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(kind_of([&] { bd.run({"sleep", "5"}, remote_dir_, 30000); }), InfraKind::ssh);
  double ms = ms_since(t0);
  killer.join();
  std::cout << "[ board ] sshd killed at ~700 ms; InfraError after " << ms << " ms" << std::endl;
  EXPECT_LT(ms, 4000);  // sleep 5 would end after 5000
  auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(kind_of([&] { bd.run({"true"}, remote_dir_, 30000); }), InfraKind::unreachable);
  EXPECT_LT(ms_since(t1), 7000);
}

}  // namespace
}  // namespace torq::board

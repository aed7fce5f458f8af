// SshBoard: one Astra board (or anything with sshd and bash) driven over ssh
// the way the real tool's remote path does it (torq-compiler
// python/torq/lab/pipeline/remote.py, python/torq/testing/remote_testing.py):
// one multiplexed connection (ControlMaster), files staged with scp to a
// directory such as /tmp/<stem>/, the command run there inside bash
// `time { ...; }` so the board's own wall time is measured, outputs pulled
// back with scp, and the board-wide lock `mkdir /tmp/torq_board_test.lock`
// with owner information inside, so people and the farm never collide.
//
// Contract:
//  - Every local child is a spawned (process.h) ssh or scp with a timeout and a
//    process-group kill (process.h); no local shell. The remote command is
//    one string whose every argv item is single-quoted (remote_script.h).
//  - Infrastructure failures throw InfraError (infra_error.h): unreachable,
//    auth, ssh, runner_missing, lock_timeout, staging. What the command does
//    (its exit code, output) is returned, never thrown, except exit 127
//    (command not found), which is runner_missing.
//  - open() must succeed before lock/stage/run/pull. If the master went
//    away while idle (ControlPersist expired) it is reopened, and said so.
//  - One SshBoard is used by one thread. close() (and the destructor)
//    releases the lock if held and stops the master.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "worker/board/address.h"
#include "worker/board/infra_error.h"

namespace torq::board {

struct BoardOptions {
  int connect_timeout_s = 10;        // ssh ConnectTimeout for the master
  int control_persist_s = 600;       // an idle master exits after this (also
                                     // bounds one left by a killed worker)
  int server_alive_interval_s = 5;   // a vanished board is noticed after
  int server_alive_count_max = 3;    //   interval * count seconds
  int command_timeout_ms = 20000;    // small control commands (mkdir, lock)
  int transfer_timeout_ms = 600000;  // one scp (stage or pull)
  std::string lock_dir = "/tmp/torq_board_test.lock";  // on the board
  // Host keys: "accept-new" records a board's key on first contact in the
  // control directory's private known_hosts and refuses a changed one (a
  // host_key_changed InfraError that says how to accept the new key);
  // "ignore" checks nothing, as the real tool's remote runner
  // (StrictHostKeyChecking=no, UserKnownHostsFile=/dev/null).
  std::string host_key_policy = "accept-new";
  // Sourced before every run when the board has it, as the real tool's
  // remote runner does (the board's runtime environment); "" for none.
  std::string setup_script = "/usr/local/bin/setup-test-environment";
  std::chrono::seconds lock_stale_age{12 * 3600};      // older: recovered
  std::chrono::milliseconds lock_poll{250};            // retry period
  // The local lock a worker's lanes hold while they use the board
  // (lane_lock.h), or "". Named in the owner file; a board lock that names
  // the same file on this host, found by a lane that holds that lock, was
  // left by a sibling lane whose connection was cut (it is not on the
  // board) and is recovered at once, though that lane's process lives.
  std::string lanes_lock;
  // Where notes go (lock recovery, waits, reconnects); default: stderr.
  std::function<void(const std::string&)> log;
};

struct RunResult {
  int exit_code = -1;      // the command's exit status on the board
  bool timed_out = false;  // timeout_ms passed: the local ssh was killed
                           // and the remote process group too (best effort)
  std::string out;         // the command's stdout
  std::string err;         // its stderr, without bash's time report
  double wall_s = -1;      // board wall time from `real XmY.YYYs`; -1 if timed out
  double local_ms = 0;     // local wall time of the ssh call
};

class SshBoard {
 public:
  // control_dir (local, created if missing, short: it holds the unix
  // socket) keeps the ControlPath socket and the private known_hosts.
  // owner names who holds the lock, e.g. "torq-worker w1 pid 123 on host".
  SshBoard(BoardAddress address, std::string control_dir, std::string owner, BoardOptions options = {});
  ~SshBoard();  // close(), never throws
  SshBoard(const SshBoard&) = delete;
  SshBoard& operator=(const SshBoard&) = delete;

  // Starts the ControlMaster connection; throws InfraError unreachable or
  // auth (or ssh for anything else) within about connect_timeout_s.
  void open();
  bool is_open() const { return open_; }

  // Takes the board lock, waiting up to timeout for its holder; a lock whose
  // owner is a dead process of this host, or older than lock_stale_age, or
  // without owner information for a minute, is removed (logged) and taken.
  // Throws InfraError lock_timeout naming the holder.
  // With job_dir (a plain remote path), the same round trip also creates it
  // once the lock is taken (a failure releases the lock: InfraError
  // staging), and stage() into it skips its own mkdir. With sweep_prefix
  // (a plain remote path), every other folder whose path starts with it is
  // an interrupted job's (no job runs on the board without the lock): its
  // process group (the run script's pgid file) is killed and the folder
  // removed, in the same round trip (issue 30).
  void lock(std::chrono::milliseconds timeout, const std::string& job_dir = {}, const std::string& sweep_prefix = {});
  // Removes the lock if this SshBoard holds it (checked by a token); with
  // remove_dir, first removes that folder (rm -rf) in the same round trip.
  // A folder that could not be removed is noted, not thrown.
  void unlock(const std::string& remove_dir = {});
  bool locked() const { return locked_; }

  // Creates remote_dir (mkdir -p; not when lock() made it) and copies the
  // local files into it with one scp, each under its base name (the real
  // tool's /tmp/<stem>/<name>).
  // Throws InfraError staging (or ssh if the connection is gone), and
  // std::invalid_argument for a missing local file or an unsafe remote_dir
  // (remote_script.h: check_remote_path).
  void stage(const std::vector<std::string>& local_files, const std::string& remote_dir);

  // Runs argv in remote_dir: bash, `cd DIR && time { argv ; }`.
  RunResult run(const std::vector<std::string>& argv, const std::string& remote_dir, int timeout_ms);

  // Copies remote files into local_dir (created if missing) with one scp.
  // A remote file that is not there is InfraError staging: pull only what a
  // successful run (exit 0) was to write.
  void pull(const std::vector<std::string>& remote_files, const std::string& local_dir);

  // Releases the lock if held, then stops the master (ssh -O exit).
  void close();

  const BoardAddress& address() const { return address_; }
  const std::string& control_path() const { return control_path_; }

 private:
  struct LockProbe;  // lock helpers live in ssh_board_lock.cc
  LockProbe probe_lock(const std::string& job_dir, const std::string& sweep_prefix);
  bool recover_lock(const std::string& seen_owner);
  std::vector<std::string> ssh_base() const;
  std::vector<std::string> common_options() const;
  void ensure_open();
  struct Remote { int exit_code; bool timed_out; std::string out, err; double ms; };
  Remote remote(const std::string& command, int timeout_ms);
  Remote control(const std::string& command);
  void scp(std::vector<std::string> args, const std::string& what);
  void kill_remote_group(const std::string& remote_dir);
  void note(const std::string& text) const;

  BoardAddress address_;
  std::string control_dir_;
  std::string control_path_;
  std::string owner_;
  BoardOptions options_;
  std::string lock_token_;
  std::string made_dir_;  // created by lock(timeout, job_dir) under the lock
  bool open_ = false;
  bool locked_ = false;
};

}  // namespace torq::board

// SshBoard: staging, running, pulling and closing (the connection and the
// lock are in ssh_board.cc and ssh_board_lock.cc).
#include <filesystem>
#include <stdexcept>

#include "worker/board/process.h"
#include "worker/board/remote_script.h"
#include "worker/board/ssh_board.h"

namespace fs = std::filesystem;

namespace torq::board {
void SshBoard::scp(std::vector<std::string> args, const std::string& what) {
  std::vector<std::string> a = {"scp", "-q", "-o", "ControlMaster=no"};
  auto o = common_options();
  a.insert(a.end(), o.begin(), o.end());
  a.insert(a.end(), {"-P", std::to_string(address_.port), "--"});
  a.insert(a.end(), args.begin(), args.end());
  ProcResult r = run_process(a, options_.transfer_timeout_ms);
  std::string where = to_string(address_) + ": " + what;
  if (r.timed_out)
    throw InfraError(InfraKind::staging, where + " took over " + std::to_string(options_.transfer_timeout_ms) + " ms");
  if (r.exit_code == 0) return;
  if (!fs::exists(control_path_)) throw InfraError(InfraKind::ssh, where + ": connection lost: " + diagnostic_line(r.err));
  throw InfraError(InfraKind::staging, where + ": " + diagnostic_line(r.err));
}

void SshBoard::stage(const std::vector<std::string>& local_files, const std::string& remote_dir) {
  check_remote_path(remote_dir);
  std::vector<std::string> args;
  for (const auto& f : local_files) {
    if (!fs::is_regular_file(f)) throw std::invalid_argument("stage: no such local file '" + f + "'");
    args.push_back(fs::absolute(f).string());  // a leading '/' keeps scp from reading "a:b" as a host
  }
  ensure_open();
  if (!(locked_ && remote_dir == made_dir_)) {
    Remote r = control("mkdir -p -- " + shell_quote(remote_dir));
    if (r.exit_code != 0)
      throw InfraError(InfraKind::staging, to_string(address_) + ": mkdir " + remote_dir + ": " + diagnostic_line(r.err));
  }
  if (args.empty()) return;
  args.push_back(scp_prefix(address_) + remote_dir + "/");
  scp(std::move(args), "staging to " + remote_dir);
}

void SshBoard::pull(const std::vector<std::string>& remote_files, const std::string& local_dir) {
  std::vector<std::string> args;
  for (const auto& f : remote_files) {
    check_remote_path(f);
    args.push_back(scp_prefix(address_) + f);
  }
  fs::create_directories(local_dir);
  if (args.empty()) return;
  ensure_open();
  args.push_back(fs::absolute(local_dir).string() + "/");
  scp(std::move(args), "pulling into " + local_dir);
}

RunResult SshBoard::run(const std::vector<std::string>& argv, const std::string& remote_dir, int timeout_ms) {
  if (argv.empty()) throw std::invalid_argument("run: empty argv");
  check_remote_path(remote_dir);
  ensure_open();
  Remote r = remote(timed_run_command(argv, remote_dir, options_.setup_script), timeout_ms);
  RunResult res;
  res.local_ms = r.ms;
  if (r.timed_out) {
    res.timed_out = true;
    res.out = std::move(r.out);
    res.err = std::move(r.err);
    kill_remote_group(remote_dir);
    return res;
  }
  TimedStderr t = split_time_report(r.err);
  std::string where = to_string(address_) + ": " + argv[0];
  if (!t.wall_s) {  // the command never finished on the board
    if (r.err.find(kMissingDirMarker) != std::string::npos)
      throw InfraError(InfraKind::staging, where + ": " + diagnostic_line(r.err));
    throw InfraError(InfraKind::ssh, where + ": ssh ended (exit " + std::to_string(r.exit_code) +
                                         ") before the command finished: " + diagnostic_line(r.err));
  }
  if (r.exit_code == 127)
    throw InfraError(InfraKind::runner_missing, where + ": not found on the board: " + diagnostic_line(t.err));
  res.exit_code = r.exit_code;
  res.out = std::move(r.out);
  res.err = std::move(t.err);
  res.wall_s = *t.wall_s;
  return res;
}

// After a timeout the local ssh is dead but the board may still run the
// command: kill the process group the run script recorded (best effort).
void SshBoard::kill_remote_group(const std::string& remote_dir) {
  std::string f = shell_quote(remote_dir + "/" + kPgidFile);
  std::string script = "g=$(cat " + f + " 2>/dev/null) && rm -f " + f +
                       " && [ -n \"$g\" ] && kill -KILL -- -\"$g\" 2>/dev/null; exit 0";
  try {
    Remote r = remote(bash_command(script), 5000);
    if (r.exit_code != 0) note("could not stop the timed-out command on the board: " + diagnostic_line(r.err));
  } catch (const std::exception& e) {
    note(std::string("could not stop the timed-out command on the board: ") + e.what());
  }
}

void SshBoard::close() {
  if (locked_) {
    if (!open_ || !fs::exists(control_path_)) {
      note("connection gone: lock " + options_.lock_dir + " left on the board (recovered later as stale)");
      locked_ = false;
    } else {
      try { unlock(); } catch (const std::exception& e) {
        note(std::string("unlock failed: ") + e.what());
        locked_ = false;
      }
    }
  }
  if (!open_) return;
  open_ = false;
  if (fs::exists(control_path_)) {
    run_process({"ssh", "-o", "ControlPath=" + control_path_, "-O", "exit", "--", ssh_destination(address_)}, 5000);
  }
  std::error_code ec;
  fs::remove(control_path_, ec);
}

}  // namespace torq::board

// SshBoard: the board-wide lock, the real tool's convention
// (`mkdir /tmp/torq_board_test.lock`, owner information inside). Files in
// the lock directory: `owner` (ours) and `info` (the same lines; the real
// tool reads `info` and shows its user= line when it finds the board busy).
// Lines: owner=, user=, host=, pid=, time=, token=, and lanes= when the
// options name the lanes' lock.
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "worker/board/remote_script.h"
#include "worker/board/ssh_board.h"

namespace torq::board {

struct SshBoard::LockProbe {
  bool acquired = false;
  std::string holder;  // the owner (or info) file of the lock found held
  long age_s = 0;      // how old the lock directory is
};

namespace {

std::string local_hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string local_user() {
  const passwd* pw = getpwuid(geteuid());
  return pw ? pw->pw_name : std::to_string(geteuid());
}

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

std::string new_token() {
  std::random_device rd;
  std::ostringstream s;
  s << std::hex << rd() << rd() << "-" << getpid();
  return s.str();
}

std::string flat(std::string s) {
  for (char& c : s) if (c == '\n' || c == '\r') c = ' ';
  return s;
}

std::map<std::string, std::string> parse_info(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

// Why a held lock may be taken over, or nothing if it may not.
std::optional<std::string> stale_reason(const std::string& holder, long age_s, const BoardOptions& o) {
  const std::chrono::seconds stale_age = o.lock_stale_age;
  auto kv = parse_info(holder);
  if (!o.lanes_lock.empty() && kv.count("lanes") && kv["lanes"] == o.lanes_lock && kv.count("host") &&
      kv["host"] == local_hostname())
    return "it was left by a lane of this worker (pid " + kv["pid"] +
           ") whose connection was cut: its lanes' lock is held here, so that lane is not on the board";
  if (kv.empty() && age_s > 60) return "it has no owner information and is " + std::to_string(age_s) + " s old";
  if (age_s > stale_age.count())
    return "it is " + std::to_string(age_s) + " s old (stale after " + std::to_string(stale_age.count()) + " s)";
  if (kv.count("host") && kv["host"] == local_hostname() && kv.count("pid")) {
    char* end = nullptr;
    long pid = std::strtol(kv["pid"].c_str(), &end, 10);
    if (pid > 0 && end && *end == '\0' && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      return "its owner, pid " + kv["pid"] + " on this host, is gone";
  }
  return std::nullopt;
}

std::string describe(const std::string& holder) {
  auto kv = parse_info(holder);
  if (kv.empty()) return "(no owner information)";
  std::string who = kv.count("owner") ? kv["owner"] : "user " + kv["user"] + " on " + kv["host"] + " pid " + kv["pid"];
  return "'" + who + "' since " + kv["time"];
}

}  // namespace

SshBoard::LockProbe SshBoard::probe_lock(const std::string& job_dir, const std::string& sweep_prefix) {
  if (lock_token_.empty()) lock_token_ = new_token();
  std::vector<std::string> lines = {"owner=" + flat(owner_), "user=" + local_user(),
                                    "host=" + local_hostname(), "pid=" + std::to_string(getpid()),
                                    "time=" + now_iso(), "token=" + lock_token_};
  if (!options_.lanes_lock.empty()) lines.push_back("lanes=" + options_.lanes_lock);
  // Once the lock is ours, the job's folder (exit 4 and the lock released
  // if it cannot be made).
  std::string make_dir =
      job_dir.empty() ? std::string()
                      : "    mkdir -p -- " + shell_quote(job_dir) + " || { rm -rf \"$L\"; exit 4; }\n";
  if (!sweep_prefix.empty())
    make_dir += "    for d in " + shell_quote(sweep_prefix) + "*; do\n"
                "      [ -d \"$d\" ] && [ \"$d\" != " + shell_quote(job_dir) + " ] || continue\n"
                "      p=$(cat \"$d/" + std::string(kPgidFile) + "\" 2>/dev/null) && [ -n \"$p\" ] && kill -KILL -- -\"$p\" 2>/dev/null\n"
                "      rm -rf -- \"$d\" && echo \"torq-swept=$d\" >&2\n"
                "    done\n";
  std::string script =
      "L=" + shell_quote(options_.lock_dir) + "\n"
      "if mkdir \"$L\" 2>/dev/null; then\n"
      // Both files by the shell's own printf: every program a board
      // section starts costs the board (and a farm's host) a process.
      "  if printf '%s\\n' " + shell_join(lines) + " > \"$L/owner\" && printf '%s\\n' " + shell_join(lines) +
      " > \"$L/info\"; then\n" +
      make_dir +
      "    echo torq-lock=acquired; exit 0; fi\n"
      "  rm -rf \"$L\"; echo 'cannot write the lock owner file' >&2; exit 3\n"
      "fi\n"
      "echo torq-lock=held\n"
      "echo \"$(( $(date +%s) - $(stat -c %Y \"$L\" 2>/dev/null || date +%s) ))\"\n"
      "cat \"$L/owner\" 2>/dev/null || cat \"$L/info\" 2>/dev/null; exit 0\n";
  Remote r = control(bash_command(script));
  if (r.exit_code == 4)
    throw InfraError(InfraKind::staging, to_string(address_) + ": mkdir " + job_dir + ": " + diagnostic_line(r.err));
  if (r.exit_code != 0)
    throw InfraError(InfraKind::ssh, to_string(address_) + ": lock " + options_.lock_dir + ": " + diagnostic_line(r.err));
  LockProbe p;
  std::istringstream in(r.out);
  std::string state, age;
  std::getline(in, state);
  p.acquired = state == "torq-lock=acquired";
  if (p.acquired) {
    std::istringstream err(r.err);
    for (std::string line; std::getline(err, line);)
      if (line.rfind("torq-swept=", 0) == 0)
        note("removed " + line.substr(11) + ", the folder of an interrupted job (its process group killed)");
    return p;
  }
  std::getline(in, age);
  p.age_s = std::atol(age.c_str());
  p.holder.assign(std::istreambuf_iterator<char>(in), {});
  while (!p.holder.empty() && p.holder.back() == '\n') p.holder.pop_back();
  return p;
}

// Removes the lock only if its owner file still reads as seen_owner, by
// renaming it away first (a lock re-taken meanwhile is left alone).
bool SshBoard::recover_lock(const std::string& seen_owner) {
  std::string script =
      "L=" + shell_quote(options_.lock_dir) + "\nseen=" + shell_quote(seen_owner) + "\n"
      "cur=$(cat \"$L/owner\" 2>/dev/null || cat \"$L/info\" 2>/dev/null)\n"
      "[ \"$cur\" = \"$seen\" ] || exit 0\n"
      "mv \"$L\" \"$L.stale.$$\" 2>/dev/null && rm -rf \"$L.stale.$$\" && echo torq-lock=recovered; exit 0\n";
  Remote r = control(bash_command(script));
  return r.out.find("torq-lock=recovered") != std::string::npos;
}

void SshBoard::lock(std::chrono::milliseconds timeout, const std::string& job_dir, const std::string& sweep_prefix) {
  if (locked_) return;
  if (!job_dir.empty()) check_remote_path(job_dir);
  if (!sweep_prefix.empty()) check_remote_path(sweep_prefix);
  ensure_open();
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool said_waiting = false, said_stuck = false;
  for (;;) {
    LockProbe p = probe_lock(job_dir, sweep_prefix);
    if (p.acquired) {
      locked_ = true;
      made_dir_ = job_dir;
      return;
    }
    if (auto why = stale_reason(p.holder, p.age_s, options_)) {
      if (recover_lock(p.holder)) {
        note("recovered the stale lock " + options_.lock_dir + " held by " + describe(p.holder) + ": " + *why);
        continue;
      }
      if (!said_stuck) note("could not remove the stale lock " + options_.lock_dir + " (" + *why + ")");
      said_stuck = true;
    }
    if (!said_waiting) note("waiting for the board lock held by " + describe(p.holder));
    said_waiting = true;
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      throw InfraError(InfraKind::lock_timeout, to_string(address_) + ": " + options_.lock_dir + " is held by " +
                                                    describe(p.holder) + " (" + std::to_string(p.age_s) +
                                                    " s); waited " + std::to_string(timeout.count()) + " ms");
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(options_.lock_poll, deadline - now));
  }
}

void SshBoard::unlock(const std::string& remove_dir) {
  if (!locked_) return;
  // The lock goes only while its owner file still holds our token (a lock
  // recovered as stale and taken by another is theirs); the job's folder
  // and the lock go in one rm, and the token is matched by the shell: every
  // program this section starts runs while the board is held.
  std::string ours = "rm -rf -- \"$L\"", theirs = ":";
  if (!remove_dir.empty()) {
    check_remote_path(remove_dir);
    const std::string d = shell_quote(remove_dir);
    ours = "rm -rf -- " + d + " \"$L\" || { [ -e " + d + " ] && echo torq-rm=failed; }";
    theirs = "rm -rf -- " + d + " || echo torq-rm=failed";
  }
  std::string script =
      "L=" + shell_quote(options_.lock_dir) + "\nown=\n"
      "{ while IFS= read -r l || [ -n \"$l\" ]; do [ \"$l\" = " + shell_quote("token=" + lock_token_) +
      " ] && own=1; done < \"$L/owner\"; } 2>/dev/null\n"
      "if [ -n \"$own\" ]; then " + ours + "\nelse " + theirs + "\nfi; exit 0\n";
  Remote r = control(bash_command(script));
  locked_ = false;
  made_dir_.clear();
  if (r.out.find("torq-rm=failed") != std::string::npos)
    note("could not remove " + remove_dir + " on the board: " + diagnostic_line(r.err));
}

}  // namespace torq::board

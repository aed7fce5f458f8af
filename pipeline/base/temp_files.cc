// Temporary files: the pid form, the locked create, the sweep by lock and
// pid liveness, and what stands in the way of a directory.
#include "pipeline/base/temp_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace torq::base {

namespace {

constexpr const char* kInfix = ".tmp.";

// Opens an existing file to test its lock (read-write where allowed: NFS
// emulates flock with POSIX locks, which want a writable descriptor for an
// exclusive one); -1 when it cannot be opened.
int open_for_lock(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0 && (errno == EACCES || errno == EROFS))
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  return fd;
}

// Whether no process holds the flock of the regular file `path` (taken and
// kept on `fd` when it returns true; the caller closes it).
bool lock_is_free(const std::string& path, int* fd) {
  *fd = open_for_lock(path);
  if (*fd < 0) return false;
  struct stat st {};
  if (::fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode) || ::flock(*fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(*fd);
    *fd = -1;
    return false;
  }
  return true;
}

// The kind of a file that is not a directory, in words.
const char* kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a file of an unknown kind";
}

std::string link_target(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path t = std::filesystem::read_symlink(path, ec);
  return ec ? std::string("?") : t.string();
}

}  // namespace

std::string temp_path_for(const std::string& final_path) {
  return final_path + kInfix + std::to_string(::getpid());
}

pid_t temp_file_pid(const std::string& name) {
  const size_t at = name.rfind(kInfix);
  if (at == std::string::npos || at == 0) return 0;
  const std::string digits = name.substr(at + std::strlen(kInfix));
  if (digits.empty() || digits.size() > 9 || digits[0] == '0') return 0;
  for (char c : digits)
    if (c < '0' || c > '9') return 0;
  return static_cast<pid_t>(std::stol(digits));
}

int create_temp_file(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd >= 0) {
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
      const int err = errno;  // just made by us: only a filesystem without locks gets here
      ::unlink(path.c_str());
      ::close(fd);
      errno = err;
      return -1;
    }
    if (errno != EEXIST) return -1;
    // A dead predecessor's file with this pid, or this process's own.
    int old = -1;
    if (!lock_is_free(path, &old)) {
      errno = EEXIST;
      return -1;
    }
    ::unlink(path.c_str());
    ::close(old);
  }
  errno = EEXIST;
  return -1;
}

std::vector<std::string> sweep_dead_temp_files(const std::string& dir) {
  std::vector<std::string> removed;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return removed;
  const pid_t self = ::getpid();
  std::vector<std::pair<std::string, pid_t>> candidates;
  while (const dirent* e = ::readdir(d)) {
    const pid_t pid = temp_file_pid(e->d_name);
    if (pid > 0 && pid != self) candidates.emplace_back(e->d_name, pid);
  }
  ::closedir(d);
  for (const auto& [name, pid] : candidates) {
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // that pid runs (or is not ours to judge)
    const std::string path = (dir.empty() || dir.back() == '/' ? dir : dir + "/") + name;
    int fd = -1;
    if (!lock_is_free(path, &fd)) continue;  // a live writer holds it, or it is no file of ours
    const bool gone = ::unlink(path.c_str()) == 0;
    ::close(fd);
    if (!gone) continue;
    std::fprintf(stderr, "torq: removed %s: the temporary file of process %d, which no longer runs\n", path.c_str(),
                 static_cast<int>(pid));
    removed.push_back(path);
  }
  return removed;
}

std::string directory_obstacle(const std::string& dir) {
  namespace fs = std::filesystem;
  for (fs::path p = fs::path(dir).lexically_normal(); !p.empty(); p = p.parent_path()) {
    const std::string s = p.string();
    struct stat lst {};
    if (::lstat(s.c_str(), &lst) != 0) {
      if (errno != ENOENT && errno != ENOTDIR) return s + ": " + std::strerror(errno);
      if (p == p.parent_path()) break;
      continue;  // made by create_directories, or below a non-directory: look at its parent
    }
    if (S_ISDIR(lst.st_mode)) return "";
    if (!S_ISLNK(lst.st_mode)) return s + " is " + kind_of(lst.st_mode) + ", not a directory";
    struct stat st {};
    if (::stat(s.c_str(), &st) != 0) {
      if (errno == ENOENT) return s + " is a symbolic link to " + link_target(s) + ", which does not exist";
      return s + " is a symbolic link to " + link_target(s) + ": " + std::strerror(errno);
    }
    if (S_ISDIR(st.st_mode)) return "";
    return s + " is a symbolic link to " + link_target(s) + ", which is " + kind_of(st.st_mode) +
           ", not a directory";
  }
  return "";
}

}  // namespace torq::base

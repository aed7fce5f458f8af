// pipeline/base/temp_files.h on real files and processes: the pid form, the
// locked create, and which files the sweep takes (dead pid and free lock)
// and keeps (a running pid, a held lock, this process's own, other names).
#include "pipeline/base/temp_files.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace torq::base;

namespace {

std::string fresh(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("torq-temp-files-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

void touch(const std::string& path) { std::ofstream(path) << "partial"; }

pid_t dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

}  // namespace

TEST(TempFiles, TheFormCarriesThePid) {
  EXPECT_EQ(temp_path_for("out/ops.csv"), "out/ops.csv.tmp." + std::to_string(getpid()));
  EXPECT_EQ(temp_file_pid("ops.csv.tmp.4711"), 4711);
  EXPECT_EQ(temp_file_pid("import.tmp.12"), 12);
  for (const char* not_ours : {"ops.csv", "ops.csv.tmp", "ops.csv.tmp.", "ops.csv.tmp.12x", "ops.csv.tmp.012", ".tmp.12",
                               "notes.tmp.txt", "x.tmp.12345678901"})
    EXPECT_EQ(temp_file_pid(not_ours), 0) << not_ours;
}

TEST(TempFiles, CreateLocksAndReplacesOnlyAnUnlockedLeftover) {
  const std::string d = fresh("create");
  const std::string p = temp_path_for(d + "/r.json");
  touch(p);  // a dead predecessor's with this pid: unlocked
  const int fd = create_temp_file(p);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  EXPECT_EQ(fs::file_size(p), 0u);
  EXPECT_EQ(create_temp_file(p), -1);  // this process writes it already
  EXPECT_EQ(errno, EEXIST);
  const int other = open(p.c_str(), O_RDONLY);
  EXPECT_NE(flock(other, LOCK_EX | LOCK_NB), 0);  // the lock is held
  close(other);
  close(fd);
  fs::remove_all(d);
}

TEST(TempFiles, TheSweepTakesDeadUnlockedFilesOnly) {
  const std::string d = fresh("sweep");
  const std::string dead = std::to_string(dead_pid());
  const pid_t sleeper = fork();
  if (sleeper == 0) {
    for (;;) pause();
  }
  const std::string locked = d + "/b.json.tmp." + std::to_string(dead_pid());
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t holder = fork();
  if (holder == 0) {
    const int fd = open(locked.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0 || write(ready[1], "x", 1) != 1) _exit(1);
    for (;;) pause();
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const std::string gone = d + "/a.json.tmp." + dead, live = d + "/a.json.tmp." + std::to_string(sleeper),
                    own = temp_path_for(d + "/c.json"), other = d + "/notes.tmp." + dead + ".txt";
  for (const auto& p : {gone, live, own, other}) touch(p);
  const auto removed = sweep_dead_temp_files(d);
  EXPECT_EQ(removed, std::vector<std::string>{gone});
  EXPECT_FALSE(fs::exists(gone));
  for (const auto& p : {live, own, other, locked}) EXPECT_TRUE(fs::exists(p)) << p;
  kill(holder, SIGKILL);  // the lock goes with its process, as with kill -9 mid-write
  waitpid(holder, nullptr, 0);
  EXPECT_EQ(sweep_dead_temp_files(d), std::vector<std::string>{locked});
  kill(sleeper, SIGKILL);
  waitpid(sleeper, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  fs::remove_all(d);
}

TEST(TempFiles, DirectoryObstacleNamesTheComponent) {
  const std::string d = fresh("obstacle");
  EXPECT_EQ(directory_obstacle(d + "/new/deeper"), "");
  fs::create_symlink(d + "/gone", d + "/link");
  EXPECT_EQ(directory_obstacle(d + "/link"), d + "/link is a symbolic link to " + d + "/gone, which does not exist");
  EXPECT_EQ(directory_obstacle(d + "/link/sub"), d + "/link is a symbolic link to " + d + "/gone, which does not exist");
  touch(d + "/plain");
  EXPECT_EQ(directory_obstacle(d + "/plain/sub"), d + "/plain is a regular file, not a directory");
  fs::create_symlink(d + "/plain", d + "/to-plain");
  EXPECT_EQ(directory_obstacle(d + "/to-plain"),
            d + "/to-plain is a symbolic link to " + d + "/plain, which is a regular file, not a directory");
  fs::create_directories(d + "/real");
  fs::create_symlink(d + "/real", d + "/to-real");
  EXPECT_EQ(directory_obstacle(d + "/to-real/sub"), "");
  fs::remove_all(d);
}

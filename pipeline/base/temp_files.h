// Temporary files: one form for all of them, the writer's pid in it, and
// the sweep of those whose writer is gone.
//
// Every file a torq tool writes in pieces is written first as
//
//     <final name>.tmp.<pid>        e.g. ops.csv.tmp.4711, probe.csv.tmp.4711
//
// in the final file's directory (<pid>: the writing process's decimal pid),
// then renamed over the final name (pipeline/report/atomic_file.h). A
// writer that makes the file with create_temp_file() holds an exclusive
// flock(2) on it for as long as it writes. A writer killed mid-write (kill
// -9, the OOM killer) leaves it behind; the next writer to start in that
// directory calls sweep_dead_temp_files(), which removes such a file when
// both hold:
//   - its flock can be taken: no live process holds it (the kernel drops a
//     flock with the last descriptor, however the process ended), and
//   - kill(<pid>, 0) fails with ESRCH: no process with that pid runs here.
// Why both, and not a start-time comparison: the lock keeps a live writer's
// file whatever its pid means here (another pid namespace, another host on
// a shared directory), where kill(pid, 0) alone would call the writer dead;
// the pid keeps the files of writers that use the form without the lock
// (the workers' cache fetches). A dead writer's pid reused by another
// process only delays the sweep until that process ends, never removes a
// live writer's file. Comparing the file's mtime with /proc/<pid>/stat's
// start time would sweep that case sooner, but it sets wall-clock time
// against ticks since boot: a clock step would call a live, unlocked
// writer's file stale. Files carrying this process's own pid are never
// swept (its own, or a dead predecessor's with the same pid: the next
// process sweeps them).
//
// Nothing here throws; errors come back as errno or words.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace torq::base {

// "<final_path>.tmp.<pid of this process>".
std::string temp_path_for(const std::string& final_path);

// The pid a file name (no directory) of the form above carries, or 0 when
// it is not of the form.
pid_t temp_file_pid(const std::string& name);

// Creates `path` (a temp_path_for() name) exclusively, mode 0600,
// close-on-exec, write-only, and takes its flock; returns the descriptor,
// or -1 with errno set. A file already at `path` whose lock is free (a dead
// predecessor that had this pid) is replaced; one whose lock is held (this
// process writes it already) gives -1 with EEXIST.
int create_temp_file(const std::string& path);

// Removes the temporary files in `dir` (not below it) whose writer is gone,
// as the header says, and returns their paths. Each removal is said on
// stderr: "torq: removed <path>: the temporary file of process <pid>, which
// no longer runs". A directory that cannot be read removes nothing.
std::vector<std::string> sweep_dead_temp_files(const std::string& dir);

// Why `dir` cannot be made a directory, in words naming the path component
// at fault, or "" when nothing is in the way (it is a directory, or can be
// created): "<p> is a symbolic link to <target>, which does not exist",
// "<p> is a regular file, not a directory", "<p> is a symbolic link to
// <target>, which is a FIFO (named pipe), not a directory".
std::string directory_obstacle(const std::string& dir);

}  // namespace torq::base

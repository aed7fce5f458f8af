// The environment LocalPool starts its job processes in (job_env.h): glibc's
// allocator in one arena backed by transparent huge pages, unless the
// user's GLIBC_TUNABLES says otherwise. The merge on its own, and a real
// pool's `torq-worker --stdio` process that runs layer jobs with it.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <gnu/libc-version.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/pool_run.h"
#include "tests/integration/proc.h"
#include "worker/runner/job_env.h"
#include "worker/runner/local_pool.h"

using namespace torq;
using namespace torq::test;

namespace {

std::vector<std::string> env_of(std::vector<std::string> vars) {
  std::vector<char*> p;
  for (auto& v : vars) p.push_back(v.data());
  p.push_back(nullptr);
  return runner::job_environment(p.data());
}

// kB of anonymous memory in transparent huge pages (smaps_rollup).
long anon_huge_kb(const std::string& pid) {
  std::istringstream in(slurp("/proc/" + pid + "/smaps_rollup"));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("AnonHugePages:", 0) == 0) return std::strtol(line.c_str() + 14, nullptr, 10);
  return -1;
}

}  // namespace

TEST(JobEnv, TheTunablesAreAddedToWhatTheUserSets) {
  EXPECT_EQ(runner::job_tunables(""), "glibc.malloc.arena_max=1:glibc.malloc.hugetlb=1");
  EXPECT_EQ(runner::job_tunables("glibc.malloc.tcache_count=0"),
            "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1:glibc.malloc.hugetlb=1");
  // The user's own value of one of ours wins; a longer name is another tunable.
  EXPECT_EQ(runner::job_tunables("glibc.malloc.arena_max=8"), "glibc.malloc.arena_max=8:glibc.malloc.hugetlb=1");
  EXPECT_EQ(runner::job_tunables("glibc.malloc.hugetlb=0:glibc.malloc.arena_max=2"),
            "glibc.malloc.hugetlb=0:glibc.malloc.arena_max=2");
  EXPECT_EQ(runner::job_tunables("glibc.malloc.arena_max_x=3"),
            "glibc.malloc.arena_max_x=3:glibc.malloc.arena_max=1:glibc.malloc.hugetlb=1");
}

TEST(JobEnv, GlibcTunablesIsReplacedInPlaceOrAddedAndTheCallersValueCarried) {
  const std::string ours = "GLIBC_TUNABLES=glibc.malloc.arena_max=1:glibc.malloc.hugetlb=1";
  EXPECT_EQ(env_of({"A=1", "B=2"}), (std::vector<std::string>{"A=1", "B=2", ours, "TORQ_CALLER_GLIBC_TUNABLES="}));
  EXPECT_EQ(env_of({"A=1", "GLIBC_TUNABLES=glibc.malloc.hugetlb=0", "B=2", "GLIBC_TUNABLES=x=1"}),
            (std::vector<std::string>{"A=1", "GLIBC_TUNABLES=glibc.malloc.hugetlb=0:glibc.malloc.arena_max=1", "B=2",
                                      "TORQ_CALLER_GLIBC_TUNABLES=glibc.malloc.hugetlb=0"}));
  // A caller that is itself a job process: what it carries is replaced.
  EXPECT_EQ(env_of({"TORQ_CALLER_GLIBC_TUNABLES=old", "GLIBC_TUNABLES=a.b=1"}),
            (std::vector<std::string>{"GLIBC_TUNABLES=a.b=1:glibc.malloc.arena_max=1:glibc.malloc.hugetlb=1",
                                      "TORQ_CALLER_GLIBC_TUNABLES=a.b=1"}));
  EXPECT_EQ(env_of({}), (std::vector<std::string>{ours, "TORQ_CALLER_GLIBC_TUNABLES="}));
}

TEST(JobEnv, AJobProcessPutsTheCallersTunablesBack) {
  ScopedEnv saved("GLIBC_TUNABLES");
  setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=1:glibc.malloc.hugetlb=1", 1);
  setenv("TORQ_CALLER_GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
  runner::restore_caller_tunables();
  ASSERT_NE(std::getenv("GLIBC_TUNABLES"), nullptr);
  EXPECT_STREQ(std::getenv("GLIBC_TUNABLES"), "glibc.malloc.tcache_count=0");
  EXPECT_EQ(std::getenv("TORQ_CALLER_GLIBC_TUNABLES"), nullptr);
  setenv("TORQ_CALLER_GLIBC_TUNABLES", "", 1);  // the caller had none
  runner::restore_caller_tunables();
  EXPECT_EQ(std::getenv("GLIBC_TUNABLES"), nullptr);
  EXPECT_EQ(std::getenv("TORQ_CALLER_GLIBC_TUNABLES"), nullptr);
  setenv("GLIBC_TUNABLES", "x.y=2", 1);  // not a job process: left alone
  runner::restore_caller_tunables();
  EXPECT_STREQ(std::getenv("GLIBC_TUNABLES"), "x.y=2");
}

namespace {

// A model of four Relu layers on a 1x16x256x256 input (4 MB a tensor), in
// `dir` as big.onnx: its reference and layer jobs take tens of MB of heap.
void write_relu_chain(const std::string& dir) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("relus");
  auto typed = [](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {1, 16, 256, 256}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  typed(g->add_input(), "x");
  std::string in = "x";
  for (int i = 0; i < 4; ++i) {
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->set_name("relu" + std::to_string(i));
    n->add_input(in);
    in = i == 3 ? "y" : "a" + std::to_string(i);
    n->add_output(in);
  }
  typed(g->add_output(), "y");
  std::ofstream f(dir + "/big.onnx", std::ios::binary);
  ASSERT_TRUE(m.SerializeToOstream(&f));
}

struct JobProcess {
  std::string tunables;  // GLIBC_TUNABLES as the process was given it
  std::string caller;    // and TORQ_CALLER_GLIBC_TUNABLES
  long huge_kb = -1;     // its anonymous memory in transparent huge pages, after the jobs
  int succeeded = 0;
};

// The four layer jobs of big.onnx in `dir` on host, on a real pool whose
// job process is a script that records the environment it got and its pid,
// then execs torq-worker (same pid). `user`: this process's GLIBC_TUNABLES
// while the pool starts (unset when empty).
JobProcess run_big_jobs(const std::string& dir, const std::string& user) {
  const std::string wrapper = dir + "/worker.sh";
  {
    std::ofstream w(wrapper);
    w << "#!/bin/sh\nenv > " << dir << "/env\necho $$ > " << dir << "/pid\nexec " << bin("torq-worker")
      << " \"$@\"\n";
  }
  EXPECT_EQ(run_cmd("chmod +x " + wrapper).code, 0);
  ScopedEnv saved("GLIBC_TUNABLES");
  if (user.empty()) unsetenv("GLIBC_TUNABLES");
  else setenv("GLIBC_TUNABLES", user.c_str(), 1);
  runner::LocalPoolOptions o;
  o.workers = 1;
  o.cache_dir = dir;
  o.worker_binary = wrapper;
  runner::LocalPool pool(o);
  std::deque<pipeline::JobSpec> jobs;
  for (uint32_t i = 0; i < 4; ++i) {
    pipeline::JobSpec j;
    j.id = "big/" + std::to_string(i) + "/host";
    j.model_hash = "big";
    j.first_node = j.last_node = i;
    j.executor = pipeline::Executor::kHost;
    j.timeout_ms = 60000;
    jobs.push_back(j);
  }
  JobProcess out;
  for (const auto& [id, r] : run_jobs(pool, std::move(jobs))) {
    EXPECT_EQ(r.status, pipeline::Status::kSuccess) << id << ": " << r.error_message;
    out.succeeded += r.status == pipeline::Status::kSuccess;
  }
  // (glibc cuts the original GLIBC_TUNABLES string in /proc/PID/environ
  // while it parses it, so the script's `env` says what the pool passed.)
  std::istringstream env(slurp(dir + "/env"));
  for (std::string line; std::getline(env, line);)
    if (line.rfind("GLIBC_TUNABLES=", 0) == 0) out.tunables = line.substr(15);
    else if (line.rfind("TORQ_CALLER_GLIBC_TUNABLES=", 0) == 0) out.caller = line.substr(27);
  std::string pid = slurp(dir + "/pid");
  pid.erase(pid.find_last_not_of('\n') + 1);
  if (!pid.empty()) out.huge_kb = anon_huge_kb(pid);  // idle and alive until the pool goes
  return out;
}

}  // namespace

// A real pool's job process runs its jobs with the tunables, the user's
// own kept, and its heap in huge pages where the kernel gives them to a
// process that asks (transparent_hugepage madvise or always); with the
// user's glibc.malloc.hugetlb=0 it asks for none.
TEST(JobEnv, APoolsJobProcessGetsTheTunablesAndItsHeapIsInHugePages) {
  const std::string dir = fresh_dir("job-env");
  write_relu_chain(dir);
  const JobProcess ours = run_big_jobs(dir, "glibc.malloc.tcache_count=0");
  EXPECT_EQ(ours.succeeded, 4);
  EXPECT_EQ(ours.tunables, "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1:glibc.malloc.hugetlb=1");
  const JobProcess users = run_big_jobs(dir, "glibc.malloc.hugetlb=0");
  EXPECT_EQ(users.succeeded, 4);
  EXPECT_EQ(users.tunables, "glibc.malloc.hugetlb=0:glibc.malloc.arena_max=1");
  EXPECT_EQ(users.caller, "glibc.malloc.hugetlb=0");
  const std::string thp = slurp("/sys/kernel/mm/transparent_hugepage/enabled");
  if (thp.find("[never]") != std::string::npos || thp.empty())
    GTEST_SKIP() << "this kernel gives no transparent huge pages (" << thp << "): their use is not checked";
  if (slurp("/proc/self/status").find("THP_enabled:\t0") != std::string::npos)
    GTEST_SKIP() << "transparent huge pages are disabled for this process (prctl): their use is not checked";
  int major = 0, minor = 0;
  if (std::sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor) != 2 || major * 100 + minor < 235)
    GTEST_SKIP() << "glibc " << gnu_get_libc_version() << " has no glibc.malloc.hugetlb: huge pages not checked";
  EXPECT_GE(ours.huge_kb, 2048) << "transparent_hugepage " << thp;
  if (thp.find("[madvise]") != std::string::npos) {
    EXPECT_EQ(users.huge_kb, 0);
  }
}

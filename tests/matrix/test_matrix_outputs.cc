// A matrix run's outputs (issue 60, finding 9), end to end: torq-coordinator
// --spec with real local workers. What a killed run left mid-write in the
// export (<name>.tmp.<pid> in the export directory, in reports/<test>/, a
// half-quantized model in .quantized/<key>/) is removed by the next run while
// a live process's stays; an --export that is a dangling symbolic link, or
// on a full disk, is an error with the real reason.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/matrix/matrix_helpers.h"

using namespace torq::fleet_test;
namespace fs = std::filesystem;

namespace {

class MatrixOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir(std::string("outputs-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto [code, out] = run({bin("torq-sim"), "demo", "--save", dir_ + "/demo.onnx"}, dir_ + "/demo.log");
    ASSERT_EQ(code, 0) << out;
  }
  std::pair<int, std::string> coordinator(const std::string& spec, const std::string& export_dir,
                                          const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{bin("torq-coordinator"), "--spec", dir_ + "/" + spec, "--export", export_dir,
                                  "--local-workers", "2", "--heartbeat-ms", "200"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv, dir_ + "/coordinator.log");
  }
  std::string dir_;
};

void touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "partial";
}

pid_t dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

}  // namespace

// Planted as a killed run leaves them (its pid no longer runs), beside one
// of a live process (a sleeping child): the next run removes the first,
// keeps the second, and its outputs are whole.
TEST_F(MatrixOutputs, TheNextRunRemovesAKilledRunsTempFilesAndKeepsLiveOnes) {
  write(dir_ + "/spec.yaml", "models:\n  - demo.onnx\nvariants: [int8]\nmodes: [discover]\n");
  const std::string out = dir_ + "/out";
  auto [first, first_out] = coordinator("spec.yaml", out);
  ASSERT_EQ(first, 0) << first_out;
  std::string key_dir, report_dir;
  for (const auto& e : fs::directory_iterator(out + "/.quantized")) key_dir = e.path().string();
  for (const auto& e : fs::directory_iterator(out + "/reports")) report_dir = e.path().string();
  ASSERT_FALSE(key_dir.empty());
  ASSERT_FALSE(report_dir.empty());

  const pid_t sleeper = fork();
  if (sleeper == 0) {
    for (;;) pause();
  }
  ASSERT_GT(sleeper, 0);
  const std::string dead = std::to_string(dead_pid()), live = std::to_string(sleeper);
  const std::vector<std::string> gone{key_dir + "/demo_quant.onnx.tmp." + dead,
                                      out + "/.quantized/0123456789abcdef/demo_quant.onnx.tmp." + dead,
                                      report_dir + "/torq_gen_config_demo_quant.json.tmp." + dead,
                                      out + "/ops.csv.tmp." + dead};
  const std::vector<std::string> kept{key_dir + "/demo_quant.onnx.tmp." + live, out + "/ops.csv.tmp." + live};
  for (const auto& p : gone) touch(p);
  for (const auto& p : kept) touch(p);
  // A variant not made yet: its key's directory is swept before it is made.
  write(dir_ + "/spec2.yaml", "models:\n  - demo.onnx\nvariants: [{dtype: int8, per_channel: true}]\nmodes: [discover]\n");
  auto [code, output] = coordinator("spec2.yaml", out);
  kill(sleeper, SIGKILL);
  waitpid(sleeper, nullptr, 0);
  ASSERT_EQ(code, 0) << output;
  for (const auto& p : gone) {
    EXPECT_FALSE(fs::exists(p)) << p;
    EXPECT_NE(output.find("torq: removed " + p + ": the temporary file of process " + dead + ", which no longer runs"),
              std::string::npos)
        << p << "\n" << output;
  }
  for (const auto& p : kept) EXPECT_TRUE(fs::exists(p)) << p;
  auto t = tests_by_id(read_json(out + "/summary.json"));
  ASSERT_TRUE(t.count("demo-int8-pc-sim-discover")) << output;
  EXPECT_EQ(t["demo-int8-pc-sim-discover"]["outcome"], "passed");
  EXPECT_NE(slurp(out + "/ops.csv").find("Conv"), std::string::npos);
}

// --export a dangling symbolic link: exit 2 naming where it points (it said
// "File exists").
TEST_F(MatrixOutputs, AnExportDirThatIsADanglingSymlinkSaysWhereItPoints) {
  write(dir_ + "/spec.yaml", "models:\n  - demo.onnx\nmodes: [discover]\n");
  fs::create_symlink(dir_ + "/gone", dir_ + "/out");
  auto [code, output] = coordinator("spec.yaml", dir_ + "/out", {"--db", dir_ + "/db"});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find(dir_ + "/out is a symbolic link to " + dir_ + "/gone, which does not exist"), std::string::npos)
      << output;
  EXPECT_EQ(output.find("File exists"), std::string::npos) << output;
}

// The export on a full disk (a 64 KiB tmpfs, filled; the reports, written
// first, elsewhere): the export's own files say why they cannot be written
// (it said "<file>: cannot write"), exit 2, no temporary file left.
TEST_F(MatrixOutputs, AnExportOnAFullDiskSaysNoSpaceLeftOnDevice) {
  write(dir_ + "/spec.yaml", "models:\n  - demo.onnx\nmodes: [discover]\n");
  const std::string out = dir_ + "/full";
  fs::create_directories(out);
  if (mount("tmpfs", out.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "mount -t tmpfs is not permitted here (needs root): the full disk is not tested";
  fs::create_directories(dir_ + "/reports");
  fs::create_symlink(dir_ + "/reports", out + "/reports");
  fs::create_symlink(dir_ + "/workers.log", out + "/workers.log");
  {
    std::ofstream f(out + "/filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (f.write(block.data(), static_cast<std::streamsize>(block.size())) && f.flush()) {
    }
  }
  auto [code, output] = coordinator("spec.yaml", out, {"--db", dir_ + "/db"});
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(out))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) left.push_back(e.path().string());
  umount2(out.c_str(), MNT_DETACH);
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find(": cannot write: No space left on device"), std::string::npos) << output;
  EXPECT_TRUE(left.empty()) << left.front();
}

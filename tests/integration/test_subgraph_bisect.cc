// Subgraph discovery (--subgraph-from/--subgraph-to), `run` on subgraph
// files, and the auto-bisect of a failing assigned run, through the real
// binaries with real worker processes and real ONNX files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <string>

#include "tests/integration/models.h"
#include "tests/integration/proc.h"

using namespace torq::test;
using json = nlohmann::ordered_json;

namespace {

std::string gen() { return bin("torq-gen-config"); }

std::string demo_in(const std::string& dir) {
  const std::string m = dir + "/demo.onnx";
  EXPECT_EQ(run_cmd(bin("torq-sim") + " demo --save " + m).code, 0);
  return m;
}

// The layer ids of a report, in _node_index order.
std::vector<std::string> op_ids(const json& rep) {
  std::vector<std::string> ids;
  for (auto& [id, op] : rep["ops"].items()) ids.push_back(id);
  return ids;
}

std::string line_of(const std::string& text, int line) {
  size_t at = 0;
  for (int i = 1; i < line && at != std::string::npos; ++i) at = text.find('\n', at) + 1;
  return text.substr(at, text.find('\n', at) - at);
}

}  // namespace

TEST(Subgraph, DiscoverWritesTheSeedsFileWithRelativeIndicesAndItsOwnImport) {
  const std::string dir = fresh_dir("subgraph_files_" + std::to_string(getpid()));
  const std::string model = demo_in(dir);
  ASSERT_EQ(run_cmd(gen() + " discover --model " + model + " -o " + dir + "/full -q").code, 0);
  const json full = read_json(dir + "/full/torq_gen_config_demo.json");
  const std::vector<std::string> all = op_ids(full);
  ASSERT_GT(all.size(), 9u);
  // From by layer id, to by index.
  const auto r = run_cmd(gen() + " discover --model " + model + " -o " + dir + "/out --subgraph-from " + all[1] +
                         " --subgraph-to 8");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--- Full Model Comparison ---"), std::string::npos) << r.output;
  const json sub = read_json(dir + "/out/torq_gen_config_demo_subgraph_1_8.json");
  const json comp = read_json(dir + "/out/torq_gen_config_demo_subgraph_1_8_compiler.json");
  const std::string mlir = slurp(dir + "/out/demo_subgraph_1_8.torch.mlir");
  const std::vector<std::string> ids = op_ids(sub);
  ASSERT_EQ(ids.size(), 8u);
  int k = 0;
  for (auto& [id, op] : sub["ops"].items()) {
    EXPECT_EQ(id, all[static_cast<size_t>(k) + 1]);
    EXPECT_EQ(op["_node_index"], k);
    // Each op's location is its own line in the subgraph's import.
    const std::string loc = op["mlir_location"];
    const int line = std::stoi(loc.substr(0, loc.find(':')));
    EXPECT_NE(line_of(mlir, line).find("torch.operator \"onnx." + op["op_type"].get<std::string>() + "\""),
              std::string::npos) << id << " at " << loc;
    // The layer's results are those of the full discover (same activations).
    EXPECT_EQ(op["recommended_executor"], full["ops"][id]["recommended_executor"]) << id;
    EXPECT_EQ(comp["op_assignments"][loc]["executor"], op["recommended_executor"]) << id;
    ++k;
  }
  EXPECT_EQ(sub["subgraph"]["first_node"], 1);
  EXPECT_EQ(sub["subgraph"]["last_node"], 8);
  EXPECT_EQ(sub["subgraph"]["model"], "demo");
  EXPECT_EQ(sub["full_model"]["layers"], 8);
  EXPECT_EQ(sub["full_model"]["passed"], true);
  int placed = 0;
  for (auto& [e, n] : sub["full_model"]["executor_counts"].items()) placed += n.get<int>();
  EXPECT_EQ(placed, 8);

  // The same range by output name and by index names the same file; view,
  // edit and run work on it.
  const std::string out1 = all[1].substr(all[1].find('_') + 1);
  const auto r2 = run_cmd(gen() + " discover --model " + model + " -o " + dir + "/out2 -q --subgraph-from " + out1 +
                          " --subgraph-to " + all[8]);
  ASSERT_EQ(r2.code, 0) << r2.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/out2/torq_gen_config_demo_subgraph_1_8.json"));
  const std::string file = dir + "/out/torq_gen_config_demo_subgraph_1_8.json";
  const auto v = run_cmd(gen() + " view " + file + " " + ids[2]);
  EXPECT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find(ids[2]), std::string::npos) << v.output;
  const auto e = run_cmd(gen() + " edit " + file + " --layer " + ids[0] + " --executor host");
  EXPECT_EQ(e.code, 0) << e.output;
  EXPECT_EQ(read_json(file)["ops"][ids[0]]["recommended_executor"], "host");
  const auto run = run_cmd(gen() + " run --model " + model + " -o " + dir + "/out --subgraph-from 1 --subgraph-to 8");
  EXPECT_EQ(run.code, 0) << run.output;
  const json after = read_json(file);
  EXPECT_EQ(after["full_model"]["executor_counts"]["host"].get<int>(), 1) << after["full_model"].dump();
  EXPECT_EQ(after["subgraph"]["first_node"], 1);  // run keeps what it does not own
}

TEST(Subgraph, AnUnknownEndIsExit2ListingTheClosestLayerIds) {
  const std::string dir = fresh_dir("subgraph_unknown_" + std::to_string(getpid()));
  const std::string model = demo_in(dir);
  const auto r = run_cmd(gen() + " discover --model " + model + " -o " + dir + "/out --subgraph-from Conv_conv --subgraph-to 3");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--subgraph-from 'Conv_conv': no such layer in demo"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("closest layer ids: Conv_conv1"), std::string::npos) << r.output;
  const auto only = run_cmd(gen() + " discover --model " + model + " -o " + dir + "/out --subgraph-from 2");
  EXPECT_EQ(only.code, 2) << only.output;
  EXPECT_NE(only.output.find("go together"), std::string::npos) << only.output;
  const auto back = run_cmd(gen() + " discover --model " + model + " -o " + dir + "/out --subgraph-from 5 --subgraph-to 2");
  EXPECT_EQ(back.code, 2) << back.output;
  EXPECT_NE(back.output.find("comes after"), std::string::npos) << back.output;
}

// Every Mul passes alone on nss, the chain does not: `run` fails and bisects
// to the smallest failing range; subgraph discovers of that range and of its
// two shorter neighbours confirm it independently.
TEST(Bisect, FindsTheSmallestFailingRangeOfAChainWhoseLayersAllPassAlone) {
  const std::string dir = fresh_dir("bisect_" + std::to_string(getpid()));
  const std::string model = dir + "/chain.onnx";
  save_chain_model(model, 40);
  const std::string flags = " --model " + model + " -o " + dir + "/out --auto-convert-bf16 --bf16-rounding rne";
  const auto d = run_cmd(gen() + " discover" + flags + " -q");
  ASSERT_EQ(d.code, 0) << d.output;
  const json rep = read_json(dir + "/out/torq_gen_config_chain.json");
  for (auto& [id, op] : rep["ops"].items()) {
    ASSERT_EQ(op["recommended_executor"], "nss") << id;
    ASSERT_EQ(op["executors"]["nss"]["status"], "success") << id;  // every layer passes alone
  }
  const auto r = run_cmd(gen() + " run" + flags);
  ASSERT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("First failing range: layers "), std::string::npos) << r.output;
  const json fm = read_json(dir + "/out/torq_gen_config_chain.json")["full_model"];
  EXPECT_EQ(fm["passed"], false);
  ASSERT_TRUE(fm.contains("first_failing_range")) << fm.dump();
  const json& f = fm["first_failing_range"];
  const int a = f["first_node"], b = f["last_node"];
  std::printf("[bisect] chain of 40: smallest failing range %d..%d in %d range runs, its max rel %g\n", a, b,
              f["bisect_runs"].get<int>(), f["metrics"]["max_rel_diff"].get<double>());
  EXPECT_LT(b - a + 1, 40);
  EXPECT_GT(b, a);  // one Mul alone passes, so a failing range has two or more
  EXPECT_LE(f["bisect_runs"].get<int>(), 12);  // 2 * ceil(log2(40))
  EXPECT_GT(f["metrics"]["max_rel_diff"].get<double>(), 0.01);
  EXPECT_EQ(f["first_layer"], "Mul_m" + std::to_string(a));

  auto subgraph_passes = [&](int from, int to) {
    const auto s = run_cmd(gen() + " discover" + flags + " -q --subgraph-from " + std::to_string(from) +
                           " --subgraph-to " + std::to_string(to));
    EXPECT_TRUE(s.code == 0 || s.code == 1) << s.output;
    const json sub = read_json(dir + "/out/torq_gen_config_chain_subgraph_" + std::to_string(from) + "_" +
                               std::to_string(to) + ".json");
    return sub["full_model"]["passed"].get<bool>();
  };
  EXPECT_FALSE(subgraph_passes(a, b));
  EXPECT_TRUE(subgraph_passes(a + 1, b));
  EXPECT_TRUE(subgraph_passes(a, b - 1));
}

TEST(Bisect, A300LayerModelIsBisectedInFewerThan20RangeRuns) {
  const std::string dir = fresh_dir("bisect300_" + std::to_string(getpid()));
  const std::string model = dir + "/chain.onnx";
  save_chain_model(model, 300);
  const std::string flags = " --model " + model + " -o " + dir + "/out --auto-convert-bf16 --bf16-rounding rne";
  ASSERT_EQ(run_cmd(gen() + " discover" + flags + " -q").code, 0);
  const auto r = run_cmd(gen() + " run" + flags);
  ASSERT_EQ(r.code, 1) << r.output;
  const json f = read_json(dir + "/out/torq_gen_config_chain.json")["full_model"]["first_failing_range"];
  std::printf("[bisect] chain of 300: range %d..%d in %d range runs\n", f["first_node"].get<int>(),
              f["last_node"].get<int>(), f["bisect_runs"].get<int>());
  EXPECT_LT(f["bisect_runs"].get<int>(), 20);
  EXPECT_LT(f["last_node"].get<int>() - f["first_node"].get<int>() + 1, 300);
  // Run again: the run and every range come from the store (nothing recomputed).
  const auto again = run_cmd(gen() + " run" + flags);
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.output.find("jobs: 0 run"), std::string::npos) << again.output;
}

// The import text against the real importer: for every ONNX backend node
// test that ../shared/reference/iree-import holds a real iree-import-onnx
// output for and Debian's libonnx-testdata holds the model of, emits the
// model with emit_torch_mlir() and compares, whenever the two imports have
// the same sequence of operators (Constant ones included), the function name
// and the `line:col` of every non-Constant operator, nested ones included.
//
// Usage: import_corpus REAL_DIR ONNX_DIR MIN_COMPARED [-v]
// Prints one line per difference, then
//   "import corpus: N tests, S operator sequences differ (not compared), C compared"
//   "import corpus: P equal, F differ"
// and exits non-zero on any failure or when fewer than MIN_COMPARED tests
// could be compared (so an empty corpus cannot pass).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/model/mlir.h"

namespace fs = std::filesystem;
using torq::pipeline::MlirOperator;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The function name of an import's first `func.func @name(` or `@"name"(`.
std::string function_name(const std::string& text) {
  static const std::regex bare(R"(func\.func\s+(?:private\s+)?@([A-Za-z_][A-Za-z0-9_$.]*)\s*\()");
  static const std::regex quoted(R"(func\.func\s+(?:private\s+)?@"((?:[^"\\]|\\.)*)\"\s*\()");
  std::smatch m;
  const std::string first = text.substr(0, text.find("\n", text.find("func.func")));
  if (std::regex_search(first, m, bare)) return m[1];
  if (std::regex_search(first, m, quoted)) return m[1];
  return "";
}

std::vector<MlirOperator> operators(const std::string& text, bool with_constants) {
  std::vector<MlirOperator> out;
  for (auto& op : torq::pipeline::mlir_operators(text, false))
    if (with_constants || op.type != "Constant") out.push_back(op);
  return out;
}

std::string where(const MlirOperator& op) { return std::to_string(op.line) + ":" + std::to_string(op.col); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: import_corpus REAL_DIR ONNX_DIR MIN_COMPARED [-v]\n";
    return 2;
  }
  const fs::path real_dir = argv[1], onnx_dir = argv[2];
  const int min_compared = std::atoi(argv[3]);
  const bool verbose = argc > 4 && std::string(argv[4]) == "-v";
  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(real_dir))
    if (fs::exists(e.path() / "model.mlir") && fs::exists(onnx_dir / e.path().filename() / "model.onnx"))
      tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());

  int differ = 0, passed = 0, failed = 0;
  for (const fs::path& t : tests) {
    const std::string name = t.filename().string();
    const std::string real = read_file(t / "model.mlir");
    onnx::ModelProto model;
    const std::string bytes = read_file(onnx_dir / name / "model.onnx");
    if (!model.ParseFromString(bytes)) {
      std::cout << "FAIL " << name << ": cannot parse Debian's model.onnx\n";
      ++failed;
      continue;
    }
    std::string ours;
    try {
      ours = torq::pipeline::emit_torch_mlir(model);
    } catch (const std::exception& e) {
      std::cout << "FAIL " << name << ": emit_torch_mlir: " << e.what() << "\n";
      ++failed;
      continue;
    }
    // Comparable when both have the same operators, Constant ones included
    // (ONNX 1.17's models, which the real imports were made from, differ
    // from Debian's ONNX 1.12 ones in a few tests, e.g. an opset upgrade
    // turned an attribute into a Constant input).
    bool same_sequence = true;
    {
      const auto rc = operators(real, true), oc = operators(ours, true);
      same_sequence = rc.size() == oc.size();
      for (size_t i = 0; same_sequence && i < rc.size(); ++i) same_sequence = rc[i].type == oc[i].type;
    }
    const auto r = operators(real, false), o = operators(ours, false);
    if (!same_sequence) {
      ++differ;
      if (verbose) std::cout << "SKIP " << name << ": operator sequences differ (" << r.size() << " vs " << o.size() << ")\n";
      continue;
    }
    std::vector<std::string> problems;
    if (function_name(real) != function_name(ours))
      problems.push_back("function @" + function_name(ours) + ", real @" + function_name(real));
    for (size_t i = 0; i < r.size(); ++i)
      if (where(r[i]) != where(o[i]))
        problems.push_back("operator " + std::to_string(i) + " onnx." + r[i].type + " at " + where(o[i]) + ", real " +
                           where(r[i]));
    if (problems.empty()) {
      ++passed;
      if (verbose) std::cout << "PASS " << name << "\n";
      continue;
    }
    ++failed;
    std::cout << "FAIL " << name << ": " << problems[0];
    if (problems.size() > 1) std::cout << " (and " << problems.size() - 1 << " more)";
    std::cout << "\n";
  }
  std::cout << "import corpus: " << tests.size() << " tests, " << differ
            << " operator sequences differ (not compared), " << passed + failed << " compared\n";
  std::cout << "import corpus: " << passed << " equal, " << failed << " differ\n";
  if (passed + failed < min_compared) {
    std::cout << "import corpus: only " << passed + failed << " compared, need " << min_compared << "\n";
    return 1;
  }
  return failed == 0 ? 0 : 1;
}

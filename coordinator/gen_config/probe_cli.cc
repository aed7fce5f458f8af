#include "coordinator/gen_config/probe_cli.h"

#include <algorithm>
#include <iostream>

#include "pipeline/base/toolchain_budget.h"


namespace torq::coordinator {

using pipeline::Executor;

void add_probe(CLI::App& app, ProbeArgs& a) {
  a.cmd = app.add_subcommand("probe", "Measure each executor's support envelope: every point of a probe spec (a "
                                      "single-op model) on every executor; writes probe.csv, envelope.md/html and "
                                      "a derived profile per executor (profiles/<executor>.yaml, targets.yaml)");
  a.cmd->add_option("--spec", a.o.spec, "Probe spec, required (e.g. configs/probe/default.yaml; docs/probe.md)");
  a.cmd->add_option("-o,--output-dir", a.o.output_dir, "Output directory (its store resumes a killed probe)")
      ->capture_default_str();
  a.cmd->add_option("--backend", a.o.backend, "What runs the executors: sim or toolchain (--toolchain)")
      ->check(CLI::IsMember({"sim", "toolchain"}))
      ->capture_default_str();
  a.cmd->add_option("--toolchain", a.o.toolchain_file, "Toolchain file for --backend toolchain");
  a.cmd->add_option("--targets", a.o.targets_file,
                    "sim: YAML map executor -> profile file: the profiles to probe (default: the built-in ones)");
  a.cmd->add_option("--base", a.o.base_file,
                    "YAML map executor -> profile the derived ones take chip, cost and unprobed ops from "
                    "(default: --targets, else the built-in profiles)");
  a.cmd->add_option("--skip-executors", a.skip_execs, "Executors not to probe, e.g. css,host");
  a.cmd->add_option("-j,--workers", a.o.workers, "Jobs run at once")->capture_default_str();
  a.cmd->add_option("--timeout-ms", a.o.timeout_ms,
                    "Budget of one job (default 60000; --backend toolchain: the toolchain file's step budgets added up)");
  a.cmd->add_flag("--recompute-cache", a.o.recompute, "Run every point again (neither resume nor cache)");
  a.cmd->add_flag("-q,--quiet", a.o.quiet, "No progress lines");
  a.cmd->require_subcommand(0, 1);
  a.learn = a.cmd->add_subcommand("learn", "Learn DIR's envelope and profiles again from DIR/probe.csv (no job runs)");
  a.learn->add_option("dir", a.learn_dir, "A probe's output directory")->required();
  a.learn->add_option("--base", a.o.base_file, "As probe --base (default: the base profiles DIR's probe recorded in DIR/base/)");
  a.diff = a.cmd->add_subcommand("diff", "Points whose status changed from probe run A to B, grouped by A's rules");
  a.diff->add_option("a", a.diff_a, "Output directory (or probe.csv) of the earlier probe")->required();
  a.diff->add_option("b", a.diff_b, "Output directory (or probe.csv) of the later probe")->required();
  a.diff->add_flag("--json", a.json, "JSON instead of text");
  a.diff->add_option("--base", a.o.base_file, "As probe --base (default: those A's probe recorded in A/base/)");
}

int do_probe(ProbeArgs& a, const targets::OpCatalog& catalog) {
  if (*a.learn) return run_probe_learn(a.learn_dir, a.o.base_file, catalog, std::cout, std::cerr);
  if (*a.diff) return run_probe_diff(a.diff_a, a.diff_b, a.json, a.o.base_file, catalog, std::cout, std::cerr);
  if (a.o.spec.empty()) {
    std::cerr << "torq-gen-config: error: probe needs --spec FILE (or: probe learn DIR, probe diff A B)\n";
    return 2;
  }
  if (a.o.backend == "toolchain" && a.o.toolchain_file.empty()) {
    std::cerr << "torq-gen-config: error: --backend toolchain needs --toolchain FILE.yaml\n";
    return 2;
  }
  if (a.o.backend != "toolchain" && !a.o.toolchain_file.empty()) {
    std::cerr << "torq-gen-config: error: --toolchain needs --backend toolchain\n";
    return 2;
  }
  if (!a.skip_execs.empty()) {
    const auto skip = pipeline::parse_executor_list(a.skip_execs);
    std::vector<Executor> keep;
    for (Executor e : a.o.executors)
      if (std::find(skip.begin(), skip.end(), e) == skip.end()) keep.push_back(e);
    a.o.executors = keep;
  }
  // As discover: a toolchain's job budget is its steps' budgets added up
  // (a real compile takes minutes), unless --timeout-ms is given.
  if (a.o.backend == "toolchain" && a.cmd->count("--timeout-ms") == 0) {
    try {
      a.o.timeout_ms = base::toolchain_job_budget_ms(a.o.toolchain_file, 1);
    } catch (const std::exception& e) {
      std::cerr << "torq-gen-config: error: " << e.what() << "\n";
      return 2;
    }
  }
  a.o.op_catalog = &catalog;
  return run_probe(a.o, std::cout, std::cerr);
}

}  // namespace torq::coordinator

// torq-gen-config: the single-machine executor-discovery workflow
// (discover | run | view | edit | compare | quantize), compatible with the seed tool's
// flags and files.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <utility>

#include <CLI/CLI.hpp>

#include "pipeline/base/file_bytes.h"
#include "coordinator/gen_config/discover.h"
#include "coordinator/gen_config/probe_cli.h"
#include "coordinator/gen_config/run_model.h"
#include "pipeline/report/edit.h"
#include "pipeline/core/json_limits.h"
#include "pipeline/report/report.h"
#include "pipeline/report/report_compare.h"
#include "pipeline/report/view.h"
#include "coordinator/gen_config/quantize_first.h"
#include "coordinator/gen_config/repro_command.h"
#include "worker/quant/quantize_model.h"
#include "pipeline/base/progress.h"
#include "pipeline/base/toolchain_budget.h"
#include "worker/engine/profile.h"

using namespace torq;
using namespace torq::pipeline;
namespace fs = std::filesystem;

namespace {

// CONFIG, or --model M --output-dir D, names the report to read.
std::string resolve_report(const std::string& config, const std::string& model, const std::string& dir) {
  if (!config.empty()) return config;
  if (model.empty()) throw PipelineError("give a report file, or --model M [--output-dir D]");
  fs::path p(model);
  std::string name = p.stem().string();
  if (name == "model" && p.has_parent_path()) name = p.parent_path().filename().string();
  return report_path(dir, name);
}

// `edit ... --list [FILTER]`: the filter is --list's value, else the second
// positional, else (with --model, which names the report) the lone
// positional. Without --model or a positional, --list's value is the report.
std::string list_filter(std::string& config, const std::string& model, std::string value, const std::string& second) {
  if (config.empty() && model.empty() && !value.empty()) std::swap(config, value);
  if (!value.empty()) return value;
  if (!second.empty()) return second;
  if (!model.empty() && !config.empty()) return std::exchange(config, std::string());
  return "";
}

// The seed's `discover ... -- <pytest args>`: -k FILTER, --recompute-cache;
// pytest display flags are ignored; anything else is an error.
void apply_passthrough(const std::vector<std::string>& args, coordinator::DiscoverOptions* d) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-k" && i + 1 < args.size()) {
      d->filter = args[++i];
    } else if (a.rfind("-k=", 0) == 0 || (a.rfind("-k", 0) == 0 && a.size() > 2 && a[2] != '=')) {
      d->filter = a.substr(a[2] == '=' ? 3 : 2);
    } else if (a == "--recompute-cache") {
      d->recompute_cache = true;
    } else if (a == "-v" || a == "-vv" || a == "-s" || a == "-q" || a == "-x" || a == "--" ||
               a.rfind("--tb=", 0) == 0 || a == "-rA") {
      continue;
    } else {
      throw PipelineError("unsupported argument '" + a + "' (after --, discover accepts the seed's pytest "
                          "arguments -k FILTER and --recompute-cache)");
    }
  }
}

// --backend sim|toolchain and --toolchain FILE on a subcommand.
void add_backend_options(CLI::App* sub, std::string* backend, std::string* toolchain_file) {
  sub->add_option("--backend", *backend,
                  "What runs the executors: sim (the engine under the executor profiles) or toolchain "
                  "(the Torq tools per --toolchain)")
      ->check(CLI::IsMember({"sim", "toolchain"}))
      ->capture_default_str();
  sub->add_option("--toolchain", *toolchain_file,
                  "Toolchain file for --backend toolchain (configs/toolchains/torq.yaml: the real tools; "
                  "standin.yaml: torq-sim's stand-in)");
}

// The default job budget with --backend toolchain: each of the file's steps
// its own, the job their sum (the run once per timing run). `timeout_ms`
// stays when the user gave --timeout-ms, or when the file does not load
// (the backend check says why, exit 2).
void toolchain_default_timeout(const std::string& backend, const std::string& toolchain_file, bool given,
                               uint32_t runs, uint32_t* timeout_ms) {
  if (backend != "toolchain" || given || toolchain_file.empty()) return;
  try {
    *timeout_ms = torq::base::toolchain_job_budget_ms(toolchain_file, runs);
  } catch (const std::exception&) {
  }
}

// Exit code 2 with a message when --backend/--toolchain do not go together.
int check_backend_options(const std::string& backend, const std::string& toolchain_file) {
  if (backend == "toolchain" && toolchain_file.empty()) {
    std::cerr << "torq-gen-config: error: --backend toolchain needs --toolchain FILE.yaml\n";
    return 2;
  }
  if (backend != "toolchain" && !toolchain_file.empty()) {
    std::cerr << "torq-gen-config: error: --toolchain needs --backend toolchain\n";
    return 2;
  }
  return 0;
}

// "rne" or "truncate" (an --bf16-rounding value) as the engine's rounding.
engine::Rounding rounding_of(const std::string& name) {
  return name == "rne" ? engine::Rounding::kNearestEven : engine::Rounding::kTruncate;
}

// --input-range LO,HI into *lo and *hi; throws unless LO < HI.
void parse_input_range(const std::string& range, float* lo, float* hi) {
  if (std::sscanf(range.c_str(), "%f,%f", lo, hi) != 2 || !(*lo < *hi))
    throw PipelineError("--input-range must be LO,HI with LO < HI, got '" + range + "'");
}

// How --quantize made the model, as the report's variant names it.
std::string quantization_note(const coordinator::QuantizeFirst& q) {
  return q.format + (q.per_channel ? ", per-channel" : ", per-tensor") + ", " + std::to_string(q.num_calib) +
         " calibration inputs";
}

// `discover`'s options and the strings turned into them after the parse.
struct DiscoverArgs {
  coordinator::DiscoverOptions d;
  std::vector<std::string> passthrough;
  std::string skip_execs, rounding = "truncate", inputs = "activations", range = "-40,40";
  coordinator::QuantizeFirst q;
};

// `discover`'s options from --workers on: inputs, budgets, tolerances, backend, subgraph, pytest passthrough.
void add_discover_run_options(CLI::App* disc, DiscoverArgs& a) {
  coordinator::DiscoverOptions& d = a.d;
  disc->add_option("--workers,-j", d.workers, "Local worker processes")->capture_default_str()->check(CLI::Range(1, 1024));
  disc->add_option("--inputs", a.inputs, "Layer inputs: activations (real, from a seeded full run) or random")
      ->check(CLI::IsMember({"activations", "random"}))->capture_default_str();
  disc->add_option("--seed", d.seed, "Seed of the model input / random inputs")->capture_default_str();
  disc->add_option("--input-range", a.range, "LO,HI of random inputs")->capture_default_str();
  disc->add_option("--mlir", d.mlir_file, "Map locations onto this torch-mlir import instead of the emitted one");
  disc->add_option("--timeout-ms", d.timeout_ms,
                   "Per-job timeout (default 120000; with --backend toolchain the sum of the file's step budgets)")
      ->capture_default_str()->check(CLI::Range(1u, 4000000000u));
  disc->add_option("--tolerance-avg", d.tolerance.fp_avg_tol, "Default fp_avg_tol")
      ->capture_default_str()->check(CLI::Range(0.0, 1e30));
  disc->add_option("--tolerance-max", d.tolerance.fp_max_tol, "Default fp_max_tol")
      ->capture_default_str()->check(CLI::Range(0.0, 1e30));
  disc->add_option("--allowed-wrong", d.tolerance.allowed_wrong, "Fraction of elements allowed over fp_max_tol")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  disc->add_option("--targets", d.targets_file, "YAML map {nss|css|host: profile.yaml} replacing the built-in executor profiles");
  disc->add_flag("--quiet,-q", d.quiet, "Only errors");
  add_backend_options(disc, &d.backend, &d.toolchain_file);
  coordinator::add_quantize_flags(disc, &a.q);
  disc->add_option("--subgraph-from", d.subgraph_from,
                   "First layer of a subgraph to discover (layer id, output name or index; with --subgraph-to)");
  disc->add_option("--subgraph-to", d.subgraph_to, "Last layer of the subgraph (inclusive)");
  // The seed passes arguments after `--` to pytest: -k and --recompute-cache
  // mean the same here; pytest's display flags are accepted and ignored.
  disc->add_option("pytest_args", a.passthrough, "After --: the seed's pytest arguments (-k FILTER, --recompute-cache)");
  disc->footer("Seed-compatible passthrough: discover --model M -- -k \"Conv_0_css\" --recompute-cache "
               "(-k matches layer ids '<layer id>_<executor>' and the seed's case names "
               "'<model>_layer_<OpType>_<index>_<executor>').");
}

// Adds `discover` and its options (bound to `a`) to `app`.
CLI::App* add_discover(CLI::App& app, DiscoverArgs& a) {
  coordinator::DiscoverOptions& d = a.d;
  auto* disc = app.add_subcommand("discover", "Test every layer on every executor and write the report and compiler JSON");
  disc->add_option("--model,-m", d.model, "ONNX model")->required();
  disc->add_option("--output-dir,-o", d.output_dir, "Directory for the report, compiler JSON and store")->capture_default_str();
  disc->add_flag("--skip-mode", d.skip_mode, "Test executors in priority order, stop at the first success; skip layers already successful in the report");
  disc->add_option("--skip-executors", a.skip_execs, "Executors not to test, e.g. nss,css");
  disc->add_flag("--dedup-layers", d.dedup, "Test one layer per signature (op, attributes, dtypes, shapes) and copy its results");
  disc->add_flag("--dedup-exact", d.dedup_exact, "With --dedup-layers, also require identical weights");
  disc->add_flag("--collect-timing", d.collect_timing, "Average executor time over --timing-runs runs");
  disc->add_flag("--collect-profile", d.collect_profile,
                 "Collect each job's profiling CSVs; export them with a Perfetto trace JSON per layer run");
  disc->add_option("--timing-runs", d.timing_runs, "Runs per timing")
      ->capture_default_str()->check(CLI::Range(1u, 100000u));
  disc->add_flag("--recommend-by-timing", d.recommend_by_timing, "Recommend the fastest successful executor (falls back to priority without timing)");
  disc->add_flag("--auto-convert-bf16", d.convert_bf16, "Convert fp32 weights and I/O to bf16 before testing");
  disc->add_option("--bf16-rounding", a.rounding, "fp32 -> bf16 rounding: truncate (seed default) or rne")
      ->check(CLI::IsMember({"truncate", "rne"}))->capture_default_str();
  disc->add_option("--save-bf16-model", d.save_bf16_model, "Write the converted model here");
  disc->add_option("--log-file", d.log_file, "Append log lines to this file");
  disc->add_flag("--recompute-cache", d.recompute_cache, "Ignore stored and cached results");
  disc->add_option("-k", d.filter, "Only layer/executor pairs whose '<layer id>_<executor>' contains this");
  add_discover_run_options(disc, a);
  return disc;
}

// Runs `discover` (parsed as `disc`) after turning its strings into options.
int do_discover(const CLI::App& disc, DiscoverArgs& a, std::ostream& null_out) {
  coordinator::DiscoverOptions& d = a.d;
  apply_passthrough(a.passthrough, &d);
  if (const int rc = check_backend_options(d.backend, d.toolchain_file)) return rc;
  toolchain_default_timeout(d.backend, d.toolchain_file, disc.count("--timeout-ms") > 0,
                            d.collect_timing ? std::max<uint32_t>(1, d.timing_runs) : 1, &d.timeout_ms);
  if (!a.skip_execs.empty()) {
    auto skip = parse_executor_list(a.skip_execs);
    std::vector<Executor> keep;
    for (Executor e : d.executors)
      if (std::find(skip.begin(), skip.end(), e) == skip.end()) keep.push_back(e);
    d.executors = keep;
  }
  d.rounding = rounding_of(a.rounding);
  d.random_inputs = a.inputs == "random";
  parse_input_range(a.range, &d.input_lo, &d.input_hi);
  if (a.q.enabled) d.quantization = quantization_note(a.q);
  d.op_catalog = &engine::kernel_catalog();  // what a --targets profile may name
  if (const int rc = coordinator::quantize_first(a.q, d.convert_bf16, d.seed, d.output_dir, &d.model,
                                                 d.quiet ? null_out : std::cout, std::cerr))
    return rc;
  return coordinator::run_discover(d, std::cout, std::cerr);
}

// `run`'s options and the strings turned into them after the parse.
struct RunArgs {
  coordinator::RunOptions ro;
  std::string rounding = "truncate";
  coordinator::QuantizeFirst q;
};

// Adds `run` and its options (bound to `a`) to `app`.
CLI::App* add_run(CLI::App& app, RunArgs& a) {
  coordinator::RunOptions& ro = a.ro;
  auto* runc = app.add_subcommand("run", "Run the whole model (or a subgraph) with every op on its assigned executor "
                                         "and compare with the model's fp32 host reference (needs discover first); a "
                                         "converted model (bf16, int8) is also compared with its fp32 original, end "
                                         "to end");
  runc->add_option("--model,-m", ro.model, "ONNX model")->required();
  runc->add_option("--output-dir,-o", ro.output_dir, "Directory of the report / compiler JSON and the store")
      ->capture_default_str();
  runc->add_flag("--auto-convert-bf16", ro.convert_bf16, "Convert fp32 weights and I/O to bf16 (as discover did)");
  runc->add_option("--bf16-rounding", a.rounding, "fp32 -> bf16 rounding: truncate or rne")
      ->check(CLI::IsMember({"truncate", "rne"}))->capture_default_str();
  runc->add_option("--debug-ir", ro.debug_ir_dir,
                   "Write the import annotated {torq-executor = ...} and a per-op table to DIR; with --backend "
                   "toolchain, the compiler's own IR dump after each pass, DIR/<job> (bare flag: "
                   "<output-dir>/debug_ir)")
      ->expected(0, 1);
  runc->add_flag("--recompute-cache", ro.recompute_cache, "Ignore stored and cached run results");
  runc->add_option("--subgraph-from", ro.subgraph_from, "Run only this subgraph (its report from discover --subgraph-*)");
  runc->add_option("--subgraph-to", ro.subgraph_to, "Last layer of the subgraph (inclusive)");
  runc->add_option("--log-file", ro.log_file, "Append log lines to this file");
  runc->add_option("--workers,-j", ro.workers, "Local worker processes")->capture_default_str()->check(CLI::Range(1, 1024));
  runc->add_option("--seed", ro.seed, "Seed of the model input")->capture_default_str();
  runc->add_option("--original", ro.original_model,
                   "The fp32 model this one was converted from, to compare the whole model's outputs with end to "
                   "end on the same input (default: --model with --auto-convert-bf16, the fp32 model with "
                   "--quantize; none otherwise)")
      ->check(CLI::ExistingFile);
  runc->add_option("--timeout-ms", ro.timeout_ms,
                   "Timeout of the run (and of each bisect range run; default 300000, with --backend toolchain "
                   "the sum of the file's step budgets)")
      ->capture_default_str();
  runc->add_flag("!--no-bisect", ro.bisect, "Do not bisect a failing run");
  runc->add_flag("--collect-profile", ro.collect_profile,
                 "Collect the profiling CSVs; write a Perfetto trace JSON and print the Host Profile Overview");
  runc->add_flag("--quiet,-q", ro.quiet, "Only errors");
  add_backend_options(runc, &ro.backend, &ro.toolchain_file);
  coordinator::add_quantize_flags(runc, &a.q);
  return runc;
}

// Runs `run` (parsed as `runc`) after turning its strings into options.
int do_run(const CLI::App& runc, RunArgs& a, std::ostream& null_out) {
  coordinator::RunOptions& ro = a.ro;
  ro.debug_ir = runc.count("--debug-ir") > 0;
  ro.rounding = rounding_of(a.rounding);
  if (const int rc = check_backend_options(ro.backend, ro.toolchain_file)) return rc;
  toolchain_default_timeout(ro.backend, ro.toolchain_file, runc.count("--timeout-ms") > 0, 1, &ro.timeout_ms);
  if (a.q.enabled) ro.quantization = quantization_note(a.q);
  if (a.q.enabled && ro.original_model.empty()) ro.original_model = ro.model;
  if (const int rc = coordinator::quantize_first(a.q, ro.convert_bf16, ro.seed, ro.output_dir, &ro.model,
                                                 ro.quiet ? null_out : std::cout, std::cerr))
    return rc;
  return coordinator::run_model(ro, std::cout, std::cerr);
}

// `compare`'s options.
struct CompareArgs {
  std::string a, b, exec;
  bool json = false;
};

// Adds `compare` and its options (bound to `c`) to `app`.
CLI::App* add_compare(CLI::App& app, CompareArgs& c) {
  auto* cmp = app.add_subcommand("compare", "Compare two reports (e.g. sim vs board): align their layers, "
                                            "then per executor the agreement of statuses");
  cmp->add_option("a", c.a, "Report JSON A")->required();
  cmp->add_option("b", c.b, "Report JSON B")->required();
  cmp->add_flag("--json", c.json, "Print the comparison as JSON");
  cmp->add_option("--executor", c.exec, "Compare only this executor (nss, css or host; default all in both)");
  return cmp;
}

// Runs `compare`: prints the comparison of the two reports as text or JSON.
int do_compare(const CompareArgs& c) {
  CompareOptions co{std::nullopt, c.a, c.b};
  if (!c.exec.empty()) {
    co.executor = executor_from_name(c.exec);
    if (!co.executor) throw PipelineError("unknown executor '" + c.exec + "' (expected nss, css or host)");
  }
  const ModelReport ra = read_report_file(c.a), rb = read_report_file(c.b);
  const CompareResult res = compare_reports(ra, rb, co);
  if (c.json) std::cout << compare_json(res).dump(2) << "\n";
  else std::cout << render_compare(res);
  return 0;
}

// Adds `quantize` and its options (bound to `qo`) to `app`.
CLI::App* add_quantize(CLI::App& app, quant::QuantizeOptions& qo) {
  auto* quant = app.add_subcommand("quantize", "Static int8 quantization (calibrated on seeded inputs from the "
                                               "distribution discovery feeds); writes <model>_quant.onnx");
  quant->add_option("--model,-m", qo.model, "fp32 ONNX model")->required();
  quant->add_option("--output", qo.output, "Quantized model (default: OUTPUT_DIR/<model>_quant.onnx)");
  quant->add_option("--output-dir,-o", qo.output_dir, "Directory for the quantized model")->capture_default_str();
  quant->add_flag("--per-channel", qo.per_channel, "Per-output-channel weight scales (opset >= 13)");
  quant->add_option("--quant-format", qo.format, "qdq (QuantizeLinear/DequantizeLinear pairs) or qoperator "
                                                "(QLinearConv, QLinearMatMul, com.microsoft QLinear* ops)")
      ->capture_default_str();
  quant->add_option("--num-calib", qo.num_calib, "Calibration inputs")->capture_default_str();
  quant->add_option("--seed", qo.seed, "Seed of discovery's input (held out); calibration uses the seeds after it")
      ->capture_default_str();
  quant->add_option("--threads", qo.threads, "Threads of the calibration runs (0: every core; 1 costs the least CPU "
                                             "where other processes keep the cores busy)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  quant->add_flag("--measure,!--no-measure", qo.measure,
                  "Run both models on the held-out input and report the quantization error (--no-measure: write the "
                  "model only, for a caller that measures it itself)")
      ->capture_default_str();
  return quant;
}

// `view`'s options.
struct ViewArgs {
  std::string config, model, dir = ".", layer;
};

// Adds `view` and its options (bound to `v`) to `app`.
CLI::App* add_view(CLI::App& app, ViewArgs& v) {
  auto* view = app.add_subcommand("view", "Show a report: summary, one layer, or the compiler JSON");
  view->add_option("config", v.config, "Report JSON (torq_gen_config_<model>.json) or compiler JSON");
  view->add_option("layer", v.layer, "Show this layer (pattern) in detail");
  view->add_option("--model,-m", v.model, "Model whose report to show (with --output-dir)");
  view->add_option("--output-dir,-o", v.dir, "Directory of the report")->capture_default_str();
  return view;
}

// Runs `view`: prints a report's summary or one layer, or a compiler JSON.
int do_view(ViewArgs& v) {
  // With --model the one positional argument is the layer.
  if (!v.model.empty() && !v.config.empty() && v.layer.empty()) std::swap(v.config, v.layer);
  const std::string path = resolve_report(v.config, v.model, v.dir);
  if (const std::string why = base::not_a_regular_file(path); !why.empty())
    throw PipelineError(path + ": cannot open: " + why);
  std::ifstream f(path);
  if (!f) throw PipelineError(path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  check_json_depth(ss.str(), path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const std::exception&) {
    j = nullptr;
  }
  std::string text;
  if (j.is_object() && j.contains("op_assignments") && !j.contains("ops")) {
    text = render_compiler(j);
  } else {
    ModelReport r = report_from_json(ss.str(), path);
    text = v.layer.empty() ? render_summary(r) : render_layer(r, v.layer);
  }
  std::cout << text << (text.empty() || text.back() != '\n' ? "\n" : "");
  return 0;
}

// `edit`'s options; `list_opt` is its --list option.
struct EditArgs {
  std::string config, model, dir = ".", layer, exec, list_value, list_second;
  double avg = -1, max = -1;
  bool force = false;
  CLI::Option* list_opt = nullptr;
};

// Adds `edit` and its options (bound to `e`) to `app`.
CLI::App* add_edit(CLI::App& app, EditArgs& e) {
  auto* edit = app.add_subcommand("edit", "Change recommendations or tolerances in a report (regenerates the compiler JSON)");
  edit->add_option("config", e.config, "Report JSON");
  edit->add_option("--model,-m", e.model, "Model whose report to edit (with --output-dir)");
  edit->add_option("--output-dir,-o", e.dir, "Directory of the report")->capture_default_str();
  edit->add_option("--layer", e.layer, "Layer pattern: exact id, case-insensitive, substring, glob, or ALL");
  edit->add_option("--executor", e.exec,
                   "nss, css or host: pin it (later discovers keep it); auto: release the pin (the results "
                   "decide again); null: no recommendation (re-tested by --skip-mode)");
  edit->add_flag("--force", e.force, "Pin an executor even where its result on the layer is an error");
  edit->add_option("--tolerance-avg", e.avg, "New fp_avg_tol for the layers");
  edit->add_option("--tolerance-max", e.max, "New fp_max_tol for the layers");
  e.list_opt = edit->add_option("--list", e.list_value, "List layers (those whose id contains FILTER) instead of editing")
                   ->expected(0, 1)->type_name("[FILTER]");
  edit->add_option("filter", e.list_second, "Filter for --list (REPORT FILTER, or FILTER alone with --model)")
      ->needs(e.list_opt);
  return edit;
}

// The change `edit`'s --layer/--executor/--force/--tolerance-* ask for.
EditRequest edit_request(const CLI::App& edit, const EditArgs& e) {
  if (e.layer.empty()) throw PipelineError("edit needs --layer PATTERN (or --list)");
  EditRequest req;
  req.pattern = e.layer;
  req.force = e.force;
  if (e.exec == "auto") {
    req.release = true;
  } else if (!e.exec.empty()) {
    if (e.exec == "null" || e.exec == "none") {
      req.executor = std::optional<Executor>();
    } else {
      auto ex = executor_from_name(e.exec);
      if (!ex) throw PipelineError("unknown executor '" + e.exec + "' (expected nss, css, host, auto or null)");
      req.executor = ex;
    }
  }
  if (edit.count("--tolerance-avg")) req.tol_avg = e.avg;  // range-checked by apply_edit
  if (edit.count("--tolerance-max")) req.tol_max = e.max;
  if (!req.executor && !req.release && !req.tol_avg && !req.tol_max)
    throw PipelineError("edit needs --executor and/or --tolerance-avg/--tolerance-max");
  return req;
}

// Runs `edit` (parsed as `edit`): lists layers, or edits the report and rewrites its files.
int do_edit(const CLI::App& edit, EditArgs& e) {
  const bool list = e.list_opt->count() > 0;
  const std::string filter = list ? list_filter(e.config, e.model, e.list_value, e.list_second) : "";
  const std::string path = resolve_report(e.config, e.model, e.dir);
  ModelReport r = read_report_file(path);
  if (list) {
    const std::string text = render_list(r, filter);
    std::cout << text << (text.empty() || text.back() != '\n' ? "\n" : "");
    return 0;
  }
  const EditRequest req = edit_request(edit, e);
  std::vector<std::string> notes;
  auto ids = apply_edit(r, req, &notes);
  write_report_files_at(r, path);  // the file read, whatever its name
  for (const auto& n : notes) std::cerr << "torq-gen-config: warning: " << n << "\n";
  std::cout << (req.release ? "released the pin of " : req.executor && *req.executor ? "pinned " : "edited ")
            << ids.size() << " layer(s):";
  for (const auto& id : ids) std::cout << " " << id;
  std::cout << "\nwrote " << path << " and " << compiler_path_for(path) << "\n";
  return 0;
}

// `repro`'s options and the strings turned into them after the parse.
struct ReproArgs {
  coordinator::ReproOptions rp;
  std::string rounding = "truncate", inputs = "activations", range = "-40,40";
  coordinator::QuantizeFirst q;
};

// Adds `repro` and its options (bound to `a`) to `app`.
CLI::App* add_repro(CLI::App& app, ReproArgs& a) {
  coordinator::ReproOptions& rp = a.rp;
  auto* repro = app.add_subcommand("repro", "Write a self-contained folder that reproduces one (layer, executor) "
                                            "result: the layer's ONNX, import MLIR, raw inputs and reference "
                                            "outputs, run.sh (import, compile, run, compare) and a README");
  repro->add_option("--model,-m", rp.model, "ONNX model (as given to discover)")->required();
  repro->add_option("--output-dir", rp.output_dir, "Directory of discover's report")->capture_default_str();
  repro->add_option("layer", rp.layer, "Layer: id, output name or index")->required();
  repro->add_option("--executor,-e", rp.executor, "Executor whose result to reproduce: nss, css or host")->required();
  repro->add_option("-o", rp.out_dir, "Bundle folder (default <output-dir>/repro/<layer>_<executor>; must be new)");
  repro->add_flag("--auto-convert-bf16", rp.convert_bf16, "The bf16 variant (as discover --auto-convert-bf16)");
  repro->add_option("--bf16-rounding", a.rounding, "fp32 -> bf16 rounding: truncate or rne")
      ->check(CLI::IsMember({"truncate", "rne"}))->capture_default_str();
  repro->add_option("--seed", rp.seed, "Seed of the model input (as discover)")->capture_default_str();
  repro->add_option("--inputs", a.inputs, "Layer inputs: activations or random (as discover)")
      ->check(CLI::IsMember({"activations", "random"}))->capture_default_str();
  repro->add_option("--input-range", a.range, "LO,HI of random inputs")->capture_default_str();
  add_backend_options(repro, &rp.backend, &rp.toolchain_file);
  coordinator::add_quantize_flags(repro, &a.q);
  return repro;
}

// Runs `repro` after turning its strings (and the command line, argv) into options.
int do_repro(ReproArgs& a, int argc, char** argv, std::ostream& null_out) {
  coordinator::ReproOptions& rp = a.rp;
  if (const int rc = check_backend_options(rp.backend, rp.toolchain_file)) return rc;
  rp.rounding = rounding_of(a.rounding);
  rp.random_inputs = a.inputs == "random";
  parse_input_range(a.range, &rp.input_lo, &rp.input_hi);
  for (int i = 0; i < argc; ++i) rp.command += (i ? " " : "") + std::string(argv[i]);
  if (a.q.enabled) rp.variant_extra = "int8 (" + a.q.format + ")";
  if (const int rc = coordinator::quantize_first(a.q, rp.convert_bf16, rp.seed, rp.output_dir, &rp.model,
                                                 null_out, std::cerr))
    return rc;
  return coordinator::run_repro(rp, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"torq-gen-config: find which Torq executor (nss, css, host) runs each layer of an ONNX model"};
  app.require_subcommand(1);
  // The subcommands' options, bound (by pointer) to these for the parse.
  DiscoverArgs discover_args;
  RunArgs run_args;
  CompareArgs compare_args;
  quant::QuantizeOptions qo;
  ViewArgs view_args;
  EditArgs edit_args;
  ReproArgs repro_args;
  CLI::App* disc = add_discover(app, discover_args);
  CLI::App* runc = add_run(app, run_args);
  CLI::App* cmp = add_compare(app, compare_args);
  CLI::App* quant = add_quantize(app, qo);
  CLI::App* view = add_view(app, view_args);
  CLI::App* edit = add_edit(app, edit_args);
  CLI::App* repro = add_repro(app, repro_args);
  coordinator::ProbeArgs probe_args;
  coordinator::add_probe(app, probe_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  std::ostream null_out(nullptr);  // --quiet: the quantization report goes nowhere
  try {
    if (*runc) return do_run(*runc, run_args, null_out);
    if (*disc) return do_discover(*disc, discover_args, null_out);
    if (*quant) {
      const base::Progress progress("torq-gen-config quantize");
      return quant::quantize_command(qo, std::cout, std::cerr);
    }
    if (*repro) return do_repro(repro_args, argc, argv, null_out);
    if (*probe_args.cmd) return coordinator::do_probe(probe_args, engine::kernel_catalog());
    if (*cmp) return do_compare(compare_args);
    if (*view) return do_view(view_args);
    if (*edit) return do_edit(*edit, edit_args);
  } catch (const std::exception& e) {
    std::cerr << "torq-gen-config: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

// The charts of report.html (matrix_internal.h), written here as inline SVG
// so that the report opens offline: the heatmap of nss coverage per model ×
// variant, each model's layers by recommended executor, and the trend over
// the spec's runs. Each is an <svg role="img"> named by its <title> and
// <desc>, its marks carry their numbers in a <title> (a tooltip) and data-*
// attributes, and a visually hidden table repeats the numbers for screen
// readers and for reading without the picture.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/matrix/matrix_internal.h"

namespace torq::pipeline::matrix::detail {

namespace {

std::string esc(const std::string& s) { return html_escape(s); }
std::string coord(double v) { return printf_str("%.1f", v); }

// <svg role="img"> titled and described for assistive technology.
std::string svg_open(const std::string& id, double w, double h, const std::string& title, const std::string& desc) {
  return "<svg id=\"" + id + "\" class=\"chart\" role=\"img\" width=\"" + coord(w) + "\" height=\"" + coord(h) +
         "\" viewBox=\"0 0 " + coord(w) + " " + coord(h) + "\" aria-labelledby=\"" + id + "-title " + id +
         "-desc\">\n<title id=\"" + id + "-title\">" + esc(title) + "</title>\n<desc id=\"" + id + "-desc\">" +
         esc(desc) + "</desc>\n";
}

std::string text_at(double x, double y, const std::string& text, const std::string& attrs = "") {
  return "<text x=\"" + coord(x) + "\" y=\"" + coord(y) + "\"" + attrs + ">" + esc(text) + "</text>";
}

// A rectangle; with a `tip`, that is its tooltip.
std::string rect(double x, double y, double w, double h, const std::string& attrs, const std::string& tip = "") {
  const std::string open = "<rect x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" + coord(w) + "\" height=\"" +
                           coord(h) + "\"" + attrs;
  return tip.empty() ? open + "/>" : open + "><title>" + esc(tip) + "</title></rect>";
}

// The characters of a chart's label column.
constexpr size_t kLabelChars = 28;

// A label that fits the label column: cut with "…" (not inside a UTF-8
// character; the full name is in the mark's title and the hidden table).
std::string short_label(const std::string& s) {
  if (s.size() <= kLabelChars) return s;
  size_t cut = kLabelChars - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "…";
}

// The label column's width for these labels (about 7 px a character).
double label_width(const std::vector<std::string>& labels) {
  size_t longest = 4;
  for (const std::string& l : labels) longest = std::max(longest, std::min(l.size(), kLabelChars));
  return 12 + 7.0 * static_cast<double>(longest);
}

// A hidden table: the chart's numbers as text.
std::string hidden_table(const std::string& caption, const std::vector<std::string>& head,
                         const std::vector<std::vector<std::string>>& rows) {
  std::string h = "<table class=\"sr-only\"><caption>" + esc(caption) + "</caption><thead><tr>";
  for (const std::string& c : head) h += "<th>" + esc(c) + "</th>";
  h += "</tr></thead><tbody>";
  for (const auto& row : rows) {
    h += "<tr>";
    for (const std::string& c : row) h += "<td>" + esc(c) + "</td>";
    h += "</tr>";
  }
  return h + "</tbody></table>\n";
}

// Models and variants in the order the results first name them.
struct Axes {
  std::vector<std::string> models, variants;
};

void add_once(std::vector<std::string>* v, const std::string& s) {
  if (std::find(v->begin(), v->end(), s) == v->end()) v->push_back(s);
}

Axes axes_of(const std::vector<TestResult>& results) {
  Axes a;
  for (const TestResult& r : results) {
    add_once(&a.models, model_name(test_of(r)));
    add_once(&a.variants, test_of(r).variant.name);
  }
  return a;
}

// ------------------------------------------------------------ heatmap

// The layers of an executor distribution (each counted once, "none" included).
int layers_of(const std::map<std::string, int>& dist) {
  int total = 0;
  for (const auto& [name, n] : dist) total += n;
  return total;
}

// The share of a run's layers recommended on nss; nullopt without layers.
std::optional<double> nss_share(const TestRun& run) {
  const int total = layers_of(run.executor_distribution);
  if (total == 0) return std::nullopt;
  const auto nss = run.executor_distribution.find(executor_name(Executor::kNss));
  return nss == run.executor_distribution.end() ? 0.0 : static_cast<double>(nss->second) / total;
}

// The tests of one (model, variant) and the shares of those with layers.
struct HeatCell {
  int tests = 0;
  std::vector<double> shares;
  double mean() const {
    double sum = 0;
    for (const double s : shares) sum += s;
    return sum / static_cast<double>(shares.size());
  }
};

std::map<std::pair<std::string, std::string>, HeatCell> heat_cells(const std::vector<TestResult>& results) {
  std::map<std::pair<std::string, std::string>, HeatCell> cells;
  for (const TestResult& r : results) {
    HeatCell& c = cells[{model_name(test_of(r)), test_of(r).variant.name}];
    ++c.tests;
    if (const auto share = nss_share(r.run)) c.shares.push_back(*share);
  }
  return cells;
}

// From pale yellow (no layer on nss) to green (every layer).
std::string heat_colour(double share) {
  auto mix = [share](int a, int b) { return std::to_string(static_cast<int>(std::lround(a + (b - a) * share))); };
  return "rgb(" + mix(255, 35) + "," + mix(247, 139) + "," + mix(188, 69) + ")";
}

// What a cell says: its state, its text (shown and in the hidden table) and its tooltip.
struct CellText {
  std::string state, shown, tip;
};

CellText cell_text(const std::string& model, const std::string& variant, const HeatCell* c) {
  const std::string where = model + " " + variant + ": ";
  if (!c) return {"absent", "", where + "no test"};
  const std::string tests = std::to_string(c->tests) + (c->tests == 1 ? " test" : " tests");
  if (c->shares.empty()) return {"no-layers", "–", where + tests + ", none with layers"};
  const std::string of = c->shares.size() == 1 ? "" : " (mean of " + std::to_string(c->shares.size()) + " tests)";
  return {"coverage", percent(c->mean()), where + "nss coverage " + percent(c->mean()) + of};
}

// A heatmap cell's height; its width fits the longest variant name.
constexpr double kHeatH = 22;

std::string heat_cell_svg(const std::string& model, const std::string& variant, const HeatCell* c, double x,
                          double y, double w) {
  const CellText t = cell_text(model, variant, c);
  std::string h = "<g class=\"heat-cell\" data-model=\"" + esc(model) + "\" data-variant=\"" + esc(variant) +
                  "\" data-state=\"" + t.state + "\" data-tests=\"" + std::to_string(c ? c->tests : 0) + "\"";
  if (t.state == "coverage") h += " data-coverage=\"" + printf_str("%.4f", c->mean()) + "\"";
  h += "><title>" + esc(t.tip) + "</title>";
  const std::string fill = t.state == "coverage" ? " fill=\"" + heat_colour(c->mean()) + "\""
                                                 : " class=\"heat-" + t.state + "\"";
  const std::string cell = rect(x + 1, y + 1, w - 2, kHeatH - 2, fill) +
                           text_at(x + w / 2, y + 15, t.shown,
                                   std::string(" text-anchor=\"middle\"") +
                                       (t.state == "coverage" && c->mean() > 0.55 ? " class=\"light\"" : ""));
  // A cell with tests filters the table to them.
  if (c) return h + "<a href=\"#filter=" + esc(url_fragment(model + "-" + variant + "-")) + "\">" + cell + "</a></g>\n";
  return h + cell + "</g>\n";
}

}  // namespace

std::string heatmap_html(const std::vector<TestResult>& results) {
  const Axes a = axes_of(results);
  if (a.models.empty()) return "";
  const auto cells = heat_cells(results);
  constexpr double kTop = 24;
  const double left = label_width(a.models), col = std::max(56.0, label_width(a.variants));
  const double width = left + col * static_cast<double>(a.variants.size()) + 2;
  const double height = kTop + kHeatH * static_cast<double>(a.models.size()) + 2;
  std::string h = "<figure class=\"chart\" id=\"heatmap-figure\">\n" +
                  svg_open("heatmap", width, height, "nss coverage per model and variant",
                           std::to_string(a.models.size()) + " models × " + std::to_string(a.variants.size()) +
                               " variants; each cell: the share of the test's layers recommended on nss");
  for (size_t v = 0; v < a.variants.size(); ++v)
    h += text_at(left + col * (static_cast<double>(v) + 0.5), 16, short_label(a.variants[v]),
                 " text-anchor=\"middle\"");
  std::vector<std::vector<std::string>> rows;
  for (size_t m = 0; m < a.models.size(); ++m) {
    const double y = kTop + kHeatH * static_cast<double>(m);
    h += "<g class=\"heat-row\">" + text_at(4, y + 15, short_label(a.models[m])) + "\n";
    rows.push_back({a.models[m]});
    for (size_t v = 0; v < a.variants.size(); ++v) {
      const auto it = cells.find({a.models[m], a.variants[v]});
      const HeatCell* c = it == cells.end() ? nullptr : &it->second;
      h += heat_cell_svg(a.models[m], a.variants[v], c, left + col * static_cast<double>(v), y, col);
      const CellText t = cell_text(a.models[m], a.variants[v], c);
      rows.back().push_back(t.state == "coverage" ? t.shown : t.state == "absent" ? "no test" : "no layers");
    }
    h += "</g>\n";
  }
  std::vector<std::string> head = {"model"};
  head.insert(head.end(), a.variants.begin(), a.variants.end());
  return h + "</svg>\n" + hidden_table("nss coverage per model and variant", head, rows) +
         "<figcaption><b>nss coverage</b>: the share of a test's layers whose recommended executor is nss; a "
         "cell with several tests (targets, modes) shows their mean. 0%<span class=\"swatch scale\"></span>100%"
         "<span class=\"swatch heat-no-layers\"></span>tests without layers<span class=\"swatch heat-absent\">"
         "</span>no test. Click a cell to filter the tests.</figcaption>\n</figure>\n";
}

namespace {

// ------------------------------------------------------------ executor bars

// Each model's layers by recommended executor, summed over its tests.
std::map<std::string, std::map<std::string, int>> model_distributions(const std::vector<TestResult>& results) {
  std::map<std::string, std::map<std::string, int>> out;
  for (const TestResult& r : results) {
    std::map<std::string, int>& d = out[model_name(test_of(r))];
    for (const auto& [name, n] : r.run.executor_distribution) d[name] += n;
  }
  return out;
}

std::string seg_class(const std::string& name) {
  return executor_from_name(name) || name == "none" ? "seg seg-" + name : "seg seg-other";
}

// One model's bar: a segment per recommended executor, widths by share.
std::string bar_svg(const std::string& model, const std::map<std::string, int>& dist, double left, double y,
                    double bar_w) {
  const int total = layers_of(dist);
  std::string h = "<g class=\"bar\" data-model=\"" + esc(model) + "\" data-layers=\"" + std::to_string(total) +
                  "\"><a href=\"#filter=" + esc(url_fragment(model + "-")) + "\">" +
                  text_at(4, y + 12, short_label(model)) + "</a>";
  double x = left;
  for (const auto& [name, n] : ordered_distribution(dist)) {
    if (n == 0) continue;
    const double w = bar_w * n / total;
    h += rect(x, y, w, 16,
              " class=\"" + seg_class(name) + "\" data-executor=\"" + esc(name) + "\" data-layers=\"" +
                  std::to_string(n) + "\"",
              model + ": " + name + " " + std::to_string(n) + " of " + std::to_string(total) + " layers (" +
                  percent(static_cast<double>(n) / total) + ")");
    x += w;
  }
  const std::string label = total == 0 ? "no layers" : std::to_string(total) + " layers";
  return h + text_at(left + (total == 0 ? 0 : bar_w) + 6, y + 12, label) + "</g>\n";
}

}  // namespace

std::string executor_bars_html(const std::vector<TestResult>& results) {
  const Axes a = axes_of(results);
  if (a.models.empty()) return "";
  const auto dists = model_distributions(results);
  constexpr double kRow = 22, kBar = 300;
  const double left = label_width(a.models);
  const double height = kRow * static_cast<double>(a.models.size()) + 4;
  std::string h = "<figure class=\"chart\" id=\"executors-figure\">\n" +
                  svg_open("executors", left + kBar + 90, height, "Layers by recommended executor per model",
                           std::to_string(a.models.size()) +
                               " models; each bar: the model's layers over its tests, split by the executor "
                               "recommended for each");
  std::vector<std::vector<std::string>> rows;
  for (size_t m = 0; m < a.models.size(); ++m) {
    const auto& d = dists.at(a.models[m]);
    h += bar_svg(a.models[m], d, left, 4 + kRow * static_cast<double>(m), kBar);
    rows.push_back({a.models[m], distribution_text(d, ", "), std::to_string(layers_of(d))});
  }
  return h + "</svg>\n" +
         hidden_table("Layers by recommended executor per model", {"model", "layers by executor", "layers"}, rows) +
         "<figcaption><b>Executors</b>: each model's layers, summed over its tests, by recommended executor"
         "<span class=\"swatch seg-nss\"></span>nss<span class=\"swatch seg-css\"></span>css"
         "<span class=\"swatch seg-host\"></span>host<span class=\"swatch seg-none\"></span>none (no executor "
         "runs the layer). Bars show shares; the count is at the end.</figcaption>\n</figure>\n";
}

namespace {

// ------------------------------------------------------------ trend

using TrendPoint = RunInfo::TrendPoint;

double passed_share(const TrendPoint& p) { return p.total > 0 ? static_cast<double>(p.passed) / p.total : 0; }

// The trend's plot area: run i of n across, a share (0..1) up.
struct Plot {
  static constexpr double kWidth = 640, kHeight = 210, kLeft = 44, kRight = 16, kTop = 12, kBottom = 40;
  size_t n;
  double x(size_t i) const { return kLeft + (kWidth - kLeft - kRight) * static_cast<double>(i) / (n - 1.0); }
  double y(double share) const { return kTop + (1 - share) * (kHeight - kTop - kBottom); }
};

// Grid lines every 25%, and under the points their run numbers (at most
// about 16 of them, always the last).
std::string trend_axes(const Plot& p, const std::vector<TrendPoint>& trend) {
  std::string h;
  for (int q = 0; q <= 4; ++q) {
    const double y = p.y(q / 4.0);
    h += "<line class=\"grid-line\" x1=\"" + coord(Plot::kLeft) + "\" x2=\"" + coord(Plot::kWidth - Plot::kRight) +
         "\" y1=\"" + coord(y) + "\" y2=\"" + coord(y) + "\"/>" +
         text_at(Plot::kLeft - 6, y + 4, std::to_string(25 * q) + "%", " class=\"axis\" text-anchor=\"end\"") + "\n";
  }
  const size_t every = (trend.size() + 15) / 16;
  for (size_t i = 0; i < trend.size(); ++i)
    if (i % every == 0 || i + 1 == trend.size())
      h += text_at(p.x(i), Plot::kHeight - Plot::kBottom + 16, "#" + std::to_string(trend[i].seq),
                   " class=\"axis\" text-anchor=\"middle\"");
  return h + text_at(Plot::kLeft, Plot::kHeight - 6, "run (oldest to this one)", " class=\"axis\"") + "\n";
}

std::string circle(double x, double y, const std::string& attrs, const std::string& tip) {
  return "<circle cx=\"" + coord(x) + "\" cy=\"" + coord(y) + "\" r=\"4\"" + attrs + "><title>" + esc(tip) +
         "</title></circle>";
}

std::string passed_series(const Plot& p, const std::vector<TrendPoint>& trend) {
  std::string line, points;
  for (size_t i = 0; i < trend.size(); ++i) {
    const TrendPoint& t = trend[i];
    const double x = p.x(i), y = p.y(passed_share(t));
    line += (line.empty() ? "" : " ") + coord(x) + "," + coord(y);
    points += circle(x, y,
                     " class=\"point point-passed\" data-seq=\"" + std::to_string(t.seq) + "\" data-passed=\"" +
                         std::to_string(t.passed) + "\" data-total=\"" + std::to_string(t.total) + "\"",
                     "run " + std::to_string(t.seq) + " (" + t.started_utc + "): " + std::to_string(t.passed) +
                         " of " + std::to_string(t.total) + " tests passed, " + std::to_string(t.failed) + " failed");
  }
  return "<polyline class=\"line-passed\" points=\"" + line + "\"/>\n" + points + "\n";
}

// Runs recorded before the coverage was kept have none: no point.
std::string coverage_series(const Plot& p, const std::vector<TrendPoint>& trend) {
  std::string line, points;
  for (size_t i = 0; i < trend.size(); ++i) {
    const TrendPoint& t = trend[i];
    if (t.nss_coverage < 0) continue;
    const double x = p.x(i), y = p.y(t.nss_coverage);
    line += (line.empty() ? "" : " ") + coord(x) + "," + coord(y);
    points += circle(x, y,
                     " class=\"point point-coverage\" data-seq=\"" + std::to_string(t.seq) + "\" data-coverage=\"" +
                         printf_str("%.4f", t.nss_coverage) + "\"",
                     "run " + std::to_string(t.seq) + ": nss coverage " + percent(t.nss_coverage));
  }
  return "<polyline class=\"line-coverage\" points=\"" + line + "\"/>\n" + points + "\n";
}

std::vector<std::vector<std::string>> trend_rows(const std::vector<TrendPoint>& trend) {
  std::vector<std::vector<std::string>> rows;
  for (const TrendPoint& t : trend)
    rows.push_back({std::to_string(t.seq), t.started_utc, std::to_string(t.passed), std::to_string(t.failed),
                    std::to_string(t.total), t.nss_coverage < 0 ? "unknown" : percent(t.nss_coverage)});
  return rows;
}

}  // namespace

std::string trend_html(const std::vector<RunInfo::TrendPoint>& trend) {
  if (trend.empty()) return "<p id=\"trend-none\" class=\"legend\">No run history kept: no trend.</p>\n";
  if (trend.size() == 1)
    return "<p id=\"trend-none\" class=\"legend\">No history yet (first run of this spec): the trend of passes "
           "and nss coverage shows from the second run.</p>\n";
  const Plot p{trend.size()};
  const TrendPoint& last = trend.back();
  std::string h = "<figure class=\"chart\" id=\"trend-figure\">\n" +
                  svg_open("trend", Plot::kWidth, Plot::kHeight,
                           "Trend over the last " + std::to_string(trend.size()) + " runs",
                           "Share of tests passed and nss coverage per run; this run (#" + std::to_string(last.seq) +
                               "): " + std::to_string(last.passed) + " of " + std::to_string(last.total) +
                               " passed, nss coverage " +
                               (last.nss_coverage < 0 ? std::string("unknown") : percent(last.nss_coverage)));
  h += trend_axes(p, trend) + passed_series(p, trend) + coverage_series(p, trend) + "</svg>\n";
  return h +
         hidden_table("Trend over the runs", {"run", "started", "passed", "failed", "tests", "nss coverage"},
                      trend_rows(trend)) +
         "<figcaption><b>Trend</b> over the spec's runs in the store:<span class=\"swatch line-passed\"></span>"
         "share of tests passed<span class=\"swatch line-coverage\"></span>nss coverage (mean over tests with "
         "layers). Hover a point for its numbers.</figcaption>\n</figure>\n";
}

}  // namespace torq::pipeline::matrix::detail

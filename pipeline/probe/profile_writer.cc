#include "pipeline/probe/profile_writer.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <set>
#include <type_traits>

#include "pipeline/probe/envelope_rule_search.h"

namespace torq::pipeline::probe {

namespace {

std::string writer_number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string writer_dtypes(const std::vector<base::DType>& ts) {
  std::string s;
  for (base::DType t : ts) s += (s.empty() ? "" : ", ") + std::string(base::dtype_name(t));
  return "[" + s + "]";
}

std::string writer_percent(int n, int of) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", of ? 100.0 * n / of : 100.0);
  return buf;
}

void pw_write_header(std::string& y, const DerivedProfile& d) {
  y += "# " + d.executor + ": derived by torq-gen-config probe (issue 34) from " + std::to_string(d.points) +
       " points";
  y += d.excluded.empty() ? ".\n"
                          : " (" + std::to_string(d.excluded.size()) +
                                " more not learned from: invalid points or infrastructure failures).\n";
  y += "# The rules below explain " + std::to_string(d.explained) + " of " + std::to_string(d.points) +
       " points (" + writer_percent(d.explained, d.points) + "); each point they do not explain is listed as\n"
       "# a residual in the envelope report. Each kept limit says which points justify it: the\n"
       "# running points within it, the failing points it excludes and the gap its bound lies in.\n";
  y += "name: " + yaml_quote(d.executor) + "\n";
  y += "description: " + yaml_quote("derived by torq-gen-config probe from " + std::to_string(d.points) + " points") +
       "\n";
}

void pw_write_numerics(std::string& y, const DerivedProfile& d, const targets::TargetProfile* base) {
  if (base && !base->chip().empty()) y += "chip: " + yaml_quote(base->chip()) + "\n";
  y += "numerics:\n";
  y += std::string("  float_type: ") + base::dtype_name(d.float_type) +
       (!d.float_type_measured ? "  # not measured (no f32 point probed, or no float point ran): " +
                                      std::string(base ? "from " + base->name() : "the default") + "\n"
        : d.float_type == base::DType::kBF16 ? "  # no f32 point ran, bf16 ones did\n"
                                              : "  # f32 points ran\n");
  if (base && base->rounding())
    y += std::string("  rounding: ") + (*base->rounding() == base::Rounding::kNearestEven ? "rne" : "truncate") +
         "  # copied from " + base->name() + "\n";
  if (d.float_type == base::DType::kBF16 && !d.fp32_error.empty())
    y += "  fp32_error: " + yaml_quote(d.fp32_error) +
         (d.float_type_measured ? "  # the failing f32 points' most frequent message\n" : "  # copied from the base\n");
}

void pw_write_cost(std::string& y, const targets::TargetProfile* base) {
  const targets::CostModel c = base ? base->cost() : targets::CostModel{};
  y += "cost:\n";
  y += base ? "  # copied from " + base->name() + "\n" : "  # not measured: defaults\n";
  y += "  clock_mhz: " + writer_number(c.clock_mhz) + "\n";
  y += "  slices: " + std::to_string(c.slices) + "\n";
  y += "  macs_per_cycle_per_slice: " + writer_number(c.macs_per_cycle_per_slice) + "\n";
  if (c.int8_macs_per_cycle_per_slice > 0)
    y += "  int8_macs_per_cycle_per_slice: " + writer_number(c.int8_macs_per_cycle_per_slice) + "\n";
  y += "  eltwise_per_cycle: " + writer_number(c.eltwise_per_cycle) + "\n";
  y += "  dma_bytes_per_cycle: " + writer_number(c.dma_bytes_per_cycle) + "\n";
  y += "  dispatch_overhead_cycles: " + std::to_string(c.dispatch_overhead_cycles) + "\n";
}

void pw_write_key(std::string& y, const std::string& indent, const LearnedKey& k) {
  if (!k.evidence.empty()) y += indent + "# " + k.evidence + "\n";
  y += indent + k.key + ": " + k.value + "\n";
}

// The integer rule as the keys that differ from the float rule.
void pw_write_int_block(std::string& y, const LearnedOp& op) {
  y += "    int:\n";
  for (const std::string& key : rule_search::key_order()) {
    const LearnedKey* f = op.main.find(key);
    const LearnedKey* i = op.int_rule.find(key);
    if (i && (!f || f->value != i->value)) pw_write_key(y, "      ", *i);
    if (f && !i) y += "      " + key + ": null  # no failing integer point needs it\n";
  }
  y += "      note: " + yaml_quote(op.int_note) + "\n";
}

void pw_write_learned_op(std::string& y, const LearnedOp& op, const targets::TargetProfile* base) {
  if (!op.omitted.empty()) {
    y += "  # " + op.op + ": left out (refused as not supported): " + op.omitted + "\n";
    return;
  }
  y += "  " + op.op + ":\n";
  y += "    dtypes: " + writer_dtypes(op.dtypes) + "  # the data types of its running points\n";
  for (const std::string& key : rule_search::key_order())
    if (const LearnedKey* k = op.main.find(key)) pw_write_key(y, "    ", *k);
  if (const targets::OpRule* r = base ? base->rule(op.op) : nullptr; r && r->widen_output)
    y += "    widen_output: true  # copied from " + base->name() + "\n";
  y += "    note: " + yaml_quote(op.note) + "\n";
  if (op.has_float && op.has_int) pw_write_int_block(y, op);
}

void pw_write_copied_op(std::string& y, const std::string& name, const targets::OpRule& r, const std::string& from) {
  y += "  # not probed: copied from " + from + "\n";
  y += "  " + name + ":";
  const auto fields = rule_fields(r);
  if (fields.empty() && !r.int_rule) {
    y += " {}\n";
    return;
  }
  y += "\n";
  for (const auto& [k, v] : fields) y += "    " + k + ": " + v + "\n";
  if (!r.int_rule) return;
  const auto ints = rule_fields(*r.int_rule);
  y += "    int:";
  std::string block;
  for (const auto& [k, v] : ints)
    if (std::find(fields.begin(), fields.end(), std::make_pair(k, v)) == fields.end()) block += "      " + k + ": " + v + "\n";
  for (const auto& [k, v] : fields)
    if (k != "dtypes" && k != "widen_output" && k != "note" &&
        std::none_of(ints.begin(), ints.end(), [&](const auto& e) { return e.first == k; }))
      block += "      " + k + ": null\n";
  y += block.empty() ? " {}\n" : "\n" + block;
}

void pw_write_ops(std::string& y, const DerivedProfile& d, const targets::TargetProfile* base) {
  if (d.all_ops) {
    y += "ops: all  # every probed point ran" + std::string(base ? ", as " + base->name() + " accepts every op" : "") +
         "\n";
    return;
  }
  std::set<std::string> probed;
  for (const LearnedOp& op : d.ops) probed.insert(op.op);
  std::string body;
  bool any_rule = false;  // else the map is empty: `ops: {}`
  // Learned ops and base's unprobed ones, by name.
  std::set<std::string> names = probed;
  if (base)
    for (const auto& [name, rule] : base->ops()) names.insert(name);
  for (const std::string& name : names) {
    if (probed.count(name)) {
      const LearnedOp& op = *std::find_if(d.ops.begin(), d.ops.end(), [&](const LearnedOp& o) { return o.op == name; });
      pw_write_learned_op(body, op, base);
      any_rule = any_rule || op.omitted.empty();
    } else {
      pw_write_copied_op(body, name, base->ops().at(name), base->name());
      any_rule = true;
    }
  }
  y += (any_rule ? "ops:\n" : "ops: {}\n") + body;
}

}  // namespace

std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

std::vector<std::pair<std::string, std::string>> rule_fields(const targets::OpRule& r) {
  std::vector<std::pair<std::string, std::string>> f;
  if (!r.dtypes.empty()) f.emplace_back("dtypes", writer_dtypes({r.dtypes.begin(), r.dtypes.end()}));
  auto list = [](const auto& set) {
    std::string s;
    for (const auto& v : set) {
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) s += (s.empty() ? "" : ", ") + v;
      else s += (s.empty() ? "" : ", ") + std::to_string(v);
    }
    return "[" + s + "]";
  };
  if (!r.conv_groups.empty()) f.emplace_back("conv_groups", list(r.conv_groups));
  if (!r.spatial_ranks.empty()) f.emplace_back("spatial_ranks", list(r.spatial_ranks));
  const std::pair<const char*, const std::optional<int64_t>*> ints[] = {
      {"max_kernel", &r.max_kernel},     {"min_kernel", &r.min_kernel},
      {"min_spatial", &r.min_spatial},   {"max_stride", &r.max_stride},
      {"max_dilation", &r.max_dilation}, {"max_strided_input_elements", &r.max_strided_input_elements},
      {"max_input_elements", &r.max_input_elements}, {"max_rank", &r.max_rank}};
  for (const auto& [k, v] : ints)
    if (*v) f.emplace_back(k, std::to_string(**v));
  if (r.widen_output) f.emplace_back("widen_output", "true");
  if (!r.note.empty()) f.emplace_back("note", yaml_quote(r.note));
  return f;
}

std::string profile_yaml(const DerivedProfile& d, const targets::TargetProfile* base) {
  std::string y;
  pw_write_header(y, d);
  pw_write_numerics(y, d, base);
  pw_write_cost(y, base);
  pw_write_ops(y, d, base);
  return y;
}

}  // namespace torq::pipeline::probe

// The LayerRecord MergeOperator of the store's results column family: folds
// per-executor Result operands and erase markers into a LayerRecord,
// surviving corrupt inputs (see store_merge.h).
#include "pipeline/store/store_merge.h"

#include <rocksdb/merge_operator.h>
#include <rocksdb/slice.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "pipeline/wire/codec.h"
#include "pipeline/store/store.h"

namespace torq::pipeline::store_detail {

namespace {

constexpr std::string_view kEraseMagic = "TORQERASE";

// A decoded operand: executor `executor` gets `result`, or loses its result
// when `result` is empty (an erase marker).
struct Operand {
  Executor executor = Executor::kHost;
  std::optional<ExecResult> result;
};

// Decodes an operand; on failure returns nullopt and says why in `why`.
std::optional<Operand> parse_operand(const rocksdb::Slice& s, std::string* why) {
  const std::string_view v(s.data(), s.size());
  if (v.substr(0, kEraseMagic.size()) == kEraseMagic) {
    if (v.size() == kEraseMagic.size() + 1) {
      const char c = v.back();
      if (c >= '0' && c <= '2') return Operand{static_cast<Executor>(c - '0'), std::nullopt};
    }
    *why = "malformed erase marker";
    return std::nullopt;
  }
  try {
    ExecResult r = decode_result(s.data(), s.size());
    const Executor e = r.executor;
    return Operand{e, std::move(r)};
  } catch (const PipelineError& e) {
    *why = e.what();
    return std::nullopt;
  }
}

void log_corrupt(const rocksdb::Slice& key, const char* what, const std::string& why) {
  std::fprintf(stderr, "torq store: %s: %s of results key '%s' skipped: %s\n", Store::kMergeOperatorName, what,
               key.ToString().c_str(), why.c_str());
}

class LayerRecordMerge : public rocksdb::MergeOperator {
 public:
  const char* Name() const override { return Store::kMergeOperatorName; }

  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override {
    // std::map keyed by Executor iterates in priority order (nss, css, host).
    std::map<Executor, ExecResult> record;
    bool existing_corrupt = false;
    if (in.existing_value) {
      try {
        for (auto& r : decode_layer_record(in.existing_value->data(), in.existing_value->size()))
          record[r.executor] = std::move(r);
      } catch (const PipelineError& e) {
        log_corrupt(in.key, "existing record", e.what());
        existing_corrupt = true;
      }
    }
    size_t valid = 0;
    for (const auto& s : in.operand_list) {
      std::string why;
      auto op = parse_operand(s, &why);
      if (!op) {
        log_corrupt(in.key, "merge operand", why);
        continue;
      }
      ++valid;
      if (op->result)
        record[op->executor] = std::move(*op->result);
      else
        record.erase(op->executor);
    }
    if (existing_corrupt && valid == 0) {
      // Nothing salvageable: keep the corrupt record so readers report it.
      out->existing_operand = *in.existing_value;
      return true;
    }
    std::vector<ExecResult> results;
    results.reserve(record.size());
    for (auto& [e, r] : record) results.push_back(std::move(r));
    out->new_value = encode_layer_record(results);
    return true;
  }

  // Two operands for the same executor collapse into the later one (it
  // replaces or erases whatever the earlier one did). Operands for different
  // executors, or undecodable ones, are left to FullMergeV2.
  bool PartialMerge(const rocksdb::Slice& /*key*/, const rocksdb::Slice& left, const rocksdb::Slice& right,
                    std::string* new_value, rocksdb::Logger* /*logger*/) const override {
    std::string why;
    const auto l = parse_operand(left, &why);
    const auto r = parse_operand(right, &why);
    if (!l || !r || l->executor != r->executor) return false;
    new_value->assign(right.data(), right.size());
    return true;
  }
};

}  // namespace

std::string erase_operand(Executor e) {
  std::string s(kEraseMagic);
  s.push_back(static_cast<char>('0' + static_cast<int>(e)));
  return s;
}

std::shared_ptr<rocksdb::MergeOperator> make_layer_record_merge_operator() {
  return std::make_shared<LayerRecordMerge>();
}

}  // namespace torq::pipeline::store_detail

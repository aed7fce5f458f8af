#include "pipeline/plan/compare.h"

#include <cmath>
#include <limits>


namespace torq::pipeline {

bool output_ok(const OutputDiff& d, const Tolerance& tol) {
  if (d.nan_mismatch > 0) return false;
  if (d.size == 0) return d.over_tol == 0;
  return static_cast<double>(d.over_tol) / static_cast<double>(d.size) <= tol.allowed_wrong;
}

void judge(ExecResult* r, const Tolerance& tol) {
  bool ok = true;
  r->max_abs = r->max_rel = 0;
  r->pcc = 1.0;
  for (const auto& d : r->outputs) {
    ok = ok && output_ok(d, tol);
    r->max_abs = std::max(r->max_abs, d.max_abs);
    r->max_rel = std::max(r->max_rel, d.max_rel);
    if (std::isnan(d.pcc) || d.pcc < r->pcc) r->pcc = std::isnan(r->pcc) ? r->pcc : d.pcc;
  }
  r->tolerance_used = tol;
  r->status = ok ? Status::kSuccess : Status::kDifference;
}

}  // namespace torq::pipeline

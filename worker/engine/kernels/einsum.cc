// Einsum (opset 12+): the Einstein summation of its operands by an equation
// such as "bhid,bhjd->bhij" (torch writes "B H I D, B H J D -> B H I J":
// spaces are ignored, labels are letters of either case). Supports the
// implicit output (labels seen once, in ASCII order, after the broadcast
// "..." dims), "..." broadcast between operands, and a label repeated in one
// operand (its diagonal). Computed directly: for every output element, the
// sum over the contracted labels of the operands' product, accumulated in
// double, the result in the operands' dtype. Plain loops, not the fastest
// way for a large contraction, but exact and general.
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <vector>

#include "worker/engine/kernel.h"

namespace torq::engine {
namespace {

// Labels: 'A'..'Z', 'a'..'z' as 0..51; the k-th "..." dim (from the left of
// the broadcast ellipsis shape) as 52 + k.
constexpr int kEllipsisBase = 52;

int letter_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

struct Term {
  std::vector<int> letters;   // labels in order; -2 marks where "..." stands
  bool has_ellipsis = false;
};

Term parse_term(const std::string& t, const std::string& eq) {
  Term out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.compare(i, 3, "...") == 0) {
      TORQ_CHECK(!out.has_ellipsis, "Einsum equation '" + eq + "': a term has two '...'");
      out.has_ellipsis = true;
      out.letters.push_back(-2);
      i += 2;
      continue;
    }
    const int l = letter_label(t[i]);
    TORQ_CHECK(l >= 0, "Einsum equation '" + eq + "': bad character '" + std::string(1, t[i]) + "'");
    out.letters.push_back(l);
  }
  return out;
}

struct Plan {
  std::vector<Term> inputs;
  Term output;
  bool explicit_output = false;
};

Plan parse_equation(const std::string& raw) {
  std::string eq;
  for (char c : raw)
    if (c != ' ') eq += c;
  Plan p;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  for (;;) {
    const size_t comma = lhs.find(',', start);
    p.inputs.push_back(parse_term(lhs.substr(start, comma - start), raw));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    p.explicit_output = true;
    p.output = parse_term(eq.substr(arrow + 2), raw);
  }
  return p;
}

// The labels of one operand after "..." is expanded to its dims (aligned
// right with the broadcast ellipsis of rank `ell_rank`).
std::vector<int> expand(const Term& t, int64_t rank, int64_t ell_rank, const std::string& eq) {
  const int64_t named = static_cast<int64_t>(t.letters.size()) - (t.has_ellipsis ? 1 : 0);
  const int64_t ell = rank - named;
  TORQ_CHECK(t.has_ellipsis ? ell >= 0 : ell == 0,
             "Einsum equation '" + eq + "': a term's labels do not match its operand's rank " + std::to_string(rank));
  std::vector<int> out;
  for (int l : t.letters) {
    if (l != -2) {
      out.push_back(l);
      continue;
    }
    for (int64_t k = 0; k < ell; ++k) out.push_back(kEllipsisBase + static_cast<int>(ell_rank - ell + k));
  }
  return out;
}

class EinsumKernel final : public Kernel {
 public:
  explicit EinsumKernel(const NodeInfo& n) {
    n.expect_attrs({"equation"});
    equation_ = n.attr_string("equation", "");
    TORQ_CHECK(!equation_.empty(), "Einsum needs an equation");
    plan_ = parse_equation(equation_);
    TORQ_CHECK(plan_.inputs.size() == n.num_inputs(), "Einsum equation '" + equation_ + "' has " +
                                                          std::to_string(plan_.inputs.size()) + " terms for " +
                                                          std::to_string(n.num_inputs()) + " inputs");
  }

  void compute(KernelContext& ctx) override {
    const size_t n_in = plan_.inputs.size();
    const DType dt = ctx.in(0).dtype();
    TORQ_SUPPORTED(is_float(dt) || is_integer(dt), std::string("Einsum on ") + dtype_name(dt) + " is not supported");
    int64_t ell_rank = 0;
    for (size_t i = 0; i < n_in; ++i) {
      TORQ_CHECK(ctx.in(i).dtype() == dt, "Einsum operands must share one dtype");
      const auto& t = plan_.inputs[i];
      const int64_t named = static_cast<int64_t>(t.letters.size()) - (t.has_ellipsis ? 1 : 0);
      if (t.has_ellipsis) ell_rank = std::max(ell_rank, ctx.in(i).rank() - named);
    }
    // Each label's size (broadcast over "..." dims of size 1) and each
    // operand's stride per label (repeated labels add: the diagonal).
    std::map<int, int64_t> size;
    std::vector<std::map<int, int64_t>> stride(n_in);
    std::map<int, int> uses;
    for (size_t i = 0; i < n_in; ++i) {
      const Tensor& x = ctx.in(i);
      const std::vector<int> labels = expand(plan_.inputs[i], x.rank(), ell_rank, equation_);
      int64_t s = 1;
      for (int64_t d = x.rank(); d-- > 0;) {
        const int l = labels[static_cast<size_t>(d)];
        const int64_t dim = x.dim(d);
        auto it = size.find(l);
        if (it == size.end() || it->second == 1) size[l] = dim;
        else TORQ_CHECK(dim == it->second || (dim == 1 && l >= kEllipsisBase),
                        "Einsum equation '" + equation_ + "': a label has sizes " + std::to_string(it->second) +
                            " and " + std::to_string(dim));
        if (dim != 1 || l < kEllipsisBase) stride[i][l] += s;
        s *= dim;
      }
      for (int l : labels) ++uses[l];
    }
    const std::vector<int> out_labels = output_labels(uses, ell_rank);
    std::vector<int> sum_labels;
    for (const auto& [l, n] : uses)
      if (std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end()) sum_labels.push_back(l);

    Shape out_shape;
    for (int l : out_labels) {
      TORQ_CHECK(size.count(l), "Einsum equation '" + equation_ + "': an output label is in no input");
      out_shape.push_back(size[l]);
    }
    std::vector<Tensor> f64(n_in);
    std::vector<const double*> data(n_in);
    for (size_t i = 0; i < n_in; ++i) {
      f64[i] = cast_tensor(ctx.in(i), DType::kF64, Rounding::kNearestEven);
      data[i] = f64[i].data<double>();
    }
    Tensor acc(DType::kF64, out_shape);
    double* o = acc.data<double>();
    // Per-operand offset steps of each output and summed label.
    auto steps = [&](const std::vector<int>& ls) {
      std::vector<std::vector<int64_t>> st(ls.size(), std::vector<int64_t>(n_in, 0));
      for (size_t k = 0; k < ls.size(); ++k)
        for (size_t i = 0; i < n_in; ++i) {
          auto it = stride[i].find(ls[k]);
          if (it != stride[i].end()) st[k][i] = it->second;
        }
      return st;
    };
    const auto out_st = steps(out_labels), sum_st = steps(sum_labels);
    std::vector<int64_t> sum_size;
    int64_t sum_total = 1;
    for (int l : sum_labels) {
      sum_size.push_back(size[l]);
      sum_total *= size[l];
    }
    std::vector<int64_t> base(n_in, 0), off(n_in), oi(out_labels.size(), 0), si(sum_labels.size());
    for (int64_t e = 0; e < acc.numel(); ++e) {
      double sum = 0;
      std::fill(si.begin(), si.end(), 0);
      off = base;
      for (int64_t k = 0; k < sum_total; ++k) {
        double prod = 1;
        for (size_t i = 0; i < n_in; ++i) prod *= data[i][off[i]];
        sum += prod;
        advance(si, sum_size, sum_st, off);
      }
      o[e] = sum;
      advance(oi, out_shape, out_st, base);
    }
    ctx.output(0) = cast_tensor(acc, dt, Rounding::kNearestEven);
  }

 private:
  // The output's labels: the explicit ones, or (implicit) the "..." dims
  // then the letters used once, in ASCII order.
  std::vector<int> output_labels(const std::map<int, int>& uses, int64_t ell_rank) const {
    std::vector<int> out;
    if (plan_.explicit_output) {
      for (int l : plan_.output.letters) {
        if (l != -2) {
          TORQ_CHECK(std::count(out.begin(), out.end(), l) == 0,
                     "Einsum equation '" + equation_ + "': an output label is repeated");
          out.push_back(l);
        } else {
          for (int64_t k = 0; k < ell_rank; ++k) out.push_back(kEllipsisBase + static_cast<int>(k));
        }
      }
      return out;
    }
    for (int64_t k = 0; k < ell_rank; ++k) out.push_back(kEllipsisBase + static_cast<int>(k));
    for (const auto& [l, n] : uses)
      if (l < kEllipsisBase && n == 1) out.push_back(l);
    return out;
  }

  // Odometer step of index `idx` over `dims` (last fastest), moving each
  // operand's offset by the steps of the digits that changed.
  static void advance(std::vector<int64_t>& idx, const std::vector<int64_t>& dims,
                      const std::vector<std::vector<int64_t>>& st, std::vector<int64_t>& off) {
    for (size_t d = idx.size(); d-- > 0;) {
      for (size_t i = 0; i < off.size(); ++i) off[i] += st[d][i];
      if (++idx[d] < dims[d]) return;
      for (size_t i = 0; i < off.size(); ++i) off[i] -= st[d][i] * dims[d];
      idx[d] = 0;
    }
  }

  std::string equation_;
  Plan plan_;
};

}  // namespace

void register_einsum_kernels(KernelRegistry& r) { r.add("Einsum", 12, 17, make_kernel<EinsumKernel>()); }

}  // namespace torq::engine

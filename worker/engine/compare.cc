#include "worker/engine/compare.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "pipeline/base/error.h"
#include "worker/engine/cpu_isa.h"

namespace torq::engine {

namespace {

constexpr double kScreen = 1.0 - 1e-12;

// The vector helpers below are inline and file-local: no ABI crosses them.
#pragma GCC diagnostic ignored "-Wpsabi"

// Eight lanes of doubles as two GCC vectors (element i goes to lane i % 8):
// independent sums and maxima the compiler keeps in vector registers.
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef long long v4l __attribute__((vector_size(32)));

inline v4d vabs(v4d x) { return x < 0.0 ? -x : x; }
inline v4d vmax(v4d a, v4d b) { return a < b ? b : a; }  // std::max(a, b) lane-wise
inline bool any(v4l m) { return (m[0] | m[1] | m[2] | m[3]) != 0; }
inline v4l finite(v4d x) { return vabs(x) <= std::numeric_limits<double>::max(); }
inline bool finite(double x) { return std::fabs(x) <= std::numeric_limits<double>::max(); }

struct Lanes {
  v4d max_abs[2] = {}, max_ref[2] = {}, sum_abs[2] = {}, sum_sq[2] = {}, sa[2] = {}, se[2] = {}, fin[2] = {};
};

// One element in lane k, with the NaN/Inf accounting (a block with a
// non-finite element goes element by element).
inline void element(double o, double e, int k, double tol, Lanes& l, TensorDiff& d, bool& allclose) {
  if (!finite(o) || !finite(e)) {
    if (!(std::isnan(o) && std::isnan(e)) && o != e) {
      ++d.nan_mismatch;
      allclose = false;
    }
    return;
  }
  const int h = k / 4, j = k % 4;
  const double diff = std::fabs(e - o);
  const double den = std::fabs(e) + std::fabs(o) + 1e-6;
  l.max_abs[h][j] = std::max(l.max_abs[h][j], diff);
  l.max_ref[h][j] = std::max(l.max_ref[h][j], std::fabs(e));
  // rel = diff / den, divided only where it can raise max_rel or pass
  // tol: the products screen with a 1e-12 margin, far above their
  // rounding, so every element whose quotient counts is divided.
  if (diff > std::min(d.max_rel, tol) * den * kScreen) {
    const double rel = diff / den;
    d.max_rel = std::max(d.max_rel, rel);
    if (rel > tol) ++d.over_tol;
  }
  if (diff > 1e-2 + 1e-2 * std::fabs(e)) allclose = false;
  l.sum_abs[h][j] += diff;
  l.sum_sq[h][j] += diff * diff;
  l.sa[h][j] += o;
  l.se[h][j] += e;
  l.fin[h][j] += 1.0;
}

// Eight elements, lane-wise (as element() each; the quotients of those that
// may count are taken in element order afterwards).
inline void block(const v4d* o, const v4d* e, double tol, Lanes& l, TensorDiff& d, bool& allclose) {
  if (any(~(finite(o[0]) & finite(o[1]) & finite(e[0]) & finite(e[1])))) {
    for (int k = 0; k < 8; ++k) element(o[k / 4][k % 4], e[k / 4][k % 4], k, tol, l, d, allclose);
    return;
  }
  const double screen = std::min(d.max_rel, tol) * kScreen;
  v4l rel = {}, far = {};
  v4d diff[2], den[2];
  for (int h = 0; h < 2; ++h) {
    diff[h] = vabs(e[h] - o[h]);
    den[h] = vabs(e[h]) + vabs(o[h]) + 1e-6;
    l.max_abs[h] = vmax(l.max_abs[h], diff[h]);
    l.max_ref[h] = vmax(l.max_ref[h], vabs(e[h]));
    rel |= diff[h] > screen * den[h];
    far |= diff[h] > 1e-2 + 1e-2 * vabs(e[h]);
    l.sum_abs[h] += diff[h];
    l.sum_sq[h] += diff[h] * diff[h];
    l.sa[h] += o[h];
    l.se[h] += e[h];
    l.fin[h] += 1.0;
  }
  if (any(far)) allclose = false;
  if (!any(rel)) return;
  for (int k = 0; k < 8; ++k) {
    const double df = diff[k / 4][k % 4], dn = den[k / 4][k % 4];
    if (df > std::min(d.max_rel, tol) * dn * kScreen) {
      const double r = df / dn;
      d.max_rel = std::max(d.max_rel, r);
      if (r > tol) ++d.over_tol;
    }
  }
}

inline double sum(const v4d* v) {
  double s = 0;
  for (int k = 0; k < 8; ++k) s += v[k / 4][k % 4];
  return s;
}
inline double max(const v4d* v) {
  double m = 0;
  for (int k = 0; k < 8; ++k) m = std::max(m, v[k / 4][k % 4]);
  return m;
}

// The comparison over a loader of 8 elements `load(i, o, e)` and element
// readers `act(i)`, `exp(i)` (doubles): f32 tensors are read straight from
// memory, others through get_as_double. The same arithmetic in the same
// order whatever the readers; the sums go by lanes, so they differ from a
// sequential sum in the last bits only (about 1e-16 relative), and the
// maxima and counts are exact.
// `bulk.first(l, d, allclose)` and `bulk.second(mean_a, mean_e, cov, va, ve)`
// may take the whole blocks of either pass on their own (the same
// arithmetic, lane for lane) and return how many elements they took.
template <class L, class A, class E, class B>
__attribute__((always_inline)) inline TensorDiff compare_with(L load, A act, E exp, int64_t n, double tol, B bulk) {
  TensorDiff d;
  d.size = n;
  Lanes l;
  bool allclose = true;
  v4d o[2], e[2];
  int64_t i = bulk.first(l, d, allclose);
  for (; i + 8 <= n; i += 8) {
    load(i, o, e);
    block(o, e, tol, l, d, allclose);
  }
  for (int k = 0; i < n; ++i, ++k) element(act(i), exp(i), k, tol, l, d, allclose);
  d.max_abs = max(l.max_abs);
  d.max_ref = max(l.max_ref);
  const double fin = sum(l.fin);
  if (fin > 0) {
    d.mean_abs = sum(l.sum_abs) / fin;
    d.rmse = std::sqrt(sum(l.sum_sq) / fin);
  }
  if (allclose && fin > 0) {
    d.pcc = 1.0;
    return d;
  }
  const v4d ma = v4d{} + sum(l.sa) / fin, me = v4d{} + sum(l.se) / fin;
  v4d cov[2] = {}, va[2] = {}, ve[2] = {};
  for (i = bulk.second(ma[0], me[0], cov, va, ve); i + 8 <= n; i += 8) {
    load(i, o, e);
    for (int h = 0; h < 2; ++h) {
      const v4l ok = finite(o[h]) & finite(e[h]);
      const v4d a = ok ? o[h] - ma : v4d{}, b = ok ? e[h] - me : v4d{};
      cov[h] += a * b;
      va[h] += a * a;
      ve[h] += b * b;
    }
  }
  for (int k = 0; i < n; ++i, ++k) {
    const double x = act(i), y = exp(i);
    if (!finite(x) || !finite(y)) continue;
    cov[k / 4][k % 4] += (x - ma[0]) * (y - me[0]);
    va[k / 4][k % 4] += (x - ma[0]) * (x - ma[0]);
    ve[k / 4][k % 4] += (y - me[0]) * (y - me[0]);
  }
  const double c = sum(cov), a = sum(va), b = sum(ve);
  d.pcc = (a > 0 && b > 0) ? c / std::sqrt(a * b) : NAN;
  return d;
}

#pragma GCC push_options
#pragma GCC target("avx512f")
// The sums and the allclose test must round as the generic path does (a
// multiply, then an add): GCC would fuse them into FMAs, which AVX-512 has.
#pragma GCC optimize("fp-contract=off")

// All lanes: the maskz forms of cvtps_pd and max_pd (GCC 12 warns that the
// plain ones read an undefined vector).
constexpr __mmask8 kAll8 = 0xff;

// The first pass over the whole blocks of two f32 arrays with each group of
// lanes in one AVX-512 register (lane k holds elements i % 8 == k, as the
// two v4d of Lanes do): block()'s operations in block()'s order, lane for
// lane, so every maximum, count and sum is the same bits as there. A block
// with a non-finite element goes through element() as in block().
int64_t first_pass_avx512(const float* pa, const float* pe, int64_t n, double tol, Lanes& l, TensorDiff& d,
                          bool& allclose) {
  auto get = [](const v4d* v) { return _mm512_loadu_pd(reinterpret_cast<const double*>(v)); };
  auto put = [](v4d* v, __m512d x) { _mm512_storeu_pd(reinterpret_cast<double*>(v), x); };
  __m512d max_abs = get(l.max_abs), max_ref = get(l.max_ref), sum_abs = get(l.sum_abs), sum_sq = get(l.sum_sq);
  __m512d sa = get(l.sa), se = get(l.se), fin = get(l.fin);
  const __m512d big = _mm512_set1_pd(std::numeric_limits<double>::max());
  const __m512d tiny = _mm512_set1_pd(1e-6), c2 = _mm512_set1_pd(1e-2), one = _mm512_set1_pd(1.0);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512d o = _mm512_maskz_cvtps_pd(kAll8, _mm256_loadu_ps(pa + i));
    const __m512d e = _mm512_maskz_cvtps_pd(kAll8, _mm256_loadu_ps(pe + i));
    const __m512d ao = _mm512_abs_pd(o), ae = _mm512_abs_pd(e);
    if ((_mm512_cmp_pd_mask(ao, big, _CMP_LE_OQ) & _mm512_cmp_pd_mask(ae, big, _CMP_LE_OQ)) != 0xff) {
      put(l.max_abs, max_abs), put(l.max_ref, max_ref), put(l.sum_abs, sum_abs), put(l.sum_sq, sum_sq);
      put(l.sa, sa), put(l.se, se), put(l.fin, fin);
      for (int k = 0; k < 8; ++k) element(pa[i + k], pe[i + k], k, tol, l, d, allclose);
      max_abs = get(l.max_abs), max_ref = get(l.max_ref), sum_abs = get(l.sum_abs), sum_sq = get(l.sum_sq);
      sa = get(l.sa), se = get(l.se), fin = get(l.fin);
      continue;
    }
    const double screen = std::min(d.max_rel, tol) * kScreen;
    const __m512d diff = _mm512_abs_pd(_mm512_sub_pd(e, o));
    const __m512d den = _mm512_add_pd(_mm512_add_pd(ae, ao), tiny);
    max_abs = _mm512_maskz_max_pd(kAll8, max_abs, diff);  // all >= +0 and not NaN: as vmax()
    max_ref = _mm512_maskz_max_pd(kAll8, max_ref, ae);
    const __mmask8 rel = _mm512_cmp_pd_mask(diff, _mm512_mul_pd(_mm512_set1_pd(screen), den), _CMP_GT_OQ);
    if (_mm512_cmp_pd_mask(diff, _mm512_add_pd(c2, _mm512_mul_pd(c2, ae)), _CMP_GT_OQ)) allclose = false;
    sum_abs = _mm512_add_pd(sum_abs, diff);
    sum_sq = _mm512_add_pd(sum_sq, _mm512_mul_pd(diff, diff));
    sa = _mm512_add_pd(sa, o);
    se = _mm512_add_pd(se, e);
    fin = _mm512_add_pd(fin, one);
    if (!rel) continue;
    alignas(64) double df[8], dn[8];
    _mm512_store_pd(df, diff);
    _mm512_store_pd(dn, den);
    for (int k = 0; k < 8; ++k) {
      if (df[k] > std::min(d.max_rel, tol) * dn[k] * kScreen) {
        const double r = df[k] / dn[k];
        d.max_rel = std::max(d.max_rel, r);
        if (r > tol) ++d.over_tol;
      }
    }
  }
  put(l.max_abs, max_abs), put(l.max_ref, max_ref), put(l.sum_abs, sum_abs), put(l.sum_sq, sum_sq);
  put(l.sa, sa), put(l.se, se), put(l.fin, fin);
  return i;
}

// The second pass (the PCC's co-moments about the means) over the whole
// blocks, as compare_with's loop, lane for lane.
int64_t second_pass_avx512(const float* pa, const float* pe, int64_t n, double mean_a, double mean_e, v4d* cov,
                           v4d* va, v4d* ve) {
  __m512d c = _mm512_setzero_pd(), xa = _mm512_setzero_pd(), xe = _mm512_setzero_pd();
  const __m512d big = _mm512_set1_pd(std::numeric_limits<double>::max());
  const __m512d ma = _mm512_set1_pd(mean_a), me = _mm512_set1_pd(mean_e);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512d o = _mm512_maskz_cvtps_pd(kAll8, _mm256_loadu_ps(pa + i));
    const __m512d e = _mm512_maskz_cvtps_pd(kAll8, _mm256_loadu_ps(pe + i));
    const __mmask8 ok =
        _mm512_cmp_pd_mask(_mm512_abs_pd(o), big, _CMP_LE_OQ) & _mm512_cmp_pd_mask(_mm512_abs_pd(e), big, _CMP_LE_OQ);
    const __m512d a = _mm512_maskz_sub_pd(ok, o, ma), b = _mm512_maskz_sub_pd(ok, e, me);
    c = _mm512_add_pd(c, _mm512_mul_pd(a, b));
    xa = _mm512_add_pd(xa, _mm512_mul_pd(a, a));
    xe = _mm512_add_pd(xe, _mm512_mul_pd(b, b));
  }
  _mm512_storeu_pd(reinterpret_cast<double*>(cov), c);
  _mm512_storeu_pd(reinterpret_cast<double*>(va), xa);
  _mm512_storeu_pd(reinterpret_cast<double*>(ve), xe);
  return i;
}

#pragma GCC pop_options

// The passes compare_with runs over whole blocks by itself.
struct NoBulk {
  int64_t first(Lanes&, TensorDiff&, bool&) const { return 0; }
  int64_t second(double, double, v4d*, v4d*, v4d*) const { return 0; }
};

// Both f32: eight floats a side per load, widened in vector registers; the
// first pass in AVX-512 registers where the CPU has them (1.6 -> ~1 ns an
// element), the rest built for AVX2 too, chosen at run time.
__attribute__((target_clones("avx2", "default"))) TensorDiff compare_f32(const float* pa, const float* pe, int64_t n,
                                                                        double tol) {
  auto load = [pa, pe](int64_t i, v4d* o, v4d* e) {
    v4f f[4];
    std::memcpy(f, pa + i, 32);
    std::memcpy(f + 2, pe + i, 32);
    o[0] = __builtin_convertvector(f[0], v4d);
    o[1] = __builtin_convertvector(f[1], v4d);
    e[0] = __builtin_convertvector(f[2], v4d);
    e[1] = __builtin_convertvector(f[3], v4d);
  };
  static const bool avx512 = simd_allowed(Simd::kAvx512);
  struct Bulk {
    const float *pa, *pe;
    int64_t n;
    double tol;
    int64_t first(Lanes& l, TensorDiff& d, bool& allclose) const {
      return avx512 ? first_pass_avx512(pa, pe, n, tol, l, d, allclose) : 0;
    }
    int64_t second(double ma, double me, v4d* cov, v4d* va, v4d* ve) const {
      return avx512 ? second_pass_avx512(pa, pe, n, ma, me, cov, va, ve) : 0;
    }
  };
  return compare_with(load, [pa](int64_t i) { return static_cast<double>(pa[i]); },
                      [pe](int64_t i) { return static_cast<double>(pe[i]); }, n, tol, Bulk{pa, pe, n, tol});
}

template <class A, class E>
TensorDiff compare_any(A act, E exp, int64_t n, double tol) {
  auto load = [&](int64_t i, v4d* o, v4d* e) {
    for (int k = 0; k < 8; ++k) {
      o[k / 4][k % 4] = act(i + k);
      e[k / 4][k % 4] = exp(i + k);
    }
  };
  return compare_with(load, act, exp, n, tol, NoBulk{});
}

}  // namespace

TensorDiff compare_tensors(const Tensor& actual, const Tensor& expected, double tol) {
  if (actual.shape() != expected.shape())
    throw EngineError(ErrorKind::kInvalidInput, "shape " + shape_str(actual.shape()) + " differs from expected " +
                                                    shape_str(expected.shape()));
  const int64_t n = actual.numel();
  auto generic = [](const Tensor& t) { return [&t](int64_t i) { return t.get_as_double(i); }; };
  auto f32 = [](const Tensor& t) {
    const float* p = t.data<float>();
    return [p](int64_t i) { return static_cast<double>(p[i]); };
  };
  const bool fa = actual.dtype() == DType::kF32 && actual.is_plain();
  const bool fe = expected.dtype() == DType::kF32 && expected.is_plain();
  if (fa && fe) return compare_f32(actual.data<float>(), expected.data<float>(), n, tol);
  if (fa) return compare_any(f32(actual), generic(expected), n, tol);
  if (fe) return compare_any(generic(actual), f32(expected), n, tol);
  return compare_any(generic(actual), generic(expected), n, tol);
}

}  // namespace torq::engine

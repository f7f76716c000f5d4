// Eight-lane float32 SIMD vector (sixteen-lane where MLX_SIMD_WIDE asks, below) and vectorized
// elementwise math.
//
// With AVX2 + FMA (e.g. -march=x86-64-v3) VecF wraps __m256; otherwise it is a
// portable array of 8 floats with per-lane loops. Both paths run the same
// algorithms and give the same results (the portable fma is fused, or
// emulated in double where the target has no fast fmaf).
//
// Maximum error in ulps against the double-precision libm, over all finite and
// special inputs. First the bound that tests/cpp/vmath_test.cpp enforces, then
// the maximum measured over every 11th float (all sign/exponent combinations):
//   exp 1.5 (1.01)   expm1 2 (1.47)    log 1.5 (0.84)   log1p 2 (1.47)
//   log2 1.5 (1.03)  log10 1.5 (0.98)  sin 1.5 (0.80)   cos 1.5 (0.79)
//   tan 3 (2.20)     tanh 2 (1.50)     sigmoid 2.5 (1.92)  erf 2.5 (1.66)
//   sinh 2 (1.61)    cosh 2 (1.47)     atan 2 (1.62)    asin 2.5 (1.99)
//   acos 1.5 (1.15)  asinh 2.5 (1.79)  acosh 2.5 (2.01)  atanh 2.5 (1.86)
//   sqrt 0.5 (0.5)   rsqrt 2 (1.49)
//   erfinv: relative error < 1e-6 (measured 1.7e-7, 2.0 ulp).
// Subnormal inputs and results are handled (no flush to zero), NaN propagates,
// and overflow/underflow give inf/0. sin/cos/tan reduce |x| <= kTrigReduceMax
// inline and hand larger lanes (and inf/NaN) to the scalar double libm, so
// their bounds hold for every float.

#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

// A file that defines MLX_SIMD_WIDE before including this one and is compiled for AVX-512
// (simd/vmath_avx512.cpp) gets sixteen lanes instead, with the same algorithms and results; the
// inline namespace keeps its definitions apart from the eight-lane ones of other files.
#if defined(MLX_SIMD_WIDE) && defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>
#define MLX_SIMD_AVX512 1
#define MLX_SIMD_ISA avx512
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define MLX_SIMD_AVX2 1
#define MLX_SIMD_ISA avx2
#else
#define MLX_SIMD_ISA portable
#endif

namespace mlx::core::simd {
inline namespace MLX_SIMD_ISA {

#ifdef MLX_SIMD_AVX512
inline constexpr int kWidth = 16;
#else
inline constexpr int kWidth = 8;
#endif

// ---------------------------------------------------------------------------
// Primitive layer.
//
// min(a, b) / max(a, b) follow x86 minps/maxps: they return b when either
// operand is NaN. The math code relies on this to let NaN inputs flow through
// clamps: write min(bound, x), not min(x, bound).
// ---------------------------------------------------------------------------

#if defined(MLX_SIMD_AVX512)

struct VecF {
  __m512 v;
  VecF() = default;
  VecF(__m512 x) : v(x) {}
  VecF(float x) : v(_mm512_set1_ps(x)) {}
};

// Lane mask produced by comparisons: one bit per lane.
struct MaskF {
  __mmask16 m;
};

namespace detail {

struct VecI {
  __m512i v;
  VecI() = default;
  VecI(__m512i x) : v(x) {}
  VecI(int32_t x) : v(_mm512_set1_epi32(x)) {}
};

inline __mmask16 tail_mask(int n) {
  return static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << std::max(n, 0)) - 1);
}

}  // namespace detail

inline VecF broadcast(float x) { return VecF(x); }
inline VecF load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, VecF a) { _mm512_storeu_ps(p, a.v); }
// Loads the first n (0..16) floats; other lanes are zero and are not touched in memory.
inline VecF load_partial(const float* p, int n) {
  return _mm512_maskz_loadu_ps(detail::tail_mask(n), p);
}
// Stores the first n (0..16) lanes; memory past them is not touched.
inline void store_partial(float* p, VecF a, int n) {
  _mm512_mask_storeu_ps(p, detail::tail_mask(n), a.v);
}
// Non-temporal store to a 64-byte aligned p (see the eight-lane one).
inline void store_stream(float* p, VecF a) { _mm512_stream_ps(p, a.v); }
inline void stream_fence() { _mm_sfence(); }

inline VecF operator+(VecF a, VecF b) { return _mm512_add_ps(a.v, b.v); }
inline VecF operator-(VecF a, VecF b) { return _mm512_sub_ps(a.v, b.v); }
inline VecF operator*(VecF a, VecF b) { return _mm512_mul_ps(a.v, b.v); }
inline VecF operator/(VecF a, VecF b) { return _mm512_div_ps(a.v, b.v); }
inline VecF operator-(VecF a) { return _mm512_xor_ps(a.v, _mm512_set1_ps(-0.0f)); }
inline VecF fma(VecF a, VecF b, VecF c) { return _mm512_fmadd_ps(a.v, b.v, c.v); }
inline VecF fnma(VecF a, VecF b, VecF c) { return _mm512_fnmadd_ps(a.v, b.v, c.v); }
inline VecF min(VecF a, VecF b) { return _mm512_min_ps(a.v, b.v); }
inline VecF max(VecF a, VecF b) { return _mm512_max_ps(a.v, b.v); }
inline VecF abs(VecF a) { return _mm512_andnot_ps(_mm512_set1_ps(-0.0f), a.v); }
inline VecF copysign(VecF mag, VecF sgn) {
  const __m512 s = _mm512_set1_ps(-0.0f);
  return _mm512_or_ps(_mm512_andnot_ps(s, mag.v), _mm512_and_ps(s, sgn.v));
}
inline VecF round(VecF a) {
  return _mm512_roundscale_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
inline VecF sqrt(VecF a) { return _mm512_sqrt_ps(a.v); }

inline MaskF operator==(VecF a, VecF b) { return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_EQ_OQ)}; }
inline MaskF operator!=(VecF a, VecF b) { return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_NEQ_UQ)}; }
inline MaskF operator<(VecF a, VecF b) { return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ)}; }
inline MaskF operator<=(VecF a, VecF b) { return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_LE_OQ)}; }
inline MaskF operator>(VecF a, VecF b) { return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_GT_OQ)}; }
inline MaskF operator>=(VecF a, VecF b) { return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_GE_OQ)}; }
inline MaskF is_nan(VecF a) { return {_mm512_cmp_ps_mask(a.v, a.v, _CMP_UNORD_Q)}; }
inline MaskF operator&(MaskF a, MaskF b) { return {static_cast<__mmask16>(a.m & b.m)}; }
inline MaskF operator|(MaskF a, MaskF b) { return {static_cast<__mmask16>(a.m | b.m)}; }
inline MaskF operator~(MaskF a) { return {static_cast<__mmask16>(~a.m)}; }
inline bool any(MaskF a) { return a.m != 0; }
inline bool all(MaskF a) { return a.m == 0xffff; }
inline VecF select(MaskF m, VecF a, VecF b) { return _mm512_mask_blend_ps(m.m, b.v, a.v); }

namespace detail {

inline VecI as_int(VecF a) { return _mm512_castps_si512(a.v); }
inline VecF as_float(VecI a) { return _mm512_castsi512_ps(a.v); }
inline VecI to_int(VecF a) { return _mm512_cvttps_epi32(a.v); }
inline VecF to_float(VecI a) { return _mm512_cvtepi32_ps(a.v); }
inline VecI operator+(VecI a, VecI b) { return _mm512_add_epi32(a.v, b.v); }
inline VecI operator-(VecI a, VecI b) { return _mm512_sub_epi32(a.v, b.v); }
inline VecI operator&(VecI a, VecI b) { return _mm512_and_si512(a.v, b.v); }
inline VecI operator^(VecI a, VecI b) { return _mm512_xor_si512(a.v, b.v); }
inline VecI max(VecI a, VecI b) { return _mm512_max_epi32(a.v, b.v); }
template <int N>
inline VecI shl(VecI a) {
  return _mm512_slli_epi32(a.v, N);
}
template <int N>
inline VecI sra(VecI a) {
  return _mm512_srai_epi32(a.v, N);
}
inline MaskF operator==(VecI a, VecI b) { return {_mm512_cmpeq_epi32_mask(a.v, b.v)}; }

}  // namespace detail

#elif defined(MLX_SIMD_AVX2)

struct VecF {
  __m256 v;
  VecF() = default;
  VecF(__m256 x) : v(x) {}
  VecF(float x) : v(_mm256_set1_ps(x)) {}
};

// Lane mask produced by comparisons: all bits set where true.
struct MaskF {
  __m256 m;
};

namespace detail {

struct VecI {
  __m256i v;
  VecI() = default;
  VecI(__m256i x) : v(x) {}
  VecI(int32_t x) : v(_mm256_set1_epi32(x)) {}
};

inline __m256i tail_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace detail

inline VecF broadcast(float x) { return VecF(x); }
inline VecF load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, VecF a) { _mm256_storeu_ps(p, a.v); }
// Loads the first n (0..8) floats; other lanes are zero and are not touched in memory.
inline VecF load_partial(const float* p, int n) {
  return _mm256_maskload_ps(p, detail::tail_mask(n));
}
// Stores the first n (0..8) lanes; memory past them is not touched.
inline void store_partial(float* p, VecF a, int n) {
  _mm256_maskstore_ps(p, detail::tail_mask(n), a.v);
}

// Non-temporal store to a 32-byte aligned p: bypasses the cache, for outputs too
// large to stay in it. Call stream_fence() before other threads read the data.
inline void store_stream(float* p, VecF a) { _mm256_stream_ps(p, a.v); }
inline void stream_fence() { _mm_sfence(); }

inline VecF operator+(VecF a, VecF b) { return _mm256_add_ps(a.v, b.v); }
inline VecF operator-(VecF a, VecF b) { return _mm256_sub_ps(a.v, b.v); }
inline VecF operator*(VecF a, VecF b) { return _mm256_mul_ps(a.v, b.v); }
inline VecF operator/(VecF a, VecF b) { return _mm256_div_ps(a.v, b.v); }
inline VecF operator-(VecF a) { return _mm256_xor_ps(a.v, _mm256_set1_ps(-0.0f)); }
// a * b + c and c - a * b, each with a single rounding.
inline VecF fma(VecF a, VecF b, VecF c) { return _mm256_fmadd_ps(a.v, b.v, c.v); }
inline VecF fnma(VecF a, VecF b, VecF c) { return _mm256_fnmadd_ps(a.v, b.v, c.v); }
inline VecF min(VecF a, VecF b) { return _mm256_min_ps(a.v, b.v); }
inline VecF max(VecF a, VecF b) { return _mm256_max_ps(a.v, b.v); }
inline VecF abs(VecF a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a.v); }
// Magnitude of mag with the sign bit of sgn.
inline VecF copysign(VecF mag, VecF sgn) {
  const __m256 s = _mm256_set1_ps(-0.0f);
  return _mm256_or_ps(_mm256_andnot_ps(s, mag.v), _mm256_and_ps(s, sgn.v));
}
// Round to nearest integer, ties to even.
inline VecF round(VecF a) {
  return _mm256_round_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
inline VecF sqrt(VecF a) { return _mm256_sqrt_ps(a.v); }

inline MaskF operator==(VecF a, VecF b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_EQ_OQ)}; }
inline MaskF operator!=(VecF a, VecF b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_NEQ_UQ)}; }
inline MaskF operator<(VecF a, VecF b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ)}; }
inline MaskF operator<=(VecF a, VecF b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_LE_OQ)}; }
inline MaskF operator>(VecF a, VecF b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_GT_OQ)}; }
inline MaskF operator>=(VecF a, VecF b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_GE_OQ)}; }
inline MaskF is_nan(VecF a) { return {_mm256_cmp_ps(a.v, a.v, _CMP_UNORD_Q)}; }
inline MaskF operator&(MaskF a, MaskF b) { return {_mm256_and_ps(a.m, b.m)}; }
inline MaskF operator|(MaskF a, MaskF b) { return {_mm256_or_ps(a.m, b.m)}; }
inline MaskF operator~(MaskF a) {
  return {_mm256_xor_ps(a.m, _mm256_castsi256_ps(_mm256_set1_epi32(-1)))};
}
inline bool any(MaskF a) { return _mm256_movemask_ps(a.m) != 0; }
inline bool all(MaskF a) { return _mm256_movemask_ps(a.m) == 0xff; }
// Lane-wise m ? a : b.
inline VecF select(MaskF m, VecF a, VecF b) { return _mm256_blendv_ps(b.v, a.v, m.m); }

inline float hsum(VecF a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Largest lane; NaN if any lane is NaN.
inline float hmax(VecF a) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return any(is_nan(a)) ? std::numeric_limits<float>::quiet_NaN() : _mm_cvtss_f32(s);
}

// Transposes the 8 x 8 matrix whose rows are r[0..7].
inline void transpose8(VecF r[kWidth]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i].v, r[i + 1].v);
    t[i + 1] = _mm256_unpackhi_ps(r[i].v, r[i + 1].v);
  }
  for (int i = 0; i < 8; i += 4) {
    for (int k = 0; k < 2; ++k) {
      u[i + k] = _mm256_shuffle_ps(t[i + k], t[i + k + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[i + k + 2] = _mm256_shuffle_ps(t[i + k], t[i + k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    }
  }
  // u[0..3]: rows 0-3 of columns (0, 4), (2, 6), (1, 5), (3, 7) in the low / high halves.
  constexpr int kOrder[4] = {0, 2, 1, 3};
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2f128_ps(u[kOrder[c]], u[kOrder[c] + 4], 0x20);
    r[c + 4] = _mm256_permute2f128_ps(u[kOrder[c]], u[kOrder[c] + 4], 0x31);
  }
}

namespace detail {

inline VecI as_int(VecF a) { return _mm256_castps_si256(a.v); }
inline VecF as_float(VecI a) { return _mm256_castsi256_ps(a.v); }
// Truncating conversion; out-of-range and NaN lanes give INT32_MIN.
inline VecI to_int(VecF a) { return _mm256_cvttps_epi32(a.v); }
inline VecF to_float(VecI a) { return _mm256_cvtepi32_ps(a.v); }
inline VecI operator+(VecI a, VecI b) { return _mm256_add_epi32(a.v, b.v); }
inline VecI operator-(VecI a, VecI b) { return _mm256_sub_epi32(a.v, b.v); }
inline VecI operator&(VecI a, VecI b) { return _mm256_and_si256(a.v, b.v); }
inline VecI operator^(VecI a, VecI b) { return _mm256_xor_si256(a.v, b.v); }
inline VecI max(VecI a, VecI b) { return _mm256_max_epi32(a.v, b.v); }
template <int N>
inline VecI shl(VecI a) {
  return _mm256_slli_epi32(a.v, N);
}
template <int N>
inline VecI sra(VecI a) {
  return _mm256_srai_epi32(a.v, N);
}
inline MaskF operator==(VecI a, VecI b) {
  return {_mm256_castsi256_ps(_mm256_cmpeq_epi32(a.v, b.v))};
}

}  // namespace detail

#else  // Portable fallback.

struct VecF {
  float v[kWidth];
  VecF() = default;
  VecF(float x) {
    for (float& e : v)
      e = x;
  }
};

struct MaskF {
  bool m[kWidth];
};

namespace detail {

struct VecI {
  int32_t v[kWidth];
  VecI() = default;
  VecI(int32_t x) {
    for (int32_t& e : v)
      e = x;
  }
};

template <class F>
inline VecF map(VecF a, F f) {
  VecF r;
  for (int i = 0; i < kWidth; ++i)
    r.v[i] = f(a.v[i]);
  return r;
}
template <class F>
inline VecF map(VecF a, VecF b, F f) {
  VecF r;
  for (int i = 0; i < kWidth; ++i)
    r.v[i] = f(a.v[i], b.v[i]);
  return r;
}
template <class F>
inline MaskF cmp(VecF a, VecF b, F f) {
  MaskF r;
  for (int i = 0; i < kWidth; ++i)
    r.m[i] = f(a.v[i], b.v[i]);
  return r;
}
template <class F>
inline VecI imap(VecI a, VecI b, F f) {
  VecI r;
  for (int i = 0; i < kWidth; ++i)
    r.v[i] = f(a.v[i], b.v[i]);
  return r;
}

inline float fma1(float a, float b, float c) {
#ifdef FP_FAST_FMAF
  return std::fma(a, b, c);
#else
  // The product is exact in double; the sum rounds twice, which only matters
  // in rare halfway cases that none of the algorithms below depend on.
  return static_cast<float>(static_cast<double>(a) * b + c);
#endif
}

}  // namespace detail

inline VecF broadcast(float x) { return VecF(x); }
inline VecF load(const float* p) {
  VecF r;
  std::memcpy(r.v, p, sizeof(r.v));
  return r;
}
inline void store(float* p, VecF a) { std::memcpy(p, a.v, sizeof(a.v)); }
inline VecF load_partial(const float* p, int n) {
  VecF r(0.0f);
  for (int i = 0; i < n && i < kWidth; ++i)
    r.v[i] = p[i];
  return r;
}
inline void store_partial(float* p, VecF a, int n) {
  for (int i = 0; i < n && i < kWidth; ++i)
    p[i] = a.v[i];
}
inline void store_stream(float* p, VecF a) { store(p, a); }
inline void stream_fence() {}

inline VecF operator+(VecF a, VecF b) {
  return detail::map(a, b, [](float x, float y) { return x + y; });
}
inline VecF operator-(VecF a, VecF b) {
  return detail::map(a, b, [](float x, float y) { return x - y; });
}
inline VecF operator*(VecF a, VecF b) {
  return detail::map(a, b, [](float x, float y) { return x * y; });
}
inline VecF operator/(VecF a, VecF b) {
  return detail::map(a, b, [](float x, float y) { return x / y; });
}
inline VecF operator-(VecF a) {
  return detail::map(a, [](float x) { return -x; });
}
inline VecF fma(VecF a, VecF b, VecF c) {
  VecF r;
  for (int i = 0; i < kWidth; ++i)
    r.v[i] = detail::fma1(a.v[i], b.v[i], c.v[i]);
  return r;
}
inline VecF fnma(VecF a, VecF b, VecF c) { return fma(-a, b, c); }
inline VecF min(VecF a, VecF b) {
  return detail::map(a, b, [](float x, float y) { return x < y ? x : y; });
}
inline VecF max(VecF a, VecF b) {
  return detail::map(a, b, [](float x, float y) { return x > y ? x : y; });
}
inline VecF abs(VecF a) {
  return detail::map(a, [](float x) { return std::fabs(x); });
}
inline VecF copysign(VecF mag, VecF sgn) {
  return detail::map(mag, sgn, [](float x, float y) { return std::copysign(x, y); });
}
inline VecF round(VecF a) {
  // Adding 2^23 leaves no fraction bits, so the hardware rounds (to nearest even);
  // avoids a nearbyintf libcall.
  return detail::map(a, [](float x) {
    float m = std::fabs(x);
    return m < 0x1p23f ? std::copysign((m + 0x1p23f) - 0x1p23f, x) : x;
  });
}
inline VecF sqrt(VecF a) {
  return detail::map(a, [](float x) { return std::sqrt(x); });
}

inline MaskF operator==(VecF a, VecF b) {
  return detail::cmp(a, b, [](float x, float y) { return x == y; });
}
inline MaskF operator!=(VecF a, VecF b) {
  return detail::cmp(a, b, [](float x, float y) { return x != y; });
}
inline MaskF operator<(VecF a, VecF b) {
  return detail::cmp(a, b, [](float x, float y) { return x < y; });
}
inline MaskF operator<=(VecF a, VecF b) {
  return detail::cmp(a, b, [](float x, float y) { return x <= y; });
}
inline MaskF operator>(VecF a, VecF b) {
  return detail::cmp(a, b, [](float x, float y) { return x > y; });
}
inline MaskF operator>=(VecF a, VecF b) {
  return detail::cmp(a, b, [](float x, float y) { return x >= y; });
}
inline MaskF is_nan(VecF a) { return a != a; }
inline MaskF operator&(MaskF a, MaskF b) {
  MaskF r;
  for (int i = 0; i < kWidth; ++i)
    r.m[i] = a.m[i] && b.m[i];
  return r;
}
inline MaskF operator|(MaskF a, MaskF b) {
  MaskF r;
  for (int i = 0; i < kWidth; ++i)
    r.m[i] = a.m[i] || b.m[i];
  return r;
}
inline MaskF operator~(MaskF a) {
  for (bool& e : a.m)
    e = !e;
  return a;
}
inline bool any(MaskF a) {
  for (bool e : a.m)
    if (e)
      return true;
  return false;
}
inline bool all(MaskF a) {
  for (bool e : a.m)
    if (!e)
      return false;
  return true;
}
inline VecF select(MaskF m, VecF a, VecF b) {
  for (int i = 0; i < kWidth; ++i)
    if (m.m[i])
      b.v[i] = a.v[i];
  return b;
}

inline void transpose8(VecF r[kWidth]) {
  for (int i = 0; i < kWidth; ++i)
    for (int j = i + 1; j < kWidth; ++j)
      std::swap(r[i].v[j], r[j].v[i]);
}

// Same pairwise order as the AVX2 path so both give identical sums.
inline float hsum(VecF a) {
  float s[4];
  for (int i = 0; i < 4; ++i)
    s[i] = a.v[i] + a.v[i + 4];
  float s0 = s[0] + s[2], s1 = s[1] + s[3];
  return s0 + s1;
}

inline float hmax(VecF a) {
  float m = a.v[0];
  for (float e : a.v) {
    if (e != e)
      return std::numeric_limits<float>::quiet_NaN();
    m = e > m ? e : m;
  }
  return m;
}

namespace detail {

inline VecI as_int(VecF a) {
  VecI r;
  for (int i = 0; i < kWidth; ++i)
    r.v[i] = std::bit_cast<int32_t>(a.v[i]);
  return r;
}
inline VecF as_float(VecI a) {
  VecF r;
  for (int i = 0; i < kWidth; ++i)
    r.v[i] = std::bit_cast<float>(a.v[i]);
  return r;
}
inline VecI to_int(VecF a) {
  VecI r;
  for (int i = 0; i < kWidth; ++i) {
    float x = a.v[i];
    // Guarded: converting NaN or out-of-range floats is undefined in C++.
    r.v[i] = (x > -0x1p31f && x < 0x1p31f) ? static_cast<int32_t>(x) : INT32_MIN;
  }
  return r;
}
inline VecF to_float(VecI a) {
  VecF r;
  for (int i = 0; i < kWidth; ++i)
    r.v[i] = static_cast<float>(a.v[i]);
  return r;
}
// Integer lanes wrap like the hardware; unsigned arithmetic keeps that defined.
inline VecI operator+(VecI a, VecI b) {
  return imap(a, b, [](int32_t x, int32_t y) {
    return static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y));
  });
}
inline VecI operator-(VecI a, VecI b) {
  return imap(a, b, [](int32_t x, int32_t y) {
    return static_cast<int32_t>(static_cast<uint32_t>(x) - static_cast<uint32_t>(y));
  });
}
inline VecI operator&(VecI a, VecI b) {
  return imap(a, b, [](int32_t x, int32_t y) { return x & y; });
}
inline VecI operator^(VecI a, VecI b) {
  return imap(a, b, [](int32_t x, int32_t y) { return x ^ y; });
}
inline VecI max(VecI a, VecI b) {
  return imap(a, b, [](int32_t x, int32_t y) { return x > y ? x : y; });
}
template <int N>
inline VecI shl(VecI a) {
  for (int32_t& e : a.v)
    e = static_cast<int32_t>(static_cast<uint32_t>(e) << N);
  return a;
}
template <int N>
inline VecI sra(VecI a) {
  for (int32_t& e : a.v)
    e >>= N;
  return a;
}
inline MaskF operator==(VecI a, VecI b) {
  MaskF r;
  for (int i = 0; i < kWidth; ++i)
    r.m[i] = a.v[i] == b.v[i];
  return r;
}

}  // namespace detail

#endif  // MLX_SIMD_AVX512, MLX_SIMD_AVX2

inline VecF& operator+=(VecF& a, VecF b) { return a = a + b; }
inline VecF& operator-=(VecF& a, VecF b) { return a = a - b; }
inline VecF& operator*=(VecF& a, VecF b) { return a = a * b; }
inline VecF& operator/=(VecF& a, VecF b) { return a = a / b; }

// ---------------------------------------------------------------------------
// Math functions. Polynomial coefficients are minimax fits (relative error)
// computed for this file; comments give the interval and the fit's error.
// ---------------------------------------------------------------------------

namespace detail {

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
// Two-float splits: hi is the float nearest the constant, lo the remainder.
inline constexpr float kLn2Hi = 0.693147182f, kLn2Lo = -1.90465421e-09f;
inline constexpr float kLog2e = 1.44269502f, kLog2eLo = 1.92596303e-08f;
inline constexpr float kLog10e = 0.434294492f, kLog10eLo = -1.010305e-08f;
inline constexpr float kLog10Of2 = 0.30103001f, kLog10Of2Lo = -1.43209888e-08f;
inline constexpr float kPiO4 = 0.785398185f, kPiO4Lo = -2.18556941e-08f;
inline constexpr float kPiO2 = 1.57079637f, kPiO2Lo = -4.37113883e-08f;
inline constexpr float kPi = 3.14159274f, kPiLo = -8.74227766e-08f;

// c0 + c1 x + c2 x^2 + ... by Horner's rule, unrolled at compile time. Most
// accurate for wide arguments.
inline VecF horner(VecF, float c0) { return VecF(c0); }
template <class... Cs>
inline VecF horner(VecF x, float c0, Cs... cs) {
  return fma(horner(x, cs...), x, VecF(c0));
}

// The same polynomial by Estrin's scheme: pair up c[2i] + c[2i+1] x, then recurse
// in x^2. A dependency chain of log2(n) fmas instead of n lets more loop
// iterations overlap; used where |x| < 1 keeps it as accurate as Horner.
template <size_t N>
inline VecF estrin_array(VecF x, const VecF (&c)[N]);

template <size_t N, size_t... I>
inline VecF estrin_level(VecF x, const VecF (&c)[N], std::index_sequence<I...>) {
  const VecF q[] = {
      (2 * I + 1 < N ? fma(c[std::min(2 * I + 1, N - 1)], x, c[2 * I]) : c[2 * I])...};
  return estrin_array(x * x, q);
}

template <size_t N>
inline VecF estrin_array(VecF x, const VecF (&c)[N]) {
  if constexpr (N == 1) {
    return c[0];
  } else {
    return estrin_level(x, c, std::make_index_sequence<(N + 1) / 2>());
  }
}

template <class... Cs>
inline VecF estrin(VecF x, Cs... cs) {
  const VecF c[] = {VecF(cs)...};
  return estrin_array(x, c);
}

// 2^n for integer lanes n in [-126, 127].
inline VecF pow2i(VecI n) { return as_float(shl<23>(n + VecI(127))); }

// Flips the sign of a where bit 1 of q is set (the odd half-turns in trig).
inline VecF flip_sign_if_bit1(VecF a, VecI q) { return as_float(as_int(a) ^ shl<30>(q & VecI(2))); }

// e^r - 1 for |r| <= ln2/2 (+ rounding slack); relative error 2.5e-10.
inline VecF expm1_poly(VecF r) {
  VecF p =
      estrin(r, 0.5f, 0.166666657f, 0.041666355f, 0.00833339058f, 0.00139410421f, 0.000198459107f);
  return fma(r * r, p, r);
}

// Splits x = n ln2 + r with |r| <= ln2/2; n is returned as an integral float.
inline VecF exp_reduce(VecF x, VecF& n) {
  n = round(x * kLog2e);
  VecF r = fnma(n, VecF(kLn2Hi), x);  // exact: fused, and n has at most 8 bits
  return fnma(n, VecF(kLn2Lo), r);
}

// e^x * 2^shift for shift in {0, -1}; the shift lets sinh/cosh reach their
// overflow threshold (89.4) without an intermediate inf.
inline VecF exp_scaled(VecF x, int shift) {
  // Beyond these bounds the result is 0 or inf anyway; the clamp keeps n small.
  x = max(VecF(-104.0f), min(VecF(90.0f), x));
  VecF n;
  VecF r = exp_reduce(x, n);
  VecF p = expm1_poly(r) + 1.0f;
  VecI k = to_int(n) + VecI(shift);
  // For |x| <= 86 the result is normal: add k to the exponent of p.
  VecF res = as_float(as_int(p) + shl<23>(k));
  MaskF extreme = ~(abs(x) <= VecF(86.0f));
  if (any(extreme)) {
    // Scale in two steps so that subnormal and overflowing results round once.
    VecI k1 = sra<1>(k);
    res = select(extreme, p * pow2i(k1) * pow2i(k - k1), res);
  }
  return res;
}

// Splits finite x > 0 (subnormals included) into m * 2^e, m in [sqrt(1/2), sqrt(2)).
inline VecF frexp_sqrt2(VecF x, VecF& e) {
  MaskF sub = x < VecF(std::numeric_limits<float>::min());
  x = select(sub, x * 0x1p25f, x);
  // Offsetting the bits by (1 - sqrt(1/2)) moves the exponent carry to sqrt(1/2).
  VecI ix = as_int(x) + VecI(0x3f800000 - 0x3f3504f3);
  e = to_float(sra<23>(ix) - VecI(127)) - select(sub, VecF(25.0f), VecF(0.0f));
  return as_float((ix & VecI(0x007fffff)) + VecI(0x3f3504f3));
}

// log1p(f) - f for f in [sqrt(1/2)-1, sqrt(2)-1]: -f^2/2 + f^3 P(f), P relative error 6e-9.
inline VecF log1p_tail(VecF f) {
  VecF p = estrin(f, 0.333333313f, -0.250008374f, 0.200012922f, -0.166227639f, 0.14199695f,
                  -0.131641895f, 0.127791196f, -0.0764610097f);
  VecF f2 = f * f;
  return fma(f2 * f, p, f2 * -0.5f);
}

// Shared fix-ups for the log family: the argument x of log is t, res the core result.
inline VecF log_special(VecF t, VecF res) {
  res = select(t == VecF(kInf), VecF(kInf), res);
  res = select(t == VecF(0.0f), VecF(-kInf), res);
  return select(t >= VecF(0.0f), res, VecF(kNaN));
}

// The trig kernels take the reduced argument as r + r_lo (r_lo a fraction of an
// ulp of r); dropping r_lo would cost up to an ulp in sin/cos and two in tan.

// sin(r + r_lo) for |r| <= 0.81, z = r^2; the polynomial's relative error is 7e-12.
inline VecF sin_poly(VecF r, VecF r_lo, VecF z) {
  VecF p = estrin(z, -0.166666672f, 0.00833332818f, -0.000198390553f, 2.71573185e-06f);
  // r_lo enters scaled by cos(r) ~ 1 - z/2.
  return r + fma(r * z, p, fnma(z * 0.5f, r_lo, r_lo));
}

// cos(r + r_lo) for |r| <= 0.81, z = r^2; the polynomial's relative error is 1.6e-10.
// t = 1 - z/2 is formed with the rounding errors of z and t added back.
inline VecF cos_poly(VecF r, VecF r_lo, VecF z) {
  VecF q = estrin(z, 0.0416666418f, -0.00138871069f, 2.44094808e-05f);
  VecF h = z * 0.5f;
  VecF t = 1.0f - h;
  VecF low = fma(fma(r, r, -z), VecF(-0.5f), (1.0f - t) - h);
  low = fnma(r, r_lo, low);  // - sin(r) r_lo
  return t + fma(z * z, q, low);
}

}  // namespace detail

// Above this |x| the inline reduction loses accuracy; such lanes (and inf/NaN)
// are computed with the scalar double libm instead.
inline constexpr float kTrigReduceMax = 131072.0f;

namespace detail {

// x = q pi/2 + r + r_lo, |r| <= 0.81, for |x| <= kTrigReduceMax, with pi/2 split
// in three floats kPiO2 + kPiO2Lo + kPiO2Lo2. x - k kPiO2 is exact (fused, and k
// has at most 17 bits); the rounding of the next step is recovered exactly
// (product error by fma, sum error by TwoSum), so r + r_lo keeps the reduced
// argument to far beyond float precision.
inline VecF trig_reduce(VecF x, VecI& q, VecF& r_lo) {
  constexpr float kTwoOverPi = 0.636619747f, kPiO2Lo2 = -1.71512451e-15f;
  VecF k = round(x * kTwoOverPi);
  VecF r1 = fnma(k, VecF(kPiO2), x);
  VecF w = k * kPiO2Lo;
  VecF w_lo = fma(k, VecF(kPiO2Lo), -w);
  VecF r = r1 - w;
  VecF b = r - r1;
  VecF err = (r1 - (r - b)) - (w + b);
  r_lo = fnma(k, VecF(kPiO2Lo2), err - w_lo);
  q = to_int(k);
  return r;
}

// Recomputes lanes in `mask` with the scalar function f in double.
template <class F>
[[gnu::noinline, gnu::cold]] inline VecF scalar_lanes(VecF x, VecF res, MaskF mask, F f) {
  float xs[kWidth], rs[kWidth], ms[kWidth];
  store(xs, x);
  store(rs, res);
  store(ms, select(mask, VecF(1.0f), VecF(0.0f)));
  for (int i = 0; i < kWidth; ++i)
    if (ms[i] != 0.0f)
      rs[i] = static_cast<float>(f(static_cast<double>(xs[i])));
  return load(rs);
}

inline MaskF trig_needs_scalar(VecF x) { return ~(abs(x) <= VecF(kTrigReduceMax)); }

// sin(x) when quadrant_offset = 0, cos(x) when it is 1.
inline VecF sin_cos(VecF x, int quadrant_offset) {
  VecI q;
  VecF r_lo;
  VecF r = trig_reduce(x, q, r_lo);
  q = q + VecI(quadrant_offset);
  VecF z = r * r;
  VecF res = select((q & VecI(1)) == VecI(1), cos_poly(r, r_lo, z), sin_poly(r, r_lo, z));
  return flip_sign_if_bit1(res, q);
}

// Odd polynomial atan(t) for |t| <= 1/2; relative error 2.5e-10.
inline VecF atan_poly(VecF t) {
  VecF z = t * t;
  VecF p = estrin(z, -0.333333284f, 0.199994892f, -0.14272061f, 0.109408185f, -0.079834044f,
                  0.0387134925f);
  return fma(t * z, p, t);
}

// Shared by asin/acos: returns s and corr with asin(s) = s + corr, where s = |x|
// if |x| <= 1/2 (`small`), else s = sqrt((1 - |x|) / 2) (exact argument) and
// asin|x| = pi/2 - 2 asin(s). Keeping s + corr unrounded saves an ulp after the
// doubling. The polynomial's relative error is 2.8e-10.
inline VecF asin_reduce(VecF a, MaskF& small, VecF& corr) {
  small = a <= VecF(0.5f);
  VecF z = select(small, a * a, (1.0f - a) * 0.5f);
  VecF s = select(small, a, sqrt(z));
  corr = s * z *
         estrin(z, 0.166666597f, 0.0750050396f, 0.0445169546f, 0.0318077244f, 0.0144385835f,
                0.0375164822f);
  return s;
}

}  // namespace detail

inline VecF exp(VecF x) { return detail::exp_scaled(x, 0); }

inline VecF expm1(VecF x) {
  using namespace detail;
  VecF xc = max(VecF(-30.0f), min(VecF(89.0f), x));
  VecF n;
  VecF em = expm1_poly(exp_reduce(xc, n));
  // 2^n (1 + em) - 1 computed as 2 (s em + s - 1/2) with s = 2^(n-1): s - 1/2
  // is exact whenever it matters, and s stays finite for n = 128.
  VecF s = pow2i(to_int(n) - VecI(1));
  VecF res = fma(s, em, s - 0.5f) * 2.0f;
  // expm1(x) rounds to x here; also keeps -0 and subnormals exact.
  return select(abs(x) < VecF(0x1p-25f), x, res);
}

inline VecF log(VecF x) {
  using namespace detail;
  VecF e;
  VecF f = frexp_sqrt2(x, e) - 1.0f;
  VecF y = log1p_tail(f);
  VecF res = fma(e, VecF(kLn2Hi), f + fma(e, VecF(kLn2Lo), y));
  return log_special(x, res);
}

inline VecF log2(VecF x) {
  using namespace detail;
  VecF e;
  VecF f = frexp_sqrt2(x, e) - 1.0f;
  VecF y = log1p_tail(f);
  // log2(m) = (f + y) log2(e), keeping the low part of f log2(e).
  VecF lm = fma(f, VecF(kLog2e), fma(y, VecF(kLog2e), f * kLog2eLo));
  return log_special(x, e + lm);
}

inline VecF log10(VecF x) {
  using namespace detail;
  VecF e;
  VecF f = frexp_sqrt2(x, e) - 1.0f;
  VecF y = log1p_tail(f);
  VecF lm = fma(f, VecF(kLog10e), fma(y, VecF(kLog10e), f * kLog10eLo));
  VecF res = fma(e, VecF(kLog10Of2), fma(e, VecF(kLog10Of2Lo), lm));
  return log_special(x, res);
}

inline VecF log1p(VecF x) {
  using namespace detail;
  VecF u = x + 1.0f;
  // Rounding error of u; exact wherever it is not negligible.
  VecF c = x - (u - 1.0f);
  VecF e;
  VecF m = frexp_sqrt2(u, e);
  // c is zero once u >= 2^26, so clamping the exponent of 2^-e is harmless.
  VecF scale = pow2i(max(VecI(0) - to_int(e), VecI(-126)));
  VecF f = fma(c, scale, m - 1.0f);
  VecF y = log1p_tail(f);
  VecF res = fma(e, VecF(kLn2Hi), f + fma(e, VecF(kLn2Lo), y));
  res = log_special(u, res);
  // log1p(x) rounds to x here; also keeps -0 and subnormals exact.
  return select(abs(x) < VecF(0x1p-25f), x, res);
}

inline VecF sin(VecF x) {
  // The select keeps the sign of -0, which the polynomial's additions lose.
  VecF res = select(x == VecF(0.0f), x, detail::sin_cos(x, 0));
  MaskF big = detail::trig_needs_scalar(x);
  if (any(big))
    res = detail::scalar_lanes(x, res, big, [](double v) { return std::sin(v); });
  return res;
}

inline VecF cos(VecF x) {
  VecF res = detail::sin_cos(x, 1);
  MaskF big = detail::trig_needs_scalar(x);
  if (any(big))
    res = detail::scalar_lanes(x, res, big, [](double v) { return std::cos(v); });
  return res;
}

inline VecF tan(VecF x) {
  using namespace detail;
  VecI q;
  VecF r_lo;
  VecF r = trig_reduce(x, q, r_lo);
  VecF z = r * r;
  VecF s = sin_poly(r, r_lo, z), c = cos_poly(r, r_lo, z);
  // tan = s / c in even quadrants, -c / s in odd ones.
  MaskF odd = (q & VecI(1)) == VecI(1);
  VecF res = select(odd, -c, s) / select(odd, s, c);
  res = select(x == VecF(0.0f), x, res);
  MaskF big = trig_needs_scalar(x);
  if (any(big))
    res = scalar_lanes(x, res, big, [](double v) { return std::tan(v); });
  return res;
}

inline VecF tanh(VecF x) {
  VecF a = min(VecF(10.0f), abs(x));
  // |x| < 0.625: odd polynomial, relative error 1.6e-10. Above, em / (em + 2) with
  // em = expm1(2|x|); past 9.1 that rounds to 1.
  VecF z = a * a;
  VecF small = fma(a * z,
                   detail::estrin(z, -0.333333313f, 0.133332059f, -0.0539467633f, 0.0217007026f,
                                  -0.0081773987f, 0.00214296184f),
                   a);
  VecF em = expm1(a + a);
  return copysign(select(a < VecF(0.625f), small, em / (em + 2.0f)), x);
}

inline VecF sigmoid(VecF x) {
  // With e = exp(-|x|) nothing overflows: 1 / (1 + e) for x >= 0, e / (1 + e) below.
  VecF e = exp(-abs(x));
  VecF d = e + 1.0f;
  VecF de = (1.0f - d) + e;  // rounding error of d (exact: Fast2Sum, e <= 1)
  MaskF pos = x >= VecF(0.0f);
  VecF q = select(pos, VecF(1.0f), e) / d;
  // q (1 - de / d), using 1/d = q for x >= 0 and 1/d = 1 - q below.
  return fnma(q, de * select(pos, q, 1.0f - q), q);
}

inline VecF erf(VecF x) {
  using detail::horner;
  VecF a = abs(x);
  // |x| < 1: x (c0 + x^2 Q(x^2)), relative error 1.3e-9; c0 = 2/sqrt(pi) carries a low
  // part because its float rounding alone would cost most of an ulp.
  VecF z = a * a;
  VecF q = horner(z, -0.376126289f, 0.112836175f, -0.0268549155f, 0.00519016245f, -0.000802481838f,
                  7.89869518e-05f);
  VecF small = fma(a, VecF(1.12837923f), a * fma(z, q, VecF(-5.86353828e-08f)));
  // 1 <= |x| <= 4: 1 - erfc, erfc as a polynomial in u = |x| - 2 (exact subtraction),
  // absolute error 9.4e-9. Above 4 erf rounds to 1.
  VecF u = min(VecF(4.0f), a) - 2.0f;
  VecF erfc = horner(u, 0.00467774365f, -0.0206669457f, 0.0413334593f, -0.0482235961f,
                     0.0344500244f, -0.0130873015f, -0.00047821796f, 0.00338171842f,
                     -0.00155846495f, 3.32413802e-05f, 0.000238309032f, -8.14476225e-05f,
                     -1.30838964e-06f, 5.76361481e-06f, -8.96136441e-07f);
  return copysign(select(a < VecF(1.0f), small, 1.0f - erfc), x);
}

// x Phi(x) and Phi(x) + x phi(x) (GELU and its derivative) from erf and exp above.
inline VecF gelu(VecF x) { return 0.5f * x * (1.0f + erf(x * VecF(0.707106781f))); }
inline VecF gelu_grad(VecF x) {
  VecF cdf = 0.5f * (1.0f + erf(x * VecF(0.707106781f)));
  return fma(x * VecF(0.398942280f), exp(x * x * VecF(-0.5f)), cdf);
}

// GELU's tanh approximation and its derivative, SiLU and its derivative (ops/elementwise.h),
// from tanh and sigmoid above.
inline VecF gelu_approx(VecF x) {
  VecF t = tanh(VecF(0.797884561f) * fma(VecF(0.044715f) * x, x * x, x));
  return 0.5f * x * (1.0f + t);
}
inline VecF gelu_approx_grad(VecF x) {
  VecF t = tanh(VecF(0.797884561f) * fma(VecF(0.044715f) * x, x * x, x));
  VecF du = VecF(0.797884561f) * fma(VecF(0.134145f) * x, x, VecF(1.0f));
  return fma(0.5f * x * fnma(t, t, VecF(1.0f)), du, 0.5f * (1.0f + t));
}
inline VecF silu(VecF x) { return x * sigmoid(x); }
inline VecF silu_grad(VecF x) {
  VecF s = sigmoid(x);
  return s * fma(x, 1.0f - s, VecF(1.0f));
}
// g f'(x) for those activations (their vjps).
inline VecF gelu_vjp(VecF x, VecF g) { return gelu_grad(x) * g; }
inline VecF gelu_approx_vjp(VecF x, VecF g) { return gelu_approx_grad(x) * g; }
inline VecF silu_vjp(VecF x, VecF g) { return silu_grad(x) * g; }

inline VecF erfinv(VecF x) {
  using detail::horner;
  // erfinv(x) = x P(w), w = -log(1 - x^2), fitted separately for w < 5 (in w) and
  // w >= 5 (in sqrt(w) - 3); relative errors 5.6e-9 and 5.7e-9.
  VecF w = -log(fnma(x, x, VecF(1.0f)));
  VecF central =
      horner(w, 0.886226892f, 0.232013822f, 0.0115486542f, -0.00233429624f, -0.000127481675f,
             4.45652295e-05f, 3.983233e-06f, -1.97646023e-06f, 2.21030419e-07f, -8.79101236e-09f);
  VecF tail = horner(sqrt(w) - 3.0f, 2.83297682f, 1.00167513f, 0.00944568403f, -0.00763940997f,
                     0.00568317203f, -0.0035869875f, 0.00149585702f, -7.66195735e-05f,
                     -0.000318723469f, 0.000128964195f);
  VecF res = select(w < VecF(5.0f), central, tail) * x;
  return select(abs(x) == VecF(1.0f), copysign(VecF(detail::kInf), x), res);
}

inline VecF sinh(VecF x) {
  VecF a = abs(x);
  // |x| < 1: odd polynomial, relative error 5e-11; otherwise e^a/2 - e^-a/2.
  VecF z = a * a;
  VecF small = fma(
      a * z, detail::estrin(z, 0.166666672f, 0.0083333496f, 0.000198361595f, 2.81695111e-06f), a);
  VecF h = detail::exp_scaled(a, -1);
  return copysign(select(a < VecF(1.0f), small, h - 0.25f / h), x);
}

inline VecF cosh(VecF x) {
  VecF h = detail::exp_scaled(abs(x), -1);
  return h + 0.25f / h;
}

inline VecF atan(VecF x) {
  using namespace detail;
  VecF a = abs(x);
  // Reduce to |t| <= 1/2: atan a = atan t + {0, pi/4, pi/2}, one division for all lanes.
  // The split points make a - 1 exact.
  MaskF big = a > VecF(2.0f), mid = a > VecF(0.5f);
  VecF num = select(big, VecF(-1.0f), select(mid, a - 1.0f, a));
  VecF den = select(big, a, select(mid, a + 1.0f, VecF(1.0f)));
  VecF hi = select(big, VecF(kPiO2), select(mid, VecF(kPiO4), VecF(0.0f)));
  VecF lo = select(big, VecF(kPiO2Lo), select(mid, VecF(kPiO4Lo), VecF(0.0f)));
  return copysign(hi + (atan_poly(num / den) + lo), x);
}

inline VecF asin(VecF x) {
  using namespace detail;
  MaskF small;
  VecF corr;
  VecF s = asin_reduce(abs(x), small, corr);
  // pi/2 - 2s is exact once 2s >= pi/4, i.e. wherever cancellation could hurt.
  VecF big = (VecF(kPiO2) - (s + s)) + fma(VecF(-2.0f), corr, VecF(kPiO2Lo));
  return copysign(select(small, s + corr, big), x);
}

inline VecF acos(VecF x) {
  using namespace detail;
  MaskF small;
  VecF corr;
  VecF s = asin_reduce(abs(x), small, corr);
  // |x| <= 1/2: pi/2 - asin x; x > 1/2: 2 asin s; x < -1/2: pi - 2 asin s.
  VecF res_small = (VecF(kPiO2) - x) + (VecF(kPiO2Lo) - copysign(corr, x));
  VecF res_neg = (VecF(kPi) - (s + s)) + fma(VecF(-2.0f), corr, VecF(kPiLo));
  VecF res_big = select(x > VecF(0.0f), (s + corr) * 2.0f, res_neg);
  return select(small, res_small, res_big);
}

inline VecF asinh(VecF x) {
  VecF a = abs(x);
  // asinh a = log1p(a + a^2 / (1 + sqrt(1 + a^2))); above 4096 it is log(a) + ln2
  // to float precision (and a^2 would overflow).
  MaskF big = a > VecF(4096.0f);
  VecF a2 = a * a;
  VecF u = select(big, a - 1.0f, a + a2 / (1.0f + sqrt(a2 + 1.0f)));
  VecF res = log1p(u) + select(big, VecF(detail::kLn2Hi), VecF(0.0f));
  return copysign(res, x);
}

inline VecF acosh(VecF x) {
  // acosh x = log1p(t + sqrt(2t + t^2)), t = x - 1; above 4096 it is log(x) + ln2.
  MaskF big = x > VecF(4096.0f);
  VecF t = x - 1.0f;
  VecF u = select(big, t, t + sqrt(fma(t, t, t + t)));
  VecF res = log1p(u) + select(big, VecF(detail::kLn2Hi), VecF(0.0f));
  return select(x >= VecF(1.0f), res, VecF(detail::kNaN));
}

inline VecF atanh(VecF x) {
  VecF a = abs(x);
  // atanh a = log1p(2a / (1 - a)) / 2, with 2a / (1 - a) = 2a + 2a * a / (1 - a) so that
  // the rounding errors only touch the small second term when a is small.
  VecF a2 = a + a;
  VecF u = fma(a2, a / (1.0f - a), a2);
  VecF res = select(a > VecF(1.0f), VecF(detail::kNaN), log1p(u) * 0.5f);
  return copysign(res, x);
}

// Accurate 1/sqrt(x) (correctly rounded sqrt, then a division), not the 12-bit estimate.
inline VecF rsqrt(VecF x) { return VecF(1.0f) / sqrt(x); }

}  // namespace MLX_SIMD_ISA
}  // namespace mlx::core::simd

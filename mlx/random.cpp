#include "mlx/random.h"

#include <chrono>
#include <cmath>
#include <numbers>

#include "mlx/linalg.h"
#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/indexing.h"
#include "mlx/ops/linalg.h"
#include "mlx/ops/reduction.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/random.h"
#include "mlx/utils.h"

namespace mlx::core::random {

KeySequence::KeySequence(uint64_t seed) { this->seed(seed); }

void KeySequence::seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  key_[0] = static_cast<uint32_t>(seed >> 32);
  key_[1] = static_cast<uint32_t>(seed);
}

array KeySequence::next() {
  // Computed here rather than in the graph so that the state never grows a chain of lazy
  // nodes; the result equals split(key): blocks 0 and 1 of the key's bit stream.
  std::lock_guard<std::mutex> lock(mutex_);
  auto kept = threefry2x32(key_[0], key_[1], 0, 0);
  auto given = threefry2x32(key_[0], key_[1], 1, 0);
  key_[0] = kept[0];
  key_[1] = kept[1];
  return array({given[0], given[1]}, uint32);
}

KeySequence& KeySequence::default_() {
  static KeySequence seq(
      static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()));
  return seq;
}

array key(uint64_t seed) {
  return array({static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed)}, uint32);
}

void seed(uint64_t seed) { KeySequence::default_().seed(seed); }

namespace {

Dtype bits_dtype(int width) {
  switch (width) {
    case 1:
      return uint8;
    case 2:
      return uint16;
    case 4:
      return uint32;
    default:
      return uint64;
  }
}

void check_shape(const Shape& shape, const char* op) {
  for (int d : shape) {
    if (d < 0) {
      throw std::invalid_argument(
          msg("[", op, "] Negative dimensions are not allowed; got shape ", shape, "."));
    }
  }
}

// `width`-byte random words from `key` (or the next global key); errors name `op`.
array random_bits(const Shape& shape, int width, const std::optional<array>& key, const char* op,
                  StreamOrDevice s) {
  check_shape(shape, op);
  if (width != 1 && width != 2 && width != 4 && width != 8) {
    throw std::invalid_argument(
        msg("[", op, "] Bit width must be 1, 2, 4 or 8 bytes; got ", width, "."));
  }
  array k = key ? *key : KeySequence::default_().next();
  if (k.dtype() != uint32) {
    throw std::invalid_argument(
        msg("[", op, "] Expected a key of type uint32; got ", k.dtype(), "."));
  }
  if (k.shape() != Shape{2}) {
    throw std::invalid_argument(
        msg("[", op, "] Expected a key of shape (2); got ", k.shape(), "."));
  }
  return array(shape, bits_dtype(width), std::make_shared<RandomBits>(to_stream(s), shape, width),
               {k});
}

void check_real_float(Dtype dtype, const char* op) {
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(
        msg("[", op, "] Only real floating point dtypes are supported; got ", dtype, "."));
  }
}

// Parameters of a distribution must broadcast to the requested shape without enlarging it.
void check_broadcastable(const Shape& param, const Shape& shape, const char* op) {
  if (broadcast_shapes(param, shape, op) != shape) {
    throw std::invalid_argument(msg("[", op, "] Cannot generate random values of shape ", shape,
                                    " from parameters of broadcast shape ", param, "."));
  }
}

// Arithmetic on half types happens in float32, on float64 in float64.
Dtype compute_dtype(Dtype t) { return t == float64 ? float64 : float32; }

// Significand bits, the implicit one included.
int significand_bits(Dtype t) {
  return t == float16 ? 11 : t == bfloat16 ? 8 : t == float32 ? 24 : 53;
}

// The top p bits of words as wide as `dtype` (p its significand bits), optionally with the
// lowest of them forced to one, converted to `dtype` (exactly).
array top_bits(const Shape& shape, Dtype dtype, bool odd, const std::optional<array>& key,
               const char* op, StreamOrDevice s) {
  int width = size_of(dtype);
  Dtype word = bits_dtype(width);
  array w = right_shift(random_bits(shape, width, key, op, s),
                        array(8 * width - significand_bits(dtype), word), s);
  if (odd) {
    w = bitwise_or(w, array(1, word), s);
  }
  return astype(w, dtype, s);
}

// Uniform in [0, 1) as multiples of 2^-p, or with `open` in (0, 1) as odd multiples of 2^-p:
// every value is exact in `dtype` and below 1.
array unit_uniform(const Shape& shape, Dtype dtype, bool open, const std::optional<array>& key,
                   const char* op, StreamOrDevice s) {
  array u = top_bits(shape, dtype, open, key, op, s);
  return multiply(u, array(std::ldexp(1.0, -significand_bits(dtype)), dtype), s);
}

// Uniform in the open interval (-1, 1), symmetric about and never equal to 0: twice an open
// unit_uniform minus 1, which is exact.
array open_symmetric(const Shape& shape, Dtype ct, const std::optional<array>& key, const char* op,
                     StreamOrDevice s) {
  array u = top_bits(shape, ct, true, key, op, s);
  return subtract(multiply(u, array(std::ldexp(1.0, 1 - significand_bits(ct)), ct), s),
                  array(1.0, ct), s);
}

// Standard normal samples by inversion: sqrt(2) * erfinv(u), u uniform in (-1, 1).
array standard_normal(const Shape& shape, Dtype ct, const std::optional<array>& key, const char* op,
                      StreamOrDevice s) {
  array u = open_symmetric(shape, ct, key, op, s);
  return multiply(erfinv(u, s), array(std::numbers::sqrt2, ct), s);
}

// Element i of the last axis of x (dropping that axis).
array last_axis_element(const array& x, int i, StreamOrDevice s) {
  Shape start(x.ndim(), 0);
  Shape stop = x.shape();
  start.back() = i;
  stop.back() = i + 1;
  return squeeze(slice(x, start, stop, s), -1, s);
}

// Complex normal: real and imaginary parts from one draw of twice the size, variance 1/2 each.
array complex_standard_normal(const Shape& shape, const std::optional<array>& key,
                              StreamOrDevice s) {
  Shape pair_shape = shape;
  pair_shape.push_back(2);
  array n = multiply(standard_normal(pair_shape, float32, key, "normal", s),
                     array(std::numbers::sqrt2 / 2.0), s);
  return add(last_axis_element(n, 0, s),
             multiply(last_axis_element(n, 1, s), array(std::complex<float>(0.0f, 1.0f)), s), s);
}

// floor(w * r / 2^64) for uint64 arrays (the high word of the 128-bit product), from 32-bit
// halves. With r <= 2^32 the terms of r's high half vanish.
array mulhi64(const array& w, const array& r, bool r_small, StreamOrDevice s) {
  array mask(static_cast<uint64_t>(0xffffffffu), uint64);
  array half(static_cast<uint64_t>(32), uint64);
  array wh = right_shift(w, half, s);
  array wl = bitwise_and(w, mask, s);
  if (r_small) {
    array t = right_shift(multiply(wl, r, s), half, s);
    return right_shift(add(multiply(wh, r, s), t, s), half, s);
  }
  array rh = right_shift(r, half, s);
  array rl = bitwise_and(r, mask, s);
  array t = right_shift(multiply(wl, rl, s), half, s);
  array a = add(multiply(wh, rl, s), t, s);
  array b = add(multiply(wl, rh, s), bitwise_and(a, mask, s), s);
  return add(add(multiply(wh, rh, s), right_shift(a, half, s), s), right_shift(b, half, s), s);
}

// A randint bound as an integer of the working type (int64, or uint64 for uint64 output), clipped
// to what `dtype` holds (upper end exclusive). Floating bounds round up: the integers in
// [low, high) start at ceil(low) and end before ceil(high).
array integer_bound(const array& b, Dtype dtype, StreamOrDevice s) {
  const bool u64 = dtype == uint64;
  const Dtype work = u64 ? uint64 : int64;
  const double lo = dtype == bool_ ? 0.0 : static_cast<double>(iinfo(dtype).min);
  const double hi = dtype == bool_ ? 2.0 : static_cast<double>(iinfo(dtype).max) + 1.0;
  if (is_complex(b.dtype())) {
    throw std::invalid_argument("[randint] Bounds cannot be complex.");
  }
  if (is_floating_point(b.dtype())) {
    // The largest doubles below 2^63 and 2^64 keep the conversion in range.
    double top = std::min(hi, u64 ? 0x1.fffffffffffffp+63 : 0x1.fffffffffffffp+62);
    array x = clip(ceil(astype(b, float64, s), s), array(lo, float64), array(top, float64), s);
    return astype(x, work, s);
  }
  if (u64) {
    return is_unsigned(b.dtype())
               ? astype(b, uint64, s)
               : astype(maximum(astype(b, int64, s), array(int64_t{0}), s), uint64, s);
  }
  array x = astype(b, int64, s);
  if (size_of(dtype) < 8) {
    x = clip(x, array(static_cast<int64_t>(lo)), array(static_cast<int64_t>(hi)), s);
  }
  return x;
}

// Gumbel-max sampling: the argmax over `axis` of logits plus independent Gumbel noise of
// `noise_shape` (which logits broadcast to) is distributed as softmax(logits) along that axis.
array gumbel_argmax(const array& logits, const Shape& noise_shape, int axis,
                    const std::optional<array>& key, StreamOrDevice s) {
  array noise = gumbel(noise_shape, compute_dtype(logits.dtype()), key, s);
  return astype(argmax(add(logits, noise, s), axis, false, s), uint32, s);
}

// logits' axis, normalized, after checking that logits can be sampled from.
int categorical_axis(const array& logits, int axis) {
  if (is_complex(logits.dtype())) {
    throw std::invalid_argument("[categorical] Complex logits are not supported.");
  }
  return normalize_axis(axis, logits.ndim(), "categorical");
}

}  // namespace

array bits(const Shape& shape, int width, const std::optional<array>& key, StreamOrDevice s) {
  return random_bits(shape, width, key, "bits", s);
}

array split(const array& key, int num, StreamOrDevice s) {
  if (num < 0) {
    throw std::invalid_argument(
        msg("[split] The number of keys must be non-negative; got ", num, "."));
  }
  return random_bits({num, 2}, 4, key, "split", s);
}

std::pair<array, array> split(const array& key, StreamOrDevice s) {
  array keys = random::split(key, 2, s);
  return {reshape(slice(keys, {0, 0}, {1, 2}, s), {2}, s),
          reshape(slice(keys, {1, 0}, {2, 2}, s), {2}, s)};
}

array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  check_real_float(dtype, "uniform");
  return unit_uniform(shape, dtype, false, key, "uniform", s);
}

array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype,
              const std::optional<array>& key, StreamOrDevice s) {
  check_real_float(dtype, "uniform");
  check_shape(shape, "uniform");
  check_broadcastable(broadcast_shapes(low.shape(), high.shape(), "uniform"), shape, "uniform");
  const Dtype ct = compute_dtype(dtype);
  array lo = astype(low, ct, s);
  array range = subtract(astype(high, ct, s), lo, s);
  array u = unit_uniform(shape, dtype, false, key, "uniform", s);
  array out = astype(add(multiply(range, u, s), lo, s), dtype, s);
  // Rounding can reach high (or pass it); those rare draws take the value low instead, so that
  // the result stays in [low, high) as seen in `dtype`. With low > high the interval is (high,
  // low].
  array lo_d = astype(low, dtype, s);
  array hi_d = astype(high, dtype, s);
  array outside =
      where(less(lo_d, hi_d, s), greater_equal(out, hi_d, s), less_equal(out, hi_d, s), s);
  return where(outside, lo_d, out, s);
}

array normal(const Shape& shape, Dtype dtype, const std::optional<array>& loc,
             const std::optional<array>& scale, const std::optional<array>& key, StreamOrDevice s) {
  if (!is_inexact(dtype)) {
    throw std::invalid_argument(
        msg("[normal] Only floating point and complex dtypes are supported; got ", dtype, "."));
  }
  check_shape(shape, "normal");
  if (loc) {
    check_broadcastable(loc->shape(), shape, "normal");
  }
  if (scale) {
    check_broadcastable(scale->shape(), shape, "normal");
  }
  array out = is_complex(dtype) ? complex_standard_normal(shape, key, s)
                                : standard_normal(shape, compute_dtype(dtype), key, "normal", s);
  if (scale) {
    out = multiply(out, *scale, s);
  }
  if (loc) {
    out = add(out, *loc, s);
  }
  return astype(out, dtype, s);
}

array normal(const Shape& shape, Dtype dtype, float loc, float scale,
             const std::optional<array>& key, StreamOrDevice s) {
  // The identity parameters cost nothing.
  auto param = [](float v, float identity) -> std::optional<array> {
    return v == identity ? std::nullopt : std::optional<array>(array(v));
  };
  return normal(shape, dtype, param(loc, 0.0f), param(scale, 1.0f), key, s);
}

array randint(const array& low, const array& high, const Shape& shape, Dtype dtype,
              const std::optional<array>& key, StreamOrDevice s) {
  if (!is_integral(dtype)) {
    throw std::invalid_argument(
        msg("[randint] Only integer and boolean dtypes are supported; got ", dtype, "."));
  }
  check_shape(shape, "randint");
  check_broadcastable(broadcast_shapes(low.shape(), high.shape(), "randint"), shape, "randint");
  array lo = integer_bound(low, dtype, s);
  array hi = integer_bound(high, dtype, s);
  array lo_u = astype(lo, uint64, s);
  // Modulo 2^64, exact where hi > lo; at most 2^32 for dtypes of up to 4 bytes.
  array range = subtract(astype(hi, uint64, s), lo_u, s);
  // offset = floor(w * range / 2^64) for a 64-bit word w: uniform up to a relative bias
  // below range / 2^64.
  array w = random_bits(shape, 8, key, "randint", s);
  array offset = mulhi64(w, range, size_of(dtype) < 8, s);
  array out = astype(add(lo_u, offset, s), dtype, s);
  return where(greater(hi, lo, s), out, astype(lo, dtype, s), s);
}

array bernoulli(const array& p, const Shape& shape, const std::optional<array>& key,
                StreamOrDevice s) {
  if (!is_floating_point(p.dtype())) {
    throw std::invalid_argument(
        msg("[bernoulli] The probability p must have a floating point type; got ", p.dtype(), "."));
  }
  check_shape(shape, "bernoulli");
  check_broadcastable(p.shape(), shape, "bernoulli");
  return less(unit_uniform(shape, compute_dtype(p.dtype()), false, key, "bernoulli", s), p, s);
}

array bernoulli(const array& p, const std::optional<array>& key, StreamOrDevice s) {
  return bernoulli(p, p.shape(), key, s);
}

array bernoulli(const std::optional<array>& key, StreamOrDevice s) {
  return bernoulli(array(0.5f), key, s);
}

array truncated_normal(const array& lower, const array& upper, const Shape& shape, Dtype dtype,
                       const std::optional<array>& key, StreamOrDevice s) {
  check_real_float(dtype, "truncated_normal");
  check_shape(shape, "truncated_normal");
  check_broadcastable(broadcast_shapes(lower.shape(), upper.shape(), "truncated_normal"), shape,
                      "truncated_normal");
  // Inversion of the normal CDF restricted to [Phi(lower), Phi(upper)], written with erf.
  const Dtype ct = compute_dtype(dtype);
  array lo = astype(lower, ct, s);
  array hi = astype(upper, ct, s);
  array inv_sqrt2(std::numbers::sqrt2 / 2.0, ct);
  array a = erf(multiply(lo, inv_sqrt2, s), s);
  array b = erf(multiply(hi, inv_sqrt2, s), s);
  array v = unit_uniform(shape, ct, true, key, "truncated_normal", s);
  array u = add(a, multiply(subtract(b, a, s), v, s), s);
  array out = multiply(erfinv(u, s), array(std::numbers::sqrt2, ct), s);
  // erf saturates far in the tails; clipping keeps those draws inside the bounds.
  return astype(clip(out, lo, hi, s), dtype, s);
}

array truncated_normal(const array& lower, const array& upper, Dtype dtype,
                       const std::optional<array>& key, StreamOrDevice s) {
  Shape shape = broadcast_shapes(lower.shape(), upper.shape(), "truncated_normal");
  return truncated_normal(lower, upper, shape, dtype, key, s);
}

array gumbel(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  check_real_float(dtype, "gumbel");
  array u = unit_uniform(shape, compute_dtype(dtype), true, key, "gumbel", s);
  return astype(negative(log(negative(log(u, s), s), s), s), dtype, s);
}

array laplace(const Shape& shape, Dtype dtype, float loc, float scale,
              const std::optional<array>& key, StreamOrDevice s) {
  check_real_float(dtype, "laplace");
  const Dtype ct = compute_dtype(dtype);
  // |u| is uniform in (0, 1), so -log(1 - |u|) is Exp(1); u's sign gives the side.
  array u = open_symmetric(shape, ct, key, "laplace", s);
  array out = multiply(negative(sign(u, s), s), log1p(negative(abs(u, s), s), s), s);
  if (scale != 1.0f) {
    out = multiply(out, array(scale, ct), s);
  }
  if (loc != 0.0f) {
    out = add(out, array(loc, ct), s);
  }
  return astype(out, dtype, s);
}

array categorical(const array& logits, int axis, const Shape& shape,
                  const std::optional<array>& key, StreamOrDevice s) {
  int ax = categorical_axis(logits, axis);
  check_shape(shape, "categorical");
  Shape reduced = logits.shape();
  reduced.erase(reduced.begin() + ax);
  check_broadcastable(reduced, shape, "categorical");
  // The sampled axis sits where logits' axis lands once logits align with `shape` on the right.
  int noise_axis = static_cast<int>(shape.size() - reduced.size()) + ax;
  Shape noise_shape = shape;
  noise_shape.insert(noise_shape.begin() + noise_axis, logits.shape(ax));
  return gumbel_argmax(logits, noise_shape, noise_axis, key, s);
}

array categorical(const array& logits, int axis, int num_samples, const std::optional<array>& key,
                  StreamOrDevice s) {
  int ax = categorical_axis(logits, axis);
  if (num_samples < 0) {
    throw std::invalid_argument(
        msg("[categorical] The number of samples must be non-negative; got ", num_samples, "."));
  }
  // Samples run along a new last axis.
  Shape noise_shape = logits.shape();
  noise_shape.push_back(num_samples);
  return gumbel_argmax(expand_dims(logits, -1, s), noise_shape, ax, key, s);
}

array categorical(const array& logits, int axis, const std::optional<array>& key,
                  StreamOrDevice s) {
  int ax = categorical_axis(logits, axis);
  Shape shape = logits.shape();
  shape.erase(shape.begin() + ax);
  return categorical(logits, ax, shape, key, s);
}

array permutation(const array& x, int axis, const std::optional<array>& key, StreamOrDevice s) {
  int ax = normalize_axis(axis, x.ndim(), "permutation");
  // Sorting 64-bit random keys: ties (which would keep their order) are vanishingly rare.
  array order = argsort(random_bits({x.shape(ax)}, 8, key, "permutation", s), 0, s);
  return take(x, order, ax, s);
}

array permutation(int x, const std::optional<array>& key, StreamOrDevice s) {
  if (x < 0) {
    throw std::invalid_argument(msg("[permutation] The size must be non-negative; got ", x, "."));
  }
  return permutation(arange(x, s), 0, key, s);
}

array multivariate_normal(const array& mean, const array& cov, const Shape& shape, Dtype dtype,
                          const std::optional<array>& key, StreamOrDevice s) {
  if (dtype != float32) {
    throw std::invalid_argument(
        msg("[multivariate_normal] dtype must be float32; got ", dtype, "."));
  }
  if (mean.ndim() < 1) {
    throw std::invalid_argument("[multivariate_normal] mean must have at least one dimension.");
  }
  if (cov.ndim() < 2) {
    throw std::invalid_argument("[multivariate_normal] cov must have at least two dimensions.");
  }
  int n = mean.shape(-1);
  if (cov.shape(-1) != n || cov.shape(-2) != n) {
    throw std::invalid_argument(msg("[multivariate_normal] cov must end in (", n, ", ", n,
                                    ") to match mean's last dimension; got ", cov.shape(), "."));
  }
  Shape mean_batch(mean.shape().begin(), mean.shape().end() - 1);
  Shape cov_batch(cov.shape().begin(), cov.shape().end() - 2);
  Shape batch = broadcast_shapes(broadcast_shapes(mean_batch, cov_batch, "multivariate_normal"),
                                 shape, "multivariate_normal");
  if (batch != shape) {
    throw std::invalid_argument(msg("[multivariate_normal] shape ", shape,
                                    " must be the broadcast of the batch shapes of "
                                    "mean and cov; they broadcast to ",
                                    batch, "."));
  }
  // cov = U diag(S) V^T; for a symmetric PSD matrix U sqrt(S) is a square root of it.
  auto usv = linalg::svd(astype(cov, float32, s), true, s);
  array root = multiply(usv[0], expand_dims(sqrt(usv[1], s), -2, s), s);
  Shape z_shape = shape;
  z_shape.push_back(n);
  array z = normal(z_shape, float32, key, s);
  // x = mean + root @ z for each sample, written as z @ root^T.
  array x = squeeze(matmul(expand_dims(z, -2, s), swapaxes(root, -1, -2, s), s), -2, s);
  return add(x, astype(mean, float32, s), s);
}

}  // namespace mlx::core::random

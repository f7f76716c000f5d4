// Counter-based random numbers with explicit keys (mlx::core::random).
//
// A key is a uint32 array of shape (2,). Every sampler is a pure function of its key: the same
// key gives the same numbers, and split() derives independent keys. Functions called without a
// key draw the next key of the global sequence, which seed() restarts.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core::random {

// The global key sequence: next() splits the current key, keeps one half and returns the other.
// Thread-safe.
class KeySequence {
 public:
  explicit KeySequence(uint64_t seed);
  void seed(uint64_t seed);
  array next();
  // The sequence used when no key is given (seeded from the clock until seed() is called).
  static KeySequence& default_();

 private:
  std::mutex mutex_;
  uint32_t key_[2];
};

// The key [seed >> 32, seed & 0xffffffff].
array key(uint64_t seed);

// Restarts the global key sequence from key(seed).
void seed(uint64_t seed);

// Random bits: `width` bytes (1, 2, 4 or 8) per element, as uint8/16/32/64.
array bits(const Shape& shape, int width, const std::optional<array>& key = std::nullopt,
           StreamOrDevice s = {});
inline array bits(const Shape& shape, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {}) {
  return bits(shape, 4, key, s);
}

// Two new keys from one.
std::pair<array, array> split(const array& key, StreamOrDevice s = {});
// `num` new keys, shape (num, 2).
array split(const array& key, int num, StreamOrDevice s = {});

// Uniform in [low, high); low and high broadcast to `shape`; dtype must be real floating.
array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype = float32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <typename T, typename U>
array uniform(T low, U high, const Shape& shape, Dtype dtype = float32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return uniform(array(low), array(high), shape, dtype, key, s);
}
// Uniform in [0, 1).
array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {});
inline array uniform(const Shape& shape, const std::optional<array>& key = std::nullopt,
                     StreamOrDevice s = {}) {
  return uniform(shape, float32, key, s);
}

// Normal with mean `loc` and standard deviation `scale` (both broadcast to `shape`; absent
// means 0 and 1). complex64 gives real and imaginary parts of variance 1/2 each.
array normal(const Shape& shape, Dtype dtype, const std::optional<array>& loc,
             const std::optional<array>& scale, const std::optional<array>& key,
             StreamOrDevice s = {});
array normal(const Shape& shape, Dtype dtype, float loc, float scale,
             const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array normal(const Shape& shape, float loc, float scale,
                    const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return normal(shape, float32, loc, scale, key, s);
}
inline array normal(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt,
                    StreamOrDevice s = {}) {
  return normal(shape, dtype, std::nullopt, std::nullopt, key, s);
}
inline array normal(const Shape& shape, const std::optional<array>& key = std::nullopt,
                    StreamOrDevice s = {}) {
  return normal(shape, float32, std::nullopt, std::nullopt, key, s);
}

// Jointly normal samples with mean `mean` (..., n) and covariance `cov` (..., n, n), which
// must be symmetric positive semi-definite (it is factored by SVD, so singular ones work).
// The result has shape `shape` + (n,); `shape` broadcasts with the batch shapes of mean and
// cov. float32 only.
array multivariate_normal(const array& mean, const array& cov, const Shape& shape,
                          Dtype dtype = float32, const std::optional<array>& key = std::nullopt,
                          StreamOrDevice s = {});

// Integers in [low, high) with equal probability (low where high <= low); dtype integral.
array randint(const array& low, const array& high, const Shape& shape, Dtype dtype = int32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <typename T, typename U>
array randint(T low, U high, const Shape& shape, Dtype dtype = int32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return randint(array(low), array(high), shape, dtype, key, s);
}

// Booleans that are true with probability p (a floating array broadcast to `shape`).
array bernoulli(const array& p, const Shape& shape, const std::optional<array>& key = std::nullopt,
                StreamOrDevice s = {});
array bernoulli(const array& p, const std::optional<array>& key = std::nullopt,
                StreamOrDevice s = {});
template <typename T>
array bernoulli(T p, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return bernoulli(array(p), key, s);
}
template <typename T>
array bernoulli(T p, const Shape& shape, const std::optional<array>& key = std::nullopt,
                StreamOrDevice s = {}) {
  return bernoulli(array(p), shape, key, s);
}
array bernoulli(const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

// Standard normal restricted to (lower, upper); without `shape`, the bounds' broadcast shape.
array truncated_normal(const array& lower, const array& upper, const Shape& shape,
                       Dtype dtype = float32, const std::optional<array>& key = std::nullopt,
                       StreamOrDevice s = {});
array truncated_normal(const array& lower, const array& upper, Dtype dtype = float32,
                       const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

// Standard Gumbel: -log(-log(u)).
array gumbel(const Shape& shape, Dtype dtype = float32,
             const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

// Laplace with location `loc` and scale `scale`.
array laplace(const Shape& shape, Dtype dtype, float loc, float scale,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array laplace(const Shape& shape, float loc, float scale,
                     const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return laplace(shape, float32, loc, scale, key, s);
}
inline array laplace(const Shape& shape, Dtype dtype,
                     const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return laplace(shape, dtype, 0.0f, 1.0f, key, s);
}
inline array laplace(const Shape& shape, const std::optional<array>& key = std::nullopt,
                     StreamOrDevice s = {}) {
  return laplace(shape, float32, 0.0f, 1.0f, key, s);
}

// Samples (uint32 indices) of the categorical distributions softmax(logits) along `axis`.
// `shape` is the output shape, which logits' shape without `axis` must broadcast to; with
// num_samples the output is that reduced shape plus a last axis of num_samples draws; with
// neither it is the reduced shape.
array categorical(const array& logits, int axis, const Shape& shape,
                  const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
array categorical(const array& logits, int axis, int num_samples,
                  const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
array categorical(const array& logits, int axis = -1,
                  const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

// A random permutation of x's entries along `axis`, or of arange(x) (int32) for an integer.
array permutation(const array& x, int axis = 0, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});
array permutation(int x, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

}  // namespace mlx::core::random

// mx.random. The global key lives in the Python list mx.random.state, so a compiled function
// that draws numbers can capture it as state (inputs=[mx.random.state],
// outputs=[mx.random.state]); samplers called without a key split it, keeping one half.
#include "mlx/random.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <chrono>

#include "python/src/bindings.h"
#include "python/src/convert.h"

namespace nb = nanobind;
using namespace mlx::core;
using namespace mlx::core::python;

namespace {

nb::handle random_module;  // borrowed: the module object outlives every call

array next_key() {
  nb::object state = random_module.attr("state");
  auto [kept, given] = random::split(nb::cast<array>(state[0]));
  state[0] = nb::cast(kept);
  return given;
}

array key_or_next(const std::optional<array>& key) { return key ? *key : next_key(); }

// A Python scalar or array parameter, typed against the dtype of the samples.
array param(nb::handle v, Dtype dtype) { return to_operand(v, dtype); }

}  // namespace

void init_random(nb::module_& parent) {
  nb::module_ m = parent.def_submodule(
      "random", "Random sampling with explicit keys or the global key mx.random.state.");
  random_module = m;
  auto now = std::chrono::system_clock::now().time_since_epoch().count();
  nb::list state;
  state.append(nb::cast(random::key(static_cast<uint64_t>(now))));
  m.attr("state") = state;

  m.def(
      "seed",
      [](uint64_t seed) {
        random_module.attr("state")[0] = nb::cast(random::key(seed));
        random::seed(seed);
      },
      nb::arg("seed"), "Seeds the global key.");
  m.def(
      "key", [](uint64_t seed) { return random::key(seed); }, nb::arg("seed"),
      "A key (uint32 array of shape (2,)) from a seed.");
  m.def(
      "split",
      [](const array& key, int num, StreamOrDevice s) { return random::split(key, num, s); },
      nb::arg("key"), nb::arg("num") = 2, nb::arg("stream") = nb::none(),
      "num new keys from one, as an array of shape (num, 2).");
  m.def(
      "uniform",
      [](nb::handle low, nb::handle high, const Shape& shape, std::optional<Dtype> dtype,
         std::optional<array> key, StreamOrDevice s) {
        Dtype t = dtype.value_or(float32);
        return random::uniform(param(low, t), param(high, t), shape, t, key_or_next(key), s);
      },
      nb::arg("low") = 0, nb::arg("high") = 1, nb::arg("shape") = Shape{},
      nb::arg("dtype").none() = float32, nb::arg("key") = nb::none(),
      nb::arg("stream") = nb::none(), "Uniform samples in [low, high).");
  m.def(
      "normal",
      [](const Shape& shape, std::optional<Dtype> dtype, nb::handle loc, nb::handle scale,
         std::optional<array> key, StreamOrDevice s) {
        Dtype t = dtype.value_or(float32);
        std::optional<array> l, sc;
        if (!loc.is_none()) {
          l = param(loc, t);
        }
        if (!scale.is_none()) {
          sc = param(scale, t);
        }
        return random::normal(shape, t, l, sc, key_or_next(key), s);
      },
      nb::arg("shape") = Shape{}, nb::arg("dtype").none() = float32,
      nb::arg("loc").none() = nb::none(), nb::arg("scale").none() = nb::none(),
      nb::arg("key") = nb::none(), nb::arg("stream") = nb::none(),
      "Normal samples with mean loc and standard deviation scale (default 0 and 1).");
  m.def(
      "multivariate_normal",
      [](const array& mean, const array& cov, const Shape& shape, std::optional<Dtype> dtype,
         std::optional<array> key, StreamOrDevice s) {
        return random::multivariate_normal(mean, cov, shape, dtype.value_or(float32),
                                           key_or_next(key), s);
      },
      nb::arg("mean"), nb::arg("cov"), nb::arg("shape") = Shape{},
      nb::arg("dtype").none() = float32, nb::arg("key") = nb::none(),
      nb::arg("stream") = nb::none(),
      "multivariate_normal(mean, cov, shape=[], dtype=float32, key=None, stream=None)\n\n"
      "Jointly normal samples.\n\nArgs:\n    mean (array): Means, (..., n).\n    cov "
      "(array): Covariance matrices, (..., n, n), symmetric positive semi-definite (factored "
      "with an SVD on the CPU).\n    shape (list[int]): Sample shape without the last axis; "
      "it must be the broadcast of the batch shapes of mean and cov.\n    dtype (Dtype): "
      "float32 only.\n\nReturns:\n    array: Samples of shape ``shape + [n]``.");
  m.def(
      "randint",
      [](nb::handle low, nb::handle high, const Shape& shape, std::optional<Dtype> dtype,
         std::optional<array> key, StreamOrDevice s) {
        Dtype t = dtype.value_or(int32);
        return random::randint(param(low, t), param(high, t), shape, t, key_or_next(key), s);
      },
      nb::arg("low"), nb::arg("high"), nb::arg("shape") = Shape{}, nb::arg("dtype").none() = int32,
      nb::arg("key") = nb::none(), nb::arg("stream") = nb::none(),
      "Integers in [low, high) with equal probability.");
  m.def(
      "bernoulli",
      [](nb::handle p, std::optional<Shape> shape, std::optional<array> key, StreamOrDevice s) {
        array pa = param(p, float32);
        return shape ? random::bernoulli(pa, *shape, key_or_next(key), s)
                     : random::bernoulli(pa, key_or_next(key), s);
      },
      nb::arg("p") = 0.5, nb::arg("shape") = nb::none(), nb::arg("key") = nb::none(),
      nb::arg("stream") = nb::none(), "Booleans that are true with probability p.");
  m.def(
      "truncated_normal",
      [](nb::handle lower, nb::handle upper, std::optional<Shape> shape, std::optional<Dtype> dtype,
         std::optional<array> key, StreamOrDevice s) {
        Dtype t = dtype.value_or(float32);
        array lo = param(lower, t), hi = param(upper, t);
        return shape ? random::truncated_normal(lo, hi, *shape, t, key_or_next(key), s)
                     : random::truncated_normal(lo, hi, t, key_or_next(key), s);
      },
      nb::arg("lower"), nb::arg("upper"), nb::arg("shape") = nb::none(),
      nb::arg("dtype").none() = float32, nb::arg("key") = nb::none(),
      nb::arg("stream") = nb::none(), "Standard normal samples restricted to (lower, upper).");
  m.def(
      "gumbel",
      [](const Shape& shape, std::optional<Dtype> dtype, std::optional<array> key,
         StreamOrDevice s) {
        return random::gumbel(shape, dtype.value_or(float32), key_or_next(key), s);
      },
      nb::arg("shape") = Shape{}, nb::arg("dtype").none() = float32, nb::arg("key") = nb::none(),
      nb::arg("stream") = nb::none(), "Samples of the standard Gumbel distribution.");
  m.def(
      "categorical",
      [](const array& logits, int axis, std::optional<Shape> shape, std::optional<int> num_samples,
         std::optional<array> key, StreamOrDevice s) {
        if (shape && num_samples) {
          throw std::invalid_argument(
              "[categorical] At most one of shape or num_samples can be specified.");
        }
        if (shape) {
          return random::categorical(logits, axis, *shape, key_or_next(key), s);
        }
        if (num_samples) {
          return random::categorical(logits, axis, *num_samples, key_or_next(key), s);
        }
        return random::categorical(logits, axis, key_or_next(key), s);
      },
      nb::arg("logits"), nb::arg("axis") = -1, nb::arg("shape") = nb::none(),
      nb::arg("num_samples") = nb::none(), nb::arg("key") = nb::none(),
      nb::arg("stream") = nb::none(),
      "Samples (uint32 indices) of the categorical distributions softmax(logits) along axis.");
  m.def(
      "laplace",
      [](const Shape& shape, std::optional<Dtype> dtype, float loc, float scale,
         std::optional<array> key, StreamOrDevice s) {
        return random::laplace(shape, dtype.value_or(float32), loc, scale, key_or_next(key), s);
      },
      nb::arg("shape") = Shape{}, nb::arg("dtype").none() = float32, nb::arg("loc") = 0.0,
      nb::arg("scale") = 1.0, nb::arg("key") = nb::none(), nb::arg("stream") = nb::none(),
      "Samples of the Laplace distribution with location loc and scale scale.");
  m.def(
      "permutation",
      [](std::variant<int, array> x, int axis, std::optional<array> key, StreamOrDevice s) {
        if (auto* n = std::get_if<int>(&x)) {
          return random::permutation(*n, key_or_next(key), s);
        }
        return random::permutation(std::get<array>(x), axis, key_or_next(key), s);
      },
      nb::arg("x"), nb::arg("axis") = 0, nb::arg("key") = nb::none(),
      nb::arg("stream") = nb::none(),
      "A random permutation of arange(x), or of x's entries along axis.");
  m.def(
      "bits",
      [](const Shape& shape, int width, std::optional<array> key, StreamOrDevice s) {
        return random::bits(shape, width, key_or_next(key), s);
      },
      nb::arg("shape") = Shape{}, nb::arg("width") = 4, nb::arg("key") = nb::none(),
      nb::arg("stream") = nb::none(), "Random bits, width bytes (1, 2, 4 or 8) per element.");
}

// Checkers for transform rules: derivatives against central finite differences, vmap against
// a loop over the mapped axis.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_utils.h"

namespace mlx::core::test {

struct GradCheckOptions {
  std::vector<int> argnums;  // inputs to differentiate; empty: every floating-point input
  double eps = -1;           // finite-difference step; <0: by dtype (1e-6 float64, 1e-3 else)
  double rtol = -1;          // <0: by dtype (1e-5 float64, 2e-2 float32, 1e-1 16-bit)
  double atol = -1;          // <0: rtol / 10
  bool check_vjp = true;
  bool check_jvp = true;
  uint32_t seed = 7;
};

namespace detail {

inline double fd_eps(Dtype t) { return t == float64 ? 1e-6 : 1e-3; }
inline double fd_rtol(Dtype t) {
  if (t == float64)
    return 1e-5;
  if (t == float32)
    return 2e-2;
  return 1e-1;
}

// Runs f and returns its outputs as float64 vectors.
inline std::vector<std::vector<double>> eval_outputs(const ArrayFn& f,
                                                     const std::vector<array>& inputs) {
  std::vector<array> outs = f(inputs);
  eval(outs);
  std::vector<std::vector<double>> values;
  for (auto& o : outs) {
    values.push_back(to_vector(o));
  }
  return values;
}

// Copy of inputs[i] with `delta` added to flat element e (or, with e < 0, delta * direction).
inline array perturbed(const array& x, long e, double delta,
                       const std::vector<double>* direction = nullptr) {
  std::vector<double> v = to_vector(x);
  for (size_t k = 0; k < v.size(); ++k) {
    if (direction) {
      v[k] += delta * (*direction)[k];
    } else if (static_cast<long>(k) == e) {
      v[k] += delta;
    }
  }
  return from_vector(v, x.shape(), x.dtype());
}

}  // namespace detail

// Checks vjp (with random cotangents) and jvp (with random tangents) of f at `inputs`
// against central differences. Inputs are rebuilt as row-contiguous arrays when perturbed,
// so make layouts (transposes, slices, broadcasts) inside f to test them.
inline void check_grad(const ArrayFn& f, const std::vector<array>& inputs,
                       GradCheckOptions opt = {}) {
  std::vector<int> argnums = opt.argnums;
  if (argnums.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (is_inexact(inputs[i].dtype()))
        argnums.push_back(static_cast<int>(i));
    }
  }
  ASSERT_FALSE(argnums.empty()) << "check_grad needs a floating-point input";
  Dtype dt = inputs[argnums[0]].dtype();
  const double eps = opt.eps > 0 ? opt.eps : detail::fd_eps(dt);
  const double rtol = opt.rtol > 0 ? opt.rtol : detail::fd_rtol(dt);
  const double atol = opt.atol > 0 ? opt.atol : rtol / 10;

  std::vector<array> outs = f(inputs);
  eval(outs);
  std::vector<array> cotangents;
  std::vector<std::vector<double>> w;
  for (size_t j = 0; j < outs.size(); ++j) {
    w.push_back(random_values(outs[j].size(), -1, 1, opt.seed + 11 * j));
    cotangents.push_back(from_vector(w.back(), outs[j].shape(), outs[j].dtype()));
  }
  // L(x) = sum_j <W_j, f_j(x)> in float64.
  auto loss = [&](const std::vector<array>& x) {
    auto values = detail::eval_outputs(f, x);
    double total = 0;
    for (size_t j = 0; j < values.size(); ++j) {
      if (!is_inexact(outs[j].dtype()))
        continue;
      for (size_t k = 0; k < values[j].size(); ++k)
        total += w[j][k] * values[j][k];
    }
    return total;
  };

  if (opt.check_vjp) {
    auto grads = mlx::core::detail::vjp(f, inputs, cotangents, argnums).second;
    for (size_t a = 0; a < argnums.size(); ++a) {
      int i = argnums[a];
      ASSERT_EQ(grads[a].shape(), inputs[i].shape()) << "vjp shape of input " << i;
      EXPECT_EQ(grads[a].dtype(), inputs[i].dtype()) << "vjp dtype of input " << i;
      auto g = to_vector(grads[a]);
      for (long e = 0; e < static_cast<long>(inputs[i].size()); ++e) {
        std::vector<array> plus = inputs, minus = inputs;
        plus[i] = detail::perturbed(inputs[i], e, eps);
        minus[i] = detail::perturbed(inputs[i], e, -eps);
        double fd = (loss(plus) - loss(minus)) / (2 * eps);
        EXPECT_NEAR(g[e], fd, atol + rtol * std::abs(fd))
            << "vjp of input " << i << " at flat index " << e;
      }
    }
  }

  if (opt.check_jvp) {
    std::vector<array> tangents;
    std::vector<std::vector<double>> t(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      bool active = std::find(argnums.begin(), argnums.end(), static_cast<int>(i)) != argnums.end();
      t[i] = active ? random_values(inputs[i].size(), -1, 1, opt.seed + 101 * i)
                    : std::vector<double>(inputs[i].size(), 0.0);
      tangents.push_back(from_vector(t[i], inputs[i].shape(), inputs[i].dtype()));
    }
    auto out_tangents = jvp(f, inputs, tangents).second;
    std::vector<array> plus = inputs, minus = inputs;
    for (int i : argnums) {
      plus[i] = detail::perturbed(inputs[i], -1, eps, &t[i]);
      minus[i] = detail::perturbed(inputs[i], -1, -eps, &t[i]);
    }
    auto vp = detail::eval_outputs(f, plus);
    auto vm = detail::eval_outputs(f, minus);
    for (size_t j = 0; j < outs.size(); ++j) {
      if (!is_inexact(outs[j].dtype()))
        continue;
      ASSERT_EQ(out_tangents[j].shape(), outs[j].shape()) << "jvp shape of output " << j;
      auto tj = to_vector(out_tangents[j]);
      for (size_t k = 0; k < tj.size(); ++k) {
        double fd = (vp[j][k] - vm[j][k]) / (2 * eps);
        EXPECT_NEAR(tj[k], fd, atol + rtol * std::abs(fd))
            << "jvp of output " << j << " at flat index " << k;
      }
    }
  }
}

inline void check_grad(const UnaryFn& f, const array& x, GradCheckOptions opt = {}) {
  check_grad([f](const std::vector<array>& in) { return std::vector<array>{f(in[0])}; }, {x}, opt);
}

// vmap(f, in_axes, out_axes)(inputs) must equal f applied to each slice of the mapped axis,
// stacked along the out axis. rtol < 0 picks the default tolerance of the output dtype.
inline void check_vmap(const ArrayFn& f, const std::vector<array>& inputs,
                       std::vector<int> in_axes = {}, std::vector<int> out_axes = {},
                       double rtol = -1) {
  if (in_axes.empty())
    in_axes.assign(inputs.size(), 0);
  int batch = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (in_axes[i] >= 0)
      batch = inputs[i].shape(in_axes[i]);
  }
  ASSERT_GE(batch, 0) << "check_vmap needs a mapped input";
  std::vector<std::vector<array>> per_output;
  for (int b = 0; b < batch; ++b) {
    std::vector<array> slice;
    for (size_t i = 0; i < inputs.size(); ++i) {
      slice.push_back(in_axes[i] < 0 ? inputs[i] : take(inputs[i], b, in_axes[i]));
    }
    auto outs = f(slice);
    per_output.resize(outs.size());
    for (size_t j = 0; j < outs.size(); ++j)
      per_output[j].push_back(outs[j]);
  }
  auto actual = vmap(f, in_axes, out_axes)(inputs);
  ASSERT_EQ(actual.size(), per_output.size());
  for (size_t j = 0; j < actual.size(); ++j) {
    int out_axis = out_axes.empty() ? 0 : out_axes[j];
    array expected = stack(per_output[j], out_axis);
    EXPECT_EQ(actual[j].dtype(), expected.dtype()) << "output " << j;
    SCOPED_TRACE("vmap output " + std::to_string(j));
    double tol = rtol >= 0 ? rtol : default_rtol(expected.dtype()) * 10;
    expect_close(actual[j], to_vector(expected), expected.shape(), tol, tol);
  }
}

inline void check_vmap(const UnaryFn& f, const array& x, int in_axis = 0, int out_axis = 0) {
  check_vmap([f](const std::vector<array>& in) { return std::vector<array>{f(in[0])}; }, {x},
             {in_axis}, {out_axis});
}

}  // namespace mlx::core::test

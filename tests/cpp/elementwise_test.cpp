#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>

#include "mlx/mlx.h"
#include "test_utils.h"

using namespace mlx::core;
using namespace mlx::core::test;

namespace {

struct UnaryCase {
  const char* name;
  std::function<array(const array&)> op;
  std::function<double(double)> ref;
  double lo, hi;  // input domain
};

double erfinv_ref(double y) {
  // Bisection on erf: slow but exact enough for a reference.
  double lo = -6, hi = 6;
  if (y <= -1)
    return y == -1 ? -INFINITY : NAN;
  if (y >= 1)
    return y == 1 ? INFINITY : NAN;
  for (int i = 0; i < 200; ++i) {
    double mid = 0.5 * (lo + hi);
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// GELU's tanh approximation, and the derivatives of the activations, in double.
double gelu_approx_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}
double gelu_grad_ref(double x) {
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
         x * std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
}
double gelu_approx_grad_ref(double x) {
  double c = std::sqrt(2 / std::numbers::pi), t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
}
double silu_grad_ref(double x) {
  double sig = 1 / (1 + std::exp(-x));
  return sig + x * sig * (1 - sig);
}

std::vector<UnaryCase> unary_cases() {
  auto f = [](auto op) { return [op](const array& a) { return op(a, StreamOrDevice{}); }; };
  return {
      {"abs", f([](const array& a, StreamOrDevice s) { return abs(a, s); }),
       [](double x) { return std::abs(x); }, -5, 5},
      {"negative", f([](const array& a, StreamOrDevice s) { return negative(a, s); }),
       [](double x) { return -x; }, -5, 5},
      {"sign", f([](const array& a, StreamOrDevice s) { return sign(a, s); }),
       [](double x) { return double((x > 0) - (x < 0)); }, -5, 5},
      {"square", f([](const array& a, StreamOrDevice s) { return square(a, s); }),
       [](double x) { return x * x; }, -5, 5},
      {"sqrt", f([](const array& a, StreamOrDevice s) { return sqrt(a, s); }),
       [](double x) { return std::sqrt(x); }, 0, 10},
      {"rsqrt", f([](const array& a, StreamOrDevice s) { return rsqrt(a, s); }),
       [](double x) { return 1 / std::sqrt(x); }, 0.1, 10},
      {"reciprocal", f([](const array& a, StreamOrDevice s) { return reciprocal(a, s); }),
       [](double x) { return 1 / x; }, 0.5, 10},
      {"exp", f([](const array& a, StreamOrDevice s) { return exp(a, s); }),
       [](double x) { return std::exp(x); }, -10, 10},
      {"expm1", f([](const array& a, StreamOrDevice s) { return expm1(a, s); }),
       [](double x) { return std::expm1(x); }, -3, 3},
      {"log", f([](const array& a, StreamOrDevice s) { return log(a, s); }),
       [](double x) { return std::log(x); }, 0.01, 100},
      {"log2", f([](const array& a, StreamOrDevice s) { return log2(a, s); }),
       [](double x) { return std::log2(x); }, 0.01, 100},
      {"log10", f([](const array& a, StreamOrDevice s) { return log10(a, s); }),
       [](double x) { return std::log10(x); }, 0.01, 100},
      {"log1p", f([](const array& a, StreamOrDevice s) { return log1p(a, s); }),
       [](double x) { return std::log1p(x); }, -0.5, 10},
      {"sin", f([](const array& a, StreamOrDevice s) { return sin(a, s); }),
       [](double x) { return std::sin(x); }, -6, 6},
      {"cos", f([](const array& a, StreamOrDevice s) { return cos(a, s); }),
       [](double x) { return std::cos(x); }, -6, 6},
      {"tan", f([](const array& a, StreamOrDevice s) { return tan(a, s); }),
       [](double x) { return std::tan(x); }, -1.2, 1.2},
      {"arcsin", f([](const array& a, StreamOrDevice s) { return arcsin(a, s); }),
       [](double x) { return std::asin(x); }, -0.99, 0.99},
      {"arccos", f([](const array& a, StreamOrDevice s) { return arccos(a, s); }),
       [](double x) { return std::acos(x); }, -0.99, 0.99},
      {"arctan", f([](const array& a, StreamOrDevice s) { return arctan(a, s); }),
       [](double x) { return std::atan(x); }, -5, 5},
      {"sinh", f([](const array& a, StreamOrDevice s) { return sinh(a, s); }),
       [](double x) { return std::sinh(x); }, -4, 4},
      {"cosh", f([](const array& a, StreamOrDevice s) { return cosh(a, s); }),
       [](double x) { return std::cosh(x); }, -4, 4},
      {"tanh", f([](const array& a, StreamOrDevice s) { return tanh(a, s); }),
       [](double x) { return std::tanh(x); }, -5, 5},
      {"arcsinh", f([](const array& a, StreamOrDevice s) { return arcsinh(a, s); }),
       [](double x) { return std::asinh(x); }, -5, 5},
      {"arccosh", f([](const array& a, StreamOrDevice s) { return arccosh(a, s); }),
       [](double x) { return std::acosh(x); }, 1.01, 10},
      {"arctanh", f([](const array& a, StreamOrDevice s) { return arctanh(a, s); }),
       [](double x) { return std::atanh(x); }, -0.95, 0.95},
      {"erf", f([](const array& a, StreamOrDevice s) { return erf(a, s); }),
       [](double x) { return std::erf(x); }, -3, 3},
      {"erfinv", f([](const array& a, StreamOrDevice s) { return erfinv(a, s); }), erfinv_ref,
       -0.99, 0.99},
      {"sigmoid", f([](const array& a, StreamOrDevice s) { return sigmoid(a, s); }),
       [](double x) { return 1 / (1 + std::exp(-x)); }, -20, 20},
      {"gelu", f([](const array& a, StreamOrDevice s) { return gelu(a, s); }),
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -6, 6},
      {"gelu_approx", f([](const array& a, StreamOrDevice s) { return gelu_approx(a, s); }),
       gelu_approx_ref, -8, 8},
      {"silu", f([](const array& a, StreamOrDevice s) { return silu(a, s); }),
       [](double x) { return x / (1 + std::exp(-x)); }, -20, 20},
      {"floor", f([](const array& a, StreamOrDevice s) { return floor(a, s); }),
       [](double x) { return std::floor(x); }, -5, 5},
      {"ceil", f([](const array& a, StreamOrDevice s) { return ceil(a, s); }),
       [](double x) { return std::ceil(x); }, -5, 5},
      {"trunc", f([](const array& a, StreamOrDevice s) { return trunc(a, s); }),
       [](double x) { return std::trunc(x); }, -5, 5},
      {"round", f([](const array& a, StreamOrDevice s) { return round(a, 0, s); }),
       [](double x) { return std::nearbyint(x); }, -5, 5},
      {"degrees", f([](const array& a, StreamOrDevice s) { return degrees(a, s); }),
       [](double x) { return x * 180 / M_PI; }, -5, 5},
      {"radians", f([](const array& a, StreamOrDevice s) { return radians(a, s); }),
       [](double x) { return x * M_PI / 180; }, -5, 5},
  };
}

// Inputs in each dtype are first rounded to that dtype, so the reference sees the same values.
void check_unary(const UnaryCase& c, Dtype dt, const array& x) {
  auto in = to_vector(x);
  std::vector<double> expected(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    expected[i] = c.ref(in[i]);
  array y = c.op(x);
  SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dt));
  EXPECT_EQ(y.dtype(), dt);
  // Rounding functions are exact; the rest allow a few ulps of the output dtype.
  double rtol = default_rtol(dt) * (dt == float32 ? 4 : 2);
  expect_close(y, expected, x.shape(), rtol, rtol);
}

}  // namespace

TEST(Unary, AllFloatDtypesAndLayouts) {
  for (const auto& c : unary_cases()) {
    for (Dtype dt : kFloatDtypes) {
      array base = random_array({7, 9}, dt, c.lo, c.hi, 3);
      check_unary(c, dt, base);
      check_unary(c, dt, transpose(base));                                    // column-major view
      check_unary(c, dt, slice(base, {6, 8}, {-8, -10}, {-2, -3}));           // negative strides
      check_unary(c, dt, broadcast_to(slice(base, {0, 0}, {1, 9}), {4, 9}));  // broadcast
    }
  }
}

TEST(Unary, LargeArraysUseEveryThreadCorrectly) {
  array x = random_array({3, 1 << 20}, float32, -5, 5, 11);
  auto in = to_vector(x);
  array y = exp(x) + tanh(x);
  auto got = to_vector(y);
  for (size_t i = 0; i < in.size(); i += 997) {
    ASSERT_NEAR(got[i], std::exp(in[i]) + std::tanh(in[i]), 1e-5 * std::exp(in[i]) + 1e-6);
  }
}

TEST(Unary, IntegerInputsPromoteLikeMLX) {
  array i = array({1, 4, 9});
  EXPECT_EQ(sqrt(i).dtype(), float32);
  expect_close(sqrt(i), {1, 2, 3});
  EXPECT_EQ(abs(array({-3, 2})).dtype(), int32);
  expect_close(abs(array({-3, 2})), {3, 2});
  EXPECT_EQ(floor(array({2, 3})).dtype(), int32);
  EXPECT_EQ(sign(array({-3, 0, 5}, int8)).dtype(), int8);
  expect_close(sign(array({-3, 0, 5}, int8)), {-1, 0, 1});
  expect_close(negative(array({1, 2}, uint8)), {255, 254});
  EXPECT_THROW(negative(array({true})), std::invalid_argument);
  EXPECT_THROW(bitwise_invert(array({1.0f})), std::invalid_argument);
  expect_close(bitwise_invert(array({0, 5}, uint8)), {255, 250});
  expect_close(logical_not(array({0.0f, 2.0f})), {1, 0});
  EXPECT_EQ(logical_not(array({0.0f})).dtype(), bool_);
}

TEST(Unary, SpecialValues) {
  array x = array({NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f});
  expect_close(isnan(x), {1, 0, 0, 0, 0, 0});
  expect_close(isinf(x), {0, 1, 1, 0, 0, 0});
  expect_close(isposinf(x), {0, 1, 0, 0, 0, 0});
  expect_close(isneginf(x), {0, 0, 1, 0, 0, 0});
  expect_close(isfinite(x), {0, 0, 0, 1, 1, 1});
  expect_close(exp(x), {NAN, INFINITY, 0, 1, 1, std::exp(1.0)});
  expect_close(log(x), {NAN, INFINITY, NAN, -INFINITY, -INFINITY, 0});
  expect_close(sigmoid(array({-1000.0f, 1000.0f})), {0, 1});
  expect_close(nan_to_num(x, 7.0f), {7, finfo(float32).max, -finfo(float32).max, 0, 0, 1});
  expect_close(nan_to_num(x, 0.0f, 5.0f, -5.0f), {0, 5, -5, 0, 0, 1});
  expect_close(round(array({0.5f, 1.5f, 2.5f, -0.5f})), {0, 2, 2, 0});
  expect_close(round(array({1.2345f, -2.5551f}), 2), {1.23, -2.56}, 1e-6, 1e-6);
  expect_close(isnan(array({1, 2})), {0, 0});
}

TEST(Unary, ComplexSupport) {
  array z = array(std::complex<float>(3, 4));
  EXPECT_EQ(abs(z).dtype(), float32);
  EXPECT_FLOAT_EQ(abs(z).item<float>(), 5.0f);
  EXPECT_FLOAT_EQ(real(z).item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(imag(z).item<float>(), 4.0f);
  EXPECT_FLOAT_EQ(imag(conjugate(z)).item<float>(), -4.0f);
  auto e = exp(z).item<complex64_t>();
  std::complex<double> ref = std::exp(std::complex<double>(3, 4));
  EXPECT_NEAR(e.real(), ref.real(), 1e-4);
  EXPECT_NEAR(e.imag(), ref.imag(), 1e-4);
  EXPECT_THROW(erf(z), std::invalid_argument);
}

TEST(Unary, ZeroSizeAndScalars) {
  array e = zeros({0, 4});
  EXPECT_EQ(exp(e).shape(), Shape({0, 4}));
  eval(exp(e));
  EXPECT_FLOAT_EQ(exp(array(0.0f)).item<float>(), 1.0f);
}

namespace {
struct BinaryCase {
  const char* name;
  std::function<array(const array&, const array&)> op;
  std::function<double(double, double)> ref;
};

double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](auto& a, auto& b) { return add(a, b); }, [](double a, double b) { return a + b; }},
      {"subtract", [](auto& a, auto& b) { return subtract(a, b); },
       [](double a, double b) { return a - b; }},
      {"multiply", [](auto& a, auto& b) { return multiply(a, b); },
       [](double a, double b) { return a * b; }},
      {"divide", [](auto& a, auto& b) { return divide(a, b); },
       [](double a, double b) { return a / b; }},
      {"maximum", [](auto& a, auto& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }},
      {"minimum", [](auto& a, auto& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }},
      {"power", [](auto& a, auto& b) { return power(abs(a), b); },
       [](double a, double b) { return std::pow(std::abs(a), b); }},
      {"remainder", [](auto& a, auto& b) { return remainder(a, b); }, py_mod},
      {"floor_divide", [](auto& a, auto& b) { return floor_divide(a, b); },
       [](double a, double b) { return std::floor(a / b); }},
      {"logaddexp", [](auto& a, auto& b) { return logaddexp(a, b); },
       [](double a, double b) { return std::log(std::exp(a) + std::exp(b)); }},
      {"arctan2", [](auto& a, auto& b) { return arctan2(a, b); },
       [](double a, double b) { return std::atan2(a, b); }},
  };
}
}  // namespace

TEST(Binary, FloatDtypesWithBroadcastingAndViews) {
  for (const auto& c : binary_cases()) {
    for (Dtype dt : kFloatDtypes) {
      SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dt));
      array a = random_array({4, 1, 5}, dt, 0.5, 3, 1);
      array b = random_array({3, 5}, dt, 0.5, 3, 2);
      // Keep remainder/floor_divide away from exact ties that half precision may flip.
      auto check = [&](const array& x, const array& y) {
        auto xv = to_vector(broadcast_to(x, {4, 3, 5}));
        auto yv = to_vector(broadcast_to(y, {4, 3, 5}));
        std::vector<double> expected(xv.size());
        for (size_t i = 0; i < xv.size(); ++i)
          expected[i] = c.ref(xv[i], yv[i]);
        array out = c.op(x, y);
        double tol = default_rtol(dt) * 4;
        if (std::string(c.name) == "floor_divide" || std::string(c.name) == "remainder") {
          tol = dt == float64 ? 1e-9 : (dt == float32 ? 1e-4 : 0.05);
        }
        expect_close(out, expected, {4, 3, 5}, tol, tol);
      };
      check(a, b);
      check(transpose(transpose(a, {2, 1, 0}), {2, 1, 0}), slice(b, {2, 4}, {-4, -6}, {-1, -1}));
    }
  }
}

// The activations' vjps g f'(x) (one kernel each) against the derivatives in double. (Their
// agreement with the activations is checked by finite differences in elementwise_transforms_test.)
TEST(Binary, ActivationVjps) {
  struct Case {
    const char* name;
    std::function<array(const array&, const array&)> op;
    double (*grad)(double);
    double lo, hi;
  };
  const Case cases[] = {
      {"gelu_vjp", [](auto& x, auto& g) { return gelu_vjp(x, g); }, gelu_grad_ref, -6, 6},
      {"gelu_approx_vjp", [](auto& x, auto& g) { return gelu_approx_vjp(x, g); },
       gelu_approx_grad_ref, -8, 8},
      {"silu_vjp", [](auto& x, auto& g) { return silu_vjp(x, g); }, silu_grad_ref, -20, 20},
  };
  for (const auto& c : cases) {
    for (Dtype dt : kFloatDtypes) {
      SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dt));
      auto check = [&](const array& x, const array& g) {
        Shape shape = broadcast_shapes(x.shape(), g.shape());
        auto xv = to_vector(broadcast_to(x, shape));
        auto gv = to_vector(broadcast_to(g, shape));
        std::vector<double> expected(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) {
          expected[i] = gv[i] * c.grad(xv[i]);
        }
        array out = c.op(x, g);
        EXPECT_EQ(out.dtype(), dt);
        double tol = default_rtol(dt) * (dt == float32 ? 4 : 2);
        expect_close(out, expected, shape, tol, tol);
      };
      array x = random_array({5, 7, 9}, dt, c.lo, c.hi, 7);
      array g = random_array({5, 7, 9}, dt, -2, 2, 8);
      check(x, g);
      check(transpose(x, {2, 0, 1}), transpose(g, {2, 0, 1}));                // both strided alike
      check(transpose(x, {2, 0, 1}), random_array({9, 5, 7}, dt, -2, 2, 9));  // x strided only
      check(slice(x, {4, 6, 8}, {-6, -8, -10}, {-1, -2, -3}), slice(g, {0, 0, 0}, {5, 4, 3}));
      check(x, array(1.5, dt));                    // g a scalar
      check(array(0.75, dt), g);                   // x a scalar
      check(x, random_array({9}, dt, -2, 2, 10));  // g broadcast rows
      check(array(-0.5, dt), array(3.0, dt));      // both scalars
      check(random_array({1}, dt, c.lo, c.hi, 11), random_array({1}, dt, -2, 2, 12));
      check(zeros({0, 3}, dt), zeros({0, 3}, dt));
      // Long enough for every thread, streaming stores and a ragged tail.
      array big_x = random_array({1000003}, dt, c.lo, c.hi, 13);
      array big_g = random_array({1000003}, dt, -2, 2, 14);
      check(big_x, big_g);
      check(big_x, array(0.25, dt));
    }
  }
  // Integers become float32; complex inputs are refused.
  EXPECT_EQ(gelu_vjp(array({1, 2}), array({1, 1})).dtype(), float32);
  EXPECT_EQ(silu_vjp(array({1.0f}, float16), array({1.0f}, float32)).dtype(), float32);
  EXPECT_THROW(gelu_approx_vjp(array({1.0f}, complex64), array({1.0f})), std::invalid_argument);
}

TEST(Binary, PromotionAndScalars) {
  array i = array({1, 2, 3});
  array f = array({0.5f, 1.0f, 1.5f});
  EXPECT_EQ((i + f).dtype(), float32);
  EXPECT_EQ((i / i).dtype(), float32);  // true division
  expect_close(i / array(2), {0.5, 1, 1.5});
  EXPECT_EQ((array({1}, int8) + array({1}, uint8)).dtype(), int16);
  EXPECT_EQ((array({1.0f}, float16) * array({1.0f}, bfloat16)).dtype(), float32);
  expect_close(2.0f * f + 1, {2, 3, 4});
  expect_close(10 - i, {9, 8, 7});
  EXPECT_EQ((i < 2).dtype(), bool_);
  expect_close(i < 2, {1, 0, 0});
  expect_close(i == array({1, 0, 3}), {1, 0, 1});
  expect_close(i >= 2, {0, 1, 1});
  expect_close(i != 2, {1, 0, 1});
}

TEST(Binary, IntegerSemantics) {
  array a = array({7, -7, 7, -7, 0});
  array b = array({2, 2, -2, -2, 3});
  expect_close(floor_divide(a, b), {3, -4, -4, 3, 0});
  expect_close(remainder(a, b), {1, 1, -1, -1, 0});
  expect_close(a % b, {1, 1, -1, -1, 0});
  // Division by zero and INT_MIN / -1 must not trap.
  array m = array({std::numeric_limits<int32_t>::min(), 5});
  eval(floor_divide(m, array({-1, 0})), remainder(m, array({-1, 0})));
  expect_close(power(array({2, 3, -2}), array({10, 0, 3})), {1024, 1, -8});
  expect_close(power(array({2, 1, -1}), array({-1, -5, -3})), {0, 1, -1});
  expect_close(left_shift(array({1, 3}, uint8), array({3, 9}, uint8)), {8, 0});
  expect_close(right_shift(array({-16, 16}), array({2, 40})), {-4, 0});
  expect_close(bitwise_and(array({12}), array({10})), {8});
  expect_close(bitwise_or(array({12}), array({10})), {14});
  expect_close(bitwise_xor(array({12}), array({10})), {6});
  expect_close(array({true, false}) & array({true, true}), {1, 0});
  EXPECT_THROW(bitwise_and(array({1.0f}), array({1})), std::invalid_argument);
  EXPECT_THROW(subtract(array({true}), array({true})), std::invalid_argument);
  expect_close(maximum(array({1, 5}, uint64), array({3, 2}, uint64)), {3, 5});
}

TEST(Binary, AllDtypesAddAndCompare) {
  for (Dtype dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    array a = astype(array({0, 1, 1, 0}, {2, 2}), dt);
    array b = astype(array({1, 1, 0, 0}, {2, 2}), dt);
    auto sum = to_vector(add(a, b));
    if (dt == bool_) {
      EXPECT_EQ(sum, std::vector<double>({1, 1, 1, 0}));
    } else {
      EXPECT_EQ(sum, std::vector<double>({1, 2, 1, 0}));
    }
    EXPECT_EQ(to_vector(equal(a, b)), std::vector<double>({0, 1, 0, 1}));
    EXPECT_EQ(to_vector(multiply(a, b)), std::vector<double>({0, 1, 0, 0}));
    EXPECT_EQ(to_vector(maximum(a, b)), std::vector<double>({1, 1, 1, 0}));
  }
}

TEST(Binary, NaNPropagationAndLogical) {
  array x = array({NAN, 1.0f, 2.0f});
  array y = array({0.0f, NAN, 1.0f});
  expect_close(maximum(x, y), {NAN, NAN, 2});
  expect_close(minimum(x, y), {NAN, NAN, 1});
  expect_close(logaddexp(array({-INFINITY, INFINITY}), array({-INFINITY, 1.0f})),
               {-INFINITY, INFINITY});
  expect_close(logical_and(array({1.0f, 0.0f}), array({2, 3})), {1, 0});
  expect_close(logical_or(array({1.0f, 0.0f}), array({0, 0})), {1, 0});
  expect_close(logical_xor(array({true, true}), array({true, false})), {0, 1});
}

TEST(Binary, BroadcastErrors) {
  EXPECT_THROW(add(zeros({2, 3}), zeros({4, 3})), std::invalid_argument);
  try {
    add(zeros({2, 3}), zeros({4, 3}));
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("(2,3)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[add]"), std::string::npos) << e.what();
  }
}

TEST(Binary, LargeAndDonated) {
  array a = random_array({1 << 21}, float32, -1, 1, 5);
  array b = random_array({1 << 21}, float32, -1, 1, 6);
  eval(a, b);
  auto av = to_vector(a), bv = to_vector(b);
  array c = (a + b) * b - a;
  auto cv = to_vector(c);
  for (size_t i = 0; i < cv.size(); i += 4099) {
    ASSERT_NEAR(cv[i], (av[i] + bv[i]) * bv[i] - av[i], 1e-5);
  }
}

TEST(Ternary, WhereAndClip) {
  array c = array({true, false, true});
  expect_close(where(c, array({1, 2, 3}), array(0.5f)), {1, 0.5, 3});
  EXPECT_EQ(where(c, array({1, 2, 3}), array(0.5f)).dtype(), float32);
  expect_close(where(reshape(c, {3, 1}), array({1.0f, 2.0f}), array(-1.0f)), {1, 2, -1, -1, 1, 2},
               {3, 2});
  expect_close(clip(array({-2.0f, 0.5f, 3.0f}), array(-1.0f), array(1.0f)), {-1, 0.5, 1});
  expect_close(clip(array({-2.0f, 3.0f}), std::nullopt, array(1.0f)), {-2, 1});
  EXPECT_THROW(clip(array({1.0f}), std::nullopt, std::nullopt), std::invalid_argument);
  for (Dtype dt : kAllDtypes) {
    array x = astype(array({1, 0}), dt);
    EXPECT_EQ(to_vector(where(array({false, true}), x, zeros_like(x))),
              std::vector<double>({0, 0}));
  }
}

TEST(Ternary, IsClose) {
  expect_close(
      isclose(array({1.0f, 1.0f, NAN, INFINITY}), array({1.0f + 1e-6f, 1.1f, NAN, INFINITY})),
      {1, 0, 0, 1});
  expect_close(isclose(array({NAN}), array({NAN}), 1e-5, 1e-8, true), {1});
}

TEST(Creation, Basics) {
  expect_close(arange(5), {0, 1, 2, 3, 4});
  EXPECT_EQ(arange(5).dtype(), int32);
  expect_close(arange(1.0, 2.0, 0.25), {1, 1.25, 1.5, 1.75});
  expect_close(arange(5, 0, -2), {5, 3, 1});
  EXPECT_EQ(arange(0, 0).size(), 0u);
  EXPECT_THROW(arange(0.0, 1.0, 0.0), std::invalid_argument);
  expect_close(linspace(0, 1, 5), {0, 0.25, 0.5, 0.75, 1});
  expect_close(linspace(2, 3, 1), {2});
  EXPECT_EQ(linspace(0, 1, 0).size(), 0u);
  expect_close(full({2, 2}, 3.0f), {3, 3, 3, 3});
  EXPECT_EQ(full({2}, 7, int8).dtype(), int8);
  expect_close(full({2, 3}, array({1.0f, 2.0f, 3.0f})), {1, 2, 3, 1, 2, 3});
  EXPECT_THROW(full({2, 2}, array({1.0f, 2.0f, 3.0f})), std::invalid_argument);
  expect_close(zeros({3}, int64), {0, 0, 0});
  expect_close(ones_like(array({1, 2})), {1, 1});
  expect_close(eye(2, 3, 1), {0, 1, 0, 0, 0, 1});
  expect_close(identity(2), {1, 0, 0, 1});
  expect_close(tri(3, 3, 0, float32), {1, 0, 0, 1, 1, 0, 1, 1, 1});
  EXPECT_THROW(zeros({-1}), std::invalid_argument);
  for (Dtype dt : kAllDtypes) {
    EXPECT_EQ(to_vector(ones({2}, dt)), std::vector<double>({1, 1}));
    EXPECT_EQ(ones({2}, dt).dtype(), dt);
  }
}

namespace mlx::core::test {
namespace {

// x ** k with a small integer scalar k takes a multiplication path; it must agree with pow.
TEST(Binary, PowerBySmallIntegerScalars) {
  std::vector<double> xs = {-2.5, -1.0, -0.0, 0.0, 0.5, 1.5, 3.0};
  for (Dtype t : {float16, bfloat16, float32, float64}) {
    for (double k : {-4.0, -3.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 2.5, 5.0}) {
      array x = from_vector(xs, {static_cast<int>(xs.size())}, t);
      array y = power(x, array(k, t));
      std::vector<double> expected;
      for (double v : to_vector(x)) {
        expected.push_back(std::pow(v, k));
      }
      SCOPED_TRACE(::testing::Message() << t << " k=" << k);
      expect_close(y, expected, y.shape(), default_rtol(t) * 4, 0);
    }
  }
  // A strided (transposed) base and an exponent that is not a scalar keep working.
  array base = transpose(from_vector({1, 2, 3, 4, 5, 6}, {2, 3}));
  expect_close(power(base, array(2.0f)), {1, 16, 4, 25, 9, 36}, {3, 2});
  expect_close(power(array({2.0f, 3.0f}), array({2.0f, 3.0f})), {4, 27}, {2});
}

}  // namespace
}  // namespace mlx::core::test

// Reductions, arg reductions, softmax, logsumexp, array_equal / allclose against float64
// references computed here.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "test_utils.h"

using namespace mlx::core;
using namespace mlx::core::test;

namespace {

using Vec = std::vector<double>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Every subset of {0, ..., ndim - 1}.
std::vector<std::vector<int>> axis_subsets(int ndim) {
  std::vector<std::vector<int>> out;
  for (int mask = 0; mask < (1 << ndim); ++mask) {
    std::vector<int> axes;
    for (int d = 0; d < ndim; ++d) {
      if (mask & (1 << d)) {
        axes.push_back(d);
      }
    }
    out.push_back(axes);
  }
  return out;
}

Shape keep_shape(Shape shape, const std::vector<int>& axes) {
  for (int ax : axes) {
    shape[ax] = 1;
  }
  return shape;
}

Shape drop_shape(const Shape& shape, const std::vector<int>& axes, bool keepdims) {
  if (keepdims) {
    return keep_shape(shape, axes);
  }
  Shape out;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
      out.push_back(shape[d]);
    }
  }
  return out;
}

// The elements of a row-major array of `shape`, grouped by output position of a reduction
// over `axes` (in row-major order of the kept-dims output).
std::vector<Vec> groups(const Vec& v, const Shape& shape, const std::vector<int>& axes) {
  Shape oshape = keep_shape(shape, axes);
  std::vector<Vec> g(shape_size(oshape));
  int nd = static_cast<int>(shape.size());
  std::vector<int> idx(nd, 0);
  for (size_t i = 0; i < v.size(); ++i) {
    size_t o = 0;
    for (int d = 0; d < nd; ++d) {
      o = o * oshape[d] + (oshape[d] == 1 ? 0 : idx[d]);
    }
    g[o].push_back(v[i]);
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        break;
      }
      idx[d] = 0;
    }
  }
  return g;
}

Vec apply_groups(const std::vector<Vec>& gs, const std::function<double(const Vec&)>& f) {
  Vec out;
  for (auto& g : gs) {
    out.push_back(f(g));
  }
  return out;
}

Vec reference(const Vec& v, const Shape& shape, const std::vector<int>& axes,
              const std::function<double(const Vec&)>& f) {
  return apply_groups(groups(v, shape, axes), f);
}

// Folds each output's elements with op, starting from init: a single pass over v, for large
// inputs.
Vec fold_ref(const Vec& v, const Shape& shape, const std::vector<int>& axes, double init,
             const std::function<double(double, double)>& op) {
  Shape oshape = keep_shape(shape, axes);
  Vec out(shape_size(oshape), init);
  int nd = static_cast<int>(shape.size());
  std::vector<int64_t> ostride(nd, 0);
  for (int64_t d = nd - 1, s = 1; d >= 0; --d) {
    ostride[d] = oshape[d] == 1 ? 0 : s;
    s *= oshape[d];
  }
  std::vector<int> idx(nd, 0);
  int64_t o = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    out[o] = op(out[o], v[i]);
    for (int d = nd - 1; d >= 0; --d) {
      o += ostride[d];
      if (++idx[d] < shape[d]) {
        break;
      }
      o -= ostride[d] * shape[d];
      idx[d] = 0;
    }
  }
  return out;
}

double ref_sum(const Vec& g) { return std::accumulate(g.begin(), g.end(), 0.0); }
double ref_prod(const Vec& g) {
  return std::accumulate(g.begin(), g.end(), 1.0, std::multiplies<double>());
}
double ref_max(const Vec& g) {
  double m = -kInf;
  for (double x : g) {
    if (std::isnan(x))
      return kNaN;
    m = std::max(m, x);
  }
  return m;
}
double ref_min(const Vec& g) {
  double m = kInf;
  for (double x : g) {
    if (std::isnan(x))
      return kNaN;
    m = std::min(m, x);
  }
  return m;
}
double ref_mean(const Vec& g) { return ref_sum(g) / g.size(); }
double ref_var(const Vec& g, int ddof) {
  double mu = ref_mean(g), ss = 0;
  for (double x : g)
    ss += (x - mu) * (x - mu);
  return ss / (static_cast<double>(g.size()) - ddof);
}
double ref_all(const Vec& g) {
  return std::all_of(g.begin(), g.end(), [](double x) { return x != 0; });
}
double ref_any(const Vec& g) {
  return std::any_of(g.begin(), g.end(), [](double x) { return x != 0; });
}
double ref_logsumexp(const Vec& g) {
  double m = ref_max(g);
  if (std::isnan(m) || std::isinf(m))
    return m;
  double s = 0;
  for (double x : g)
    s += std::exp(x - m);
  return m + std::log(s);
}

// Values of `dtype` that keep every reduction exact enough in that dtype.
array test_input(const Shape& shape, Dtype dtype, uint32_t seed = 0) {
  if (dtype == bool_) {
    return random_array(shape, float32, -1, 1, seed) > array(-0.3f);
  }
  if (is_unsigned(dtype)) {
    return astype(floor(random_array(shape, float32, 0, 8, seed)), dtype);
  }
  if (!is_inexact(dtype)) {
    return astype(floor(random_array(shape, float32, -8, 8, seed)), dtype);
  }
  return random_array(shape, dtype, -1, 1, seed);
}

double rtol_for(Dtype t) {
  if (t == float16)
    return 4e-3;
  if (t == bfloat16)
    return 3e-2;
  if (t == float64)
    return 1e-12;
  return 2e-5;
}

Dtype expected_sum_dtype(Dtype t) {
  if (t == bool_ || t == int8 || t == int16)
    return int32;
  if (t == uint8 || t == uint16)
    return uint32;
  return t;
}

}  // namespace

// Every dtype, every axis subset of a 4-D array, keepdims or not: sum, max, min, mean, all,
// any against float64 references, and the output dtypes.
TEST(Reduction, AllAxesAllDtypes) {
  Shape shape{2, 3, 4, 5};
  for (Dtype dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    array x = test_input(shape, dt);
    Vec v = to_vector(x);
    double rtol = rtol_for(dt);
    for (auto& axes : axis_subsets(4)) {
      for (bool keepdims : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "axes " << to_string(Shape(axes.begin(), axes.end()))
                                          << " keepdims " << keepdims);
        Shape out_shape = drop_shape(shape, axes, keepdims);
        array s = sum(x, axes, keepdims);
        EXPECT_EQ(s.dtype(), expected_sum_dtype(dt));
        expect_close(s, reference(v, shape, axes, ref_sum), out_shape, rtol, rtol);
        array mx = max(x, axes, keepdims);
        EXPECT_EQ(mx.dtype(), dt);
        expect_close(mx, reference(v, shape, axes, ref_max), out_shape, rtol, 0);
        expect_close(min(x, axes, keepdims), reference(v, shape, axes, ref_min), out_shape, rtol,
                     0);
        array m = mean(x, axes, keepdims);
        EXPECT_EQ(m.dtype(), is_inexact(dt) ? dt : float32);
        expect_close(m, reference(v, shape, axes, ref_mean), out_shape, rtol, rtol);
        array al = all(x, axes, keepdims);
        EXPECT_EQ(al.dtype(), bool_);
        expect_close(al, reference(v, shape, axes, ref_all), out_shape, 0, 0);
        expect_close(any(x, axes, keepdims), reference(v, shape, axes, ref_any), out_shape, 0, 0);
      }
    }
  }
}

TEST(Reduction, ProdAllAxesAllDtypes) {
  Shape shape{3, 4, 5};
  for (Dtype dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    // Factors near 1 (or +-1 and 2 for integers) keep products in range.
    array x =
        is_inexact(dt) ? random_array(shape, dt, 0.7, 1.3, 3)
        : dt == bool_  ? test_input(shape, dt)
        : is_unsigned(dt)
            ? astype(floor(random_array(shape, float32, 1, 2.2, 3)), dt)
            : astype(floor(random_array(shape, float32, -1, 1.5, 3)) * array(2.0f) + array(1.0f),
                     dt);
    Vec v = to_vector(x);
    for (auto& axes : axis_subsets(3)) {
      array p = prod(x, axes);
      EXPECT_EQ(p.dtype(), expected_sum_dtype(dt));
      expect_close(p, reference(v, shape, axes, ref_prod), drop_shape(shape, axes, false),
                   rtol_for(dt) * 4, 0);
    }
  }
}

TEST(Reduction, VarStdLogsumexp) {
  Shape shape{3, 4, 5};
  for (Dtype dt : {float16, bfloat16, float32, float64, int32, uint8, bool_}) {
    SCOPED_TRACE(dtype_name(dt));
    array x = test_input(shape, dt, 5);
    Vec v = to_vector(x);
    Dtype out_dt = is_inexact(dt) ? dt : float32;
    double rtol = rtol_for(out_dt) * 2;
    for (auto& axes : axis_subsets(3)) {
      if (axes.empty()) {
        continue;
      }
      for (int ddof : {0, 1}) {
        array va = var(x, axes, false, ddof);
        EXPECT_EQ(va.dtype(), out_dt);
        auto ref_v = reference(v, shape, axes, [&](const Vec& g) { return ref_var(g, ddof); });
        Shape out_shape = drop_shape(shape, axes, false);
        expect_close(va, ref_v, out_shape, rtol, rtol);
        for (auto& r : ref_v)
          r = std::sqrt(r);
        expect_close(mlx::core::std(x, axes, true, ddof), ref_v, keep_shape(shape, axes), rtol,
                     rtol);
      }
      array l = logsumexp(x, axes, false);
      EXPECT_EQ(l.dtype(), out_dt);
      expect_close(l, reference(v, shape, axes, ref_logsumexp), drop_shape(shape, axes, false),
                   rtol, rtol);
      expect_close(logsumexp(x, axes, true), reference(v, shape, axes, ref_logsumexp),
                   keep_shape(shape, axes), rtol, rtol);
    }
  }
}

TEST(Reduction, Overloads) {
  array x = reshape(arange(24.0f), {2, 3, 4});
  Vec v = to_vector(x);
  Shape shape{2, 3, 4};
  expect_close(sum(x), {276.0}, Shape{});
  expect_close(sum(x, true), {276.0}, Shape{1, 1, 1});
  expect_close(sum(x, 1), reference(v, shape, {1}, ref_sum), Shape{2, 4});
  expect_close(sum(x, -1, true), reference(v, shape, {2}, ref_sum), Shape{2, 3, 1});
  expect_close(sum(x, {-1, 0}), reference(v, shape, {0, 2}, ref_sum), Shape{3});
  expect_close(max(x, 0), reference(v, shape, {0}, ref_max), Shape{3, 4});
  expect_close(var(x), {ref_var(v, 0)}, Shape{});
  expect_close(var(x, true, 1), {ref_var(v, 1)}, Shape{1, 1, 1});
  expect_close(mlx::core::std(x, 2, false, 1),
               reference(v, shape, {2}, [](const Vec& g) { return std::sqrt(ref_var(g, 1)); }),
               Shape{2, 3});
  expect_close(logsumexp(x), {ref_logsumexp(v)}, Shape{});
  EXPECT_TRUE(all(x >= array(0.0f)).item<bool>());
  EXPECT_FALSE(all(x).item<bool>());  // x[0] == 0
  EXPECT_TRUE(any(x, true).item<bool>());
  // A 0-d array reduces to itself (with the widened dtype).
  array b(true);
  EXPECT_EQ(sum(b).dtype(), int32);
  EXPECT_EQ(sum(b).item<int32_t>(), 1);
  EXPECT_EQ(max(array(3.5f)).item<float>(), 3.5f);
}

TEST(Reduction, HalfMeanAndSumDtype) {
  array x = full({1000}, 0.1f, float16);
  array m = mean(x);
  EXPECT_EQ(m.dtype(), float16);
  EXPECT_NEAR(m.item<float>(), 0.0999755859375, 1e-4);
  // 1000 * 0.1 rounds once, from a float32 accumulator.
  array s = sum(x);
  EXPECT_EQ(s.dtype(), float16);
  EXPECT_NEAR(s.item<float>(), 99.976, 0.05);
  array bs = sum(full({1000}, 0.1f, bfloat16));
  EXPECT_NEAR(bs.item<float>(), 100.0, 0.5);
}

TEST(Reduction, Complex) {
  std::vector<std::complex<float>> vals;
  for (int i = 0; i < 60; ++i) {
    vals.emplace_back(0.1f * i, -0.05f * i + 1.0f);
  }
  array x(vals.data(), {3, 20}, complex64);
  array s = sum(x, 1);
  eval(s);
  EXPECT_EQ(s.dtype(), complex64);
  for (int r = 0; r < 3; ++r) {
    std::complex<double> ref = 0;
    for (int c = 0; c < 20; ++c)
      ref += std::complex<double>(vals[r * 20 + c]);
    auto got = s.data<complex64_t>()[r];
    EXPECT_NEAR(got.real(), ref.real(), 1e-4);
    EXPECT_NEAR(got.imag(), ref.imag(), 1e-4);
  }
  array m = mean(x, 0);
  eval(m);
  EXPECT_EQ(m.dtype(), complex64);
  for (int c = 0; c < 20; ++c) {
    std::complex<double> ref = 0;
    for (int r = 0; r < 3; ++r)
      ref += std::complex<double>(vals[r * 20 + c]) / 3.0;
    auto got = m.data<complex64_t>()[c];
    EXPECT_NEAR(got.real(), ref.real(), 1e-5);
    EXPECT_NEAR(got.imag(), ref.imag(), 1e-5);
  }
  // Lexicographic max.
  array mx = max(
      array({std::complex<float>(1, 5), std::complex<float>(2, -1), std::complex<float>(2, 3)}));
  eval(mx);
  EXPECT_EQ(mx.data<complex64_t>()[0], complex64_t(2, 3));
  // Logical reductions test both parts for non-zero.
  array c01({std::complex<float>(0, 1), std::complex<float>(2, 0)});
  EXPECT_TRUE(all(c01).item<bool>());
  EXPECT_FALSE(any(array({std::complex<float>(0, 0)})).item<bool>());
  EXPECT_THROW(var(x), std::invalid_argument);
  EXPECT_THROW(logsumexp(x), std::invalid_argument);
  EXPECT_THROW(softmax(x), std::invalid_argument);
}

TEST(Reduction, EmptyAndSizeOne) {
  array e = zeros({0, 3});
  expect_close(sum(e, 0), {0, 0, 0}, Shape{3});
  expect_close(sum(e, 1), {}, Shape{0});
  expect_close(prod(e, 0, true), {1, 1, 1}, Shape{1, 3});
  expect_close(sum(e), {0}, Shape{});
  EXPECT_EQ(sum(zeros({0}, int8)).dtype(), int32);
  EXPECT_TRUE(all(e).item<bool>());
  EXPECT_FALSE(any(e).item<bool>());
  expect_close(all(e, 0), {1, 1, 1}, Shape{3});
  EXPECT_TRUE(std::isnan(mean(e).item<float>()));
  expect_close(max(e, 1), {}, Shape{0});  // nothing is reduced over an empty axis
  EXPECT_THROW(max(e), std::invalid_argument);
  EXPECT_THROW(min(e, 0), std::invalid_argument);
  EXPECT_THROW(argmax(e), std::invalid_argument);
  EXPECT_THROW(argmin(e, 0), std::invalid_argument);
  expect_close(argmax(e, 1), {}, Shape{0});
  EXPECT_EQ(logsumexp(e, 0).shape(), Shape{3});
  expect_close(logsumexp(e, 0), {-kInf, -kInf, -kInf}, Shape{3});
  EXPECT_EQ(softmax(e, 0).shape(), (Shape{0, 3}));

  // Size-1 axes: the reduction is the identity (converted to the output dtype).
  array one = reshape(arange(6, int8), {1, 6, 1});
  array s = sum(one, {0, 2});
  EXPECT_EQ(s.dtype(), int32);
  expect_close(s, {0, 1, 2, 3, 4, 5}, Shape{6});
  expect_close(max(one, 2, true), {0, 1, 2, 3, 4, 5}, Shape{1, 6, 1});
  expect_close(all(one, 0), {0, 1, 1, 1, 1, 1}, Shape{6, 1});
  expect_close(sum(array({7.0f}), 0), {7}, Shape{});
  expect_close(argmax(one, 0), {0, 0, 0, 0, 0, 0}, Shape{6, 1});
}

// Transposed, sliced (with steps, negative steps) and broadcast inputs, every axis subset.
TEST(Reduction, NonContiguousLayouts) {
  array base = random_array({6, 40, 24}, float32, -1, 1, 7);
  std::vector<std::pair<const char*, array>> inputs = {
      {"transpose", transpose(base, {2, 0, 1})},
      {"transpose last two", transpose(base, {0, 2, 1})},
      {"step slice", slice(base, {0, 1, 0}, {6, 40, 24}, {2, 3, 5})},
      {"negative steps", slice(base, {5, 39, 23}, {-7, -41, -25}, {-1, -2, -1})},
      {"negative inner", slice(base, {0, 0, 23}, {6, 40, -25}, {1, 1, -1})},
      {"broadcast", broadcast_to(slice(base, {0, 0, 0}, {1, 40, 24}), {6, 40, 24})},
      {"broadcast inner", broadcast_to(slice(base, {0, 0, 0}, {6, 40, 1}), {6, 40, 24})},
  };
  for (auto& [name, x] : inputs) {
    SCOPED_TRACE(name);
    Vec v = to_vector(x);
    Shape shape = x.shape();
    for (auto& axes : axis_subsets(3)) {
      SCOPED_TRACE(::testing::Message() << "axes " << to_string(Shape(axes.begin(), axes.end())));
      Shape out_shape = drop_shape(shape, axes, false);
      expect_close(sum(x, axes), reference(v, shape, axes, ref_sum), out_shape, 1e-5, 1e-5);
      expect_close(max(x, axes), reference(v, shape, axes, ref_max), out_shape, 0, 0);
      expect_close(min(astype(x, float16), axes),
                   reference(to_vector(astype(x, float16)), shape, axes, ref_min), out_shape, 0, 0);
      expect_close(any(x > array(0.9f), axes),
                   reference(v, shape, axes,
                             [](const Vec& g) {
                               return std::any_of(g.begin(), g.end(),
                                                  [](double y) { return y > 0.9; });
                             }),
                   out_shape, 0, 0);
      if (axes.size() == 1) {
        Vec ref = reference(v, shape, axes, [](const Vec& g) {
          return static_cast<double>(std::max_element(g.begin(), g.end()) - g.begin());
        });
        expect_close(argmax(x, axes[0]), ref, out_shape, 0, 0);
      }
    }
  }
}

// Sizes that reach every engine and the parallel paths: long rows, many short rows, wide and
// narrow columns, columns split by rows, and ops over >= 1M elements.
TEST(Reduction, LargeShapesAllEngines) {
  std::vector<Shape> shapes = {{1 << 20},      {1024, 1024}, {3, 400000}, {400000, 3},
                               {2, 700, 900},  {16, 65536},  {65536, 16}, {5000, 37},
                               {1, 3000, 400}, {7, 3, 50000}};
  for (auto& shape : shapes) {
    SCOPED_TRACE(::testing::Message() << "shape " << to_string(shape));
    for (Dtype dt : {float32, bfloat16, int32, bool_}) {
      SCOPED_TRACE(dtype_name(dt));
      array x = test_input(shape, dt, 11);
      Vec v = to_vector(x);
      for (auto& axes : axis_subsets(static_cast<int>(shape.size()))) {
        if (axes.empty()) {
          continue;
        }
        SCOPED_TRACE(::testing::Message() << "axes " << to_string(Shape(axes.begin(), axes.end())));
        Shape out_shape = drop_shape(shape, axes, false);
        Vec ref_s = fold_ref(v, shape, axes, 0.0, [](double a, double b) { return a + b; });
        expect_close(sum(x, axes), ref_s, out_shape, dt == bfloat16 ? 1e-2 : 1e-6,
                     dt == bfloat16 ? 1e-1 : 1e-3);
        Vec ref_m =
            fold_ref(v, shape, axes, -kInf, [](double a, double b) { return std::max(a, b); });
        expect_close(max(x, axes), ref_m, out_shape, 0, 0);
        if (dt == float32) {
          Vec ref_a = fold_ref(v, shape, axes, 1.0, [](double a, double b) { return a && b != 0; });
          expect_close(all(x, axes), ref_a, out_shape, 0, 0);
        }
      }
    }
  }
}

// A 16M-element float32 sum agrees with the float64 sum of the same values to 1e-6, over all
// axes and along the last and first axes.
TEST(Reduction, Float32SumAccuracy) {
  const int n = 1 << 24;
  array x = random_array({4096, 4096}, float32, 0, 1, 21);
  array x64 = astype(x, float64);
  double ref = sum(x64).item<double>();
  EXPECT_NEAR(sum(x).item<float>(), ref, 1e-6 * ref);
  EXPECT_NEAR(sum(reshape(x, {n})).item<float>(), ref, 1e-6 * ref);
  for (int axis : {0, 1}) {
    auto got = to_vector(sum(x, axis));
    auto want = to_vector(sum(x64, axis));
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::abs(got[i] - want[i]) / want[i]);
    }
    EXPECT_LT(worst, 1e-6) << "axis " << axis;
  }
  // Summing many equal values: naive float32 accumulation would stall at 2^24.
  EXPECT_EQ(sum(ones({n + 1000})).item<float>(), static_cast<float>(n + 1000));
  EXPECT_EQ(max(sum(ones({n / 8, 8}), 0)).item<float>(), static_cast<float>(n / 8));
}

TEST(Reduction, NaNPropagation) {
  for (Dtype dt : {float32, float16, bfloat16, float64}) {
    SCOPED_TRACE(dtype_name(dt));
    for (int n : {5, 100, 5000, 300000}) {
      for (int pos : {0, n / 2, n - 1}) {
        std::vector<double> vals(n, 1.0);
        vals[pos] = kNaN;
        vals[(pos + 1) % n] = 5.0;
        array x = from_vector(vals, {n}, dt);
        EXPECT_TRUE(std::isnan(max(x).item<float>())) << n << " " << pos;
        EXPECT_TRUE(std::isnan(min(x).item<float>())) << n << " " << pos;
        EXPECT_TRUE(std::isnan(sum(x).item<float>()));
        EXPECT_EQ(argmax(x).item<uint32_t>(), static_cast<uint32_t>(pos));
        EXPECT_EQ(argmin(x).item<uint32_t>(), static_cast<uint32_t>(pos));
        EXPECT_TRUE(any(x).item<bool>());
        EXPECT_TRUE(all(x).item<bool>());  // NaN is non-zero
      }
    }
    // Column engine: NaN in one column only.
    std::vector<double> vals(64 * 100, 2.0);
    vals[37 * 64 + 10] = kNaN;
    array x = from_vector(vals, {100, 64}, dt);
    Vec ref(64, 2.0);
    ref[10] = kNaN;
    expect_close(max(x, 0), ref, Shape{64});
    expect_close(min(x, 0), ref, Shape{64});
    Vec idx(64, 0.0);
    idx[10] = 37;
    expect_close(argmax(x, 0), idx, Shape{64}, 0, 0);
  }
  // Infinities.
  array inf_x = array({1.0f, INFINITY, -INFINITY, 3.0f});
  EXPECT_EQ(max(inf_x).item<float>(), INFINITY);
  EXPECT_EQ(min(inf_x).item<float>(), -INFINITY);
  EXPECT_EQ(argmin(inf_x).item<uint32_t>(), 2u);
}

TEST(Reduction, IntegerSemantics) {
  // uint8 sums widen to uint32, int16 to int32, int64 stays.
  array u = full({1000}, 200, uint8);
  EXPECT_EQ(sum(u).dtype(), uint32);
  EXPECT_EQ(sum(u).item<uint32_t>(), 200000u);
  array i16 = full({1000}, -300, int16);
  EXPECT_EQ(sum(i16).item<int32_t>(), -300000);
  array i64 = full({10}, int64_t{1} << 40, int64);
  EXPECT_EQ(sum(i64).item<int64_t>(), int64_t{10} << 40);
  EXPECT_EQ(max(array({-5, 3, 7, -9}, int8)).item<int8_t>(), 7);
  EXPECT_EQ(min(array({5u, 3u, 7u}, uint64)).item<uint64_t>(), 3u);
  EXPECT_EQ(prod(array({2, 3, 4}, uint16)).item<uint32_t>(), 24u);
  EXPECT_EQ(sum(array({true, true, false, true})).item<int32_t>(), 3);
  EXPECT_EQ(max(array({false, true, false})).item<bool>(), true);
  EXPECT_EQ(min(array({false, true, false})).item<bool>(), false);
}

TEST(Reduction, ArgMaxArgMin) {
  Shape shape{4, 5, 6};
  for (Dtype dt : kAllDtypes) {
    if (dt == complex64)
      continue;
    SCOPED_TRACE(dtype_name(dt));
    array x = test_input(shape, dt, 9);  // with repeated values: ties keep the first index
    Vec v = to_vector(x);
    for (int axis = 0; axis < 3; ++axis) {
      for (bool keepdims : {false, true}) {
        auto first_of = [](bool mx) {
          return [mx](const Vec& g) {
            auto it =
                mx ? std::max_element(g.begin(), g.end()) : std::min_element(g.begin(), g.end());
            return static_cast<double>(it - g.begin());
          };
        };
        array am = argmax(x, axis, keepdims);
        EXPECT_EQ(am.dtype(), uint32);
        Shape out_shape = drop_shape(shape, {axis}, keepdims);
        expect_close(am, reference(v, shape, {axis}, first_of(true)), out_shape, 0, 0);
        expect_close(argmin(x, axis - 3, keepdims), reference(v, shape, {axis}, first_of(false)),
                     out_shape, 0, 0);
      }
    }
    array flat = argmax(x);
    EXPECT_EQ(flat.shape(), Shape{});
    EXPECT_EQ(flat.item<uint32_t>(),
              static_cast<uint32_t>(std::max_element(v.begin(), v.end()) - v.begin()));
    EXPECT_EQ(argmin(x, true).shape(), (Shape{1, 1, 1}));
  }
  // Long axes split across threads; the first of equal maxima wins.
  const int n = 3 << 20;
  std::vector<double> vals(n, 0.0);
  vals[2000001] = 4;
  vals[2900000] = 4;
  vals[123] = -2;
  vals[n - 1] = -2;
  array big = from_vector(vals, {n});
  EXPECT_EQ(argmax(big).item<uint32_t>(), 2000001u);
  EXPECT_EQ(argmin(big).item<uint32_t>(), 123u);
  // Wide columns (column mode) with a transposed view.
  array cols = reshape(big, {3 << 10, 1 << 10});
  Vec cv = to_vector(cols);
  Vec ref = reference(cv, cols.shape(), {0}, [](const Vec& g) {
    return static_cast<double>(std::max_element(g.begin(), g.end()) - g.begin());
  });
  expect_close(argmax(cols, 0), ref, Shape{1 << 10}, 0, 0);
  expect_close(argmax(transpose(cols), 1), ref, Shape{1 << 10}, 0, 0);
}

TEST(Reduction, Softmax) {
  for (Dtype dt : {float32, float64, float16, bfloat16, int32}) {
    SCOPED_TRACE(dtype_name(dt));
    Shape shape{3, 4, 37};
    array x = test_input(shape, dt, 4);
    Vec v = to_vector(x);
    Dtype out_dt = is_inexact(dt) ? dt : float32;
    for (auto& axes : axis_subsets(3)) {
      if (axes.empty())
        continue;
      SCOPED_TRACE(::testing::Message() << "axes " << to_string(Shape(axes.begin(), axes.end())));
      for (bool precise : {false, true}) {
        array y = softmax(x, axes, precise);
        EXPECT_EQ(y.dtype(), out_dt);
        // Reference: each group's softmax, scattered back to the input positions.
        auto g = groups(v, shape, axes);
        auto sm = g;
        for (auto& grp : sm) {
          double m = ref_max(grp), s = 0;
          for (double& e : grp)
            s += (e = std::exp(e - m));
          for (double& e : grp)
            e /= s;
        }
        // Positions: regroup indices to scatter.
        Vec pos(v.size());
        std::iota(pos.begin(), pos.end(), 0.0);
        auto gp = groups(pos, shape, axes);
        Vec ref(v.size());
        for (size_t i = 0; i < gp.size(); ++i) {
          for (size_t j = 0; j < gp[i].size(); ++j)
            ref[static_cast<size_t>(gp[i][j])] = sm[i][j];
        }
        expect_close(y, ref, shape, rtol_for(out_dt) * 2, 1e-6);
      }
    }
  }
  // The int and single-axis overloads; a transposed input.
  array x = random_array({64, 33}, float32, -5, 5, 2);
  array t = transpose(x);
  expect_close(softmax(t, 0), to_vector(transpose(softmax(x, -1))), Shape{33, 64}, 1e-6, 1e-7);
  expect_close(sum(softmax(x, true)), {1.0}, Shape{}, 1e-5, 1e-5);
  // Extreme values: large inputs do not overflow; -inf gives 0; NaN rows give NaN.
  array ext = array({1000.0f, 999.0f, -INFINITY, 0.0f, NAN, 1.0f}, {2, 3});
  Vec y = to_vector(softmax(ext, -1));
  double e1 = std::exp(-1.0);
  EXPECT_NEAR(y[0], 1 / (1 + e1), 1e-6);
  EXPECT_NEAR(y[1], e1 / (1 + e1), 1e-6);
  EXPECT_EQ(y[2], 0.0);
  EXPECT_TRUE(std::isnan(y[3]) && std::isnan(y[4]) && std::isnan(y[5]));
}

// Many rows in parallel, few long rows split across threads, for every float dtype.
TEST(Reduction, SoftmaxAndLogsumexpLarge) {
  for (Shape shape : {Shape{2048, 512}, Shape{2, 1 << 19}, Shape{1 << 20}}) {
    for (Dtype dt : {float32, float16, float64}) {
      SCOPED_TRACE(::testing::Message() << to_string(shape) << " " << dtype_name(dt));
      array x = random_array(shape, dt, -10, 10, 8);
      array x64 = astype(x, float64);
      array m = max(x64, -1, true);
      array e = exp(x64 - m);
      array ref = e / sum(e, -1, true);
      double rtol = rtol_for(dt);
      expect_close(softmax(x, -1), to_vector(ref), shape, rtol, 1e-6);
      array lse_ref = log(sum(e, -1)) + squeeze(m, -1);
      expect_close(logsumexp(x, -1), to_vector(lse_ref), rtol, 1e-6);
    }
  }
  // logsumexp special rows.
  array sp = array({-INFINITY, -INFINITY, INFINITY, 1.0f, NAN, INFINITY, 2.0f, 3.0f}, {4, 2});
  Vec l = to_vector(logsumexp(sp, 1));
  EXPECT_EQ(l[0], -kInf);
  EXPECT_EQ(l[1], kInf);
  EXPECT_TRUE(std::isnan(l[2]));
  EXPECT_NEAR(l[3], 3.0 + std::log1p(std::exp(-1.0)), 1e-6);
}

// Outputs of 16 MB and more take the streaming-store path; rows of odd length start at
// unaligned addresses. A donatable input is overwritten in place.
TEST(Reduction, SoftmaxLargeOutput) {
  Shape shape{4100, 1023};
  array x = random_array(shape, float32, -4, 4, 12);
  array x64 = astype(x, float64);
  array e = exp(x64 - max(x64, -1, true));
  Vec ref = to_vector(e / sum(e, -1, true));
  expect_close(softmax(x, -1), ref, shape, 1e-5, 1e-7);
  expect_close(softmax(x + array(0.0f), -1), ref, shape, 1e-5, 1e-7);
  array rows = random_array({40, 40000}, float32, -4, 4, 13);  // rows beyond the scratch row
  array r64 = astype(rows, float64);
  array er = exp(r64 - max(r64, -1, true));
  expect_close(softmax(rows, -1), to_vector(er / sum(er, -1, true)), rows.shape(), 1e-5, 1e-8);
}

TEST(Reduction, ArrayEqualAllclose) {
  array a({1.0f, 2.0f, NAN});
  array b({1.0f, 2.0f, NAN});
  EXPECT_FALSE(array_equal(a, b).item<bool>());
  EXPECT_TRUE(array_equal(a, b, true).item<bool>());
  EXPECT_TRUE(array_equal(array({1, 2, 3}), array({1.0f, 2.0f, 3.0f})).item<bool>());
  EXPECT_FALSE(array_equal(array({1, 2, 3}), array({1, 2})).item<bool>());
  EXPECT_FALSE(array_equal(array({1, 2}), array({1, 2}, {1, 2})).item<bool>());
  EXPECT_TRUE(array_equal(zeros({0}), zeros({0})).item<bool>());
  EXPECT_TRUE(allclose(array({1.0f, 2.0f}), array({1.0f + 1e-6f, 2.0f})).item<bool>());
  EXPECT_FALSE(allclose(array({1.0f, 2.0f}), array({1.1f, 2.0f})).item<bool>());
  EXPECT_TRUE(allclose(array({1.0f, 2.0f}), array({1.1f, 2.0f}), 0.2).item<bool>());
  EXPECT_TRUE(allclose(array({0.0f}), array({0.05f}), 0.0, 0.1).item<bool>());
  EXPECT_FALSE(allclose(a, b).item<bool>());
  EXPECT_TRUE(allclose(a, b, 1e-5, 1e-8, true).item<bool>());
  EXPECT_TRUE(allclose(array({1.0f, 2.0f}, {2, 1}), array(1.0f), 1.5).item<bool>());
  EXPECT_THROW(allclose(array({1.0f, 2.0f}), array({1.0f, 2.0f, 3.0f})), std::invalid_argument);
}

TEST(Reduction, Errors) {
  array x = zeros({2, 3});
  EXPECT_THROW(sum(x, 2), std::invalid_argument);
  EXPECT_THROW(sum(x, -3), std::invalid_argument);
  EXPECT_THROW(sum(x, {0, 0}), std::invalid_argument);
  EXPECT_THROW(sum(x, {1, -1}), std::invalid_argument);
  EXPECT_THROW(prod(x, {5}), std::invalid_argument);
  EXPECT_THROW(max(x, {0, 3}), std::invalid_argument);
  EXPECT_THROW(min(x, {-1, 1}), std::invalid_argument);
  EXPECT_THROW(mean(x, 4), std::invalid_argument);
  EXPECT_THROW(var(x, {0, 0}), std::invalid_argument);
  EXPECT_THROW(mlx::core::std(x, 9), std::invalid_argument);
  EXPECT_THROW(all(x, 2), std::invalid_argument);
  EXPECT_THROW(any(x, {0, -2}), std::invalid_argument);
  EXPECT_THROW(logsumexp(x, 3), std::invalid_argument);
  EXPECT_THROW(argmax(x, 2), std::invalid_argument);
  EXPECT_THROW(argmin(x, -3), std::invalid_argument);
  EXPECT_THROW(argmax(array(1.0f), 0), std::invalid_argument);
  EXPECT_THROW(softmax(x, {0, 0}), std::invalid_argument);
  EXPECT_THROW(softmax(x, 2), std::invalid_argument);
  try {
    sum(x, 5);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[sum]", 0), 0u) << e.what();
  }
}

TEST(ReductionTrace, MatchesDiagonalSums) {
  array a = reshape(arange(12.0f), {3, 4});
  EXPECT_FLOAT_EQ(trace(a).item<float>(), 0 + 5 + 10);
  EXPECT_FLOAT_EQ(trace(a, 1, 0, 1).item<float>(), 1 + 6 + 11);
  EXPECT_FLOAT_EQ(trace(a, -1, 0, 1).item<float>(), 4 + 9);
  array b = reshape(arange(24), {2, 3, 4});
  // Over axes 1 and 2 for each leading index: (0+5+10), (12+17+22).
  EXPECT_EQ(to_vector(trace(b, 0, 1, 2)), std::vector<double>({15, 51}));
  EXPECT_EQ(trace(array({1, 2, 3, 4}, {2, 2}, int8)).dtype(), int32);
  EXPECT_EQ(trace(a, 0, 0, 1, float64).dtype(), float64);
  EXPECT_THROW(trace(array({1.0f})), std::invalid_argument);
}

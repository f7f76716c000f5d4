// Cumulative ops (cumsum, cumprod, cummax, cummin, logcumsumexp) against float64 references.
#include <cmath>
#include <functional>
#include <limits>

#include "test_utils.h"

using namespace mlx::core;
using namespace mlx::core::test;

namespace {

using Vec = std::vector<double>;
using Op = std::function<double(double, double)>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Scans a row-major array of `shape` along `axis`.
Vec ref_scan(const Vec& v, const Shape& shape, int axis, bool reverse, bool inclusive, double init,
             const Op& op) {
  int64_t n = shape[axis], inner = 1, outer = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  for (int d = 0; d < axis; ++d)
    outer *= shape[d];
  Vec out(v.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = init;
      for (int64_t k = 0; k < n; ++k) {
        int64_t j = reverse ? n - 1 - k : k;
        int64_t pos = (o * n + j) * inner + i;
        if (inclusive) {
          acc = op(acc, v[pos]);
          out[pos] = acc;
        } else {
          out[pos] = acc;
          acc = op(acc, v[pos]);
        }
      }
    }
  }
  return out;
}

double add(double a, double b) { return a + b; }
double mul(double a, double b) { return a * b; }
double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}
double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}
double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return kNaN;
  double hi = std::max(a, b), lo = std::min(a, b);
  if (lo == -kInf || hi == kInf)
    return hi;
  return hi + std::log1p(std::exp(lo - hi));
}

using ScanFn = array (*)(const array&, int, bool, bool, StreamOrDevice);

struct Case {
  const char* name;
  ScanFn fn;
  double init;
  Op op;
};

const Case kCases[] = {
    {"cumsum", cumsum, 0.0, add},
    {"cumprod", cumprod, 1.0, mul},
    {"cummax", cummax, -kInf, nan_max},
    {"cummin", cummin, kInf, nan_min},
    {"logcumsumexp", logcumsumexp, -kInf, log_add_exp},
};

double rtol_for(Dtype t) {
  if (t == float16)
    return 4e-3;
  if (t == bfloat16)
    return 3e-2;
  if (t == float64)
    return 1e-12;
  return 1e-5;
}

// Inputs whose scans stay in range and exact enough for every op.
array scan_input(const Shape& shape, Dtype dt, uint32_t seed) {
  if (dt == bool_) {
    return random_array(shape, float32, -1, 1, seed) > array(-0.5f);
  }
  if (is_unsigned(dt)) {
    return astype(floor(random_array(shape, float32, 1, 3, seed)), dt);
  }
  if (!is_inexact(dt)) {
    return astype(floor(random_array(shape, float32, -1, 2, seed)), dt);  // -1, 0, 1
  }
  return random_array(shape, dt, 0.5, 1.5, seed);
}

void check_all_cases(const array& x, const char* what) {
  Vec v = to_vector(x);
  Dtype dt = x.dtype();
  for (auto& c : kCases) {
    for (int axis = 0; axis < x.ndim(); ++axis) {
      for (bool reverse : {false, true}) {
        for (bool inclusive : {true, false}) {
          SCOPED_TRACE(::testing::Message()
                       << what << " " << c.name << " axis " << axis << " reverse " << reverse
                       << " inclusive " << inclusive);
          array y = c.fn(x, axis, reverse, inclusive, {});
          Dtype want = std::string(c.name) == "logcumsumexp"            ? at_least_float(dt)
                       : std::string(c.name) == "cumsum" && dt == bool_ ? int32
                                                                        : dt;
          EXPECT_EQ(y.dtype(), want);
          Vec ref = ref_scan(v, x.shape(), axis, reverse, inclusive, c.init, c.op);
          if (want == bool_) {
            // A bool product is a logical and; exclusive max / min start from false / true.
            for (auto& r : ref)
              r = r == -kInf ? 0 : r == kInf ? 1 : r != 0;
          } else if (!is_inexact(want)) {
            // Exclusive max / min scans of integers start from the dtype's limits.
            for (auto& r : ref) {
              if (r == -kInf)
                r = static_cast<double>(iinfo(want).min);
              if (r == kInf)
                r = static_cast<double>(iinfo(want).max);
            }
          }
          double rtol = rtol_for(want);
          expect_close(y, ref, x.shape(), rtol, rtol);
        }
      }
    }
  }
}

}  // namespace

TEST(Scan, AllOpsAxesDtypes) {
  for (Dtype dt : {float32, float64, float16, bfloat16, int32, int8, uint8, uint64, int64, bool_}) {
    SCOPED_TRACE(dtype_name(dt));
    check_all_cases(scan_input({3, 4, 5}, dt, 1), "3-D");
  }
}

// Lines along the axis (row mode) and whole rows at once (column mode, several chunks), in
// parallel, on contiguous and strided inputs.
TEST(Scan, LayoutsAndSizes) {
  array base = scan_input({40, 700}, float32, 2);
  check_all_cases(base, "contiguous");
  check_all_cases(transpose(base), "transposed");
  check_all_cases(slice(base, {1, 0}, {40, 700}, {3, 2}), "step slice");
  check_all_cases(slice(base, {39, 699}, {-41, -701}, {-2, -1}), "negative steps");
  check_all_cases(broadcast_to(slice(base, {0, 0}, {1, 700}), {5, 700}), "broadcast");
  check_all_cases(scan_input({2, 3, 1, 17}, float16, 3), "size-1 axis");
  check_all_cases(scan_input({1024, 1024}, int32, 4), "1M int32");
}

TEST(Scan, LongFloat32Accuracy) {
  // Row and column modes agree with float64 over long axes.
  array x = random_array({2048, 600}, float32, 0, 1, 5);
  array x64 = astype(x, float64);
  for (int axis : {0, 1}) {
    expect_close(cumsum(x, axis), to_vector(cumsum(x64, axis)), x.shape(), 1e-5, 1e-4);
    expect_close(cumsum(x, axis, true, false), to_vector(cumsum(x64, axis, true, false)), x.shape(),
                 1e-5, 1e-4);
  }
}

TEST(Scan, SpecialValues) {
  array x({1.0f, NAN, 3.0f, -1.0f});
  Vec mx = to_vector(cummax(x, 0));
  EXPECT_EQ(mx[0], 1.0);
  EXPECT_TRUE(std::isnan(mx[1]) && std::isnan(mx[2]) && std::isnan(mx[3]));
  Vec mn = to_vector(cummin(x, 0, true));
  EXPECT_EQ(mn[3], -1.0);
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
  Vec l = to_vector(logcumsumexp(array({-INFINITY, 0.0f, INFINITY, 5.0f}), 0));
  EXPECT_EQ(l[0], -kInf);
  EXPECT_NEAR(l[1], 0.0, 1e-7);
  EXPECT_EQ(l[2], kInf);
  EXPECT_EQ(l[3], kInf);
  Vec big = to_vector(logcumsumexp(array({1000.0f, 1000.0f}), 0));
  EXPECT_NEAR(big[1], 1000.0 + std::log(2.0), 1e-3);
  // Exclusive scans start from the identity.
  expect_close(cumsum(array({1, 2, 3}), 0, false, false), {0, 1, 3});
  expect_close(cumprod(array({2, 3, 4}), 0, true, false), {12, 4, 1});
  expect_close(cumsum(array({true, true, false, true}), 0), {1, 2, 2, 3});
  expect_close(cummax(array({3u, 1u, 4u, 1u, 5u}, uint32), 0), {3, 3, 4, 4, 5});
  // Complex sums.
  array c({std::complex<float>(1, 2), std::complex<float>(3, -1)});
  array cs = cumsum(c, 0);
  eval(cs);
  EXPECT_EQ(cs.dtype(), complex64);
  EXPECT_EQ(cs.data<complex64_t>()[1], complex64_t(4, 1));
}

TEST(Scan, EmptyAndErrors) {
  EXPECT_EQ(cumsum(zeros({0, 3}), 0).shape(), (Shape{0, 3}));
  EXPECT_EQ(cumprod(zeros({3, 0}), 0).shape(), (Shape{3, 0}));
  expect_close(cumsum(zeros({3, 0}), 1), {}, Shape{3, 0});
  expect_close(cummax(ones({1, 1}), -1), {1}, Shape{1, 1});
  array x = zeros({2, 3});
  EXPECT_THROW(cumsum(x, 2), std::invalid_argument);
  EXPECT_THROW(cumprod(x, -3), std::invalid_argument);
  EXPECT_THROW(cummax(array(1.0f), 0), std::invalid_argument);
  EXPECT_THROW(cummin(x, 5), std::invalid_argument);
  EXPECT_THROW(logcumsumexp(x, 2), std::invalid_argument);
  EXPECT_THROW(logcumsumexp(astype(x, complex64), 0), std::invalid_argument);
}

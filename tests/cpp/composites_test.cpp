// Composite ops: diff, median, count_nonzero, vecdot, positive, window functions, can_cast and
// isdtype, against float64 references computed here.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "test_utils.h"

namespace mlx::core::test {
namespace {

// Rows of a 2-D row-major (rows x cols) vector along axis 1.
std::vector<double> diff_rows(const std::vector<double>& v, int rows, int cols, int n) {
  std::vector<double> cur = v;
  int len = cols;
  for (int k = 0; k < n && len > 0; ++k) {
    std::vector<double> next;
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c + 1 < len; ++c) {
        next.push_back(cur[r * len + c + 1] - cur[r * len + c]);
      }
    }
    cur = next;
    len = std::max(len - 1, 0);
  }
  return cur;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

TEST(CompositesDiff, OrdersAndAxes) {
  auto v = random_values(4 * 7, -5, 5, 1);
  array a = from_vector(v, {4, 7}, float64);
  for (int n : {0, 1, 2, 3, 6, 7, 9}) {
    int len = std::max(7 - n, 0);
    expect_close(diff(a, n), diff_rows(v, 4, 7, n), {4, len});
    expect_close(diff(a, n, 1), diff_rows(v, 4, 7, n), {4, len});
  }
  // Along axis 0: the transposed problem.
  array at = transpose(a);  // non-contiguous (7, 4)
  expect_close(transpose(diff(at, 2, 0)), diff_rows(v, 4, 7, 2), {4, 5});
  expect_close(transpose(diff(at, 2, -2)), diff_rows(v, 4, 7, 2), {4, 5});
}

TEST(CompositesDiff, DtypesAndEdgeSizes) {
  array ints = array({1, 4, 9, 16}, int32);
  array d = diff(ints);
  EXPECT_EQ(d.dtype(), int32);
  expect_close(d, {3, 5, 7});
  expect_close(diff(array({5u, 3u}, uint8)), {254});  // wraps like NumPy
  array b = diff(array({true, true, false, true}));
  EXPECT_EQ(b.dtype(), bool_);
  expect_close(b, {0, 1, 1});
  expect_close(diff(array({2.5f})), {}, {0});
  expect_close(diff(zeros({3, 0}, float32)), {}, {3, 0});
  expect_close(diff(zeros({0, 3}, float32), 1, 0), {}, {0, 3});
  // Negative-stride input.
  array r = slice(array({1.0, 2.0, 4.0, 8.0}), {3}, {-5}, {-1});
  expect_close(diff(r), {-4, -2, -1});
}

TEST(CompositesDiff, Errors) {
  EXPECT_THROW(diff(array({1.0f, 2.0f}), -1), std::invalid_argument);
  EXPECT_THROW(diff(array(1.0f)), std::invalid_argument);
  EXPECT_THROW(diff(zeros({2, 3}, float32), 1, 2), std::invalid_argument);
  try {
    diff(array({1.0f}), -2);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[diff]"), std::string::npos);
  }
}

TEST(CompositesMedian, AxesOddEvenKeepdims) {
  auto v = random_values(4 * 6, -3, 3, 2);
  array a = from_vector(v, {4, 6}, float64);
  std::vector<double> rows, cols;
  for (int r = 0; r < 4; ++r) {
    rows.push_back(median_of({v.begin() + r * 6, v.begin() + r * 6 + 6}));
  }
  for (int c = 0; c < 6; ++c) {
    std::vector<double> col;
    for (int r = 0; r < 4; ++r) {
      col.push_back(v[r * 6 + c]);
    }
    cols.push_back(median_of(col));
  }
  expect_close(median(a, 1), rows, {4});
  expect_close(median(a, -1, true), rows, {4, 1});
  expect_close(median(a, 0), cols, {6});
  expect_close(median(a), {median_of(v)}, {});
  expect_close(median(a, true), {median_of(v)}, {1, 1});
  expect_close(median(a, std::vector<int>{1, 0}), {median_of(v)}, {});
  // Odd count along the transposed (non-contiguous) view.
  array odd = from_vector(std::vector<double>(v.begin(), v.begin() + 15), {3, 5}, float64);
  std::vector<double> odd_cols;
  for (int c = 0; c < 5; ++c) {
    odd_cols.push_back(median_of({v[c], v[5 + c], v[10 + c]}));
  }
  expect_close(median(transpose(odd), 1), odd_cols, {5});
}

TEST(CompositesMedian, DtypesNanAndEmpty) {
  array i = median(array({3, 1, 4, 2}, int32));
  EXPECT_EQ(i.dtype(), float32);
  expect_close(i, {2.5}, {});
  EXPECT_EQ(median(array({true, false, true})).dtype(), float32);
  for (Dtype t : kFloatDtypes) {
    array m = median(from_vector({6, 2, 8, 4}, {4}, t));
    EXPECT_EQ(m.dtype(), t);
    expect_close(m, {5}, {});
  }
  // float16 averaging must not overflow.
  expect_close(median(from_vector({60000, 60000}, {2}, float16)), {60000}, {});
  double nan = std::nan("");
  expect_close(median(array({1.0f, std::nanf(""), 3.0f, 0.0f})), {nan}, {});
  expect_close(median(from_vector({1, nan, 3, 4, 5, 6}, {2, 3}, float32), 1), {nan, 5}, {2});
  expect_close(median(array({7.0f})), {7}, {});
  expect_close(median(zeros({2, 0}, float32), 1), {nan, nan}, {2});
  expect_close(median(zeros({0, 3}, float32), 1), {}, {0});
  EXPECT_THROW(median(zeros({2, 3}, float32), 2), std::invalid_argument);
  EXPECT_THROW(median(zeros({2, 3}, float32), std::vector<int>{0, 0}), std::invalid_argument);
}

TEST(CompositesCountNonzero, AllDtypesAndAxes) {
  std::vector<double> v = {0, 1, 0, 2, 3, 0};
  for (Dtype t : kAllDtypes) {
    array a = from_vector(v, {2, 3}, t);
    array all_ = count_nonzero(a);
    EXPECT_EQ(all_.dtype(), int32);
    expect_close(all_, {3}, {});
    expect_close(count_nonzero(a, 0), {1, 2, 0}, {3});
    expect_close(count_nonzero(a, -1, true), {1, 2}, {2, 1});
    expect_close(count_nonzero(transpose(a), 0), {1, 2}, {2});
  }
  expect_close(count_nonzero(array({std::nanf(""), 0.0f})), {1}, {});
  expect_close(count_nonzero(zeros({0, 4}, float32), 0), {0, 0, 0, 0}, {4});
  expect_close(count_nonzero(zeros({3, 4}, int32), std::vector<int>{0, 1}, true), {0}, {1, 1});
  EXPECT_THROW(count_nonzero(zeros({3}, int32), 1), std::invalid_argument);
}

TEST(CompositesVecdot, BroadcastAxisComplex) {
  auto va = random_values(3 * 4, -1, 1, 3);
  auto vb = random_values(4, -1, 1, 4);
  array a = from_vector(va, {3, 4}, float64);
  array b = from_vector(vb, {4}, float64);
  std::vector<double> ref(3, 0.0);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) {
      ref[r] += va[r * 4 + c] * vb[c];
    }
  }
  expect_close(vecdot(a, b), ref, {3});
  expect_close(vecdot(b, a, -1), ref, {3});
  // Along axis 0 of transposed inputs.
  expect_close(vecdot(transpose(a), reshape(b, {4, 1}), 0), ref, {3});
  // conj(a) * b: (1+2i)* . (3+4i) = (1-2i)(3+4i) = 11 - 2i.
  array ca = reshape(array(std::complex<float>(1, 2)), {1});
  array cb = reshape(array(std::complex<float>(3, 4)), {1});
  array c = vecdot(ca, cb);
  EXPECT_EQ(c.dtype(), complex64);
  expect_close(real(c), {11}, {});
  expect_close(imag(c), {-2}, {});
  expect_close(vecdot(zeros({2, 0}, float32), zeros({0}, float32)), {0, 0}, {2});
  EXPECT_THROW(vecdot(zeros({2, 3}, float32), zeros({4}, float32)), std::invalid_argument);
  EXPECT_THROW(vecdot(zeros({3}, float32), zeros({3}, float32), 1), std::invalid_argument);
  EXPECT_THROW(vecdot(array(1.0f), array(2.0f)), std::invalid_argument);
}

TEST(CompositesPositive, IdentityAndBool) {
  array a = array({-1.0f, 2.0f});
  array p = positive(a);
  EXPECT_EQ(p.dtype(), float32);
  expect_close(p, {-1, 2});
  expect_close(positive(array({3, -4}, int8)), {3, -4});
  EXPECT_THROW(positive(array({true})), std::invalid_argument);
}

using WindowRef = double (*)(int n, int M);
void check_window(array (*fn)(int, StreamOrDevice), WindowRef ref) {
  for (int M : {2, 3, 4, 7, 12, 51}) {
    std::vector<double> expected;
    for (int n = 0; n < M; ++n) {
      expected.push_back(ref(n, M));
    }
    array w = fn(M, {});
    EXPECT_EQ(w.dtype(), float32);
    expect_close(w, expected, {M}, 1e-6, 1e-6);
  }
  expect_close(fn(1, {}), {1}, {1});
  expect_close(fn(0, {}), {}, {0});
  expect_close(fn(-3, {}), {}, {0});
}

TEST(CompositesWindows, NumpyFormulas) {
  constexpr double pi = std::numbers::pi;
  check_window(&hanning, [](int n, int M) { return 0.5 - 0.5 * std::cos(2 * pi * n / (M - 1)); });
  check_window(&hamming, [](int n, int M) { return 0.54 - 0.46 * std::cos(2 * pi * n / (M - 1)); });
  check_window(&blackman, [](int n, int M) {
    return 0.42 - 0.5 * std::cos(2 * pi * n / (M - 1)) + 0.08 * std::cos(4 * pi * n / (M - 1));
  });
  check_window(&bartlett, [](int n, int M) { return 1.0 - std::abs(2.0 * n - (M - 1)) / (M - 1); });
}

TEST(CompositesDtypes, CanCastAndIsdtype) {
  EXPECT_TRUE(can_cast(int8, int32));
  EXPECT_TRUE(can_cast(uint8, int16));
  EXPECT_TRUE(can_cast(int32, float32));  // MLX promotes int32 with float32 to float32
  EXPECT_TRUE(can_cast(bool_, float16));
  EXPECT_TRUE(can_cast(float32, complex64));
  EXPECT_FALSE(can_cast(float32, int32));
  EXPECT_FALSE(can_cast(int64, int32));
  EXPECT_FALSE(can_cast(complex64, float64));
  EXPECT_FALSE(can_cast(float16, bfloat16));
  for (Dtype t : kAllDtypes) {
    EXPECT_TRUE(can_cast(t, t));
  }

  EXPECT_TRUE(isdtype(bool_, "bool"));
  EXPECT_FALSE(isdtype(bool_, "numeric"));
  EXPECT_FALSE(isdtype(bool_, "integral"));
  EXPECT_TRUE(isdtype(int16, "signed integer"));
  EXPECT_FALSE(isdtype(uint16, "signed integer"));
  EXPECT_TRUE(isdtype(uint64, "unsigned integer"));
  EXPECT_TRUE(isdtype(uint64, "integral"));
  EXPECT_TRUE(isdtype(int64, "integral"));
  EXPECT_FALSE(isdtype(float32, "integral"));
  EXPECT_TRUE(isdtype(bfloat16, "real floating"));
  EXPECT_FALSE(isdtype(complex64, "real floating"));
  EXPECT_TRUE(isdtype(complex64, "complex floating"));
  EXPECT_TRUE(isdtype(complex64, "numeric"));
  EXPECT_TRUE(isdtype(uint8, "numeric"));
  EXPECT_THROW(isdtype(float32, "floating"), std::invalid_argument);
}

}  // namespace
}  // namespace mlx::core::test

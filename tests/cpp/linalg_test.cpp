// matmul, addmm, inner, outer and tensordot against float64 references.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <string>

#include "test_utils.h"

namespace mlx::core {
namespace {

using test::expect_close;
using test::random_array;
using test::to_vector;

struct Ref {
  std::vector<double> values;
  Shape shape;
};

// NumPy matmul in float64: 1-D promotion, batch broadcasting.
Ref ref_matmul(const std::vector<double>& a, Shape sa, const std::vector<double>& b, Shape sb) {
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec)
    sa = {1, sa[0]};
  if (b_vec)
    sb = {sb[0], 1};
  int M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  size_t nb = std::max(sa.size(), sb.size()) - 2;
  Shape batch(nb, 1);
  auto dim = [&](const Shape& s, size_t i) {  // batch dim i (right-aligned), 1 if absent
    size_t pad = nb - (s.size() - 2);
    return i < pad ? 1 : s[i - pad];
  };
  for (size_t i = 0; i < nb; ++i)
    batch[i] = std::max(dim(sa, i), dim(sb, i));
  size_t count = shape_size(batch);
  std::vector<double> out(count * M * N, 0.0);
  for (size_t bi = 0; bi < count; ++bi) {
    size_t rem = bi, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
    for (size_t d = nb; d-- > 0;) {
      size_t idx = rem % batch[d];
      rem /= batch[d];
      ia += (dim(sa, d) == 1 ? 0 : idx) * stride_a;
      ib += (dim(sb, d) == 1 ? 0 : idx) * stride_b;
      stride_a *= dim(sa, d);
      stride_b *= dim(sb, d);
    }
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int k = 0; k < K; ++k)
          s += a[ia * M * K + i * K + k] * b[ib * K * N + k * N + j];
        out[bi * M * N + i * N + j] = s;
      }
  }
  Shape shape = batch;
  if (!a_vec)
    shape.push_back(M);
  if (!b_vec)
    shape.push_back(N);
  return {out, shape};
}

// Absolute slack for sums that cancel: 16-bit products accumulate in float32 too, in an order
// that differs between backends.
double atol_for(Dtype t) {
  if (t == float64)
    return 1e-12;
  if (t == float32 || t == float16 || t == bfloat16)
    return 1e-5;
  return 0;
}

// Checks matmul(a, b) (any layouts) against the reference on the values the op sees.
void check_matmul(const array& a, const array& b) {
  array out = matmul(a, b);
  auto ref = ref_matmul(to_vector(a), a.shape(), to_vector(b), b.shape());
  EXPECT_EQ(out.dtype(), promote_types(a.dtype(), b.dtype()));
  Dtype t = out.dtype();
  if (is_integral(t)) {
    expect_close(out, ref.values, ref.shape, 0, 0);
  } else {
    expect_close(out, ref.values, ref.shape, -1, atol_for(t));
  }
}

TEST(Linalg, MatmulFloatDtypes) {
  for (Dtype t : test::kFloatDtypes) {
    SCOPED_TRACE(dtype_name(t));
    check_matmul(random_array({7, 13}, t, -1, 1, 1), random_array({13, 9}, t, -1, 1, 2));
    check_matmul(random_array({2, 3, 64}, t, -1, 1, 3), random_array({2, 64, 33}, t, -1, 1, 4));
  }
}

TEST(Linalg, MatmulVectorCases) {
  array v = random_array({5}, float32, -1, 1, 1);
  array w = random_array({5}, float32, -1, 1, 2);
  array m = random_array({5, 4}, float32, -1, 1, 3);
  array mt = random_array({3, 5}, float32, -1, 1, 4);
  array batched = random_array({2, 3, 5, 4}, float32, -1, 1, 5);
  array batched_t = random_array({2, 3, 5}, float32, -1, 1, 6);
  EXPECT_EQ(matmul(v, w).shape(), Shape{});
  check_matmul(v, w);
  EXPECT_EQ(matmul(v, m).shape(), Shape({4}));
  check_matmul(v, m);
  EXPECT_EQ(matmul(mt, v).shape(), Shape({3}));
  check_matmul(mt, v);
  EXPECT_EQ(matmul(v, batched).shape(), Shape({2, 3, 4}));
  check_matmul(v, batched);
  EXPECT_EQ(matmul(batched_t, v).shape(), Shape({2, 3}));
  check_matmul(batched_t, v);
}

TEST(Linalg, MatmulBatchBroadcast) {
  check_matmul(random_array({1, 3, 4}, float32, -1, 1, 1),
               random_array({2, 4, 5}, float32, -1, 1, 2));
  EXPECT_EQ(matmul(random_array({1, 3, 4}), random_array({2, 4, 5})).shape(), Shape({2, 3, 5}));
  check_matmul(random_array({2, 1, 3, 4}, float64, -1, 1, 3),
               random_array({5, 4, 2}, float64, -1, 1, 4));
  // b shared across the batch: the batch folds into the rows of one product.
  check_matmul(random_array({4, 3, 5}, float32, -1, 1, 5), random_array({5, 6}, float32, -1, 1, 6));
  check_matmul(random_array({4, 3, 5}, float16, -1, 1, 5), random_array({5, 6}, float16, -1, 1, 6));
  // a shared across the batch.
  check_matmul(random_array({3, 5}, float32, -1, 1, 7), random_array({4, 5, 6}, float32, -1, 1, 8));
  // Broadcast through an explicit stride-0 batch dimension, b shared but a not foldable.
  array a = transpose(random_array({3, 4, 5}, float32, -1, 1, 9), {1, 0, 2});
  check_matmul(a, broadcast_to(random_array({5, 2}, float32, -1, 1, 10), {4, 5, 2}));
}

TEST(Linalg, MatmulLayouts) {
  for (Dtype t : {float32, float64, float16, complex64}) {
    SCOPED_TRACE(dtype_name(t));
    array x = random_array({6, 8}, t == complex64 ? float32 : t, -1, 1, 1);
    array y = random_array({8, 7}, t == complex64 ? float32 : t, -1, 1, 2);
    if (t == complex64) {
      x = astype(x, complex64);
      y = astype(y, complex64);
    }
    // Transposed (column-major) operands.
    array xt = transpose(random_array({8, 6}, t == complex64 ? float32 : t, -1, 1, 3));
    array yt = transpose(random_array({7, 8}, t == complex64 ? float32 : t, -1, 1, 4));
    if (t != complex64) {
      check_matmul(xt, y);
      check_matmul(x, yt);
      check_matmul(xt, yt);
      // Column slices: row-major with a leading dimension larger than the width.
      check_matmul(slice(x, {0, 1}, {6, 7}), slice(y, {1, 0}, {7, 7}));
      // Steps and negative steps: neither layout, copied.
      check_matmul(slice(x, {0, 0}, {6, 8}, {1, 2}), slice(y, {0, 0}, {8, 7}, {2, 1}));
      check_matmul(slice(x, {5, 7}, {-7, -9}, {-1, -1}), y);
      // Negative batch strides, with matrices that must be copied.
      check_matmul(slice(random_array({3, 6, 10}, t, -1, 1, 8), {2, 0, 0}, {-4, 6, 10}, {-1, 1, 2}),
                   slice(random_array({3, 5, 2}, t, -1, 1, 9), {2, 0, 0}, {-4, 5, 2}, {-1, 1, 1}));
      // Stride 0 inside a matrix.
      check_matmul(broadcast_to(random_array({1, 8}, t, -1, 1, 5), {6, 8}), y);
      // Transposed batched operands.
      check_matmul(transpose(random_array({2, 8, 6}, t, -1, 1, 6), {0, 2, 1}),
                   transpose(random_array({7, 2, 8}, t, -1, 1, 7), {1, 2, 0}));
    }
  }
}

TEST(Linalg, MatmulComplex) {
  auto make = [](const Shape& shape, uint32_t seed) {
    array re = random_array(shape, float32, -1, 1, seed);
    array im = random_array(shape, float32, -1, 1, seed + 100);
    return add(astype(re, complex64),
               multiply(astype(im, complex64), array(std::complex<float>(0, 1))));
  };
  for (bool transposed : {false, true}) {
    array a = make({4, 6}, 1), b = make({6, 3}, 2);
    if (transposed) {
      a = transpose(make({6, 4}, 1));
    }
    array out = matmul(a, b);
    EXPECT_EQ(out.dtype(), complex64);
    auto ar = to_vector(real(a)), ai = to_vector(imag(a));
    auto br = to_vector(real(b)), bi = to_vector(imag(b));
    std::vector<double> re(12), im(12);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 6; ++k) {
          re[i * 3 + j] += ar[i * 6 + k] * br[k * 3 + j] - ai[i * 6 + k] * bi[k * 3 + j];
          im[i * 3 + j] += ar[i * 6 + k] * bi[k * 3 + j] + ai[i * 6 + k] * br[k * 3 + j];
        }
    expect_close(real(out), re, {4, 3});
    expect_close(imag(out), im, {4, 3});
  }
}

TEST(Linalg, MatmulIntegerAndBool) {
  for (Dtype t : {int8, int16, int32, int64, uint8, uint16, uint32, uint64}) {
    SCOPED_TRACE(dtype_name(t));
    double lo = is_unsigned(t) ? 0 : -6;
    check_matmul(random_array({5, 7}, t, lo, 6, 1), random_array({7, 300}, t, lo, 6, 2));
    check_matmul(transpose(random_array({7, 5}, t, lo, 6, 3)),
                 transpose(random_array({4, 7}, t, lo, 6, 4)));
    check_matmul(random_array({3, 1, 2, 7}, t, lo, 6, 5), random_array({4, 7, 3}, t, lo, 6, 6));
  }
  // Sums wrap like the integer type.
  array big = full({1, 4}, 100, int8);
  array one = full({4, 1}, 1, int8);
  EXPECT_EQ(matmul(big, one).item<int8_t>(), static_cast<int8_t>(400));
  array u = full({1, 2}, 65535, uint16);
  EXPECT_EQ(matmul(u, transpose(u)).item<uint16_t>(), static_cast<uint16_t>(2u * 65535u * 65535u));
  // Bool: true where any product is true.
  array p = array({true, false, false, false, true, false}, {2, 3});
  array q = array({false, true, true, false, false, false}, {3, 2});
  array r = matmul(p, q);
  EXPECT_EQ(r.dtype(), bool_);
  expect_close(r, {0, 1, 1, 0}, {2, 2}, 0, 0);
  // Mixed: int32 with float32 gives float32.
  check_matmul(random_array({3, 4}, int32, -5, 5, 7), random_array({4, 2}, float32, -1, 1, 8));
}

TEST(Linalg, MatmulEmptyAndSizeOne) {
  expect_close(matmul(random_array({0, 3}), random_array({3, 4})), {}, {0, 4});
  expect_close(matmul(random_array({2, 3}), random_array({3, 0})), {}, {2, 0});
  expect_close(matmul(random_array({2, 0}), random_array({0, 3})), std::vector<double>(6, 0.0),
               {2, 3});
  expect_close(matmul(random_array({0}), random_array({0})), {0.0}, {});
  expect_close(matmul(random_array({0, 2, 3}), random_array({3, 4})), {}, {0, 2, 4});
  expect_close(matmul(random_array({2, 0, 3}, int32, -3, 3), random_array({3, 4}, int32, -3, 3)),
               {}, {2, 0, 4});
  check_matmul(random_array({1, 1}, float32, -1, 1, 1), random_array({1, 1}, float32, -1, 1, 2));
  check_matmul(random_array({1, 5}, float32, -1, 1, 3), random_array({5, 1}, float32, -1, 1, 4));
  check_matmul(random_array({4, 1}, float16, -1, 1, 5), random_array({1, 6}, float16, -1, 1, 6));
  check_matmul(random_array({1}, float32, -1, 1, 7), random_array({1, 3}, float32, -1, 1, 8));
}

TEST(Linalg, MatmulLarge) {
  // Big enough for OpenBLAS threads and the parallel copy / integer loops.
  check_matmul(random_array({300, 200}, float32, -1, 1, 1),
               random_array({200, 250}, float32, -1, 1, 2));
  check_matmul(random_array({130, 140}, bfloat16, -1, 1, 3),
               transpose(random_array({150, 140}, bfloat16, -1, 1, 4)));
  check_matmul(random_array({200, 120}, int32, -50, 50, 5),
               random_array({120, 300}, int32, -50, 50, 6));
}

TEST(Linalg, MatmulSplitAcrossThreads) {
  // Mid-size products are split into blocks of rows (M >= N) or columns (N > M) over the pool,
  // each a BLAS call on a sub-matrix; extents that are not multiples of the block alignment,
  // transposed operands and accumulation into c must all land in the right place.
  for (Dtype t : {float32, float64, bfloat16}) {
    SCOPED_TRACE(dtype_name(t));
    check_matmul(random_array({203, 160}, t, -1, 1, 1), random_array({160, 45}, t, -1, 1, 2));
    check_matmul(random_array({45, 160}, t, -1, 1, 3), random_array({160, 203}, t, -1, 1, 4));
    check_matmul(transpose(random_array({160, 203}, t, -1, 1, 5)),
                 transpose(random_array({45, 160}, t, -1, 1, 6)));
    check_matmul(transpose(random_array({160, 45}, t, -1, 1, 7)),
                 transpose(random_array({203, 160}, t, -1, 1, 8)));
    check_matmul(random_array({3, 77, 160}, t, -1, 1, 9), random_array({160, 190}, t, -1, 1, 10));
  }
  array a = transpose(random_array({160, 45}, float32, -1, 1, 11));
  array b = random_array({160, 203}, float32, -1, 1, 12);
  auto ab = ref_matmul(to_vector(a), a.shape(), to_vector(b), b.shape());
  auto cv = test::random_values(45 * 203, -1, 1, 13);
  for (size_t i = 0; i < cv.size(); ++i) {
    ab.values[i] = 0.5 * ab.values[i] + 2.0 * cv[i];
  }
  expect_close(addmm(test::from_vector(cv, {45, 203}), a, b, 0.5f, 2.0f), ab.values, {45, 203}, -1,
               1e-4);
}

TEST(Linalg, MatmulErrors) {
  EXPECT_THROW(matmul(array(1.0f), random_array({2})), std::invalid_argument);
  EXPECT_THROW(matmul(random_array({2}), array(1.0f)), std::invalid_argument);
  try {
    matmul(random_array({2, 3}), random_array({4, 5}));
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "[matmul] Last dimension of first input with shape (2,3) must match "
              "second-to-last dimension of second input with shape (4,5).");
  }
  EXPECT_THROW(matmul(random_array({3}), random_array({4})), std::invalid_argument);
  EXPECT_THROW(matmul(random_array({2, 2, 3}), random_array({3, 3, 4})), std::invalid_argument);
}

TEST(Linalg, AddMM) {
  for (Dtype t : test::kFloatDtypes) {
    SCOPED_TRACE(dtype_name(t));
    array a = random_array({2, 3, 6}, t, -1, 1, 1);
    array b = random_array({6, 5}, t, -1, 1, 2);
    array c = random_array({5}, t, -1, 1, 3);
    array out = addmm(c, a, b, 0.5f, -2.0f);
    auto ab = ref_matmul(to_vector(a), a.shape(), to_vector(b), b.shape());
    auto cv = to_vector(c);
    for (size_t i = 0; i < ab.values.size(); ++i) {
      ab.values[i] = 0.5 * ab.values[i] - 2.0 * cv[i % 5];
    }
    expect_close(out, ab.values, ab.shape, -1, atol_for(t) * 4);
  }
  // Defaults, full-shape c that can be donated, transposed a.
  array a = transpose(random_array({4, 3}, float32, -1, 1, 4));
  array b = random_array({4, 2}, float32, -1, 1, 5);
  auto ab = ref_matmul(to_vector(a), a.shape(), to_vector(b), b.shape());
  auto cv = test::random_values(6, -1, 1, 6);
  std::vector<double> expected(6);
  for (int i = 0; i < 6; ++i)
    expected[i] = ab.values[i] + cv[i];
  expect_close(addmm(test::from_vector(cv, {3, 2}), a, b), expected, {3, 2});
  // c kept alive is not overwritten.
  array c = test::from_vector(cv, {3, 2});
  eval(c);
  expect_close(addmm(c, a, b), expected, {3, 2});
  expect_close(c, cv, {3, 2});
  // 1-D operands and scalar c.
  array v = random_array({4}, float32, -1, 1, 7);
  auto vb = ref_matmul(to_vector(v), {4}, to_vector(b), b.shape());
  for (auto& x : vb.values)
    x = 2 * x + 3 * 1.5;
  expect_close(addmm(array(1.5f), v, b, 2.0f, 3.0f), vb.values, {2});
  // beta = 0 ignores c, even NaNs in it.
  array nan_c = full({3, 2}, std::nanf(""));
  expect_close(addmm(nan_c, a, b, 1.0f, 0.0f), ab.values, {3, 2});
  // K = 0: beta * c.
  expect_close(addmm(array({1.0f, 2.0f}), random_array({3, 0}), random_array({0, 2}), 1.0f, 2.0f),
               {2, 4, 2, 4, 2, 4}, {3, 2});
  EXPECT_THROW(
      addmm(random_array({2}, int32), random_array({2, 2}, int32), random_array({2, 2}, int32)),
      std::invalid_argument);
  EXPECT_THROW(addmm(random_array({3}), random_array({2, 2}), random_array({2, 2})),
               std::invalid_argument);
  EXPECT_THROW(addmm(random_array({2}), random_array({2, 3}), random_array({2, 2})),
               std::invalid_argument);
}

TEST(Linalg, InnerOuter) {
  array a = random_array({2, 3, 4}, float32, -1, 1, 1);
  array b = random_array({5, 4}, float32, -1, 1, 2);
  auto av = to_vector(a), bv = to_vector(b);
  std::vector<double> expected(2 * 3 * 5);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 4; ++k)
        expected[i * 5 + j] += av[i * 4 + k] * bv[j * 4 + k];
  expect_close(inner(a, b), expected, {2, 3, 5});
  expect_close(inner(array(2.0f), b),
               [&] {
                 auto v = bv;
                 for (auto& x : v)
                   x *= 2;
                 return v;
               }(),
               {5, 4});
  EXPECT_THROW(inner(a, random_array({4, 3})), std::invalid_argument);

  array x = random_array({2, 2}, float32, -1, 1, 3);
  array y = random_array({3}, int32, -5, 5, 4);
  auto xv = to_vector(x), yv = to_vector(y);
  std::vector<double> o;
  for (double p : xv)
    for (double q : yv)
      o.push_back(p * q);
  expect_close(outer(x, y), o, {4, 3});
  expect_close(outer(random_array({0}), y), {}, {0, 3});
}

TEST(Linalg, Tensordot) {
  array a = random_array({3, 4, 5}, float32, -1, 1, 1);
  array b = random_array({4, 5, 2}, float32, -1, 1, 2);
  auto av = to_vector(a), bv = to_vector(b);
  std::vector<double> expected(3 * 2);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 20; ++k)
        expected[i * 2 + j] += av[i * 20 + k] * bv[k * 2 + j];
  expect_close(tensordot(a, b), expected, {3, 2});
  expect_close(tensordot(a, b, 2), expected, {3, 2});
  expect_close(tensordot(a, b, {1, 2}, {0, 1}), expected, {3, 2});
  // The same contraction with b's axes permuted.
  expect_close(tensordot(a, transpose(b, {2, 1, 0}), {2, 1}, {1, 2}), expected, {3, 2});
  // axis 0: outer product.
  array u = random_array({2}, float32, -1, 1, 3);
  array w = random_array({3}, float32, -1, 1, 4);
  EXPECT_EQ(tensordot(u, w, 0).shape(), Shape({2, 3}));
  auto uv = to_vector(u), wv = to_vector(w);
  expect_close(
      tensordot(u, w, 0),
      {uv[0] * wv[0], uv[0] * wv[1], uv[0] * wv[2], uv[1] * wv[0], uv[1] * wv[1], uv[1] * wv[2]},
      {2, 3});
  EXPECT_THROW(tensordot(a, b, -1), std::invalid_argument);
  EXPECT_THROW(tensordot(a, b, 4), std::invalid_argument);
  EXPECT_THROW(tensordot(a, b, 1), std::invalid_argument);  // 5 vs 4
  EXPECT_THROW(tensordot(a, b, {0}, {0, 1}), std::invalid_argument);
  EXPECT_THROW(tensordot(a, b, {3}, {0}), std::invalid_argument);
}

}  // namespace
}  // namespace mlx::core

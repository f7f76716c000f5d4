// Gather / scatter / take / *_along_axis against references computed here on doubles.
#include <cmath>
#include <random>
#include <string>

#include "test_utils.h"

using namespace mlx::core;
using namespace mlx::core::test;

namespace {

// Small integers exactly representable in every dtype: {0, 1} for bool, [0, 50) for
// unsigned types, [-25, 25) otherwise.
std::vector<double> int_values(size_t n, Dtype dt, uint32_t seed = 0) {
  std::mt19937 gen(seed);
  std::vector<double> v(n);
  for (auto& x : v) {
    int r = static_cast<int>(gen() % 50);
    x = dt == bool_ ? r % 2 : (is_unsigned(dt) ? r : r - 25);
  }
  return v;
}

// A test array of dtype `dt`: complex arrays get a nonzero imaginary part too.
array make_array(const Shape& shape, Dtype dt, uint32_t seed = 0) {
  auto v = int_values(shape_size(shape), dt, seed);
  array a = from_vector(v, shape, dt);
  if (is_complex(dt)) {
    array im = from_vector(int_values(v.size(), float32, seed + 1), shape, complex64);
    a = a + im * array(std::complex<float>(0.0f, 1.0f));
  }
  eval(a);
  return a;
}

std::vector<int64_t> row_major(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) {
    st[i] = st[i + 1] * s[i + 1];
  }
  return st;
}

// Unravels flat index `f` of a row-major `shape`.
std::vector<int64_t> unravel(int64_t f, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    idx[i] = f % shape[i];
    f /= shape[i];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  auto st = row_major(shape);
  int64_t f = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    f += idx[i] * st[i];
  }
  return f;
}

// Reference for take along `axis` with a flat list of (already shaped) indices.
std::vector<double> take_ref(const std::vector<double>& a, const Shape& shape,
                             const std::vector<double>& idx, const Shape& idx_shape, int axis,
                             Shape& out_shape) {
  out_shape.assign(shape.begin(), shape.begin() + axis);
  out_shape.insert(out_shape.end(), idx_shape.begin(), idx_shape.end());
  out_shape.insert(out_shape.end(), shape.begin() + axis + 1, shape.end());
  std::vector<double> out(shape_size(out_shape));
  int k = static_cast<int>(idx_shape.size());
  for (size_t f = 0; f < out.size(); ++f) {
    auto o = unravel(static_cast<int64_t>(f), out_shape);
    std::vector<int64_t> ai(o.begin(), o.begin() + axis);
    int64_t ii = ravel(std::vector<int64_t>(o.begin() + axis, o.begin() + axis + k), idx_shape);
    int64_t v = static_cast<int64_t>(idx[ii]);
    ai.push_back(v < 0 ? v + shape[axis] : v);
    ai.insert(ai.end(), o.begin() + axis + k, o.end());
    out[f] = a[ravel(ai, shape)];
  }
  return out;
}

void expect_same(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    }
  }
}

// Expects eval(x) to throw std::out_of_range mentioning every needle.
void expect_eval_out_of_range(array x, const std::vector<std::string>& needles) {
  try {
    eval(x);
    ADD_FAILURE() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    std::string what = e.what();
    for (auto& n : needles) {
      EXPECT_NE(what.find(n), std::string::npos) << what << " lacks " << n;
    }
  }
}

const Dtype kIndexDtypes[] = {uint8, uint16, uint32, uint64, int8, int16, int32, int64};

}  // namespace

TEST(Indexing, TakeAllDtypesAndAxes) {
  Shape shape{4, 5, 4};
  std::vector<double> idx{3, -1, 0, 3, -4, 2};
  Shape idx_shape{2, 3};
  for (Dtype dt : kAllDtypes) {
    array a = make_array(shape, dt);
    auto av = to_vector(a);
    for (int axis = 0; axis < 3; ++axis) {
      array i = from_vector(idx, idx_shape, int32);
      array out = take(a, i, axis);
      Shape ref_shape;
      auto ref = take_ref(av, shape, idx, idx_shape, axis, ref_shape);
      EXPECT_EQ(out.dtype(), dt);
      ASSERT_EQ(out.shape(), ref_shape) << dt << " axis " << axis;
      expect_same(to_vector(out), ref);
      if (is_complex(dt)) {
        Shape s2;
        expect_same(to_vector(imag(out)),
                    take_ref(to_vector(imag(a)), shape, idx, idx_shape, axis, s2));
      }
    }
  }
}

TEST(Indexing, TakeIndexDtypes) {
  array a = make_array({6, 4}, float32);
  auto av = to_vector(a);
  for (Dtype it : kIndexDtypes) {
    std::vector<double> idx =
        is_unsigned(it) ? std::vector<double>{5, 0, 2} : std::vector<double>{-1, 0, -4};
    array out = take(a, from_vector(idx, {3}, it), 0);
    Shape s;
    expect_same(to_vector(out), take_ref(av, {6, 4}, idx, {3}, 0, s));
  }
}

TEST(Indexing, TakeFlattenedAndScalars) {
  array a = make_array({3, 4}, int32);
  auto av = to_vector(a);
  array out = take(a, array({11, -12, 5}, int32));
  expect_same(to_vector(out), {av[11], av[0], av[5]});
  // A scalar index array drops the axis.
  out = take(a, array(2, int32), 1);
  EXPECT_EQ(out.shape(), Shape({3}));
  expect_same(to_vector(out), {av[2], av[6], av[10]});
  // Integer index overloads.
  out = take(a, -1, 0);
  EXPECT_EQ(out.shape(), Shape({4}));
  expect_same(to_vector(out), {av[8], av[9], av[10], av[11]});
  EXPECT_EQ(take(a, 7).item<int32_t>(), static_cast<int32_t>(av[7]));
  EXPECT_THROW(take(a, 3, 0), std::out_of_range);
  EXPECT_THROW(take(a, -13), std::out_of_range);
  // Taking from a scalar array treats it as flat.
  array sc(5.0f);
  EXPECT_EQ(take(sc, array({0, 0}, int32)).shape(), Shape({2}));
  EXPECT_EQ(to_vector(take(sc, array({0, -1}, int32))), std::vector<double>({5, 5}));
  // Size-1 arrays.
  array one = make_array({1, 1}, float32);
  EXPECT_EQ(to_vector(take(one, array({0, -1, 0}, int32), 1)),
            std::vector<double>(3, to_vector(one)[0]));
}

TEST(Indexing, TakeNonContiguousSources) {
  array base = make_array({6, 8}, float32, 3);
  std::vector<array> views = {
      transpose(base),                                    // (8, 6)
      slice(base, {0, 1}, {6, 8}, {2, 3}),                // stepped (3, 3)
      slice(base, {5, 7}, {-7, -9}, {-1, -2}),            // negative strides (6, 4)
      broadcast_to(slice(base, {2, 0}, {3, 8}), {5, 8}),  // stride 0
  };
  for (auto& v : views) {
    auto vv = to_vector(v);
    for (int axis = 0; axis < 2; ++axis) {
      int n = v.shape(axis);
      std::vector<double> idx{static_cast<double>(n - 1), 0, -1, 1};
      Shape s;
      auto ref = take_ref(vv, v.shape(), idx, {2, 2}, axis, s);
      array out = take(v, from_vector(idx, {2, 2}, int64), axis);
      ASSERT_EQ(out.shape(), s);
      expect_same(to_vector(out), ref);
    }
  }
  // Non-contiguous index arrays.
  array a = make_array({10}, int16);
  auto av = to_vector(a);
  array idx = transpose(reshape(arange(0, 10, 1), {2, 5}));  // (5, 2): 0 5 1 6 ...
  array rev = slice(arange(0, 10, 1), {9}, {-11}, {-1});
  Shape s;
  expect_same(to_vector(take(a, idx, 0)), take_ref(av, {10}, to_vector(idx), {5, 2}, 0, s));
  expect_same(to_vector(take(a, rev, 0)), take_ref(av, {10}, to_vector(rev), {10}, 0, s));
}

TEST(Indexing, TakeEmpty) {
  array a = make_array({3, 4}, float32);
  EXPECT_EQ(take(a, array(std::vector<int>{}, Shape{0}, int32), 0).shape(), Shape({0, 4}));
  EXPECT_EQ(take(a, array(std::vector<int>{}, Shape{2, 0}, int32), 1).shape(), Shape({3, 2, 0}));
  array e = zeros({3, 0});
  array out = take(e, array({2, 0}, int32), 0);
  eval(out);
  EXPECT_EQ(out.shape(), Shape({2, 0}));
  // A non-empty take from an empty axis has nothing to read.
  EXPECT_THROW(take(e, array({0}, int32), 1), std::out_of_range);
  EXPECT_EQ(to_vector(take(e, array(std::vector<int>{}, Shape{0}, int32), 1)).size(), 0u);
}

TEST(Indexing, TakeOutOfRangeAtEval) {
  array a = make_array({4, 3}, float32);
  expect_eval_out_of_range(take(a, array({0, 4}, int32), 0), {"[take]", "4", "axis 0", "size 4"});
  expect_eval_out_of_range(take(a, array({-5}, int64), 0), {"[take]", "-5", "size 4"});
  expect_eval_out_of_range(take(a, array({3}, uint8), 1), {"3", "axis 1", "size 3"});
  expect_eval_out_of_range(take(a, from_vector({1e19}, {1}, uint64), 1), {"10000000000000000000"});
  // Flat takes read elements directly; they check just the same.
  expect_eval_out_of_range(take(a, array({0, 12}, int16)), {"[take]", "12", "axis 0", "size 12"});
  expect_eval_out_of_range(take(a, array({-13}, int64)), {"-13", "size 12"});
  expect_eval_out_of_range(take(a, from_vector({1e19}, {1}, uint64)), {"10000000000000000000"});
  // Large arrays check every index too (the bad one is last).
  std::vector<int> big(1 << 20, 1);
  big.back() = 7;
  EXPECT_THROW(eval(take(a, array(big.data(), {1 << 20}, int32), 0)), std::out_of_range);
}

TEST(Indexing, TakeErrors) {
  array a = make_array({4, 3}, float32);
  EXPECT_THROW(take(a, array({0.0f}), 0), std::invalid_argument);
  EXPECT_THROW(take(a, array({true}), 0), std::invalid_argument);
  EXPECT_THROW(take(a, array({0}, int32), 2), std::invalid_argument);
  EXPECT_THROW(take(a, array({0}, int32), -3), std::invalid_argument);
  EXPECT_THROW(take(array(1.0f), array({0}, int32), 0), std::invalid_argument);
}

TEST(Indexing, TakeLarge) {
  // Embedding-style lookup: 1M rows of 8 from a (1000, 8) table, plus a 2M flat take.
  array table = random_array({1000, 8}, float32, -1, 1, 7);
  auto tv = to_vector(table);
  int n = 1 << 20;
  std::vector<double> idx(n);
  std::mt19937 gen(1);
  for (auto& x : idx) {
    x = static_cast<int>(gen() % 2000) - 1000;
  }
  array out = take(table, from_vector(idx, {n}, int32), 0);
  auto ov = to_vector(out);
  ASSERT_EQ(out.shape(), Shape({n, 8}));
  bool ok = true;
  for (int i = 0; i < n && ok; ++i) {
    int r = static_cast<int>(idx[i]);
    r = r < 0 ? r + 1000 : r;
    for (int c = 0; c < 8; ++c) {
      ok &= ov[i * 8 + c] == static_cast<double>(static_cast<float>(tv[r * 8 + c]));
    }
  }
  EXPECT_TRUE(ok);
  array flat = arange(0, 2 << 20, 1);
  array rev = slice(flat, {(2 << 20) - 1}, {-(2 << 20) - 1}, {-1});
  array back = take(flat, rev);
  EXPECT_EQ(to_vector(back), to_vector(rev));
}

TEST(Indexing, GatherGeneral) {
  // Broadcast index arrays on two axes, full slice on the middle axis.
  array a = make_array({4, 5, 6}, float64);
  auto av = to_vector(a);
  array i0 = array({3, -1, 0}, Shape{3, 1}, int32);
  array i1 = array({5, -6}, Shape{1, 2}, int64);
  array out = gather(a, {i0, i1}, {0, 2}, {1, 5, 1});
  ASSERT_EQ(out.shape(), Shape({3, 2, 1, 5, 1}));
  int r0[] = {3, 3, 0};
  int r2[] = {5, 0};
  std::vector<double> ref;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 5; ++k) {
        ref.push_back(av[(r0[i] * 5 + k) * 6 + r2[j]]);
      }
    }
  }
  expect_same(to_vector(out), ref);

  // Slices wider than one along the indexed axis, on a transposed source.
  array t = transpose(make_array({7, 6}, int32, 2));  // (6, 7)
  auto tv = to_vector(t);
  out = gather(t, array({1, 4}, int32), 0, {2, 3});
  ASSERT_EQ(out.shape(), Shape({2, 2, 3}));
  ref.clear();
  for (int p : {1, 4}) {
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 3; ++c) {
        ref.push_back(tv[(p + r) * 7 + c]);
      }
    }
  }
  expect_same(to_vector(out), ref);

  // No index arrays: one slice from the origin.
  out = gather(a, {}, {}, {2, 1, 3});
  ASSERT_EQ(out.shape(), Shape({2, 1, 3}));
  expect_same(to_vector(out), to_vector(slice(a, {0, 0, 0}, {2, 1, 3})));

  // Zero-size slices still check their indices.
  out = gather(a, {array({1}, int32)}, {0}, {1, 0, 6});
  EXPECT_EQ(out.shape(), Shape({1, 1, 0, 6}));
  eval(out);
  expect_eval_out_of_range(gather(a, {array({9}, int32)}, {0}, {1, 0, 6}), {"gather", "9"});
}

TEST(Indexing, GatherOutOfRangeSlice) {
  array a = make_array({4, 5}, float32);
  // Start 3 with slice 2 overruns an axis of 4.
  expect_eval_out_of_range(gather(a, array({1, 3}, int32), 0, {2, 5}),
                           {"[gather]", "slice of size 2", "index 3", "axis 0", "size 4"});
  eval(gather(a, array({2, -2}, int32), 0, {2, 5}));
}

TEST(Indexing, GatherErrors) {
  array a = make_array({4, 5}, float32);
  array i = array({0}, int32);
  EXPECT_THROW(gather(a, {i}, {0, 1}, {1, 5}), std::invalid_argument);     // count mismatch
  EXPECT_THROW(gather(a, {i}, {2}, {1, 5}), std::invalid_argument);        // bad axis
  EXPECT_THROW(gather(a, {i, i}, {0, 0}, {1, 1}), std::invalid_argument);  // duplicate axis
  EXPECT_THROW(gather(a, {i}, {0}, {1}), std::invalid_argument);           // slice rank
  EXPECT_THROW(gather(a, {i}, {0}, {1, 6}), std::invalid_argument);        // slice too big
  EXPECT_THROW(gather(a, {i}, {0}, {-1, 5}), std::invalid_argument);
  EXPECT_THROW(gather(a, {astype(i, float16)}, {0}, {1, 5}), std::invalid_argument);
  // Index shapes that do not broadcast.
  EXPECT_THROW(gather(a, {array({0, 1}, int32), array({0, 1, 2}, int32)}, {0, 1}, {1, 1}),
               std::invalid_argument);
}

TEST(Indexing, TakeAlongAxis) {
  for (Dtype dt : kAllDtypes) {
    array a = make_array({3, 5, 4}, dt);
    for (int axis = 0; axis < 3; ++axis) {
      Shape is = a.shape();
      is[axis] = 6;
      std::mt19937 gen(axis);
      std::vector<double> idx(shape_size(is));
      for (auto& x : idx) {
        x = static_cast<int>(gen() % (2 * a.shape(axis))) - a.shape(axis);
      }
      array out = take_along_axis(a, from_vector(idx, is, int16), axis);
      ASSERT_EQ(out.shape(), is);
      auto ref_of = [&](const std::vector<double>& av) {
        std::vector<double> ref(idx.size());
        for (size_t f = 0; f < idx.size(); ++f) {
          auto o = unravel(static_cast<int64_t>(f), is);
          int64_t v = static_cast<int64_t>(idx[f]);
          o[axis] = v < 0 ? v + a.shape(axis) : v;
          ref[f] = av[ravel(o, a.shape())];
        }
        return ref;
      };
      expect_same(to_vector(out), ref_of(to_vector(a)));
      if (is_complex(dt)) {
        expect_same(to_vector(imag(out)), ref_of(to_vector(imag(a))));
      }
    }
  }
}

TEST(Indexing, TakeAlongAxisBroadcastAndLayouts) {
  // Indices broadcast over the array (and the array over the indices) outside the axis.
  array a = make_array({1, 5, 3}, float32);
  auto av = to_vector(a);
  array idx = array({4, 0, -1, 2, 2, 1, 0, 3}, Shape{2, 4, 1}, int32);
  array out = take_along_axis(a, idx, 1);
  ASSERT_EQ(out.shape(), Shape({2, 4, 3}));
  std::vector<int> iv{4, 0, 4, 2, 2, 1, 0, 3};
  std::vector<double> ref;
  for (int b = 0; b < 2; ++b) {
    for (int j = 0; j < 4; ++j) {
      for (int c = 0; c < 3; ++c) {
        ref.push_back(av[iv[b * 4 + j] * 3 + c]);
      }
    }
  }
  expect_same(to_vector(out), ref);

  // Transposed source and negative-stride indices; argsort-style use (axis -1).
  array t = transpose(make_array({6, 4}, int64, 5));  // (4, 6)
  auto tv = to_vector(t);
  array ri =
      slice(reshape(remainder(arange(0, 24, 1), array(6)), {4, 6}), {3, 5}, {-5, -7}, {-1, -1});
  auto rv = to_vector(ri);
  out = take_along_axis(t, ri, -1);
  ref.clear();
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 6; ++c) {
      ref.push_back(tv[r * 6 + static_cast<int>(rv[r * 6 + c])]);
    }
  }
  expect_same(to_vector(out), ref);

  // Large: 2M elements gathered along axis 0.
  array big = random_array({1024, 2048}, float32, -1, 1, 1);
  array bidx = remainder(reshape(arange(0, 1024 * 2048, 1), {1024, 2048}), array(1024));
  array perm = take_along_axis(big, subtract(array(1023), bidx), 0);
  auto bv = to_vector(big);
  auto pv = to_vector(perm);
  bool ok = true;
  for (int64_t f = 0; f < 1024 * 2048 && ok; ++f) {
    int64_t c = f % 2048;
    int64_t src_r = 1023 - (f % 1024);
    ok &= pv[f] == bv[src_r * 2048 + c];
  }
  EXPECT_TRUE(ok);
}

TEST(Indexing, TakeAlongAxisErrors) {
  array a = make_array({3, 4}, float32);
  EXPECT_THROW(take_along_axis(a, array({0}, int32), 0), std::invalid_argument);  // ndim
  EXPECT_THROW(take_along_axis(a, array({0.0f}, {1, 1}), 0), std::invalid_argument);
  EXPECT_THROW(take_along_axis(a, array({0}, {1, 1}, int32), 2), std::invalid_argument);
  EXPECT_THROW(take_along_axis(a, zeros({2, 2}, int32), 0), std::invalid_argument);  // broadcast
  expect_eval_out_of_range(take_along_axis(a, full({1, 4}, 3, int32), 0),
                           {"take_along_axis", "3", "axis 0", "size 3"});
  expect_eval_out_of_range(take_along_axis(a, full({3, 1}, -5, int8), 1), {"-5", "size 4"});
  expect_eval_out_of_range(take_along_axis(zeros({3, 0}), zeros({3, 1}, int32), 1), {"size 0"});
  EXPECT_EQ(take_along_axis(zeros({3, 0}), zeros({3, 0}, int32), 0).shape(), Shape({3, 0}));
}

namespace {

enum class Red { Set, Add, Prod, Max, Min };

double combine(Red r, double d, double u, Dtype dt) {
  switch (r) {
    case Red::Set:
      return u;
    case Red::Add:
      return dt == bool_ ? double(d || u) : d + u;
    case Red::Prod:
      return d * u;
    case Red::Max:
      return std::max(d, u);
    case Red::Min:
      return std::min(d, u);
  }
  return u;
}

array scatter_op(Red r, const array& a, const std::vector<array>& idx, const array& upd,
                 const std::vector<int>& axes) {
  switch (r) {
    case Red::Set:
      return scatter(a, idx, upd, axes);
    case Red::Add:
      return scatter_add(a, idx, upd, axes);
    case Red::Prod:
      return scatter_prod(a, idx, upd, axes);
    case Red::Max:
      return scatter_max(a, idx, upd, axes);
    case Red::Min:
      return scatter_min(a, idx, upd, axes);
  }
  return a;
}

// Reference: updates of shape (n_idx, slice...) applied in order at rows idx along axis 0.
std::vector<double> scatter_rows_ref(Red r, std::vector<double> a, const Shape& shape,
                                     const std::vector<int>& idx, const std::vector<double>& upd,
                                     const Shape& slice, Dtype dt) {
  int64_t slice_size = shape_size(slice);
  for (size_t p = 0; p < idx.size(); ++p) {
    int row = idx[p] < 0 ? idx[p] + shape[0] : idx[p];
    for (int64_t j = 0; j < slice_size; ++j) {
      auto s = unravel(j, slice);
      s[0] += row;
      double& d = a[ravel(s, shape)];
      d = combine(r, d, upd[p * slice_size + j], dt);
    }
  }
  return a;
}

}  // namespace

TEST(Indexing, ScatterAllDtypesAndReductions) {
  Shape shape{5, 4};
  std::vector<int> idx{1, -1, 1, 0, 4, 1};  // duplicates: row 1 three times, row 4 twice
  for (Dtype dt : kAllDtypes) {
    for (Red r : {Red::Set, Red::Add, Red::Prod, Red::Max, Red::Min}) {
      if (is_complex(dt) && (r == Red::Max || r == Red::Min)) {
        continue;  // covered by ScatterComplex
      }
      array a = make_array(shape, dt, 1);
      if (r == Red::Prod) {
        // Factors in [0, 4) keep products exact in every dtype.
        auto v = int_values(shape_size(shape), dt, 1);
        for (auto& x : v)
          x = std::abs(static_cast<int>(x)) % 4;
        a = from_vector(v, shape, dt);
      }
      // Slices of (1, 3): columns 0..2 of a row; values kept small so products stay exact.
      std::vector<double> uv(idx.size() * 3);
      std::mt19937 gen(static_cast<uint32_t>(r));
      for (auto& x : uv) {
        int v = static_cast<int>(gen() % 4);
        x = dt == bool_ ? v % 2 : (is_unsigned(dt) ? v : v - 1);
      }
      array upd = from_vector(uv, {6, 1, 3}, dt);
      array out = scatter_op(r, a, {array(idx.data(), {6}, int32)}, upd, {0});
      auto ref = scatter_rows_ref(r, to_vector(a), shape, idx, to_vector(upd), {1, 3}, dt);
      if (dt == bool_ && r == Red::Prod) {
        for (auto& x : ref)
          x = x != 0;
      }
      EXPECT_EQ(out.dtype(), dt);
      ASSERT_EQ(out.shape(), shape);
      auto got = to_vector(out);
      for (size_t i = 0; i < ref.size(); ++i) {
        EXPECT_EQ(got[i], ref[i]) << dt << " reduction " << static_cast<int>(r) << " at " << i;
      }
    }
  }
}

namespace {

array complex_array(const std::vector<double>& re, const std::vector<double>& im,
                    const Shape& shape) {
  return from_vector(re, shape, complex64) +
         from_vector(im, shape, complex64) * array(std::complex<float>(0.0f, 1.0f));
}

}  // namespace

TEST(Indexing, ScatterComplex) {
  array a = complex_array({0, 1, 2}, {0, 1, 2}, {3});
  array idx = array({0, 0, -3, 2}, int32);
  array upd = complex_array({1, 1, 0, 2}, {5, 7, 9, -1}, {4, 1});
  array mx = scatter_max(a, idx, upd, 0);
  array mn = scatter_min(a, idx, upd, 0);
  array ad = scatter_add(a, idx, upd, 0);
  EXPECT_EQ(to_vector(mx), std::vector<double>({1, 1, 2}));
  EXPECT_EQ(to_vector(imag(mx)), std::vector<double>({7, 1, 2}));
  EXPECT_EQ(to_vector(mn), std::vector<double>({0, 1, 2}));
  EXPECT_EQ(to_vector(imag(mn)), std::vector<double>({0, 1, -1}));
  EXPECT_EQ(to_vector(ad), std::vector<double>({2, 1, 4}));
  EXPECT_EQ(to_vector(imag(ad)), std::vector<double>({21, 1, 1}));
}

TEST(Indexing, ScatterFloatNaNAndHalf) {
  float nan = std::nanf("");
  array a = array({1.0f, 2.0f, 3.0f});
  array upd = array({nan, 5.0f, 0.5f}, {3, 1});
  array idx = array({0, 0, 1}, int32);
  auto mx = to_vector(scatter_max(a, idx, upd, 0));
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], 2.0);
  auto mn = to_vector(scatter_min(a, idx, upd, 0));
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_EQ(mn[1], 0.5);
  // float16 accumulates in float and rounds after each update.
  array h = zeros({1}, float16);
  array hu = full({3000, 1}, 1.0f, float16);
  auto hs = to_vector(scatter_add(h, zeros({3000}, int32), hu, 0));
  EXPECT_EQ(hs[0], 2048.0);  // float16 stops counting at 2048
}

TEST(Indexing, ScatterGeneralAxes) {
  array a = make_array({4, 5, 6}, float32);
  auto av = to_vector(a);
  array i0 = array({3, -4}, Shape{2, 1}, int64);
  array i1 = array({5, 0, -1}, Shape{3}, int32);
  // Update slices are columns of 2 along axis 1 (narrower than the axis), broadcast along
  // the first index dimension.
  array upd = make_array({1, 3, 1, 2, 1}, float32, 9);
  auto uv = to_vector(upd);
  array out = scatter(a, {i0, i1}, upd, {0, 2});
  int r0[] = {3, 0};
  int r2[] = {5, 0, 5};
  auto ref = av;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 2; ++k) {
        ref[(r0[i] * 5 + k) * 6 + r2[j]] = uv[j * 2 + k];
      }
    }
  }
  expect_same(to_vector(out), ref);
  // No index arrays: updates a corner of the array.
  out = scatter_add(a, {}, ones({2, 1, 3}), {});
  ref = av;
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 3; ++k) {
      ref[i * 30 + k] += 1;
    }
  }
  expect_same(to_vector(out), ref);
}

TEST(Indexing, ScatterNonContiguousInputs) {
  array base = make_array({6, 4}, int32);
  array a = transpose(base);  // (4, 6)
  auto av = to_vector(a);
  array idx = slice(array({0, 3, 2, 1}, int32), {3}, {-5}, {-1});  // 1 2 3 0
  array upd = reshape(transpose(make_array({6, 4}, int32, 4)), {4, 1, 6});
  auto uv = to_vector(upd);
  array out = scatter_add(a, idx, upd, 0);
  int rows[] = {1, 2, 3, 0};
  auto ref = av;
  for (int p = 0; p < 4; ++p) {
    for (int c = 0; c < 6; ++c) {
      ref[rows[p] * 6 + c] += uv[p * 6 + c];
    }
  }
  expect_same(to_vector(out), ref);
  // The input is unchanged.
  expect_same(to_vector(a), av);
  expect_same(to_vector(base), to_vector(transpose(a)));
}

TEST(Indexing, ScatterDonatesOnlyUnsharedInput) {
  array a = make_array({8, 4}, float32);
  array b = a + 1.0f;
  eval(b);
  const float* buf = b.data<float>();
  array out = scatter(b, array({2}, int32), zeros({1, 1, 4}), 0);
  b = array(0.0f);  // `out` now holds the only reference to the old b
  eval(out);
  EXPECT_EQ(out.data<float>(), buf);
  auto ov = to_vector(out);
  auto av = to_vector(a);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(ov[i], i / 4 == 2 ? 0.0 : av[i] + 1) << i;
  }
  // A shared input is copied.
  array c = a + 1.0f;
  eval(c);
  array out2 = scatter(c, array({2}, int32), zeros({1, 1, 4}), 0);
  eval(out2);
  EXPECT_NE(out2.data<float>(), c.data<float>());
  EXPECT_EQ(to_vector(c)[8], av[8] + 1);
}

TEST(Indexing, ScatterAddDuplicatesLarge) {
  int n = 1 << 20;
  std::mt19937 gen(5);
  std::vector<int> idx(n);
  std::vector<double> vals(n);
  for (int i = 0; i < n; ++i) {
    idx[i] = static_cast<int>(gen() % 2000) - 1000;
    vals[i] = static_cast<double>(gen() % 1000) / 7.0;
  }
  array ia = array(idx.data(), {n}, int32);
  // Histogram: 1M ones into 1000 bins.
  std::vector<double> hist(1000, 0);
  for (int i : idx) {
    hist[i < 0 ? i + 1000 : i] += 1;
  }
  expect_same(to_vector(scatter_add(zeros({1000}, int32), ia, ones({n, 1}, int32), 0)), hist);
  // 1M float64 updates into 1M outputs.
  array big = zeros({n}, float64);
  array big_idx = multiply(ia, array(1000));
  std::vector<double> ref(n, 0);
  for (int i = 0; i < n; ++i) {
    int64_t d = static_cast<int64_t>(idx[i]) * 1000;
    ref[d < 0 ? d + n : d] += vals[i];
  }
  // The GPU adds in no fixed order, so the last bits may differ.
  expect_close(scatter_add(big, big_idx, from_vector(vals, {n, 1}, float64), 0), ref, 1e-12, 1e-9);
  // Wide slices: 2000 rows of 4096 added into 16 rows.
  int rows = 2000;
  std::vector<int> ridx(rows);
  for (auto& r : ridx) {
    r = static_cast<int>(gen() % 16);
  }
  array upd = reshape(remainder(arange(0, rows * 4096, 1), array(5)), {rows, 1, 4096});
  auto uv = to_vector(upd);
  std::vector<double> wref(16 * 4096, 0);
  for (int p = 0; p < rows; ++p) {
    for (int c = 0; c < 4096; ++c) {
      wref[ridx[p] * 4096 + c] += uv[p * 4096 + c];
    }
  }
  expect_same(
      to_vector(scatter_add(zeros({16, 4096}, int32), array(ridx.data(), {rows}, int32), upd, 0)),
      wref);
  // Last update wins for plain scatter with duplicates.
  std::vector<double> last(16 * 4096, 0);
  for (int p = 0; p < rows; ++p) {
    for (int c = 0; c < 4096; ++c) {
      last[ridx[p] * 4096 + c] = uv[p * 4096 + c];
    }
  }
  expect_same(
      to_vector(scatter(zeros({16, 4096}, int32), array(ridx.data(), {rows}, int32), upd, 0)),
      last);
}

TEST(Indexing, ScatterOutOfRangeAtEval) {
  array a = make_array({5, 3}, float32);
  expect_eval_out_of_range(scatter(a, array({5}, int32), zeros({1, 1, 3}), 0),
                           {"[scatter]", "5", "axis 0", "size 5"});
  expect_eval_out_of_range(scatter_add(a, array({-6}, int8), zeros({1, 1, 3}), 0),
                           {"[scatter_add]", "-6"});
  expect_eval_out_of_range(scatter_max(a, array({4}, int32), zeros({1, 2, 3}), 0),
                           {"[scatter_max]", "slice of size 2", "4"});
  eval(scatter_prod(a, array({2}, int32), zeros({1, 1, 1}), 1));
  EXPECT_THROW(eval(scatter_min(a, array({3}, int32), zeros({1, 1, 1}), 1)), std::out_of_range);
}

TEST(Indexing, ScatterErrors) {
  array a = make_array({5, 3}, float32);
  array i = array({0, 1}, int32);
  EXPECT_THROW(scatter(a, array({0.5f}), zeros({1, 1, 3}), 0), std::invalid_argument);
  EXPECT_THROW(scatter(a, i, zeros({2, 3}), 0), std::invalid_argument);     // ndim
  EXPECT_THROW(scatter(a, i, zeros({2, 1, 4}), 0), std::invalid_argument);  // slice too big
  EXPECT_THROW(scatter(a, i, zeros({3, 1, 3}), 0), std::invalid_argument);  // index shape
  EXPECT_THROW(scatter(a, i, zeros({2, 1, 3}), 2), std::invalid_argument);  // axis
  EXPECT_THROW(scatter(a, {i}, zeros({2, 1, 3}), {0, 1}), std::invalid_argument);
  EXPECT_THROW(scatter_add(a, {i, array({0, 1, 2}, int32)}, zeros({2, 1, 1}), {0, 1}),
               std::invalid_argument);  // indices do not broadcast
}

TEST(Indexing, ScatterEmpty) {
  array a = make_array({5, 3}, float32);
  array out = scatter_add(a, array(std::vector<int>{}, Shape{0}, int32), zeros({0, 1, 3}), 0);
  expect_same(to_vector(out), to_vector(a));
  out = scatter(zeros({0, 3}), array(std::vector<int>{}, Shape{0}, int32), zeros({0, 0, 3}), 0);
  eval(out);
  EXPECT_EQ(out.shape(), Shape({0, 3}));
  // Zero-size update slices still check their indices.
  expect_eval_out_of_range(scatter(a, array({7}, int32), zeros({1, 0, 3}), 0), {"7"});
}

namespace {

std::vector<double> put_along_ref(bool add, std::vector<double> a, const Shape& shape,
                                  const std::vector<double>& idx, const Shape& idx_shape,
                                  const std::vector<double>& vals, int axis) {
  for (size_t f = 0; f < idx.size(); ++f) {
    auto o = unravel(static_cast<int64_t>(f), idx_shape);
    int64_t v = static_cast<int64_t>(idx[f]);
    o[axis] = v < 0 ? v + shape[axis] : v;
    double& d = a[ravel(o, shape)];
    d = add ? d + vals[f] : vals[f];
  }
  return a;
}

}  // namespace

TEST(Indexing, PutAlongAxis) {
  for (Dtype dt : {int32, float32, float16, bfloat16, uint8, int64, float64}) {
    array a = make_array({3, 4, 5}, dt);
    auto av = to_vector(a);
    for (int axis = 0; axis < 3; ++axis) {
      for (bool add : {false, true}) {
        Shape is = a.shape();
        is[axis] = 7;  // more indices than the axis holds: duplicates
        std::mt19937 gen(axis + 10);
        std::vector<double> idx(shape_size(is));
        for (auto& x : idx) {
          x = static_cast<int>(gen() % (2 * a.shape(axis))) - a.shape(axis);
        }
        array vals = make_array(is, dt, 3);
        array ia = from_vector(idx, is, int32);
        array out = add ? scatter_add_axis(a, ia, vals, axis) : put_along_axis(a, ia, vals, axis);
        auto ref = put_along_ref(add, av, a.shape(), idx, is, to_vector(vals), axis);
        // Cast the reference through the dtype (uint8 wraps).
        expect_same(to_vector(out), to_vector(from_vector(ref, a.shape(), float64)));
        if (dt != uint8) {
          expect_same(to_vector(out), ref);
        }
      }
    }
  }
}

TEST(Indexing, PutAlongAxisBroadcastAndLayouts) {
  array a = transpose(make_array({4, 3}, float32));  // (3, 4)
  auto av = to_vector(a);
  // Indices broadcast along axis 0, a scalar value broadcast everywhere.
  array idx = array({3, -4}, Shape{1, 2}, int32);
  array out = put_along_axis(a, idx, array(9.0f), 1);
  auto ref = av;
  for (int r = 0; r < 3; ++r) {
    ref[r * 4 + 3] = 9;
    ref[r * 4 + 0] = 9;
  }
  expect_same(to_vector(out), ref);
  expect_same(to_vector(a), av);
  // Bool and complex.
  array b = put_along_axis(zeros({2, 2}, bool_), array({1, 0}, {2, 1}, int32), array(true), 1);
  EXPECT_EQ(to_vector(b), std::vector<double>({0, 1, 1, 0}));
  array c = scatter_add_axis(zeros({2}, complex64), array({1, 1}, int32),
                             array(std::complex<float>(1, 2)), 0);
  EXPECT_EQ(to_vector(imag(c)), std::vector<double>({0, 4}));
}

TEST(Indexing, PutAlongAxisLarge) {
  // Few outer rows: threads split the inner positions.
  int n = 300000;
  array a = zeros({4, n}, float32);
  array idx = remainder(reshape(arange(0, 3 * n, 1), {3, n}), array(4));
  array vals = ones({3, n});
  auto out = to_vector(scatter_add_axis(a, idx, vals, 0));
  auto iv = to_vector(idx);
  std::vector<double> ref(4 * n, 0);
  for (int j = 0; j < 3; ++j) {
    for (int i = 0; i < n; ++i) {
      ref[static_cast<int>(iv[j * n + i]) * n + i] += 1;
    }
  }
  expect_same(out, ref);
  // Many outer rows: threads split them.
  array t = zeros({n, 4}, int32);
  array tidx = reshape(remainder(arange(0, 8 * n, 1), array(3)), {n, 8});
  array tvals = reshape(arange(0, 8 * n, 1), {n, 8});
  auto tout = to_vector(put_along_axis(t, tidx, tvals, 1));
  auto tiv = to_vector(tidx);
  std::vector<double> tref(4 * n, 0);
  for (int r = 0; r < n; ++r) {
    for (int j = 0; j < 8; ++j) {
      tref[r * 4 + static_cast<int>(tiv[r * 8 + j])] = r * 8 + j;
    }
  }
  expect_same(tout, tref);
}

TEST(Indexing, PutAlongAxisErrors) {
  array a = make_array({3, 4}, float32);
  EXPECT_THROW(put_along_axis(a, array({0}, int32), array(1.0f), 0), std::invalid_argument);
  EXPECT_THROW(put_along_axis(a, array({0.0f}, {1, 1}), array(1.0f), 0), std::invalid_argument);
  EXPECT_THROW(put_along_axis(a, zeros({1, 4}, int32), zeros({2, 4}), 0), std::invalid_argument);
  EXPECT_THROW(put_along_axis(a, zeros({1, 2}, int32), array(1.0f), 0), std::invalid_argument);
  EXPECT_THROW(scatter_add_axis(a, zeros({1, 4}, int32), array(1.0f), 3), std::invalid_argument);
  expect_eval_out_of_range(put_along_axis(a, full({1, 4}, 3, int32), array(1.0f), 0),
                           {"[put_along_axis]", "3", "axis 0", "size 3"});
  expect_eval_out_of_range(scatter_add_axis(a, full({3, 1}, -5, int32), array(1.0f), 1),
                           {"[scatter_add_axis]", "-5", "size 4"});
}

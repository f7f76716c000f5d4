// Shape ops: views (reshape, transpose, slice, broadcast, ...) and the copying ops built on them
// (concatenate, pad, tile, repeat, roll, slice_update, ...), checked against host references.
#include "mlx/primitives/shape.h"

#include <complex>
#include <cstring>
#include <functional>
#include <numeric>

#include "test_utils.h"

using namespace mlx::core;
using namespace mlx::core::test;

namespace {

using Index = std::vector<int>;

// Row-major values of an array, real and imaginary parts, for building references.
struct Host {
  Shape shape;
  std::vector<double> re;
  std::vector<double> im;
};

Host host(const array& a) {
  Host h{a.shape(), to_vector(a), {}};
  h.im = a.dtype() == complex64 ? to_vector(imag(a)) : std::vector<double>(h.re.size(), 0.0);
  return h;
}

Index unravel(int64_t flat, const Shape& shape) {
  Index idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = static_cast<int>(flat % shape[d]);
    flat /= shape[d];
  }
  return idx;
}

int64_t ravel(const Index& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    flat = flat * shape[d] + idx[d];
  }
  return flat;
}

// out[idx] = in[source(idx)], where source gives an input multi-index, or an empty one to mean
// `fill`.
Host remap(const Host& in, const Shape& out_shape, const std::function<Index(const Index&)>& source,
           double fill = 0.0) {
  Host out{out_shape, {}, {}};
  size_t n = shape_size(out_shape);
  for (size_t i = 0; i < n; ++i) {
    Index src = source(unravel(static_cast<int64_t>(i), out_shape));
    if (src.empty() && !in.shape.empty()) {
      out.re.push_back(fill);
      out.im.push_back(0.0);
    } else {
      int64_t j = ravel(src, in.shape);
      out.re.push_back(in.re[j]);
      out.im.push_back(in.im[j]);
    }
  }
  return out;
}

// Exact comparison, including imaginary parts.
void expect_equal(const array& out, const Host& ref) {
  ASSERT_EQ(out.shape(), ref.shape);
  EXPECT_EQ(to_vector(out), ref.re);
  if (out.dtype() == complex64) {
    EXPECT_EQ(to_vector(imag(out)), ref.im);
  }
}

void expect_values(const array& out, const Shape& shape, const std::vector<double>& values) {
  ASSERT_EQ(out.shape(), shape);
  EXPECT_EQ(to_vector(out), values);
}

// Small integers, exact in every dtype; complex64 gets a different imaginary part.
array make_input(const Shape& shape, Dtype dtype, uint32_t seed = 0) {
  size_t n = shape_size(shape);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(0, dtype == bool_ ? 1 : 99);
  std::vector<double> re(n), im(n);
  for (size_t i = 0; i < n; ++i) {
    re[i] = dist(gen);
    im[i] = dist(gen);
  }
  if (dtype != complex64) {
    return from_vector(re, shape, dtype);
  }
  std::vector<std::complex<float>> c(n);
  for (size_t i = 0; i < n; ++i) {
    c[i] = {static_cast<float>(re[i]), static_cast<float>(im[i])};
  }
  return array(c, shape);
}

array iota(const Shape& shape, Dtype dtype = float32) {
  std::vector<double> v(shape_size(shape));
  std::iota(v.begin(), v.end(), 0.0);
  return from_vector(v, shape, dtype);
}

// The same logical values of `shape` in several memory layouts.
struct Layout {
  const char* name;
  array a;
};

std::vector<Layout> layouts(const Shape& shape, Dtype dtype, uint32_t seed = 0) {
  int nd = static_cast<int>(shape.size());
  std::vector<Layout> out;
  out.push_back({"contiguous", make_input(shape, dtype, seed)});
  if (nd == 0) {
    return out;
  }
  Shape reversed(shape.rbegin(), shape.rend());
  out.push_back({"transposed", transpose(make_input(reversed, dtype, seed))});
  Shape doubled = shape;
  for (auto& d : doubled) {
    d *= 2;
  }
  out.push_back(
      {"step 2", slice(make_input(doubled, dtype, seed), Shape(nd, 0), doubled, Shape(nd, 2))});
  Shape stop(nd);
  for (int i = 0; i < nd; ++i) {
    stop[i] = -shape[i] - 1;
  }
  out.push_back(
      {"reversed", slice(make_input(shape, dtype, seed), Shape(nd, -1), stop, Shape(nd, -1))});
  Shape first = shape;
  first[0] = 1;
  out.push_back({"broadcast", broadcast_to(make_input(first, dtype, seed), shape)});
  return out;
}

// Bytes between the start of a's data and b's (both evaluated).
int64_t byte_distance(const array& a, const array& b) {
  return static_cast<const char*>(b.data<void>()) - static_cast<const char*>(a.data<void>());
}

bool same_buffer(const array& a, const array& b) {
  return a.data_shared_ptr() == b.data_shared_ptr();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Views that existed before: reshape & co.

TEST(ShapeViews, ReshapeContiguousIsView) {
  array a = iota({2, 3, 4});
  eval(a);
  array b = reshape(a, {4, -1});
  eval(b);
  EXPECT_EQ(b.shape(), Shape({4, 6}));
  EXPECT_EQ(b.data<void>(), a.data<void>());
  EXPECT_EQ(to_vector(b), to_vector(a));
}

TEST(ShapeViews, ReshapeExpressibleByStridesDoesNotCopy) {
  // Transposed (4,2,3) with strides (1,12,4): merging the last two axes needs no copy.
  array x = iota({2, 3, 4});
  eval(x);
  array t = transpose(x, {2, 0, 1});
  array r = reshape(t, {4, 6});
  eval(r);
  EXPECT_EQ(r.data<void>(), x.data<void>());
  EXPECT_TRUE(same_buffer(r, x));
  std::vector<double> expected;
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        expected.push_back(i * 12 + j * 4 + k);
      }
    }
  }
  expect_values(r, {4, 6}, expected);

  // Splitting an axis of a step-2 slice is a view too.
  array y = iota({4, 6});
  eval(y);
  array s = slice(y, {0, 1}, {4, 6}, {1, 2});  // (4,3), strides (6,2), offset 1
  array u = reshape(s, {2, 2, 3});
  eval(u);
  EXPECT_EQ(byte_distance(y, u), static_cast<int64_t>(sizeof(float)));
  EXPECT_EQ(u.strides(), Strides({12, 6, 2}));
  expect_values(u, {2, 2, 3}, {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23});

  // Negative strides: a reversed vector splits into a view with negative strides.
  array z = iota({6});
  eval(z);
  array rev = reshape(slice(z, {-1}, {-7}, {-1}), {2, 3});
  eval(rev);
  EXPECT_TRUE(same_buffer(rev, z));
  EXPECT_EQ(rev.strides(), Strides({-3, -1}));
  expect_values(rev, {2, 3}, {5, 4, 3, 2, 1, 0});

  // Inserting and removing unit axes of a transposed array never copies.
  array e = expand_dims(transpose(x), {0, 2});
  eval(e);
  EXPECT_EQ(e.data<void>(), x.data<void>());
  EXPECT_EQ(to_vector(squeeze(e)), to_vector(transpose(x)));

  // A broadcast axis that stays separate keeps stride 0.
  array bvec = iota({3});
  eval(bvec);
  array b = reshape(broadcast_to(bvec, {4, 3}), {2, 2, 3});
  eval(b);
  EXPECT_TRUE(same_buffer(b, bvec));
  EXPECT_EQ(b.strides(), Strides({0, 0, 1}));
}

TEST(ShapeViews, ReshapeNonContiguousCopies) {
  array x = iota({3, 4});
  eval(x);
  array r = reshape(transpose(x), {12});
  eval(r);
  EXPECT_FALSE(same_buffer(r, x));
  EXPECT_TRUE(r.flags().row_contiguous);
  expect_values(r, {12}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});

  // Merging a broadcast axis with a real one needs the data materialized.
  array b = reshape(broadcast_to(iota({3}), {2, 3}), {6});
  expect_values(b, {6}, {0, 1, 2, 0, 1, 2});
  // Rows of a step-2 slice are evenly spaced: merging them stays a view with stride 2.
  array s = reshape(slice(iota({2, 6}), {0, 0}, {2, 6}, {1, 2}), {6});
  expect_values(s, {6}, {0, 2, 4, 6, 8, 10});
}

TEST(ShapeViews, ReshapeInferenceAndErrors) {
  array a = iota({2, 6});
  EXPECT_EQ(reshape(a, {-1}).shape(), Shape({12}));
  EXPECT_EQ(reshape(a, {3, -1}).shape(), Shape({3, 4}));
  EXPECT_EQ(reshape(a, {-1, 2, 2}).shape(), Shape({3, 2, 2}));
  EXPECT_EQ(reshape(array(3.0f), {1, 1}).shape(), Shape({1, 1}));
  EXPECT_EQ(reshape(iota({1}), {}).shape(), Shape({}));
  EXPECT_THROW(reshape(a, {-1, -1}), std::invalid_argument);
  EXPECT_THROW(reshape(a, {5, -1}), std::invalid_argument);
  EXPECT_THROW(reshape(a, {5, 2}), std::invalid_argument);
  EXPECT_THROW(reshape(a, {-2, -6}), std::invalid_argument);
  try {
    reshape(a, {5, 2});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[reshape]"), std::string::npos);
  }

  // 0-size arrays.
  array z = zeros({0, 3});
  EXPECT_EQ(reshape(z, {3, 0}).shape(), Shape({3, 0}));
  EXPECT_EQ(reshape(z, {-1, 3}).shape(), Shape({0, 3}));
  EXPECT_EQ(reshape(z, {0, 5, 7}).shape(), Shape({0, 5, 7}));
  expect_values(reshape(z, {3, 0}), {3, 0}, {});
  EXPECT_THROW(reshape(z, {-1, 0}), std::invalid_argument);
  EXPECT_THROW(reshape(z, {1}), std::invalid_argument);
}

TEST(ShapeViews, FlattenUnflattenSqueezeExpand) {
  array a = iota({2, 3, 4});
  EXPECT_EQ(flatten(a).shape(), Shape({24}));
  EXPECT_EQ(flatten(a, 1).shape(), Shape({2, 12}));
  EXPECT_EQ(flatten(a, 0, 1).shape(), Shape({6, 4}));
  EXPECT_EQ(flatten(a, -2, -1).shape(), Shape({2, 12}));
  EXPECT_EQ(flatten(array(1.0f)).shape(), Shape({1}));
  EXPECT_EQ(to_vector(flatten(transpose(a))), to_vector(transpose(a)));
  EXPECT_THROW(flatten(a, 2, 1), std::invalid_argument);
  EXPECT_THROW(flatten(a, 3), std::invalid_argument);

  EXPECT_EQ(unflatten(a, 2, {2, 2}).shape(), Shape({2, 3, 2, 2}));
  EXPECT_EQ(unflatten(a, -1, {-1, 2}).shape(), Shape({2, 3, 2, 2}));
  EXPECT_THROW(unflatten(a, 2, {3, -1}), std::invalid_argument);
  EXPECT_THROW(unflatten(a, 2, {3, 3}), std::invalid_argument);
  EXPECT_THROW(unflatten(a, 2, {}), std::invalid_argument);
  EXPECT_THROW(unflatten(a, 2, {-1, -1}), std::invalid_argument);
  EXPECT_THROW(unflatten(a, 5, {4}), std::invalid_argument);

  array b = iota({1, 3, 1});
  EXPECT_EQ(squeeze(b).shape(), Shape({3}));
  EXPECT_EQ(squeeze(b, 0).shape(), Shape({3, 1}));
  EXPECT_EQ(squeeze(b, {0, -1}).shape(), Shape({3}));
  EXPECT_THROW(squeeze(b, 1), std::invalid_argument);
  EXPECT_THROW(squeeze(b, 3), std::invalid_argument);
  EXPECT_THROW(squeeze(b, {0, 0}), std::invalid_argument);

  array c = iota({3});
  EXPECT_EQ(expand_dims(c, 0).shape(), Shape({1, 3}));
  EXPECT_EQ(expand_dims(c, -1).shape(), Shape({3, 1}));
  EXPECT_EQ(expand_dims(c, {0, 2}).shape(), Shape({1, 3, 1}));
  EXPECT_EQ(expand_dims(c, {-1, 0}).shape(), Shape({1, 3, 1}));
  EXPECT_EQ(expand_dims(array(1.0f), 0).shape(), Shape({1}));
  EXPECT_THROW(expand_dims(c, 2), std::invalid_argument);
  EXPECT_THROW(expand_dims(c, {0, 0}), std::invalid_argument);
  EXPECT_EQ(expand_dims(zeros({0}), 1).shape(), Shape({0, 1}));
}

TEST(ShapeViews, TransposeFamilySharesBuffer) {
  array a = iota({2, 3, 4});
  eval(a);
  array t = transpose(a);
  eval(t);
  EXPECT_EQ(t.shape(), Shape({4, 3, 2}));
  EXPECT_EQ(t.data<void>(), a.data<void>());
  EXPECT_EQ(t.strides(), Strides({1, 4, 12}));
  Host h = host(a);
  expect_equal(t, remap(h, {4, 3, 2}, [](const Index& i) { return Index{i[2], i[1], i[0]}; }));

  array p = permute_dims(a, {1, 2, 0});
  expect_equal(p, remap(h, {3, 4, 2}, [](const Index& i) { return Index{i[2], i[0], i[1]}; }));
  array s = swapaxes(a, 0, -1);
  expect_equal(s, remap(h, {4, 3, 2}, [](const Index& i) { return Index{i[2], i[1], i[0]}; }));
  array m = moveaxis(a, 0, 2);
  expect_equal(m, remap(h, {3, 4, 2}, [](const Index& i) { return Index{i[2], i[0], i[1]}; }));
  array m2 = moveaxis(a, -1, 0);
  expect_equal(m2, remap(h, {4, 2, 3}, [](const Index& i) { return Index{i[1], i[2], i[0]}; }));
  eval(s, m);
  EXPECT_TRUE(same_buffer(s, a));
  EXPECT_TRUE(same_buffer(m, a));

  EXPECT_THROW(transpose(a, {0, 1}), std::invalid_argument);
  EXPECT_THROW(transpose(a, {0, 1, 1}), std::invalid_argument);
  EXPECT_THROW(transpose(a, {0, 1, 3}), std::invalid_argument);
  EXPECT_THROW(swapaxes(a, 0, 3), std::invalid_argument);
  EXPECT_THROW(moveaxis(a, -4, 0), std::invalid_argument);
  EXPECT_EQ(transpose(zeros({0, 2})).shape(), Shape({2, 0}));
  expect_values(transpose(zeros({0, 2})), {2, 0}, {});
}

TEST(ShapeViews, SliceMatchesPythonClamping) {
  const int n = 7;
  array a = iota({n});
  eval(a);
  for (int step : {-3, -2, -1, 1, 2, 3}) {
    for (int start = -10; start <= 10; ++start) {
      for (int stop = -10; stop <= 10; ++stop) {
        // CPython's slice adjustment, then the plain loop.
        auto adjust = [&](int v) {
          if (v < 0) {
            v += n;
            if (v < 0)
              v = step < 0 ? -1 : 0;
          } else if (v >= n) {
            v = step < 0 ? n - 1 : n;
          }
          return v;
        };
        std::vector<double> expected;
        for (int i = adjust(start); step > 0 ? i < adjust(stop) : i > adjust(stop); i += step) {
          expected.push_back(i);
        }
        array s = slice(a, {start}, {stop}, {step});
        SCOPED_TRACE(msg("start ", start, " stop ", stop, " step ", step));
        expect_values(s, {static_cast<int>(expected.size())}, expected);
      }
    }
  }
}

TEST(ShapeViews, SliceViewsShareBuffer) {
  array a = iota({4, 5});
  eval(a);
  array s = slice(a, {1, 4}, {4, 0}, {2, -2});  // rows 1,3; columns 4,2
  eval(s);
  EXPECT_TRUE(same_buffer(s, a));
  EXPECT_EQ(byte_distance(a, s), static_cast<int64_t>((1 * 5 + 4) * sizeof(float)));
  EXPECT_EQ(s.strides(), Strides({10, -2}));
  expect_values(s, {2, 2}, {9, 7, 19, 17});
  // Slices of slices compose.
  array t = slice(s, {1, 1}, {2, 2});
  expect_values(t, {1, 1}, {17});
  // The default strides overload and a full slice (which is the input itself).
  expect_values(slice(a, {2, 3}, {3, 5}), {1, 2}, {13, 14});
  EXPECT_EQ(slice(a, {0, 0}, {4, 5}).id(), a.id());
  EXPECT_EQ(slice(a, {-100, 0}, {100, 100}).id(), a.id());
  // Slicing transposed and broadcast inputs.
  expect_values(slice(transpose(a), {0, 1}, {2, 4}, {1, 2}), {2, 2}, {5, 15, 6, 16});
  expect_values(slice(broadcast_to(iota({3}), {4, 3}), {1, -1}, {3, -4}, {1, -1}), {2, 3},
                {2, 1, 0, 2, 1, 0});
  // Empty results.
  expect_values(slice(a, {3, 0}, {1, 5}), {0, 5}, {});
  expect_values(slice(zeros({0, 3}), {0, 0}, {0, 3}), {0, 3}, {});
  // A 0-d array has nothing to slice.
  EXPECT_EQ(slice(array(2.0f), {}, {}).shape(), Shape({}));

  EXPECT_THROW(slice(a, {0}, {1}), std::invalid_argument);
  EXPECT_THROW(slice(a, {0, 0}, {1, 1}, {1}), std::invalid_argument);
  EXPECT_THROW(slice(a, {0, 0}, {1, 1}, {1, 0}), std::invalid_argument);
}

TEST(ShapeViews, SliceEveryDtypeAndLayout) {
  for (Dtype dt : kAllDtypes) {
    for (auto& [name, a] : layouts({4, 5}, dt)) {
      SCOPED_TRACE(msg(dtype_name(dt), " ", name));
      Host h = host(a);
      array s = slice(a, {3, 1}, {0, 5}, {-1, 3});
      expect_equal(s, remap(h, {3, 2}, [](const Index& i) {
                     return Index{3 - i[0], 1 + 3 * i[1]};
                   }));
    }
  }
}

TEST(ShapeViews, BroadcastTo) {
  array a = iota({3, 1});
  eval(a);
  array b = broadcast_to(a, {2, 3, 4});
  eval(b);
  EXPECT_TRUE(same_buffer(a, b));
  EXPECT_EQ(b.strides(), Strides({0, 1, 0}));
  Host h = host(a);
  expect_equal(b, remap(h, {2, 3, 4}, [](const Index& i) { return Index{i[1], 0}; }));
  EXPECT_EQ(broadcast_to(a, {3, 1}).id(), a.id());
  expect_values(broadcast_to(array(5.0f), {2}), {2}, {5, 5});
  expect_values(broadcast_to(iota({1}), {0}), {0}, {});
  expect_values(broadcast_to(zeros({0, 1}), {2, 0, 3}), {2, 0, 3}, {});

  EXPECT_THROW(broadcast_to(a, {3, 2, 1}), std::invalid_argument);  // 3 against 2
  EXPECT_THROW(broadcast_to(a, {4}), std::invalid_argument);        // fewer dimensions
  EXPECT_THROW(broadcast_to(a, {2, 4}), std::invalid_argument);
  EXPECT_THROW(broadcast_to(a, {3, -1}), std::invalid_argument);
  EXPECT_THROW(broadcast_to(iota({2}), {0}), std::invalid_argument);

  auto outs = broadcast_arrays({iota({3, 1}), iota({4}), array(1.0f)});
  ASSERT_EQ(outs.size(), 3u);
  for (auto& o : outs) {
    EXPECT_EQ(o.shape(), Shape({3, 4}));
  }
  EXPECT_EQ(to_vector(outs[1]), std::vector<double>({0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_THROW(broadcast_arrays({iota({3}), iota({4})}), std::invalid_argument);
}

TEST(ShapeViews, AsStrided) {
  array a = iota({6});
  // Sliding windows of length 3.
  array w = as_strided(a, {4, 3}, {1, 1}, 0);
  expect_values(w, {4, 3}, {0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 5});
  expect_values(as_strided(a, {2}, {-2}, 5), {2}, {5, 3});
  // A transposed input is made contiguous first.
  array t = transpose(iota({2, 3}));
  expect_values(as_strided(t, {6}, {1}, 0), {6}, {0, 3, 1, 4, 2, 5});
  EXPECT_THROW(as_strided(a, {2, 2}, {1}, 0), std::invalid_argument);
}

TEST(ShapeViews, AsTypeAndCopy) {
  array a = transpose(iota({2, 3}));
  array c = copy(a);
  eval(c);
  EXPECT_TRUE(c.flags().row_contiguous);
  expect_values(c, {3, 2}, {0, 3, 1, 4, 2, 5});
  array i = astype(slice(iota({6}), {-1}, {-7}, {-2}), int16);
  EXPECT_EQ(i.dtype(), int16);
  expect_values(i, {3}, {5, 3, 1});
}

// Copies of transposed layouts go through cache tiles, copies of short rows through 2-D blocks;
// check both against index arithmetic on the contiguous source.
TEST(ShapeCopy, TransposedAndShortRowLayouts) {
  for (Dtype dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    array base = make_input({5, 37, 45}, dt, 21);
    Host hb = host(base);
    for (std::vector<int> perm : {std::vector<int>{0, 2, 1}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}}) {
      SCOPED_TRACE(msg("perm ", perm));
      Shape shape{hb.shape[perm[0]], hb.shape[perm[1]], hb.shape[perm[2]]};
      auto from_base = [&](const Index& i) {
        Index j(3);
        for (int d = 0; d < 3; ++d) {
          j[perm[d]] = i[d];
        }
        return j;
      };
      Host ref = remap(hb, shape, from_base);
      expect_equal(copy(transpose(base, perm)), ref);
      ref.shape = {static_cast<int>(ref.re.size())};
      expect_equal(reshape(transpose(base, perm), {-1}), ref);
    }
    // Reversed and stepped transposes.
    array rev = slice(transpose(base, {0, 2, 1}), {0, -1, 1}, {5, -46, 37}, {1, -1, 2});
    expect_equal(copy(rev), remap(hb, {5, 45, 18}, [](const Index& i) {
                   return Index{i[0], 1 + 2 * i[2], 44 - i[1]};
                 }));
    // Short rows: every element repeated 3 times along a new last axis.
    array rep = repeat(base, 3, 2);
    expect_equal(rep, remap(hb, {5, 37, 135}, [](const Index& i) {
                   return Index{i[0], i[1], i[2] / 3};
                 }));
    // Narrow pieces joined along the last axis.
    array narrow =
        concatenate({slice(base, {0, 0, 0}, {5, 37, 2}), slice(base, {0, 0, 7}, {5, 37, 8})}, 2);
    expect_equal(narrow, remap(hb, {5, 37, 3}, [](const Index& i) {
                   return Index{i[0], i[1], i[2] < 2 ? i[2] : 7};
                 }));
  }
  // Large enough to run on several threads.
  array big = iota({1100, 1000}, uint16);
  array t = copy(transpose(big));
  auto v = to_vector(t);
  ASSERT_EQ(t.shape(), Shape({1000, 1100}));
  bool ok = true;
  for (int i = 0; i < 1000; ++i) {
    for (int j = 0; j < 1100; ++j) {
      ok &= v[i * 1100 + j] == static_cast<double>(static_cast<uint16_t>(j * 1000 + i));
    }
  }
  EXPECT_TRUE(ok);
}

// ---------------------------------------------------------------------------------------------
// concatenate / stack / split

namespace {

Host concat_ref(const std::vector<Host>& parts, int axis) {
  Shape shape = parts[0].shape;
  shape[axis] = 0;
  std::vector<int> begin;
  for (auto& p : parts) {
    begin.push_back(shape[axis]);
    shape[axis] += p.shape[axis];
  }
  Host out{shape, {}, {}};
  for (size_t i = 0; i < shape_size(shape); ++i) {
    Index idx = unravel(static_cast<int64_t>(i), shape);
    size_t k = std::upper_bound(begin.begin(), begin.end(), idx[axis]) - begin.begin() - 1;
    idx[axis] -= begin[k];
    int64_t j = ravel(idx, parts[k].shape);
    out.re.push_back(parts[k].re[j]);
    out.im.push_back(parts[k].im[j]);
  }
  return out;
}

}  // namespace

TEST(ShapeConcatenate, EveryDtypeAndLayout) {
  for (Dtype dt : kAllDtypes) {
    for (int axis : {0, 1, -1}) {
      int ax = axis < 0 ? axis + 2 : axis;
      Shape sa{3, 4}, sb{3, 4}, sc{3, 4};
      sa[ax] = 2;
      sb[ax] = 0;
      sc[ax] = 5;
      auto la = layouts(sa, dt, 1);
      auto lb = layouts(sb, dt, 2);
      auto lc = layouts(sc, dt, 3);
      for (size_t l = 0; l < la.size(); ++l) {
        SCOPED_TRACE(msg(dtype_name(dt), " axis ", axis, " ", la[l].name));
        // Mix layouts between the inputs too.
        const array& a = la[l].a;
        const array& b = lb[(l + 1) % lb.size()].a;
        const array& c = lc[(l + 2) % lc.size()].a;
        array out = concatenate({a, b, c}, axis);
        EXPECT_EQ(out.dtype(), dt);
        expect_equal(out, concat_ref({host(a), host(b), host(c)}, ax));
      }
    }
  }
}

TEST(ShapeConcatenate, PromotesDtypes) {
  array a = array({1, 2}, int32);
  array b = array({2.5f});
  array c = array({true, false});
  array out = concatenate({a, b, c});
  EXPECT_EQ(out.dtype(), float32);
  expect_values(out, {5}, {1, 2, 2.5, 1, 0});
  array u = concatenate({array({200}, uint8), array({-1}, int8)});
  EXPECT_EQ(u.dtype(), int16);
  expect_values(u, {2}, {200, -1});
  array h = concat({array({1.5f}, float16), array({3}, int64)}, 0);
  EXPECT_EQ(h.dtype(), float16);
  expect_values(h, {2}, {1.5, 3});
  array cz = concatenate({array({1.0f}), reshape(array(std::complex<float>(2, 3)), {1})});
  EXPECT_EQ(cz.dtype(), complex64);
  EXPECT_EQ(to_vector(imag(cz)), std::vector<double>({0, 3}));
}

TEST(ShapeConcatenate, OverloadsAndEdgeCases) {
  array a = iota({2, 2});
  array b = iota({1, 2});
  // Without an axis, everything is flattened.
  expect_values(concatenate({a, b}), {6}, {0, 1, 2, 3, 0, 1});
  expect_values(concat({array(4.0f), a}), {5}, {4, 0, 1, 2, 3});
  expect_values(concat({a, b}, -2), {3, 2}, {0, 1, 2, 3, 0, 1});
  // One input is returned as is.
  EXPECT_EQ(concatenate({a}, 1).id(), a.id());
  // All empty.
  expect_values(concatenate({zeros({0, 3}), zeros({0, 3})}), {0}, {});
  expect_values(concatenate({zeros({0, 3}), zeros({0, 3})}, 0), {0, 3}, {});
  expect_values(concatenate({zeros({2, 0}), zeros({2, 0})}, 0), {4, 0}, {});
  // Many small pieces (handed out to threads in groups).
  std::vector<array> pieces;
  std::vector<double> expected;
  for (int i = 0; i < 3000; ++i) {
    pieces.push_back(full({1, 7}, static_cast<float>(i)));
    expected.insert(expected.end(), 7, i);
  }
  expect_values(concatenate(pieces, 0), {3000, 7}, expected);
}

// Reshapes that merge the same trailing dimensions of transposed sources (the gradients of a
// fused projection split into heads) are concatenated as their stacked sources, merged after:
// one copy per piece instead of two, the same values.
TEST(ShapeConcatenate, ReshapedPiecesStackTheirSources) {
  std::vector<array> pieces;
  std::vector<array> copies;
  for (int i = 0; i < 3; ++i) {
    array heads = transpose(iota({2, 3, 4, 5}) + 100.0f * i, {0, 2, 1, 3});  // (2, 4, 3, 5)
    pieces.push_back(reshape(heads, {2, 4, 15}));
    copies.push_back(reshape(contiguous(heads), {2, 4, 15}));
    eval(copies.back());
  }
  array out = concatenate(pieces, -1);
  ASSERT_TRUE(out.has_primitive());
  EXPECT_EQ(std::string(out.primitive().name()), "Reshape");
  EXPECT_EQ(std::string(out.inputs()[0].primitive().name()), "Concatenate");
  expect_equal(out, host(concatenate(copies, -1)));
  // Other axes, or pieces merging different dimensions, concatenate as they are.
  array other =
      concatenate({reshape(iota({2, 3, 4}), {6, 4}), reshape(iota({3, 2, 4}), {6, 4})}, 0);
  EXPECT_EQ(std::string(other.primitive().name()), "Concatenate");
  array mixed =
      concatenate({reshape(iota({2, 3, 4}), {2, 12}), reshape(iota({2, 4, 3}), {2, 12})}, 1);
  EXPECT_EQ(std::string(mixed.primitive().name()), "Concatenate");
  expect_equal(mixed, host(concatenate({contiguous(reshape(iota({2, 3, 4}), {2, 12})),
                                        contiguous(reshape(iota({2, 4, 3}), {2, 12}))},
                                       1)));
}

TEST(ShapeConcatenate, Errors) {
  array a = iota({2, 3});
  EXPECT_THROW(concatenate(std::vector<array>{}, 0), std::invalid_argument);
  EXPECT_THROW(concatenate(std::vector<array>{}), std::invalid_argument);
  EXPECT_THROW(concatenate({a, iota({3})}, 0), std::invalid_argument);
  EXPECT_THROW(concatenate({a, iota({3, 4})}, 0), std::invalid_argument);
  EXPECT_THROW(concatenate({a, a}, 2), std::invalid_argument);
  EXPECT_THROW(concatenate({a, a}, -3), std::invalid_argument);
  EXPECT_THROW(concatenate({array(1.0f), array(2.0f)}, 0), std::invalid_argument);
  try {
    concatenate({a, iota({4})}, 0);
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[concatenate]", 0), 0u) << m;
    EXPECT_NE(m.find("(2,3)"), std::string::npos) << m;
    EXPECT_NE(m.find("(4)"), std::string::npos) << m;
  }
  try {
    concatenate({a, iota({3, 3})}, 1);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("(3,3)"), std::string::npos) << e.what();
  }
}

TEST(ShapeConcatenate, LargeMultithreaded) {
  const int n = 1 << 20;
  array a = iota({n});
  array b = negative(iota({n}));
  array out = concatenate({a, b});
  eval(out);
  auto v = to_vector(out);
  ASSERT_EQ(v.size(), 2u * n);
  bool ok = true;
  for (int i = 0; i < n; ++i) {
    ok &= v[i] == i && v[n + i] == -i;
  }
  EXPECT_TRUE(ok);

  // Along the last axis of a transposed input: strided rows on both sides.
  array x = transpose(iota({512, 1024}));  // (1024, 512)
  array y = iota({1024, 3}, int32);
  array z = concatenate({x, y}, 1);
  EXPECT_EQ(z.dtype(), float32);
  auto zv = to_vector(z);
  ASSERT_EQ(z.shape(), Shape({1024, 515}));
  ok = true;
  for (int i = 0; i < 1024; ++i) {
    for (int j = 0; j < 515; ++j) {
      double e = j < 512 ? j * 1024.0 + i : i * 3.0 + (j - 512);
      ok &= zv[i * 515 + j] == e;
    }
  }
  EXPECT_TRUE(ok);
}

TEST(ShapeStack, StackAndUnstack) {
  for (Dtype dt : {bool_, int8, float16, complex64}) {
    for (auto& [name, a] : layouts({2, 3}, dt, 4)) {
      SCOPED_TRACE(msg(dtype_name(dt), " ", name));
      array b = make_input({2, 3}, dt, 5);
      Host ha = host(a), hb = host(b);
      for (int axis : {0, 1, 2, -1, -3}) {
        int ax = axis < 0 ? axis + 3 : axis;
        array s = stack({a, b}, axis);
        Shape shape{2, 3};
        shape.insert(shape.begin() + ax, 2);
        Host ref{shape, {}, {}};
        for (size_t i = 0; i < shape_size(shape); ++i) {
          Index idx = unravel(static_cast<int64_t>(i), shape);
          const Host& src = idx[ax] == 0 ? ha : hb;
          idx.erase(idx.begin() + ax);
          int64_t j = ravel(idx, {2, 3});
          ref.re.push_back(src.re[j]);
          ref.im.push_back(src.im[j]);
        }
        expect_equal(s, ref);
        auto parts = unstack(s, axis);
        ASSERT_EQ(parts.size(), 2u);
        expect_equal(parts[0], ha);
        expect_equal(parts[1], hb);
      }
    }
  }
  expect_values(stack({array(1.0f), array(2.0f)}), {2}, {1, 2});
  expect_values(stack({iota({2})}), {1, 2}, {0, 1});
  EXPECT_EQ(stack({zeros({0, 2}), zeros({0, 2})}, 1).shape(), Shape({0, 2, 2}));

  // unstack gives views.
  array a = iota({3, 2});
  eval(a);
  auto rows = unstack(a);
  ASSERT_EQ(rows.size(), 3u);
  eval(rows);
  EXPECT_TRUE(same_buffer(rows[2], a));
  expect_values(rows[2], {2}, {4, 5});
  auto cols = unstack(a, -1);
  ASSERT_EQ(cols.size(), 2u);
  expect_values(cols[1], {3}, {1, 3, 5});
  EXPECT_TRUE(unstack(zeros({0, 4})).empty());
  EXPECT_EQ(unstack(zeros({2, 0}))[1].shape(), Shape({0}));

  EXPECT_THROW(stack(std::vector<array>{}), std::invalid_argument);
  EXPECT_THROW(stack({iota({2}), iota({3})}), std::invalid_argument);
  EXPECT_THROW(stack({iota({2}), iota({2})}, 2), std::invalid_argument);
  EXPECT_THROW(stack({iota({2}), iota({2})}, -3), std::invalid_argument);
  EXPECT_THROW(unstack(array(1.0f)), std::invalid_argument);
  EXPECT_THROW(unstack(a, 2), std::invalid_argument);
}

TEST(ShapeSplit, EqualPartsAndIndices) {
  array a = iota({6, 4});
  eval(a);
  auto parts = split(a, 3);
  ASSERT_EQ(parts.size(), 3u);
  eval(parts);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(same_buffer(parts[i], a));
    EXPECT_EQ(byte_distance(a, parts[i]), static_cast<int64_t>(i * 8 * sizeof(float)));
    EXPECT_EQ(parts[i].shape(), Shape({2, 4}));
  }
  expect_values(parts[1], {2, 4}, {8, 9, 10, 11, 12, 13, 14, 15});
  auto cols = split(a, 2, -1);
  ASSERT_EQ(cols.size(), 2u);
  expect_values(cols[1], {6, 2}, {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23});
  EXPECT_EQ(split(a, 1).size(), 1u);

  // Indices follow Python slicing: negative ones count from the end, large ones clamp.
  auto byidx = split(a, Shape{1, -2, 10}, 0);
  ASSERT_EQ(byidx.size(), 4u);
  EXPECT_EQ(byidx[0].shape(), Shape({1, 4}));
  EXPECT_EQ(byidx[1].shape(), Shape({3, 4}));
  EXPECT_EQ(byidx[2].shape(), Shape({2, 4}));
  EXPECT_EQ(byidx[3].shape(), Shape({0, 4}));
  expect_values(byidx[2], {2, 4}, {16, 17, 18, 19, 20, 21, 22, 23});
  auto dec = split(iota({5}), Shape{3, 1});
  ASSERT_EQ(dec.size(), 3u);
  EXPECT_EQ(dec[1].shape(), Shape({0}));
  expect_values(dec[2], {4}, {1, 2, 3, 4});
  auto none = split(a, Shape{}, 1);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].shape(), a.shape());
  // Splitting non-contiguous inputs and 0-size axes.
  auto t = split(transpose(a), Shape{2}, 1);
  expect_values(t[0], {4, 2}, {0, 4, 1, 5, 2, 6, 3, 7});
  auto z = split(zeros({0, 2}), 2, 0);
  ASSERT_EQ(z.size(), 2u);
  EXPECT_EQ(z[0].shape(), Shape({0, 2}));

  EXPECT_THROW(split(a, 4), std::invalid_argument);
  EXPECT_THROW(split(a, 0), std::invalid_argument);
  EXPECT_THROW(split(a, -2), std::invalid_argument);
  EXPECT_THROW(split(a, 2, 2), std::invalid_argument);
  EXPECT_THROW(split(a, Shape{1}, -3), std::invalid_argument);
  EXPECT_THROW(split(array(1.0f), 1), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// tile / repeat

TEST(ShapeTile, EveryDtypeAndLayout) {
  struct Case {
    Shape shape;
    std::vector<int> reps;
  };
  std::vector<Case> cases = {{{2, 3}, {2, 3}},       {{2, 3}, {2}},    {{3}, {2, 1, 2}},
                             {{2, 3}, {1, 1}},       {{2, 3}, {0, 2}}, {{0, 2}, {3, 2}},
                             {{2, 1, 2}, {1, 3, 1}}, {{}, {3}}};
  for (Dtype dt : kAllDtypes) {
    for (auto& c : cases) {
      for (auto& [name, a] : layouts(c.shape, dt, 7)) {
        SCOPED_TRACE(msg(dtype_name(dt), " shape ", c.shape, " reps ", c.reps, " ", name));
        size_t nd = std::max(c.shape.size(), c.reps.size());
        Shape in = c.shape;
        in.insert(in.begin(), nd - in.size(), 1);
        std::vector<int> reps = c.reps;
        reps.insert(reps.begin(), nd - reps.size(), 1);
        Shape out_shape(nd);
        for (size_t i = 0; i < nd; ++i) {
          out_shape[i] = in[i] * reps[i];
        }
        Host h = host(a);
        h.shape = in;
        array t = tile(a, c.reps);
        EXPECT_EQ(t.dtype(), dt);
        expect_equal(t, remap(h, out_shape, [&](const Index& i) {
                       Index j(nd);
                       for (size_t d = 0; d < nd; ++d) {
                         j[d] = i[d] % in[d];
                       }
                       return j;
                     }));
      }
    }
  }
  EXPECT_THROW(tile(iota({2}), {-1}), std::invalid_argument);
  EXPECT_THROW(tile(iota({2}), {2, -3}), std::invalid_argument);
}

TEST(ShapeTile, Large) {
  array t = tile(iota({1000}), {2, 600});  // 1.2M elements
  ASSERT_EQ(t.shape(), Shape({2, 600000}));
  auto v = to_vector(t);
  bool ok = true;
  for (size_t i = 0; i < v.size(); ++i) {
    ok &= v[i] == static_cast<double>(i % 1000);
  }
  EXPECT_TRUE(ok);
}

TEST(ShapeRepeat, EveryDtypeAndLayout) {
  for (Dtype dt : kAllDtypes) {
    for (auto& [name, a] : layouts({2, 3}, dt, 8)) {
      Host h = host(a);
      for (int repeats : {0, 1, 3}) {
        for (int axis : {0, 1, -1, -2}) {
          SCOPED_TRACE(msg(dtype_name(dt), " ", name, " repeats ", repeats, " axis ", axis));
          int ax = axis < 0 ? axis + 2 : axis;
          Shape out_shape{2, 3};
          out_shape[ax] *= repeats;
          array r = repeat(a, repeats, axis);
          EXPECT_EQ(r.dtype(), dt);
          expect_equal(r, remap(h, out_shape, [&](const Index& i) {
                         Index j = i;
                         j[ax] /= repeats;
                         return j;
                       }));
        }
        // Without an axis the input is flattened.
        SCOPED_TRACE(msg(dtype_name(dt), " ", name, " repeats ", repeats, " flat"));
        Host flat = h;
        flat.shape = {6};
        expect_equal(repeat(a, repeats), remap(flat, {6 * repeats}, [&](const Index& i) {
                       return Index{i[0] / repeats};
                     }));
      }
    }
  }
  expect_values(repeat(array(2.0f), 3), {3}, {2, 2, 2});
  expect_values(repeat(zeros({0, 2}), 2, 1), {0, 4}, {});
  EXPECT_THROW(repeat(iota({2}), -1, 0), std::invalid_argument);
  EXPECT_THROW(repeat(iota({2}), -1), std::invalid_argument);
  EXPECT_THROW(repeat(iota({2}), 2, 1), std::invalid_argument);
  EXPECT_THROW(repeat(array(1.0f), 2, 0), std::invalid_argument);

  array big = repeat(iota({300000}), 4);
  auto v = to_vector(big);
  ASSERT_EQ(v.size(), 1200000u);
  bool ok = true;
  for (size_t i = 0; i < v.size(); ++i) {
    ok &= v[i] == static_cast<double>(i / 4);
  }
  EXPECT_TRUE(ok);
}

// ---------------------------------------------------------------------------------------------
// pad

namespace {

Host pad_ref(const Host& h, const Shape& low, const Shape& high, bool edge, double value) {
  size_t nd = h.shape.size();
  Shape out(nd);
  for (size_t d = 0; d < nd; ++d) {
    out[d] = h.shape[d] + low[d] + high[d];
  }
  return remap(
      h, out,
      [&](const Index& i) {
        Index j(nd);
        for (size_t d = 0; d < nd; ++d) {
          j[d] = i[d] - low[d];
          if (j[d] < 0 || j[d] >= h.shape[d]) {
            if (!edge) {
              return Index{};
            }
            j[d] = std::clamp(j[d], 0, h.shape[d] - 1);
          }
        }
        return j;
      },
      value);
}

}  // namespace

TEST(ShapePad, ConstantEveryDtypeAndLayout) {
  for (Dtype dt : kAllDtypes) {
    for (auto& [name, a] : layouts({3, 4}, dt, 9)) {
      SCOPED_TRACE(msg(dtype_name(dt), " ", name));
      Host h = host(a);
      double value = dt == bool_ ? 1 : 7;
      array out = pad(a, {{1, 2}, {0, 3}}, array(7.0f));
      EXPECT_EQ(out.dtype(), dt);
      expect_equal(out, pad_ref(h, {1, 0}, {2, 3}, false, value));
      expect_equal(pad(a, 1), pad_ref(h, {1, 1}, {1, 1}, false, 0));
      expect_equal(pad(a, std::pair{2, 0}, array(7)), pad_ref(h, {2, 2}, {0, 0}, false, value));
      // Only some axes, given by (negative) index.
      expect_equal(pad(a, {-1}, {2}, {1}, array(7)), pad_ref(h, {0, 2}, {0, 1}, false, value));
    }
  }
  // The pad value is converted to the array's dtype.
  expect_values(pad(array({1, 2}, int32), 1, array(2.7f)), {4}, {2, 1, 2, 2});
  // Complex pad values.
  array c =
      pad(reshape(array(std::complex<float>(1, 1)), {1}), 1, array(std::complex<float>(0, 5)));
  EXPECT_EQ(to_vector(imag(c)), std::vector<double>({5, 1, 5}));
  // 0-size inputs pad to the constant; 0-d inputs have nothing to pad.
  expect_values(pad(zeros({0, 2}), {{1, 1}, {0, 0}}, array(3)), {2, 2}, {3, 3, 3, 3});
  expect_values(pad(zeros({2, 0}), 1), {4, 2}, std::vector<double>(8, 0));
  array s = array(4.0f);
  EXPECT_EQ(pad(s, 2).id(), s.id());
  array a = iota({2});
  EXPECT_EQ(pad(a, 0).id(), a.id());
}

TEST(ShapePad, EdgeEveryDtypeAndLayout) {
  for (Dtype dt : kAllDtypes) {
    for (auto& [name, a] : layouts({3, 4}, dt, 10)) {
      SCOPED_TRACE(msg(dtype_name(dt), " ", name));
      Host h = host(a);
      expect_equal(pad(a, {{2, 1}, {3, 0}}, array(0), "edge"), pad_ref(h, {2, 3}, {1, 0}, true, 0));
      expect_equal(pad(a, 2, array(0), "edge"), pad_ref(h, {2, 2}, {2, 2}, true, 0));
      expect_equal(pad(a, {1}, {0}, {2}, array(0), "edge"), pad_ref(h, {0, 0}, {0, 2}, true, 0));
    }
  }
  expect_values(pad(iota({3}), std::pair{2, 1}, array(0), "edge"), {6}, {0, 0, 0, 1, 2, 2});
  // Padding an empty axis with edge values is impossible, unless that axis is not padded.
  EXPECT_THROW(pad(zeros({0, 2}), 1, array(0), "edge"), std::invalid_argument);
  expect_values(pad(zeros({0, 2}), {{0, 0}, {1, 1}}, array(0), "edge"), {0, 4}, {});
}

TEST(ShapePad, LargeAndErrors) {
  array big = pad(ones({1000, 1000}), {{1, 1}, {2, 0}}, array(-1.0f));
  auto v = to_vector(big);
  ASSERT_EQ(big.shape(), Shape({1002, 1002}));
  bool ok = true;
  for (int i = 0; i < 1002; ++i) {
    for (int j = 0; j < 1002; ++j) {
      bool inside = i >= 1 && i <= 1000 && j >= 2;
      ok &= v[i * 1002 + j] == (inside ? 1.0 : -1.0);
    }
  }
  EXPECT_TRUE(ok);

  array a = iota({2, 3});
  EXPECT_THROW(pad(a, -1), std::invalid_argument);
  EXPECT_THROW(pad(a, {{0, 0}, {0, -2}}), std::invalid_argument);
  EXPECT_THROW(pad(a, std::vector<std::pair<int, int>>{{1, 1}}), std::invalid_argument);
  EXPECT_THROW(pad(a, {{1, 1}, {1, 1}, {1, 1}}), std::invalid_argument);
  EXPECT_THROW(pad(a, std::vector<int>{0, 1}, Shape{1}, Shape{1, 1}), std::invalid_argument);
  EXPECT_THROW(pad(a, std::vector<int>{2}, Shape{1}, Shape{1}), std::invalid_argument);
  EXPECT_THROW(pad(a, std::vector<int>{0, 0}, Shape{1, 1}, Shape{1, 1}), std::invalid_argument);
  EXPECT_THROW(pad(a, 1, array({1.0f, 2.0f})), std::invalid_argument);
  EXPECT_THROW(pad(a, 1, array(0), "reflect"), std::invalid_argument);
  try {
    pad(a, {{0, 0}, {-3, 0}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[pad]", 0), 0u) << m;
    EXPECT_NE(m.find("-3"), std::string::npos) << m;
  }
}

// ---------------------------------------------------------------------------------------------
// roll

TEST(ShapeRoll, EveryDtypeAndLayout) {
  for (Dtype dt : kAllDtypes) {
    for (auto& [name, a] : layouts({3, 4}, dt, 11)) {
      SCOPED_TRACE(msg(dtype_name(dt), " ", name));
      Host h = host(a);
      auto rolled = [&](int s0, int s1) {
        return remap(h, {3, 4}, [&](const Index& i) {
          return Index{(((i[0] - s0) % 3) + 3) % 3, (((i[1] - s1) % 4) + 4) % 4};
        });
      };
      expect_equal(roll(a, 1, 0), rolled(1, 0));
      expect_equal(roll(a, -5, 1), rolled(0, -5));
      expect_equal(roll(a, 2, std::vector<int>{0, 1}), rolled(2, 2));
      expect_equal(roll(a, Shape{1, -3}, std::vector<int>{1, 0}), rolled(-3, 1));
      expect_equal(roll(a, Shape{1, 2}, -1), rolled(0, 3));  // shifts of one axis add up
      expect_equal(roll(a, Shape{1, 2}, std::vector<int>{0, -2}), rolled(3, 0));
      // Without axes the array rolls as if flattened.
      Host flat_rolled = remap(h, {3, 4}, [&](const Index& i) {
        int f = ((i[0] * 4 + i[1] - 5) % 12 + 12) % 12;
        return Index{f / 4, f % 4};
      });
      expect_equal(roll(a, 5), flat_rolled);
      expect_equal(roll(a, Shape{7, -2}), flat_rolled);
      expect_equal(roll(a, 29), flat_rolled);
    }
  }
  array a = iota({4});
  EXPECT_EQ(roll(a, 4, 0).id(), a.id());
  expect_values(roll(array(3.0f), 2), {}, {3});
  expect_values(roll(zeros({0, 3}), 1), {0, 3}, {});
  expect_values(roll(zeros({0, 3}), 1, 1), {0, 3}, {});
  EXPECT_THROW(roll(a, 1, 1), std::invalid_argument);
  EXPECT_THROW(roll(a, Shape{1, 2}, std::vector<int>{0}), std::invalid_argument);
  EXPECT_THROW(roll(array(1.0f), 1, 0), std::invalid_argument);

  array big = roll(iota({1 << 20}), 12345);
  auto v = to_vector(big);
  bool ok = true;
  for (int i = 0; i < (1 << 20); ++i) {
    ok &= v[i] == static_cast<double>((i - 12345 + (1 << 20)) % (1 << 20));
  }
  EXPECT_TRUE(ok);
}

// ---------------------------------------------------------------------------------------------
// tril / triu / diagonal / diag

TEST(ShapeTriangle, TrilTriu) {
  for (Dtype dt : kAllDtypes) {
    for (auto& [name, a] : layouts({2, 3, 4}, dt, 12)) {
      Host h = host(a);
      for (int k : {-3, -1, 0, 1, 2, 5}) {
        SCOPED_TRACE(msg(dtype_name(dt), " ", name, " k ", k));
        auto keep = [&](bool lower) {
          Host r = h;
          for (size_t f = 0; f < r.re.size(); ++f) {
            Index i = unravel(static_cast<int64_t>(f), h.shape);
            bool in_lower = i[2] <= i[1] + k;
            bool in_upper = i[2] >= i[1] + k;
            if (lower ? !in_lower : !in_upper) {
              r.re[f] = 0;
              r.im[f] = 0;
            }
          }
          return r;
        };
        array lo = tril(a, k);
        array up = triu(a, k);
        EXPECT_EQ(lo.dtype(), dt);
        EXPECT_EQ(up.dtype(), dt);
        expect_equal(lo, keep(true));
        expect_equal(up, keep(false));
      }
    }
  }
  expect_values(tril(iota({2, 2})), {2, 2}, {0, 0, 2, 3});
  expect_values(triu(iota({2, 2})), {2, 2}, {0, 1, 0, 3});
  expect_values(tril(zeros({0, 3})), {0, 3}, {});
  // Extreme offsets keep everything or nothing.
  expect_values(tril(iota({2, 2}), INT32_MAX), {2, 2}, {0, 1, 2, 3});
  expect_values(tril(iota({2, 2}), INT32_MIN), {2, 2}, {0, 0, 0, 0});
  expect_values(triu(iota({2, 2}), INT32_MIN), {2, 2}, {0, 1, 2, 3});
  expect_values(triu(iota({2, 2}), INT32_MAX), {2, 2}, {0, 0, 0, 0});
  EXPECT_THROW(tril(iota({3})), std::invalid_argument);
  EXPECT_THROW(triu(array(1.0f)), std::invalid_argument);
}

TEST(ShapeDiagonal, ViewsAndValues) {
  array a = iota({3, 4});
  eval(a);
  for (int k = -4; k <= 5; ++k) {
    SCOPED_TRACE(msg("k ", k));
    std::vector<double> expected;
    for (int i = 0; i < 3; ++i) {
      if (i + k >= 0 && i + k < 4) {
        expected.push_back(i * 4 + i + k);
      }
    }
    array d = diagonal(a, k);
    expect_values(d, {static_cast<int>(expected.size())}, expected);
    expect_values(diag(a, k), {static_cast<int>(expected.size())}, expected);
    if (!expected.empty()) {
      eval(d);
      EXPECT_TRUE(same_buffer(d, a));
      EXPECT_EQ(byte_distance(a, d), static_cast<int64_t>(expected[0] * sizeof(float)));
    }
  }
  // Swapped axes give the transpose's diagonal.
  expect_values(diagonal(a, 1, 1, 0), {2}, {4, 9});
  // Batched: the diagonal becomes the last axis.
  array b = iota({2, 3, 4});
  Host hb = host(b);
  expect_equal(diagonal(b, 0, 0, 2), remap(hb, {3, 2}, [](const Index& i) {
                 return Index{i[1], i[0], i[1]};
               }));
  expect_equal(diagonal(b, -1, -1, 1), remap(hb, {2, 3}, [](const Index& i) {
                 return Index{i[0], i[1], i[1] + 1};
               }));
  // Non-contiguous inputs stay views.
  for (Dtype dt : kAllDtypes) {
    for (auto& [name, x] : layouts({4, 3, 5}, dt, 13)) {
      SCOPED_TRACE(msg(dtype_name(dt), " ", name));
      Host h = host(x);
      array d = diagonal(x, 1, 2, 0);  // x[i + 1, :, i]
      expect_equal(d, remap(h, {3, 3}, [](const Index& i) { return Index{i[1] + 1, i[0], i[1]}; }));
    }
  }
  array t = transpose(a);
  eval(t);
  array dt = diagonal(t, -1);
  eval(dt);
  EXPECT_TRUE(same_buffer(dt, a));
  expect_values(dt, {3}, {1, 6, 11});
  EXPECT_EQ(diagonal(zeros({0, 3})).shape(), Shape({0}));

  EXPECT_THROW(diagonal(iota({3})), std::invalid_argument);
  EXPECT_THROW(diagonal(a, 0, 0, 0), std::invalid_argument);
  EXPECT_THROW(diagonal(a, 0, 1, -1), std::invalid_argument);
  EXPECT_THROW(diagonal(a, 0, 0, 2), std::invalid_argument);
}

TEST(ShapeDiagonal, DiagBuildsMatrices) {
  for (Dtype dt : kAllDtypes) {
    array v = make_input({3}, dt, 14);
    Host h = host(v);
    for (int k : {-2, 0, 1}) {
      SCOPED_TRACE(msg(dtype_name(dt), " k ", k));
      int n = 3 + std::abs(k);
      array m = diag(v, k);
      EXPECT_EQ(m.dtype(), dt);
      expect_equal(m, remap(h, {n, n}, [&](const Index& i) {
                     return i[1] - i[0] == k ? Index{std::min(i[0], i[1])} : Index{};
                   }));
    }
  }
  expect_values(diag(slice(iota({4}), {3}, {0}, {-2})), {2, 2}, {3, 0, 0, 1});
  expect_values(diag(zeros({0})), {0, 0}, {});
  expect_values(diag(zeros({0}), 2), {2, 2}, {0, 0, 0, 0});
  expect_values(diag(array({5.0f}), -1), {2, 2}, {0, 0, 5, 0});
  EXPECT_THROW(diag(array(1.0f)), std::invalid_argument);
  EXPECT_THROW(diag(iota({2, 2, 2})), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// slice_update

TEST(ShapeSliceUpdate, EveryDtypeAndLayout) {
  for (Dtype dt : kAllDtypes) {
    auto srcs = layouts({4, 5}, dt, 15);
    auto upds = layouts({2, 2}, dt, 16);
    for (size_t l = 0; l < srcs.size(); ++l) {
      const array& src = srcs[l].a;
      const array& upd = upds[(l + 2) % upds.size()].a;
      SCOPED_TRACE(
          msg(dtype_name(dt), " src ", srcs[l].name, " update ", upds[(l + 2) % upds.size()].name));
      Host hs = host(src), hu = host(upd);
      // Rows 3, 1 and columns 1, 4 (negative row step).
      array out = slice_update(src, upd, {3, 1}, {0, 5}, {-2, 3});
      EXPECT_EQ(out.dtype(), dt);
      Host ref = hs;
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          int64_t f = (3 - 2 * i) * 5 + (1 + 3 * j);
          ref.re[f] = hu.re[i * 2 + j];
          ref.im[f] = hu.im[i * 2 + j];
        }
      }
      expect_equal(out, ref);
      // The source is untouched.
      expect_equal(src, hs);
    }
  }
}

TEST(ShapeSliceUpdate, BroadcastConvertAndClamp) {
  array src = zeros({3, 4}, int32);
  // A scalar update, converted from float (truncated), broadcast over the slice.
  expect_values(slice_update(src, array(2.9f), {1, 0}, {2, 4}), {3, 4},
                {0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0});
  // A row broadcast over rows; bounds clamp like Python.
  expect_values(slice_update(src, array({1, 2}), {-100, 2}, {100, 100}), {3, 4},
                {0, 0, 1, 2, 0, 0, 1, 2, 0, 0, 1, 2});
  // Empty slices return the source.
  EXPECT_EQ(slice_update(src, array(1), {2, 0}, {1, 4}).id(), src.id());
  // 0-d source.
  expect_values(slice_update(array(1.0f), array(5.0f), {}, {}), {}, {5});
  // Whole-array update from a transposed input.
  expect_values(slice_update(zeros({2, 3}), transpose(iota({3, 2})), {0, 0}, {2, 3}), {2, 3},
                {0, 2, 4, 1, 3, 5});
  // Complex update into a float source keeps the real part.
  expect_values(slice_update(zeros({2}), reshape(array(std::complex<float>(3, 4)), {1}), {1}, {2}),
                {2}, {0, 3});

  EXPECT_THROW(slice_update(src, array({1, 2, 3}), {0, 0}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(slice_update(src, zeros({2, 1, 2}), {0, 0}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(slice_update(src, array(1), {0}, {1}), std::invalid_argument);
  EXPECT_THROW(slice_update(src, array(1), {0, 0}, {1, 1}, {1, 0}), std::invalid_argument);
  try {
    slice_update(src, zeros({3}), {0, 0}, {2, 2});
    FAIL();
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[slice_update]", 0), 0u) << m;
    EXPECT_NE(m.find("(2,2)"), std::string::npos) << m;
  }
}

TEST(ShapeSliceUpdate, DonatesOnlyWhenUnshared) {
  // Held by the caller: the output is a new buffer, the source keeps its values.
  array held = zeros({8});
  eval(held);
  array out = slice_update(held, array(1.0f), {2}, {4});
  eval(out);
  EXPECT_FALSE(same_buffer(out, held));
  expect_values(held, {8}, std::vector<double>(8, 0));
  expect_values(out, {8}, {0, 0, 1, 1, 0, 0, 0, 0});

  // Nobody else holds the source: it is written in place.
  array src = zeros({8});
  eval(src);
  const void* p = src.data<void>();
  array inplace = slice_update(src, array(2.0f), {1}, {8}, {3});
  src = array(0.0f);
  eval(inplace);
  EXPECT_EQ(inplace.data<void>(), p);
  expect_values(inplace, {8}, {0, 2, 0, 0, 2, 0, 0, 2});

  // A view shares its buffer with its parent: no donation, the parent is intact.
  array parent = zeros({2, 4});
  eval(parent);
  array view_src = slice(parent, {1, 0}, {2, 4});
  array upd = slice_update(view_src, array(3.0f), {0, 0}, {1, 2});
  view_src = array(0.0f);
  expect_values(upd, {1, 4}, {3, 3, 0, 0});
  expect_values(parent, {2, 4}, std::vector<double>(8, 0));

  // The update reads the source's own buffer: writing in place would corrupt it.
  array y = exp(zeros({8})) * iota({8});
  array shifted = slice_update(y, slice(y, {0}, {6}), {2}, {8});
  y = array(0.0f);
  expect_values(shifted, {8}, {0, 1, 0, 1, 2, 3, 4, 5});

  // A chain of updates on a fresh array (each step may reuse the previous buffer).
  array x = zeros({5}, int32);
  for (int i = 0; i < 5; ++i) {
    x = slice_update(x, array(i + 1), {i}, {i + 1});
  }
  expect_values(x, {5}, {1, 2, 3, 4, 5});
}

TEST(ShapeSliceUpdate, Large) {
  const int n = 1 << 21;
  array out = slice_update(zeros({n}), iota({n / 2}), {1}, {n}, {2});
  auto v = to_vector(out);
  bool ok = true;
  for (int i = 0; i < n; ++i) {
    ok &= v[i] == (i % 2 == 1 ? (i - 1) / 2 : 0);
  }
  EXPECT_TRUE(ok);
}

// ---------------------------------------------------------------------------------------------
// meshgrid / kron / view / atleast_nd

TEST(ShapeMeshgrid, IndexingAndSparse) {
  array x = array({1.0f, 2.0f, 3.0f});
  array y = array({10, 20}, int32);
  auto xy = meshgrid({x, y});
  ASSERT_EQ(xy.size(), 2u);
  expect_values(xy[0], {2, 3}, {1, 2, 3, 1, 2, 3});
  expect_values(xy[1], {2, 3}, {10, 10, 10, 20, 20, 20});
  EXPECT_EQ(xy[1].dtype(), int32);
  auto ij = meshgrid({x, y}, false, "ij");
  expect_values(ij[0], {3, 2}, {1, 1, 2, 2, 3, 3});
  expect_values(ij[1], {3, 2}, {10, 20, 10, 20, 10, 20});
  auto sp = meshgrid({x, y}, true);
  EXPECT_EQ(sp[0].shape(), Shape({1, 3}));
  EXPECT_EQ(sp[1].shape(), Shape({2, 1}));
  auto three = meshgrid({x, y, iota({4})}, false, "xy");
  for (auto& g : three) {
    EXPECT_EQ(g.shape(), Shape({2, 3, 4}));
  }
  Host h2 = host(three[2]);
  EXPECT_EQ(h2.re[ravel({1, 2, 3}, {2, 3, 4})], 3);
  EXPECT_EQ(to_vector(three[0])[ravel({1, 2, 3}, {2, 3, 4})], 3);
  auto one = meshgrid({x});
  expect_values(one[0], {3}, {1, 2, 3});
  // Inputs are flattened.
  auto flat = meshgrid({iota({2, 2}), zeros({0})}, false, "ij");
  EXPECT_EQ(flat[0].shape(), Shape({4, 0}));
  EXPECT_TRUE(meshgrid({}).empty());
  EXPECT_THROW(meshgrid({x, y}, false, "yx"), std::invalid_argument);
}

TEST(ShapeKron, Products) {
  array a = array({1, 2, 3, 4}, {2, 2}, int32);
  array b = array({0.0f, 1.0f, 1.0f, 0.0f}, {2, 2});
  array k = kron(a, b);
  EXPECT_EQ(k.dtype(), float32);
  expect_values(k, {4, 4}, {0, 1, 0, 2, 1, 0, 2, 0, 0, 3, 0, 4, 3, 0, 4, 0});
  // Different ranks: the smaller gets leading unit axes.
  expect_values(kron(array({1, 10}), array({1, 2, 3}, {3, 1})), {3, 2}, {1, 10, 2, 20, 3, 30});
  expect_values(kron(array(2.0f), array({1.0f, 2.0f})), {2}, {2, 4});
  expect_values(kron(array(2.0f), array(3.0f)), {}, {6});
  // Non-contiguous operands against a direct reference.
  array x = transpose(make_input({3, 2}, float32, 17));
  array y = slice(make_input({4, 6}, int16, 18), {0, 5}, {4, 0}, {2, -2});
  Host hx = host(x), hy = host(y);
  array kxy = kron(x, y);
  ASSERT_EQ(kxy.shape(), Shape({4, 9}));
  auto v = to_vector(kxy);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 9; ++j) {
      double e = hx.re[(i / 2) * 3 + j / 3] * hy.re[(i % 2) * 3 + j % 3];
      EXPECT_EQ(v[i * 9 + j], e);
    }
  }
  EXPECT_EQ(kron(zeros({0, 2}), ones({2, 2})).shape(), Shape({0, 4}));
}

TEST(ShapeView, Reinterpret) {
  // Same size: a free view of any layout.
  array f = array({1.0f, -2.0f});
  eval(f);
  array i = view(f, int32);
  eval(i);
  EXPECT_EQ(i.data<void>(), f.data<void>());
  EXPECT_EQ(i.shape(), Shape({2}));
  uint32_t bits;
  float one = 1.0f;
  std::memcpy(&bits, &one, 4);
  EXPECT_EQ(to_vector(view(f, uint32))[0], static_cast<double>(bits));
  array t = transpose(iota({2, 3}));
  array tv = view(t, uint32);
  eval(t, tv);
  EXPECT_EQ(tv.data<void>(), t.data<void>());
  EXPECT_EQ(tv.strides(), t.strides());
  EXPECT_EQ(to_vector(view(tv, float32)), to_vector(t));
  EXPECT_EQ(view(f, float32).id(), f.id());

  // Smaller items: the last axis grows (little-endian byte order).
  array w = array({0x04030201, 0x08070605}, {1, 2}, int32);
  array bytes = view(w, uint8);
  expect_values(bytes, {1, 8}, {1, 2, 3, 4, 5, 6, 7, 8});
  eval(w, bytes);
  EXPECT_EQ(bytes.data<void>(), w.data<void>());
  expect_values(view(w, int16), {1, 4}, {0x0201, 0x0403, 0x0605, 0x0807});
  // Larger items: the last axis shrinks.
  array u8 = array({1, 0, 0, 0, 0, 1, 0, 0}, {2, 4}, uint8);
  expect_values(view(u8, uint32), {2, 1}, {1, 256});
  EXPECT_EQ(view(u8, float16).shape(), Shape({2, 2}));
  expect_values(view(view(u8, float16), uint16), {2, 2}, {1, 0, 256, 0});
  // Non-contiguous and misaligned inputs are copied first.
  array tu = transpose(array({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, uint8));  // (2,4): 1 3 5 7 / 2 4 6 8
  expect_values(view(tu, uint16), {2, 2}, {1 + 3 * 256, 5 + 7 * 256, 2 + 4 * 256, 6 + 8 * 256});
  array odd = slice(array({9, 1, 0, 0, 0}, uint8), {1}, {5});
  expect_values(view(odd, int32), {1}, {1});
  // complex64 <-> float32 pairs.
  array c = array({std::complex<float>(1, 2), std::complex<float>(3, 4)});
  expect_values(view(c, float32), {4}, {1, 2, 3, 4});
  array back = view(array({5.0f, 6.0f}), complex64);
  EXPECT_EQ(back.shape(), Shape({1}));
  EXPECT_EQ(to_vector(imag(back)), std::vector<double>({6}));
  // 0-size.
  EXPECT_EQ(view(zeros({0, 4}, int8), int32).shape(), Shape({0, 1}));
  expect_values(view(zeros({0, 4}, int8), int32), {0, 1}, {});
  expect_values(view(zeros({3, 0}, int32), int8), {3, 0}, {});

  EXPECT_THROW(view(array(1.0f), int8), std::invalid_argument);
  EXPECT_THROW(view(array({1, 2, 3}, uint8), int16), std::invalid_argument);
  EXPECT_THROW(view(array({1.0f}), float64), std::invalid_argument);
  EXPECT_EQ(view(array(1, int32), float32).item<float>(), std::numeric_limits<float>::denorm_min());
}

TEST(ShapeAtLeast, Dims) {
  array s = array(1.0f);
  array v = iota({3});
  array m = iota({2, 3});
  EXPECT_EQ(atleast_1d(s).shape(), Shape({1}));
  EXPECT_EQ(atleast_1d(v).id(), v.id());
  EXPECT_EQ(atleast_2d(s).shape(), Shape({1, 1}));
  EXPECT_EQ(atleast_2d(v).shape(), Shape({1, 3}));
  EXPECT_EQ(atleast_2d(m).id(), m.id());
  EXPECT_EQ(atleast_3d(s).shape(), Shape({1, 1, 1}));
  EXPECT_EQ(atleast_3d(v).shape(), Shape({1, 3, 1}));
  EXPECT_EQ(atleast_3d(m).shape(), Shape({2, 3, 1}));
  auto many = atleast_2d(std::vector<array>{s, v, m});
  ASSERT_EQ(many.size(), 3u);
  EXPECT_EQ(many[1].shape(), Shape({1, 3}));
  EXPECT_EQ(atleast_1d(std::vector<array>{s})[0].shape(), Shape({1}));
  EXPECT_EQ(atleast_3d(std::vector<array>{v})[0].shape(), Shape({1, 3, 1}));
  expect_values(atleast_3d(m), {2, 3, 1}, {0, 1, 2, 3, 4, 5});
}

// Several ops chained on one graph, evaluated once, against a hand-built reference.
TEST(ShapeGraph, ComposedOps) {
  array a = iota({4, 4});
  array b = pad(tril(a), 1);                                                    // (6,6)
  array e = pad(tile(reshape(diagonal(a), {1, 4}), {2, 1}), {{0, 0}, {1, 1}});  // (2,6)
  array c = concatenate({roll(b, 1, 0), e}, 0);                                 // (8,6)
  array d = slice_update(c, repeat(array({-1.0f}), 6), {0, 0}, {1, 6});
  std::vector<double> expected(8 * 6, 0.0);
  for (int i = 0; i < 6; ++i) {
    int src = (i + 5) % 6;  // roll by one row
    for (int j = 0; j < 6; ++j) {
      int r = src - 1, col = j - 1;
      bool inside = r >= 0 && r < 4 && col >= 0 && col < 4 && col <= r;
      expected[i * 6 + j] = inside ? r * 4 + col : 0;
    }
  }
  for (int i = 6; i < 8; ++i) {
    for (int j = 1; j < 5; ++j) {
      expected[i * 6 + j] = (j - 1) * 5;
    }
  }
  std::fill(expected.begin(), expected.begin() + 6, -1.0);
  expect_values(d, {8, 6}, expected);
}

TEST(ShapePrimitives, EquivalenceAndOutputShapes) {
  array a = iota({2, 3});
  array b = iota({2, 1});
  array c1 = concatenate({a, b}, 1);
  array c2 = concatenate({b, a}, -1);
  array c3 = concatenate({a, a}, 0);
  EXPECT_STREQ(c1.primitive().name(), "Concatenate");
  EXPECT_TRUE(c1.primitive().is_equivalent(c2.primitive()));
  EXPECT_FALSE(c1.primitive().is_equivalent(c3.primitive()));
  EXPECT_EQ(c1.primitive().output_shapes(c1.inputs()), std::vector<Shape>{Shape({2, 4})});

  array u1 = slice_update(a, array(1.0f), {0, 0}, {1, 3});
  array u2 = slice_update(a, array(2.0f), {0, 0}, {1, 3});
  array u3 = slice_update(a, array(1.0f), {0, 0}, {1, 3}, {1, 2});
  EXPECT_TRUE(u1.primitive().is_equivalent(u2.primitive()));
  EXPECT_FALSE(u1.primitive().is_equivalent(u3.primitive()));
  EXPECT_FALSE(u1.primitive().is_equivalent(c1.primitive()));
  EXPECT_EQ(u1.primitive().output_shapes(u1.inputs()), std::vector<Shape>{Shape({2, 3})});

  EXPECT_TRUE(diagonal(a, 1).primitive().is_equivalent(diagonal(b, 1).primitive()));
  EXPECT_FALSE(diagonal(a, 1).primitive().is_equivalent(diagonal(a, 0).primitive()));
  EXPECT_TRUE(view(a, int32).primitive().is_equivalent(view(b, int32).primitive()));
  EXPECT_FALSE(view(a, int32).primitive().is_equivalent(view(a, uint32).primitive()));
}

TEST(ShapeFlip, ReversesAxesAsAView) {
  array a = reshape(arange(6.0f), {2, 3});
  eval(a);
  array f = flip(a, {1});
  expect_close(f, {2, 1, 0, 5, 4, 3}, {2, 3});
  eval(f);
  EXPECT_EQ(f.data<float>(), a.data<float>() + 2);  // a view, no copy
  expect_close(flip(a), {5, 4, 3, 2, 1, 0}, {2, 3});
  expect_close(flip(a, {-2}), {3, 4, 5, 0, 1, 2}, {2, 3});
  expect_close(flip(flip(transpose(a))), {0, 3, 1, 4, 2, 5}, {3, 2});
  EXPECT_EQ(flip(zeros({0, 3}), {0}).shape(), Shape({0, 3}));
  EXPECT_THROW(flip(a, {2}), std::invalid_argument);
}

// sort / argsort / partition / argpartition / topk against std::stable_sort on doubles.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "test_utils.h"

using namespace mlx::core;
using namespace mlx::core::test;

namespace {

// An element as (real, imaginary) so that one order covers every dtype.
using Elem = std::pair<double, double>;

bool lt_nan(double a, double b) { return a < b || (std::isnan(b) && !std::isnan(a)); }
bool eq_nan(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
// NumPy's order: NaNs last, complex lexicographic.
bool elem_less(const Elem& a, const Elem& b) {
  return lt_nan(a.first, b.first) || (eq_nan(a.first, b.first) && lt_nan(a.second, b.second));
}
bool elem_eq(const Elem& a, const Elem& b) {
  return eq_nan(a.first, b.first) && eq_nan(a.second, b.second);
}

std::vector<Elem> elems_of(const array& a) {
  auto re = to_vector(a);
  std::vector<double> im(re.size(), 0.0);
  if (is_complex(a.dtype())) {
    im = to_vector(imag(a));
  }
  std::vector<Elem> out(re.size());
  for (size_t i = 0; i < re.size(); ++i) {
    out[i] = {re[i], im[i]};
  }
  return out;
}

// Flat row-major positions of every lane along `axis`.
std::vector<std::vector<size_t>> lanes_of(const Shape& shape, int axis) {
  size_t outer = 1, inner = 1, n = shape[axis];
  for (int i = 0; i < axis; ++i)
    outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i)
    inner *= shape[i];
  std::vector<std::vector<size_t>> lanes;
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      std::vector<size_t> lane(n);
      for (size_t k = 0; k < n; ++k) {
        lane[k] = (o * n + k) * inner + i;
      }
      lanes.push_back(std::move(lane));
    }
  }
  return lanes;
}

// Stable argsort of one lane.
std::vector<size_t> ref_argsort(const std::vector<Elem>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](size_t a, size_t b) { return elem_less(v[a], v[b]); });
  return idx;
}

// Integer-valued test data with many ties: {0, 1} for bool, [0, 20) unsigned, [-10, 10)
// otherwise; complex arrays get an imaginary part in [-2, 2).
array tie_array(const Shape& shape, Dtype dt, uint32_t seed = 0) {
  std::mt19937 gen(seed);
  size_t n = shape_size(shape);
  std::vector<double> re(n), im(n);
  for (size_t i = 0; i < n; ++i) {
    int r = static_cast<int>(gen() % 20);
    re[i] = dt == bool_ ? r % 2 : (is_unsigned(dt) ? r : r - 10);
    im[i] = static_cast<int>(gen() % 4) - 2;
  }
  array a = from_vector(re, shape, dt);
  if (is_complex(dt)) {
    a = a + from_vector(im, shape, complex64) * array(std::complex<float>(0.0f, 1.0f));
  }
  eval(a);
  return a;
}

void expect_elems_eq(const std::vector<Elem>& got, const std::vector<Elem>& want,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!elem_eq(got[i], want[i])) {
      ADD_FAILURE() << what << " at " << i << ": got (" << got[i].first << ", " << got[i].second
                    << ") want (" << want[i].first << ", " << want[i].second << ")";
      return;
    }
  }
}

// Checks sort and argsort of `a` along `axis` against the stable reference.
void check_sort(const array& a, int axis) {
  std::string what = msg(a.dtype(), " shape ", a.shape(), " axis ", axis);
  int ax = axis < 0 ? axis + a.ndim() : axis;
  array s = sort(a, axis);
  array i = argsort(a, axis);
  EXPECT_EQ(s.dtype(), a.dtype());
  EXPECT_EQ(i.dtype(), uint32);
  ASSERT_EQ(s.shape(), a.shape());
  ASSERT_EQ(i.shape(), a.shape());
  auto in = elems_of(a);
  auto sv = elems_of(s);
  auto iv = to_vector(i);
  std::vector<Elem> want_s(in.size()), got_s(in.size());
  std::vector<double> want_i(in.size());
  for (auto& lane : lanes_of(a.shape(), ax)) {
    std::vector<Elem> v;
    for (size_t p : lane)
      v.push_back(in[p]);
    auto order = ref_argsort(v);
    for (size_t k = 0; k < lane.size(); ++k) {
      want_s[lane[k]] = v[order[k]];
      want_i[lane[k]] = static_cast<double>(order[k]);
    }
  }
  expect_elems_eq(sv, want_s, "sort " + what);
  EXPECT_EQ(iv, want_i) << "argsort " << what;
}

// Checks that (arg)partition results satisfy the partition property around kth.
void check_partition(const array& a, int kth, int axis) {
  std::string what = msg(a.dtype(), " shape ", a.shape(), " kth ", kth, " axis ", axis);
  int ax = axis < 0 ? axis + a.ndim() : axis;
  int n = a.shape(ax);
  int k = kth < 0 ? kth + n : kth;
  auto in = elems_of(a);
  auto pv = elems_of(partition(a, kth, axis));
  array ip = argpartition(a, kth, axis);
  EXPECT_EQ(ip.dtype(), uint32);
  auto iv = to_vector(ip);
  for (auto& lane : lanes_of(a.shape(), ax)) {
    std::vector<Elem> v, p, q;
    std::vector<size_t> seen;
    for (size_t j = 0; j < lane.size(); ++j) {
      v.push_back(in[lane[j]]);
      p.push_back(pv[lane[j]]);
    }
    for (size_t j = 0; j < lane.size(); ++j) {
      size_t idx = static_cast<size_t>(iv[lane[j]]);
      ASSERT_LT(idx, lane.size()) << what;
      q.push_back(v[idx]);
      seen.push_back(idx);
    }
    std::sort(seen.begin(), seen.end());
    for (size_t j = 0; j < seen.size(); ++j) {
      ASSERT_EQ(seen[j], j) << "argpartition is not a permutation " << what;
    }
    std::vector<Elem> sorted = v;
    std::stable_sort(sorted.begin(), sorted.end(), elem_less);
    for (auto* r : {&p, &q}) {
      EXPECT_TRUE(elem_eq((*r)[k], sorted[k])) << what;
      for (int j = 0; j < n; ++j) {
        if (j < k) {
          EXPECT_FALSE(elem_less((*r)[k], (*r)[j])) << what << " before " << j;
        } else if (j > k) {
          EXPECT_FALSE(elem_less((*r)[j], (*r)[k])) << what << " after " << j;
        }
      }
      std::vector<Elem> rs = *r;
      std::stable_sort(rs.begin(), rs.end(), elem_less);
      expect_elems_eq(rs, sorted, "partition is not a permutation " + what);
    }
  }
}

}  // namespace

TEST(Sort, AllDtypesAllAxes) {
  for (Dtype dt : kAllDtypes) {
    array a = tie_array({6, 17, 5}, dt);
    for (int axis : {0, 1, 2, -1}) {
      check_sort(a, axis);
    }
    // Lanes long enough for the radix sort.
    check_sort(tie_array({3, 1500}, dt, 1), 1);
    check_sort(tie_array({700, 2}, dt, 2), 0);
  }
}

TEST(Sort, FloatsWithNaNInfAndSignedZero) {
  double nan = std::nan("");
  double inf = INFINITY;
  std::vector<double> v{3, nan, -inf, 0.0, -0.0, inf, nan, -2.5, 0.0, 1, -0.0, nan, 3};
  for (Dtype dt : kFloatDtypes) {
    array a = from_vector(v, {static_cast<int>(v.size())}, dt);
    check_sort(a, 0);
    // Rows of NaN only, and NaNs mixed at every position of a 2-D array.
    check_sort(full({3, 4}, array(NAN), dt), 1);
    array m = from_vector(random_values(60, -1, 1, 4), {6, 10}, dt);
    m = where(greater(from_vector(random_values(60, 0, 1, 5), {6, 10}), array(0.7f)),
              array(NAN, dt), m);
    check_sort(m, 0);
    check_sort(m, 1);
    // The same special values in lanes long enough for the radix sort.
    std::vector<double> longer;
    for (int i = 0; i < 100; ++i) {
      longer.insert(longer.end(), v.begin(), v.end());
    }
    std::shuffle(longer.begin(), longer.end(), std::mt19937(3));
    check_sort(from_vector(longer, {2, 650}, dt), 1);
  }
  // Complex: NaN real parts after everything, ties on the real part ordered by imaginary.
  array c =
      from_vector({1, nan, 1, 0, nan, 1}, {6}, complex64) +
      from_vector({2, 0, nan, 5, -1, -3}, {6}, complex64) * array(std::complex<float>(0.0f, 1.0f));
  check_sort(c, 0);
  auto s = elems_of(sort(c));
  EXPECT_EQ(s[0], Elem(0, 5));
  EXPECT_EQ(s[1], Elem(1, -3));
  EXPECT_EQ(s[2], Elem(1, 2));
  // A NaN imaginary part makes the real part NaN too here: NaN reals order by imaginary part.
  EXPECT_TRUE(std::isnan(s[3].first));
  EXPECT_EQ(s[3].second, -1);
  EXPECT_EQ(s[4].second, 0);
  EXPECT_TRUE(std::isnan(s[5].second));
}

TEST(Sort, ContinuousValues) {
  for (Dtype dt : {float32, float64, int32}) {
    check_sort(random_array({9, 301}, dt, -1000, 1000, 3), -1);
    check_sort(random_array({301, 9}, dt, -1000, 1000, 4), 0);
  }
}

TEST(Sort, NonContiguousInputs) {
  array base = tie_array({8, 6, 5}, float32, 2);
  std::vector<array> views = {
      transpose(base, {2, 0, 1}),                                   // (5, 8, 6)
      slice(base, {1, 0, 0}, {8, 6, 5}, {3, 2, 2}),                 // stepped
      slice(base, {7, 5, 4}, {-9, -7, -6}, {-1, -2, -1}),           // negative strides
      broadcast_to(slice(base, {0, 0, 0}, {1, 6, 5}), {4, 6, 5}),   // stride 0
      slice(transpose(base), {0, 5, 7}, {5, -7, -9}, {1, -1, -2}),  // mixed
  };
  for (auto& v : views) {
    for (int axis = 0; axis < 3; ++axis) {
      check_sort(v, axis);
    }
  }
  // Complex and int8 through a transpose.
  check_sort(transpose(tie_array({7, 9}, complex64, 8)), 0);
  check_sort(transpose(tie_array({7, 9}, int8, 8)), 1);
}

TEST(Sort, FlattenedScalarsAndEmpty) {
  array a = tie_array({4, 5}, int32);
  array s = sort(a);
  EXPECT_EQ(s.shape(), Shape({20}));
  auto v = to_vector(a);
  std::sort(v.begin(), v.end());
  EXPECT_EQ(to_vector(s), v);
  check_sort(flatten(a), 0);
  EXPECT_EQ(to_vector(argsort(a)), to_vector(argsort(flatten(a), 0)));

  EXPECT_EQ(sort(array(3.0f)).shape(), Shape({1}));
  EXPECT_EQ(to_vector(argsort(array(3.0f))), std::vector<double>({0}));
  check_sort(array({7}, {1, 1}, int32), 0);
  check_sort(tie_array({5, 1}, float16), 1);
  EXPECT_EQ(to_vector(argsort(tie_array({5, 1}, float16), 1)), std::vector<double>(5, 0));

  for (const Shape& shape : {Shape{0}, Shape{0, 3}, Shape{3, 0}}) {
    for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis) {
      array e = sort(zeros(shape), axis);
      array ei = argsort(zeros(shape), axis);
      eval(e, ei);
      EXPECT_EQ(e.shape(), shape);
      EXPECT_EQ(ei.shape(), shape);
      EXPECT_EQ(ei.dtype(), uint32);
    }
  }
  EXPECT_EQ(sort(zeros({0, 2})).shape(), Shape({0}));
}

TEST(Sort, Large) {
  // One long lane: sorted by all threads together.
  int n = 1 << 20;
  array r = random_array({n}, float32, -1, 1, 11);
  auto v = to_vector(r);
  auto s = to_vector(sort(r));
  std::sort(v.begin(), v.end());
  EXPECT_EQ(s, v);
  // A long lane with many ties: the argsort must still be stable.
  std::mt19937 gen(2);
  std::vector<int> t(n);
  for (auto& x : t)
    x = static_cast<int>(gen() % 1000);
  std::vector<size_t> want(n);
  std::iota(want.begin(), want.end(), 0);
  std::stable_sort(want.begin(), want.end(), [&](size_t a, size_t b) { return t[a] < t[b]; });
  auto got = to_vector(argsort(array(t.data(), {n}, int32)));
  bool ok = true;
  for (int i = 0; i < n && ok; ++i) {
    ok &= got[i] == static_cast<double>(want[i]);
  }
  EXPECT_TRUE(ok);
  // Many lanes, contiguous and strided, and a donated input.
  check_sort(tie_array({2048, 512}, int16, 3), 1);
  check_sort(tie_array({512, 2048}, float16, 4), 0);
  array big = random_array({1024, 1024}, float32, -1, 1, 5);
  auto want_rows = to_vector(sort(big, 1));
  EXPECT_EQ(to_vector(sort(big + 0.0f, 1)), want_rows);
}

TEST(Sort, Errors) {
  array a = tie_array({3, 4}, float32);
  EXPECT_THROW(sort(a, 2), std::invalid_argument);
  EXPECT_THROW(argsort(a, -3), std::invalid_argument);
  EXPECT_THROW(sort(array(1.0f), 0), std::invalid_argument);
  EXPECT_THROW(partition(a, 4, 1), std::out_of_range);
  EXPECT_THROW(argpartition(a, -4, 0), std::out_of_range);
  EXPECT_THROW(partition(a, 12), std::out_of_range);
  EXPECT_THROW(partition(a, 0, 2), std::invalid_argument);
  EXPECT_THROW(partition(zeros({0}), 0), std::out_of_range);
  EXPECT_THROW(topk(a, 5, 1), std::invalid_argument);
  EXPECT_THROW(topk(a, -1), std::invalid_argument);
  EXPECT_THROW(topk(a, 1, 3), std::invalid_argument);
}

TEST(Partition, AllDtypes) {
  for (Dtype dt : kAllDtypes) {
    array a = tie_array({5, 33}, dt, 6);
    for (int kth : {0, 7, 32, -1, -33}) {
      check_partition(a, kth, 1);
    }
    check_partition(a, 2, 0);
    check_partition(a, -5, 0);
  }
}

TEST(Partition, NaNNonContiguousAndLarge) {
  array m = random_array({40, 30}, float32, -1, 1, 7);
  m = where(greater(random_array({40, 30}, float32, 0, 1, 8), array(0.6f)), array(NAN), m);
  for (int kth : {0, 10, 29}) {
    check_partition(m, kth, 1);
  }
  check_partition(transpose(m), 25, 1);
  check_partition(slice(m, {39, 0}, {-41, 30}, {-2, 3}), 5, 0);
  check_partition(random_array({3, 100000}, float64, -1, 1, 9), 50000, 1);
  // Flattened.
  array a = tie_array({6, 7}, int32, 1);
  array p = partition(a, 20);
  EXPECT_EQ(p.shape(), Shape({42}));
  check_partition(flatten(a), 20, 0);
  auto v = to_vector(a);
  std::sort(v.begin(), v.end());
  EXPECT_EQ(to_vector(p)[20], v[20]);
  EXPECT_EQ(to_vector(take(flatten(a), argpartition(a, 20)))[20], v[20]);
}

TEST(TopK, LargestElements) {
  for (Dtype dt : {float32, int32, uint8, float16, bfloat16, float64, int64, bool_}) {
    array a = tie_array({6, 20}, dt, 12);
    for (int axis : {0, 1}) {
      int n = a.shape(axis);
      for (int k : {0, 1, 3, n - 1, n}) {
        array t = topk(a, k, axis);
        Shape want_shape = a.shape();
        want_shape[axis] = k;
        ASSERT_EQ(t.shape(), want_shape);
        auto in = to_vector(a);
        auto tv = to_vector(t);
        auto want_lanes = lanes_of(a.shape(), axis);
        auto got_lanes = lanes_of(want_shape, axis);
        for (size_t l = 0; l < want_lanes.size(); ++l) {
          std::vector<double> w, g;
          for (size_t p : want_lanes[l])
            w.push_back(in[p]);
          for (size_t p : got_lanes[l])
            g.push_back(tv[p]);
          std::sort(w.begin(), w.end());
          std::sort(g.begin(), g.end());
          EXPECT_EQ(g, std::vector<double>(w.end() - k, w.end())) << dt << " k " << k;
        }
      }
    }
  }
  // Flattened and with NaNs (which count as largest).
  array f = array({3.0f, NAN, 1.0f, 7.0f, 2.0f}, {5});
  auto t = to_vector(topk(reshape(f, {5, 1}), 2));
  std::sort(t.begin(), t.end(), lt_nan);
  EXPECT_EQ(t[0], 7.0);
  EXPECT_TRUE(std::isnan(t[1]));
  EXPECT_EQ(topk(zeros({4, 3}), 5).shape(), Shape({5}));
}

#include "mlx/primitives/random.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <set>
#include <thread>

#include "test_utils.h"

using namespace mlx::core;
using mlx::core::test::kFloatDtypes;
using mlx::core::test::to_vector;

namespace {

// Raw elements of an unsigned array (any layout), without a detour through doubles.
template <typename T>
std::vector<T> raw(const array& a) {
  array c = contiguous(a);
  eval(c);
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.size());
}

std::vector<uint8_t> raw_bytes(const array& a) {
  array c = contiguous(a);
  eval(c);
  const uint8_t* p = c.data<uint8_t>();
  return std::vector<uint8_t>(p, p + c.nbytes());
}

struct Moments {
  double mean;
  double var;
};

Moments moments(const std::vector<double>& v) {
  double m = 0;
  for (double x : v)
    m += x;
  m /= v.size();
  double s = 0;
  for (double x : v)
    s += (x - m) * (x - m);
  return {m, s / (v.size() - 1)};
}

// Kolmogorov-Smirnov statistic of the samples against a CDF.
template <typename Cdf>
double ks_statistic(std::vector<double> v, Cdf cdf) {
  std::sort(v.begin(), v.end());
  double n = static_cast<double>(v.size());
  double d = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    double f = cdf(v[i]);
    d = std::max({d, std::abs(f - i / n), std::abs(f - (i + 1) / n)});
  }
  return d;
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

// Pearson's chi-square statistic of integer samples in [0, k) against equal frequencies.
double chi_square_uniform(const std::vector<double>& v, int k) {
  std::vector<double> counts(k, 0.0);
  for (double x : v)
    counts[static_cast<int>(x)] += 1;
  double e = static_cast<double>(v.size()) / k;
  double chi2 = 0;
  for (double c : counts)
    chi2 += (c - e) * (c - e) / e;
  return chi2;
}

// A bound on chi-square with k - 1 degrees of freedom far in the tail (about 5 standard
// deviations above the mean).
double chi_square_bound(int k) { return (k - 1) + 5.0 * std::sqrt(2.0 * (k - 1)); }

constexpr int kSamples = 100000;
// Generous bound on the KS statistic for kSamples draws (the 0.1% critical value is 1.95/sqrt n).
const double kKsBound = 2.5 / std::sqrt(static_cast<double>(kSamples));

}  // namespace

TEST(RandomThreefry, KnownAnswers) {
  // Random123 kat_vectors: threefry2x32 with 20 and 13 rounds; (ctr0, ctr1, key0, key1) -> out.
  struct Kat {
    uint32_t c0, c1, k0, k1, y0, y1;
  };
  const Kat r20[] = {
      {0, 0, 0, 0, 0x6b200159u, 0x99ba4efeu},
      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x1cb996fcu, 0xbb002be7u},
      {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xc4923a9cu, 0x483df7a0u}};
  for (const auto& k : r20) {
    auto y = threefry2x32(k.k0, k.k1, k.c0, k.c1);
    EXPECT_EQ(y[0], k.y0);
    EXPECT_EQ(y[1], k.y1);
  }
  const Kat r13[] = {
      {0, 0, 0, 0, 0x9d1c5ec6u, 0x8bd50731u},
      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xfd36d048u, 0x2d17272cu},
      {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xba3e4725u, 0xf27d669eu}};
  for (const auto& k : r13) {
    auto y = threefry2x32<13>(k.k0, k.k1, k.c0, k.c1);
    EXPECT_EQ(y[0], k.y0);
    EXPECT_EQ(y[1], k.y1);
  }
}

TEST(RandomKey, FromSeed) {
  array k = random::key(0x123456789abcdef0ull);
  EXPECT_EQ(k.dtype(), uint32);
  EXPECT_EQ(k.shape(), Shape({2}));
  EXPECT_EQ(raw<uint32_t>(k), (std::vector<uint32_t>{0x12345678u, 0x9abcdef0u}));
  EXPECT_EQ(raw<uint32_t>(random::key(0)), (std::vector<uint32_t>{0, 0}));
}

TEST(RandomBits, MatchesThreefryBlocks) {
  // The words for a key are the blocks threefry(key, (c, 0)) for c = 0, 1, ...
  array k({0x13198a2eu, 0x03707344u}, uint32);
  auto words = raw<uint32_t>(random::bits({3, 3}, 4, k));
  ASSERT_EQ(words.size(), 9u);
  for (uint32_t c = 0; c < 5; ++c) {
    auto y = threefry2x32(0x13198a2eu, 0x03707344u, c, 0);
    EXPECT_EQ(words[2 * c], y[0]);
    if (2 * c + 1 < words.size()) {
      EXPECT_EQ(words[2 * c + 1], y[1]);
    }
  }
  array kat_key({0u, 0u}, uint32);
  EXPECT_EQ(raw<uint32_t>(random::bits({2}, kat_key)),
            (std::vector<uint32_t>{0x6b200159u, 0x99ba4efeu}));
}

TEST(RandomBits, DtypesAndShapes) {
  array k = random::key(3);
  const std::pair<int, Dtype> widths[] = {{1, uint8}, {2, uint16}, {4, uint32}, {8, uint64}};
  for (auto [w, t] : widths) {
    array b = random::bits({2, 3, 5}, w, k);
    EXPECT_EQ(b.dtype(), t);
    EXPECT_EQ(b.shape(), Shape({2, 3, 5}));
  }
  EXPECT_EQ(random::bits({}, k).shape(), Shape{});
  array empty = random::bits({0, 4}, 2, k);
  eval(empty);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.shape(), Shape({0, 4}));
}

TEST(RandomBits, WidthsShareOneByteStream) {
  // Any width and any length reads a prefix of the same little-endian byte stream.
  array k = random::key(42);
  auto ref = raw_bytes(random::bits({64}, 8, k));
  for (int w : {1, 2, 4, 8}) {
    for (int n : {1, 3, 7, 8, 13, 31}) {
      auto b = raw_bytes(random::bits({n}, w, k));
      ASSERT_LE(b.size(), ref.size());
      EXPECT_TRUE(std::equal(b.begin(), b.end(), ref.begin())) << "width " << w << " n " << n;
    }
  }
}

TEST(RandomBits, LargeDrawMatchesScalarHash) {
  // Over a million words: the multithreaded kernel agrees with the scalar hash everywhere.
  const uint32_t k0 = 0xdeadbeefu, k1 = 0x01234567u;
  const int n = (1 << 20) + 3;
  auto words = raw<uint32_t>(random::bits({n}, 4, array({k0, k1}, uint32)));
  ASSERT_EQ(words.size(), static_cast<size_t>(n));
  size_t mismatches = 0;
  for (int c = 0; 2 * c < n; ++c) {
    auto y = threefry2x32(k0, k1, static_cast<uint32_t>(c), 0);
    mismatches += words[2 * c] != y[0];
    if (2 * c + 1 < n)
      mismatches += words[2 * c + 1] != y[1];
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(RandomBits, NonContiguousKey) {
  // A key that is a strided view (a column of a transposed split) behaves like its copy.
  array keys = random::split(random::key(9), 3);
  array kt = transpose(keys);  // (2, 3)
  array k = reshape(slice(kt, {0, 1}, {2, 2}), {2});
  array k_copy = array(raw<uint32_t>(k).data(), {2}, uint32);
  EXPECT_EQ(raw<uint32_t>(random::bits({17}, k)), raw<uint32_t>(random::bits({17}, k_copy)));
  // Negative strides too.
  array rev = slice(random::key(5), {1}, {-3}, {-1});  // reversed key
  auto kr = raw<uint32_t>(rev);
  EXPECT_EQ(raw<uint32_t>(random::bits({5}, rev)),
            raw<uint32_t>(random::bits({5}, array(kr.data(), {2}, uint32))));
}

TEST(RandomBits, BatchedKeys) {
  // The primitive takes a batch of keys (..., 2) and prepends the batch shape.
  array keys = random::split(random::key(11), 6);
  array batch = transpose(reshape(keys, {2, 3, 2}), {1, 0, 2});  // (3, 2, 2), non-contiguous
  Shape shape{5};
  array out = array(Shape{3, 2, 5}, uint32,
                    std::make_shared<RandomBits>(default_stream(Device::cpu), shape, 4), {batch});
  auto got = raw<uint32_t>(out);
  auto key_rows = raw<uint32_t>(batch);
  for (int i = 0; i < 6; ++i) {
    array k(key_rows.data() + 2 * i, {2}, uint32);
    auto expect = raw<uint32_t>(random::bits(shape, k));
    EXPECT_TRUE(std::equal(expect.begin(), expect.end(), got.begin() + 5 * i)) << "key " << i;
  }
  // Batched bytes of a width that splits words across keys.
  array out8 =
      array(Shape{3, 2, 3}, uint8,
            std::make_shared<RandomBits>(default_stream(Device::cpu), Shape{3}, 1), {batch});
  auto got8 = raw<uint8_t>(out8);
  for (int i = 0; i < 6; ++i) {
    array k(key_rows.data() + 2 * i, {2}, uint32);
    auto expect = raw<uint8_t>(random::bits({3}, 1, k));
    EXPECT_TRUE(std::equal(expect.begin(), expect.end(), got8.begin() + 3 * i)) << "key " << i;
  }
}

TEST(RandomBits, Errors) {
  array k = random::key(1);
  EXPECT_THROW(random::bits({4}, 3, k), std::invalid_argument);
  EXPECT_THROW(random::bits({4}, 16, k), std::invalid_argument);
  EXPECT_THROW(random::bits({-1}, 4, k), std::invalid_argument);
  EXPECT_THROW(random::bits({4}, 4, array({1, 2}, int32)), std::invalid_argument);
  EXPECT_THROW(random::bits({4}, 4, array({1u, 2u, 3u}, uint32)), std::invalid_argument);
  EXPECT_THROW(random::bits({4}, 4, array({1u, 2u}, {1, 2}, uint32)), std::invalid_argument);
  EXPECT_THROW(random::uniform({4}, float32, array({1.0f, 2.0f})), std::invalid_argument);
  EXPECT_THROW(random::normal({4}, float32, array({1u}, uint32)), std::invalid_argument);
  EXPECT_THROW(random::split(array({1, 2}, int32)), std::invalid_argument);
  EXPECT_THROW(random::split(k, -1), std::invalid_argument);
}

TEST(RandomDeterminism, SameKeySameNumbers) {
  array k = random::key(1234);
  EXPECT_EQ(to_vector(random::uniform({100}, k)), to_vector(random::uniform({100}, k)));
  EXPECT_EQ(to_vector(random::normal({100}, k)), to_vector(random::normal({100}, k)));
  EXPECT_EQ(to_vector(random::randint(0, 1000, {100}, int32, k)),
            to_vector(random::randint(0, 1000, {100}, int32, k)));
  // Different keys give different numbers.
  auto a = to_vector(random::uniform({100}, random::key(1)));
  auto b = to_vector(random::uniform({100}, random::key(2)));
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i)
    same += a[i] == b[i];
  EXPECT_LT(same, 3);
}

TEST(RandomSplit, ShapesAndIndependence) {
  array k = random::key(77);
  array keys = random::split(k, 4);
  EXPECT_EQ(keys.shape(), Shape({4, 2}));
  EXPECT_EQ(keys.dtype(), uint32);
  auto kv = raw<uint32_t>(keys);
  for (uint32_t i = 0; i < 4; ++i) {
    auto y = threefry2x32(0u, 77u, i, 0);
    EXPECT_EQ(kv[2 * i], y[0]);
    EXPECT_EQ(kv[2 * i + 1], y[1]);
  }
  auto [k1, k2] = random::split(k);
  EXPECT_EQ(k1.shape(), Shape({2}));
  EXPECT_EQ(raw<uint32_t>(k1), std::vector<uint32_t>(kv.begin(), kv.begin() + 2));
  EXPECT_EQ(raw<uint32_t>(k2), std::vector<uint32_t>(kv.begin() + 2, kv.begin() + 4));
  EXPECT_EQ(random::split(k, 0).shape(), Shape({0, 2}));

  // Streams of split keys are uncorrelated with each other and with the parent.
  const int n = 20000;
  auto u0 = to_vector(random::uniform({n}, k));
  auto u1 = to_vector(random::uniform({n}, k1));
  auto u2 = to_vector(random::uniform({n}, k2));
  auto corr = [&](const std::vector<double>& x, const std::vector<double>& y) {
    double sxy = 0, sx = 0, sy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; ++i) {
      sx += x[i];
      sy += y[i];
      sxy += x[i] * y[i];
      sxx += x[i] * x[i];
      syy += y[i] * y[i];
    }
    double cov = sxy / n - sx * sy / n / n;
    return cov / std::sqrt((sxx / n - sx * sx / n / n) * (syy / n - sy * sy / n / n));
  };
  // Standard error of a null correlation is 1/sqrt(n) ~ 0.007.
  EXPECT_LT(std::abs(corr(u1, u2)), 0.04);
  EXPECT_LT(std::abs(corr(u0, u1)), 0.04);
  EXPECT_LT(std::abs(corr(u0, u2)), 0.04);
}

TEST(RandomSeed, GlobalSequence) {
  random::seed(5);
  auto a = to_vector(random::uniform({10}));
  auto b = to_vector(random::uniform({10}));
  random::seed(5);
  EXPECT_EQ(to_vector(random::uniform({10})), a);
  EXPECT_EQ(to_vector(random::uniform({10})), b);
  EXPECT_NE(a, b);
  // The first key drawn after seed(s) is the second half of split(key(s)).
  random::seed(5);
  EXPECT_EQ(to_vector(random::uniform({10})),
            to_vector(random::uniform({10}, random::split(random::key(5)).second)));
  random::KeySequence seq(5);
  EXPECT_EQ(raw<uint32_t>(seq.next()), raw<uint32_t>(random::split(random::key(5)).second));
}

TEST(RandomSeed, ThreadSafeKeySequence) {
  random::KeySequence seq(99);
  const int threads = 4, per_thread = 500;
  std::vector<std::vector<uint64_t>> drawn(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        array k = seq.next();
        const uint32_t* p = k.data<uint32_t>();
        drawn[t].push_back((static_cast<uint64_t>(p[0]) << 32) | p[1]);
      }
    });
  }
  for (auto& th : pool)
    th.join();
  std::set<uint64_t> all;
  for (auto& d : drawn)
    all.insert(d.begin(), d.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(threads * per_thread));
  // Same keys, in some order, as a sequential draw.
  random::KeySequence ref(99);
  std::set<uint64_t> expect;
  for (int i = 0; i < threads * per_thread; ++i) {
    auto v = raw<uint32_t>(ref.next());
    expect.insert((static_cast<uint64_t>(v[0]) << 32) | v[1]);
  }
  EXPECT_EQ(all, expect);
}

TEST(RandomUniform, DtypesShapesAndRange) {
  array k = random::key(0);
  for (Dtype t : kFloatDtypes) {
    array u = random::uniform({1000, 10}, t, k);
    EXPECT_EQ(u.dtype(), t);
    EXPECT_EQ(u.shape(), Shape({1000, 10}));
    auto v = to_vector(u);
    double lo = *std::min_element(v.begin(), v.end());
    double hi = *std::max_element(v.begin(), v.end());
    EXPECT_GE(lo, 0.0) << t;
    EXPECT_LT(hi, 1.0) << t;
    // 10k draws of a dtype with at least 8 significand bits come within 1% of both ends.
    EXPECT_LT(lo, 0.01) << t;
    EXPECT_GT(hi, 0.99) << t;
  }
  EXPECT_EQ(random::uniform({}, k).shape(), Shape{});
  EXPECT_EQ(random::uniform({0, 3}, k).shape(), Shape({0, 3}));
  EXPECT_EQ(random::uniform(0.0f, 1.0f, {0}, float32, k).size(), 0u);
}

TEST(RandomUniform, Distribution) {
  for (Dtype t : {float32, float64}) {
    auto v = to_vector(random::uniform({kSamples}, t, random::key(17)));
    auto m = moments(v);
    // Standard errors: mean 0.29/sqrt(n) ~ 1e-3.
    EXPECT_NEAR(m.mean, 0.5, 5e-3) << t;
    EXPECT_NEAR(m.var, 1.0 / 12.0, 2e-3) << t;
    EXPECT_LT(ks_statistic(v, [](double x) { return x; }), kKsBound) << t;
  }
  // Shifted and scaled.
  auto v = to_vector(random::uniform(-3.0f, 5.0f, {kSamples}, float32, random::key(18)));
  EXPECT_LT(ks_statistic(v, [](double x) { return (x + 3.0) / 8.0; }), kKsBound);
  // Half types, coarser: their KS includes the quantization (2^-11 and 2^-8).
  for (Dtype t : {float16, bfloat16}) {
    auto h = to_vector(random::uniform({kSamples}, t, random::key(19)));
    EXPECT_LT(ks_statistic(h, [](double x) { return x; }), kKsBound + 1.0 / 256) << t;
  }
}

TEST(RandomUniform, BroadcastBounds) {
  array low = reshape(array({0.0f, 10.0f, 20.0f}), {3, 1});
  array high = reshape(array({1.0f, 2.0f, 3.0f, 4.0f}), {1, 4}) + array(20.0f);
  array u = random::uniform(low, high, {2, 3, 4}, float32, random::key(4));
  EXPECT_EQ(u.shape(), Shape({2, 3, 4}));
  auto v = to_vector(u);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) {
        double x = v[(b * 3 + i) * 4 + j];
        EXPECT_GE(x, 10.0 * i);
        EXPECT_LT(x, 21.0 + j);
      }
  // Non-contiguous bounds (a transposed low, a negatively strided high).
  array lt = transpose(reshape(array({0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f}), {3, 2}));  // (2, 3)
  array hn = slice(array({9.0f, 8.0f, 7.0f}), {2}, {-4}, {-1}) + array(10.0f);         // 17, 18, 19
  auto w = to_vector(random::uniform(lt, hn, {2, 3}, float32, random::key(5)));
  const double lows[] = {0, 2, 4, 1, 3, 5};
  const double highs[] = {17, 18, 19, 17, 18, 19};
  for (int i = 0; i < 6; ++i) {
    EXPECT_GE(w[i], lows[i]);
    EXPECT_LT(w[i], highs[i]);
  }
  // Bounds that do not broadcast to the shape.
  EXPECT_THROW(random::uniform(low, high, {3, 4, 2}, float32, random::key(4)),
               std::invalid_argument);
  EXPECT_THROW(random::uniform(low, high, {4}, float32, random::key(4)), std::invalid_argument);
  EXPECT_THROW(random::uniform(array({1.0f, 2.0f}), array({1.0f, 2.0f, 3.0f}), {3}),
               std::invalid_argument);
}

TEST(RandomUniform, NeverEqualsHigh) {
  // Bounds where low + (high - low) * u rounds up to high for u close to 1.
  struct Case {
    Dtype dtype;
    double low, high;
  };
  const Case cases[] = {{float32, 1.0, 1.0 + std::ldexp(1.0, -22)},
                        {float32, -1.0, std::ldexp(1.0, 24)},
                        {float32, 0.1, 0.3},
                        {float16, 1000.0, 1001.0},
                        {float16, -2.0, 2048.0},
                        {bfloat16, 3.0, 3.1},
                        {bfloat16, -3.0, 300.0},
                        {float64, 1e16, 1e16 + 4.0}};
  for (const auto& c : cases) {
    array lo = astype(array(c.low, float64), c.dtype);
    array hi = astype(array(c.high, float64), c.dtype);
    double lo_d = to_vector(lo)[0], hi_d = to_vector(hi)[0];
    auto v = to_vector(random::uniform(lo, hi, {kSamples}, c.dtype, random::key(8)));
    double mx = *std::max_element(v.begin(), v.end());
    double mn = *std::min_element(v.begin(), v.end());
    EXPECT_LT(mx, hi_d) << c.dtype << " [" << c.low << ", " << c.high << ")";
    EXPECT_GE(mn, lo_d) << c.dtype << " [" << c.low << ", " << c.high << ")";
  }
  // An empty interval gives low.
  auto e = to_vector(random::uniform(2.0f, 2.0f, {100}, float32, random::key(1)));
  EXPECT_TRUE(std::all_of(e.begin(), e.end(), [](double x) { return x == 2.0; }));
}

TEST(RandomUniform, Errors) {
  array k = random::key(0);
  EXPECT_THROW(random::uniform({3}, int32, k), std::invalid_argument);
  EXPECT_THROW(random::uniform({3}, bool_, k), std::invalid_argument);
  EXPECT_THROW(random::uniform({3}, complex64, k), std::invalid_argument);
  EXPECT_THROW(random::uniform(0, 1, {3}, uint8, k), std::invalid_argument);
  EXPECT_THROW(random::uniform({-2}, float32, k), std::invalid_argument);
}

TEST(RandomUniform, LargeMultithreaded) {
  auto v = to_vector(random::uniform({1 << 21}, float32, random::key(31)));
  auto m = moments(v);
  EXPECT_NEAR(m.mean, 0.5, 2e-3);
  EXPECT_LT(*std::max_element(v.begin(), v.end()), 1.0);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0);
}

TEST(RandomNormal, Distribution) {
  for (Dtype t : {float32, float64}) {
    auto v = to_vector(random::normal({kSamples}, t, random::key(21)));
    auto m = moments(v);
    EXPECT_NEAR(m.mean, 0.0, 0.02) << t;  // SE 0.003
    EXPECT_NEAR(m.var, 1.0, 0.03) << t;   // SE 0.0045
    EXPECT_LT(ks_statistic(v, normal_cdf), kKsBound) << t;
  }
  for (Dtype t : {float16, bfloat16}) {
    array n = random::normal({kSamples}, t, random::key(22));
    EXPECT_EQ(n.dtype(), t);
    auto v = to_vector(n);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }));
    auto m = moments(v);
    EXPECT_NEAR(m.mean, 0.0, 0.02) << t;
    EXPECT_NEAR(m.var, 1.0, 0.04) << t;
  }
}

TEST(RandomNormal, LocScale) {
  auto v = to_vector(random::normal({kSamples}, 3.0f, 0.5f, random::key(23)));
  auto m = moments(v);
  EXPECT_NEAR(m.mean, 3.0, 0.01);
  EXPECT_NEAR(m.var, 0.25, 0.01);
  EXPECT_LT(ks_statistic(v, [](double x) { return normal_cdf((x - 3.0) / 0.5); }), kKsBound);

  // Array parameters broadcast over the shape.
  array loc = reshape(array({-10.0f, 0.0f, 10.0f}), {3, 1});
  array scale = array({1.0f, 2.0f});
  array n = random::normal({3, 2, 20000}, float32, reshape(loc, {3, 1, 1}),
                           reshape(scale, {1, 2, 1}), random::key(24));
  EXPECT_EQ(n.shape(), Shape({3, 2, 20000}));
  auto w = to_vector(n);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      std::vector<double> row(w.begin() + (i * 2 + j) * 20000, w.begin() + (i * 2 + j + 1) * 20000);
      auto mr = moments(row);
      EXPECT_NEAR(mr.mean, -10.0 + 10.0 * i, 0.05 * (j + 1));
      EXPECT_NEAR(std::sqrt(mr.var), 1.0 + j, 0.05 * (j + 1));
    }
  EXPECT_THROW(random::normal({2}, float32, loc, std::nullopt, random::key(1)),
               std::invalid_argument);
}

TEST(RandomNormal, Complex) {
  array z = random::normal({kSamples}, complex64, random::key(25));
  EXPECT_EQ(z.dtype(), complex64);
  auto re = moments(to_vector(real(z)));
  auto im = moments(to_vector(imag(z)));
  EXPECT_NEAR(re.mean, 0.0, 0.01);
  EXPECT_NEAR(im.mean, 0.0, 0.01);
  EXPECT_NEAR(re.var, 0.5, 0.02);
  EXPECT_NEAR(im.var, 0.5, 0.02);
}

TEST(RandomNormal, Errors) {
  EXPECT_THROW(random::normal({3}, int32), std::invalid_argument);
  EXPECT_THROW(random::normal({3}, bool_), std::invalid_argument);
  EXPECT_THROW(random::normal({-3}), std::invalid_argument);
}

TEST(RandomRandint, RangesAndDtypes) {
  array k = random::key(41);
  const Dtype ints[] = {int8, int16, int32, int64, uint8, uint16, uint32, uint64};
  for (Dtype t : ints) {
    array r = random::randint(3, 17, {10000}, t, k);
    EXPECT_EQ(r.dtype(), t);
    EXPECT_EQ(r.shape(), Shape({10000}));
    auto v = to_vector(r);
    EXPECT_EQ(*std::min_element(v.begin(), v.end()), 3.0) << t;
    EXPECT_EQ(*std::max_element(v.begin(), v.end()), 16.0) << t;
  }
  // Signed ranges spanning zero.
  auto s = to_vector(random::randint(-5, 5, {10000}, int8, k));
  EXPECT_EQ(*std::min_element(s.begin(), s.end()), -5.0);
  EXPECT_EQ(*std::max_element(s.begin(), s.end()), 4.0);
  // bool: randint(0, 2) is a fair coin.
  auto b = to_vector(random::randint(0, 2, {10000}, bool_, k));
  double ones = std::count(b.begin(), b.end(), 1.0);
  EXPECT_NEAR(ones / 10000, 0.5, 0.03);
  // Whole-dtype ranges.
  auto u8 = raw<uint8_t>(random::randint(0, 256, {20000}, uint8, k));
  std::set<int> seen(u8.begin(), u8.end());
  EXPECT_EQ(seen.size(), 256u);
  auto i32 = to_vector(random::randint(array(INT32_MIN), array(INT32_MAX), {10000}, int32, k));
  EXPECT_NEAR(moments(i32).mean / 2147483648.0, 0.0, 0.03);
}

TEST(RandomRandint, Distribution) {
  auto v = to_vector(random::randint(0, 10, {kSamples}, int32, random::key(42)));
  EXPECT_LT(chi_square_uniform(v, 10), chi_square_bound(10));
  auto w = to_vector(random::randint(100, 137, {kSamples}, int16, random::key(43)));
  for (auto& x : w)
    x -= 100;
  EXPECT_LT(chi_square_uniform(w, 37), chi_square_bound(37));
}

TEST(RandomRandint, WideRanges) {
  // Ranges beyond 32 bits use the full 64-bit product. Check the spread by 16 buckets.
  const int64_t lo = -(int64_t{1} << 62), hi = (int64_t{1} << 62) + 12345;
  auto r = raw<int64_t>(random::randint(array(lo), array(hi), {kSamples}, int64, random::key(44)));
  std::vector<double> buckets;
  const double width = (static_cast<double>(hi) - static_cast<double>(lo)) / 16;
  for (int64_t x : r) {
    ASSERT_GE(x, lo);
    ASSERT_LT(x, hi);
    buckets.push_back(std::min(15.0, std::floor((static_cast<double>(x) - lo) / width)));
  }
  EXPECT_LT(chi_square_uniform(buckets, 16), chi_square_bound(16));
  // Almost all of uint64.
  auto u = raw<uint64_t>(
      random::randint(array(uint64_t{0}), array(UINT64_MAX), {kSamples}, uint64, random::key(45)));
  size_t top = std::count_if(u.begin(), u.end(), [](uint64_t x) { return x >> 63; });
  EXPECT_NEAR(static_cast<double>(top) / kSamples, 0.5, 0.01);
  // Full int64 range minus one.
  auto f = raw<int64_t>(
      random::randint(array(INT64_MIN), array(INT64_MAX), {kSamples}, int64, random::key(46)));
  size_t neg = std::count_if(f.begin(), f.end(), [](int64_t x) { return x < 0; });
  EXPECT_NEAR(static_cast<double>(neg) / kSamples, 0.5, 0.01);
}

TEST(RandomRandint, BoundsBroadcastAndEdgeCases) {
  array low = reshape(array({0, 100, 1000}), {3, 1});
  array high = array({10, 20});
  auto v = to_vector(random::randint(low, high + low, {3, 2}, int32, random::key(46)));
  const double lows[] = {0, 0, 100, 100, 1000, 1000};
  const double highs[] = {10, 20, 110, 120, 1010, 1020};
  for (int i = 0; i < 6; ++i) {
    EXPECT_GE(v[i], lows[i]);
    EXPECT_LT(v[i], highs[i]);
  }
  // high <= low gives low.
  auto e = to_vector(random::randint(7, 7, {50}, int32, random::key(47)));
  EXPECT_TRUE(std::all_of(e.begin(), e.end(), [](double x) { return x == 7; }));
  auto rev = to_vector(random::randint(9, 2, {50}, int32, random::key(47)));
  EXPECT_TRUE(std::all_of(rev.begin(), rev.end(), [](double x) { return x == 9; }));
  // Floating bounds: the integers of [0.5, 3.5) are 1, 2, 3.
  auto fl = to_vector(random::randint(0.5f, 3.5f, {5000}, int32, random::key(48)));
  EXPECT_EQ(*std::min_element(fl.begin(), fl.end()), 1.0);
  EXPECT_EQ(*std::max_element(fl.begin(), fl.end()), 3.0);
  // Bounds beyond the dtype are clipped to it.
  auto c = to_vector(random::randint(-1000, 1000, {5000}, uint8, random::key(49)));
  EXPECT_GE(*std::min_element(c.begin(), c.end()), 0.0);
  EXPECT_LE(*std::max_element(c.begin(), c.end()), 255.0);
  EXPECT_EQ(random::randint(0, 5, {0, 2}, int32, random::key(1)).shape(), Shape({0, 2}));
}

TEST(RandomRandint, Errors) {
  EXPECT_THROW(random::randint(0, 10, {3}, float32), std::invalid_argument);
  EXPECT_THROW(random::randint(0, 10, {3}, complex64), std::invalid_argument);
  EXPECT_THROW(random::randint(array({0, 1}), array({2, 3, 4}), {3}), std::invalid_argument);
  EXPECT_THROW(random::randint(array({0, 1}), array(5), {3}), std::invalid_argument);
}

TEST(RandomBernoulli, Frequency) {
  auto v = to_vector(random::bernoulli(0.3f, {kSamples}, random::key(51)));
  double freq = std::count(v.begin(), v.end(), 1.0) / static_cast<double>(kSamples);
  EXPECT_NEAR(freq, 0.3, 0.01);  // SE 0.0015
  array b = random::bernoulli(array(0.7f), {10}, random::key(52));
  EXPECT_EQ(b.dtype(), bool_);
  EXPECT_EQ(b.shape(), Shape({10}));
  auto zero = to_vector(random::bernoulli(0.0f, {1000}, random::key(53)));
  EXPECT_TRUE(std::all_of(zero.begin(), zero.end(), [](double x) { return x == 0; }));
  auto one = to_vector(random::bernoulli(1.0f, {1000}, random::key(53)));
  EXPECT_TRUE(std::all_of(one.begin(), one.end(), [](double x) { return x == 1; }));
  // Defaults: p = 0.5, shape of p.
  // With an array argument, bernoulli(x) reads x as p (as in MLX); a key alone goes in an optional.
  EXPECT_EQ(random::bernoulli(std::optional<array>(random::key(1))).shape(), Shape{});
  EXPECT_EQ(random::bernoulli().dtype(), bool_);
  EXPECT_EQ(random::bernoulli(array({0.1f, 0.9f}), random::key(1)).shape(), Shape({2}));
  auto f64 = to_vector(random::bernoulli(array(0.25, float64), {kSamples}, random::key(54)));
  EXPECT_NEAR(std::count(f64.begin(), f64.end(), 1.0) / static_cast<double>(kSamples), 0.25, 0.01);
}

TEST(RandomBernoulli, BroadcastP) {
  array p = reshape(array({0.1f, 0.5f, 0.9f}), {3, 1});
  auto v = to_vector(random::bernoulli(p, {3, 20000}, random::key(55)));
  const double ps[] = {0.1, 0.5, 0.9};
  for (int i = 0; i < 3; ++i) {
    double freq = std::count(v.begin() + i * 20000, v.begin() + (i + 1) * 20000, 1.0) / 20000.0;
    EXPECT_NEAR(freq, ps[i], 0.02);
  }
  // p as a strided view.
  array pt = slice(array({0.9f, 0.0f, 0.1f, 0.0f}), {0}, {4}, {2});  // 0.9, 0.1
  auto w = to_vector(random::bernoulli(pt, {10000, 2}, random::key(56)));
  double c0 = 0, c1 = 0;
  for (int i = 0; i < 10000; ++i) {
    c0 += w[2 * i];
    c1 += w[2 * i + 1];
  }
  EXPECT_NEAR(c0 / 10000, 0.9, 0.02);
  EXPECT_NEAR(c1 / 10000, 0.1, 0.02);
}

TEST(RandomBernoulli, Errors) {
  EXPECT_THROW(random::bernoulli(array(1), Shape{3}), std::invalid_argument);
  EXPECT_THROW(random::bernoulli(array({0.1f, 0.2f}), Shape{3}), std::invalid_argument);
  EXPECT_THROW(random::bernoulli(array({0.1f, 0.2f}), Shape{3, 1}), std::invalid_argument);
}

TEST(RandomTruncatedNormal, BoundsAndMoments) {
  const double a = -1.0, b = 2.0;
  array t =
      random::truncated_normal(array(-1.0f), array(2.0f), {kSamples}, float32, random::key(61));
  EXPECT_EQ(t.dtype(), float32);
  auto v = to_vector(t);
  EXPECT_GE(*std::min_element(v.begin(), v.end()), a);
  EXPECT_LE(*std::max_element(v.begin(), v.end()), b);
  // Mean of N(0,1) on (a, b): (phi(a) - phi(b)) / (Phi(b) - Phi(a)).
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * std::numbers::pi); };
  double z = normal_cdf(b) - normal_cdf(a);
  double mean = (phi(a) - phi(b)) / z;
  double var = 1 + (a * phi(a) - b * phi(b)) / z - mean * mean;
  auto m = moments(v);
  EXPECT_NEAR(m.mean, mean, 0.01);
  EXPECT_NEAR(m.var, var, 0.01);
  EXPECT_LT(ks_statistic(v, [&](double x) { return (normal_cdf(x) - normal_cdf(a)) / z; }),
            kKsBound);
}

TEST(RandomTruncatedNormal, BroadcastShapesAndDtypes) {
  array lower = reshape(array({-2.0f, 0.0f, 1.0f}), {3, 1});
  array upper = array({0.5f, 3.0f});
  array t = random::truncated_normal(lower, upper, float32, random::key(62));
  EXPECT_EQ(t.shape(), Shape({3, 2}));
  for (Dtype dt : kFloatDtypes) {
    array u = random::truncated_normal(lower, upper + array(1.0f), {4, 3, 2}, dt, random::key(63));
    EXPECT_EQ(u.dtype(), dt);
    EXPECT_EQ(u.shape(), Shape({4, 3, 2}));
    auto v = to_vector(u);
    auto lo = to_vector(astype(broadcast_to(lower, {4, 3, 2}), dt));
    auto hi = to_vector(astype(broadcast_to(upper + array(1.0f), {4, 3, 2}), dt));
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_GE(v[i], lo[i]) << dt;
      EXPECT_LE(v[i], hi[i]) << dt;
    }
  }
  EXPECT_THROW(random::truncated_normal(lower, upper, {2}, float32), std::invalid_argument);
  EXPECT_THROW(random::truncated_normal(lower, upper, {3, 2}, int32), std::invalid_argument);
}

TEST(RandomGumbel, Moments) {
  array g = random::gumbel({kSamples}, float32, random::key(71));
  EXPECT_EQ(g.dtype(), float32);
  auto v = to_vector(g);
  EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }));
  auto m = moments(v);
  EXPECT_NEAR(m.mean, std::numbers::egamma, 0.02);  // SE 0.004
  EXPECT_NEAR(m.var, std::numbers::pi * std::numbers::pi / 6, 0.05);
  EXPECT_LT(ks_statistic(v, [](double x) { return std::exp(-std::exp(-x)); }), kKsBound);
  for (Dtype t : kFloatDtypes) {
    array h = random::gumbel({100}, t, random::key(72));
    EXPECT_EQ(h.dtype(), t);
    auto w = to_vector(h);
    EXPECT_TRUE(std::all_of(w.begin(), w.end(), [](double x) { return std::isfinite(x); }));
  }
  EXPECT_THROW(random::gumbel({3}, int32), std::invalid_argument);
}

TEST(RandomLaplace, Moments) {
  auto v = to_vector(random::laplace({kSamples}, float32, 1.5f, 2.0f, random::key(81)));
  auto m = moments(v);
  EXPECT_NEAR(m.mean, 1.5, 0.05);  // SE 0.009
  EXPECT_NEAR(m.var, 8.0, 0.3);
  auto cdf = [](double x) {
    double z = (x - 1.5) / 2.0;
    return z < 0 ? 0.5 * std::exp(z) : 1 - 0.5 * std::exp(-z);
  };
  EXPECT_LT(ks_statistic(v, cdf), kKsBound);
  for (Dtype t : kFloatDtypes) {
    array l = random::laplace({100}, t, random::key(82));
    EXPECT_EQ(l.dtype(), t);
    auto w = to_vector(l);
    EXPECT_TRUE(std::all_of(w.begin(), w.end(), [](double x) { return std::isfinite(x); }));
  }
  EXPECT_EQ(random::laplace({2, 3}, random::key(1)).shape(), Shape({2, 3}));
  EXPECT_THROW(random::laplace({3}, int32), std::invalid_argument);
}

TEST(RandomPermutation, IsAPermutation) {
  array p = random::permutation(1000, random::key(91));
  EXPECT_EQ(p.dtype(), int32);
  EXPECT_EQ(p.shape(), Shape({1000}));
  auto v = to_vector(p);
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(sorted[i], i);
  // Not the identity, reproducible, and different for another key.
  int fixed = 0;
  for (int i = 0; i < 1000; ++i)
    fixed += v[i] == i;
  EXPECT_LT(fixed, 10);
  EXPECT_EQ(to_vector(random::permutation(1000, random::key(91))), v);
  EXPECT_NE(to_vector(random::permutation(1000, random::key(92))), v);
  EXPECT_EQ(random::permutation(0, random::key(1)).size(), 0u);
  EXPECT_EQ(to_vector(random::permutation(1, random::key(1))), std::vector<double>{0});
  // Large (multithreaded bits and sort).
  auto big = raw<int32_t>(random::permutation(1 << 20, random::key(93)));
  std::vector<char> seen(1 << 20, 0);
  for (int32_t x : big) {
    ASSERT_GE(x, 0);
    ASSERT_LT(x, 1 << 20);
    seen[x] = 1;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 1 << 20);
}

TEST(RandomPermutation, AlongAxis) {
  // Rows (axis 0) or columns (axis 1) move as wholes.
  array x = reshape(arange(24, int32), {4, 6});
  array k = random::key(94);
  auto rows = to_vector(random::permutation(x, 0, k));
  std::set<int> starts;
  for (int i = 0; i < 4; ++i) {
    int r0 = static_cast<int>(rows[i * 6]);
    EXPECT_EQ(r0 % 6, 0);
    starts.insert(r0);
    for (int j = 0; j < 6; ++j)
      EXPECT_EQ(rows[i * 6 + j], r0 + j);
  }
  EXPECT_EQ(starts.size(), 4u);
  // Columns, on a transposed (non-contiguous) view, with a negative axis.
  array xt = transpose(x);  // (6, 4), xt[i][j] = 6 j + i
  auto cols = to_vector(random::permutation(xt, -1, k));
  std::set<int> picked;
  for (int j = 0; j < 4; ++j) {
    int c = static_cast<int>(cols[j]) / 6;  // the original column now at j
    picked.insert(c);
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(cols[i * 4 + j], 6 * c + i);
  }
  EXPECT_EQ(picked.size(), 4u);
  // Same key, same permutation of arange.
  auto p = to_vector(random::permutation(4, k));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(rows[i * 6] / 6, p[i]);
  // Other dtypes.
  array f = astype(arange(10, int32), float16);
  auto pf = to_vector(random::permutation(f, 0, k));
  std::sort(pf.begin(), pf.end());
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(pf[i], i);
}

TEST(RandomPermutation, Uniformity) {
  // Where element 0 of arange(5) lands, over many keys: each position with probability 1/5.
  array keys = random::split(random::key(95), 5000);
  auto kv = raw<uint32_t>(keys);
  std::vector<double> where0;
  for (int i = 0; i < 5000; ++i) {
    auto p = raw<int32_t>(random::permutation(5, array(kv.data() + 2 * i, {2}, uint32)));
    where0.push_back(std::find(p.begin(), p.end(), 0) - p.begin());
  }
  EXPECT_LT(chi_square_uniform(where0, 5), chi_square_bound(5));
}

TEST(RandomPermutation, Errors) {
  EXPECT_THROW(random::permutation(-1), std::invalid_argument);
  EXPECT_THROW(random::permutation(array(3.0f)), std::invalid_argument);
  EXPECT_THROW(random::permutation(array({1, 2}), 1), std::invalid_argument);
  EXPECT_THROW(random::permutation(array({1, 2}), 0, array({1, 2}, int32)), std::invalid_argument);
}

TEST(RandomCategorical, Frequencies) {
  // Unnormalized logits: log of 1, 2, 3, 4 plus a constant.
  const double w[] = {1, 2, 3, 4};
  std::vector<double> logits;
  for (double x : w)
    logits.push_back(std::log(x) + 7.0);
  array l = array(logits.data(), {4}, float64);
  array c = random::categorical(astype(l, float32), -1, kSamples, random::key(101));
  EXPECT_EQ(c.dtype(), uint32);
  EXPECT_EQ(c.shape(), Shape({kSamples}));
  auto v = to_vector(c);
  std::vector<double> counts(4, 0);
  for (double x : v)
    counts[static_cast<int>(x)] += 1;
  double chi2 = 0;
  for (int i = 0; i < 4; ++i) {
    double e = kSamples * w[i] / 10.0;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  EXPECT_LT(chi2, chi_square_bound(4));
  // A -inf logit is never drawn.
  array masked = array({0.0f, -std::numeric_limits<float>::infinity(), 0.0f});
  auto m = to_vector(random::categorical(masked, 0, 10000, random::key(102)));
  EXPECT_EQ(std::count(m.begin(), m.end(), 1.0), 0);
  EXPECT_NEAR(std::count(m.begin(), m.end(), 0.0) / 10000.0, 0.5, 0.03);
}

TEST(RandomCategorical, ShapesAndAxes) {
  // Two distributions along axis 0 of a (3, 2) array (columns), one peaked on each end.
  array logits = transpose(array({10.0f, 0.0f, 0.0f, 0.0f, 0.0f, 10.0f}, {2, 3}));  // (3, 2)
  array c = random::categorical(logits, 0, random::key(103));
  EXPECT_EQ(c.shape(), Shape({2}));
  array many = random::categorical(logits, 0, 2000, random::key(104));
  EXPECT_EQ(many.shape(), Shape({2, 2000}));
  auto v = to_vector(many);
  // exp(10) / (exp(10) + 2): the peak is drawn all but about 0.01% of the time.
  EXPECT_GT(std::count(v.begin(), v.begin() + 2000, 0.0), 1990);
  EXPECT_GT(std::count(v.begin() + 2000, v.end(), 2.0), 1990);
  // An explicit shape broadcasts the reduced shape (2) to (500, 2).
  array shaped = random::categorical(logits, 0, Shape{500, 2}, random::key(105));
  EXPECT_EQ(shaped.shape(), Shape({500, 2}));
  auto sv = to_vector(shaped);
  int col0 = 0, col1 = 0;
  for (int i = 0; i < 500; ++i) {
    col0 += sv[2 * i] == 0;
    col1 += sv[2 * i + 1] == 2;
  }
  EXPECT_GT(col0, 495);
  EXPECT_GT(col1, 495);
  // Middle axis of a 3-d batch, float64 and float16 logits.
  for (Dtype t : {float64, float16, bfloat16}) {
    array l3 = astype(zeros({2, 5, 3}), t);
    array c3 = random::categorical(l3, 1, random::key(106));
    EXPECT_EQ(c3.shape(), Shape({2, 3}));
    auto c3v = to_vector(c3);
    EXPECT_TRUE(std::all_of(c3v.begin(), c3v.end(), [](double x) { return x >= 0 && x < 5; }));
  }
  // Uniform logits over 10 classes, batched: chi-square on the pooled draws.
  auto u = to_vector(random::categorical(zeros({10, 10}), 1, 10000, random::key(107)));
  EXPECT_LT(chi_square_uniform(u, 10), chi_square_bound(10));
  EXPECT_EQ(random::categorical(zeros({4}), 0, 0, random::key(1)).shape(), Shape({0}));
}

TEST(RandomCategorical, Errors) {
  array l = zeros({3, 4});
  EXPECT_THROW(random::categorical(l, 2), std::invalid_argument);
  EXPECT_THROW(random::categorical(array(1.0f)), std::invalid_argument);
  EXPECT_THROW(random::categorical(l, -1, Shape{2}), std::invalid_argument);
  EXPECT_THROW(random::categorical(l, -1, Shape{3, 1}), std::invalid_argument);
  EXPECT_THROW(random::categorical(l, -1, -2), std::invalid_argument);
  EXPECT_THROW(random::categorical(astype(l, complex64)), std::invalid_argument);
}

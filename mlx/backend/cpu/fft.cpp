// CPU FFT: one plan per length, cached. Lengths whose prime factors are all small run a
// recursive mixed-radix Cooley-Tukey (decimation in time; radix-4/2/3/5 butterflies and a
// generic odd-prime butterfly up to 31) over one table of twiddles; lengths with a large prime
// factor use Bluestein's chirp-z algorithm (a circular convolution through a 2-3-5-smooth FFT).
// Inverse transforms conjugate around the forward one; real transforms run the complex
// transform of the real line (r2c) or of its Hermitian extension (c2r), at half the length
// for even lengths (the samples paired as even + i odd). Twiddles are computed
// in double precision and stored as complex64.
#include "mlx/primitives/fft.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <optional>

#include "mlx/backend/cpu/dense.h"
#include "mlx/backend/cpu/scratch.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core {

namespace {

using namespace cpu;
using cfloat = std::complex<float>;

// Largest prime factor the mixed-radix path handles (a radix-p stage costs p operations per
// element); beyond it Bluestein's three transforms of a 2-3-5-smooth length are cheaper.
constexpr int kMaxRadix = 31;

class Plan {
 public:
  explicit Plan(int64_t n);
  // out[k] = sum_j in[j] exp(-2 pi i jk / n); `in` and `out` hold n values and do not alias;
  // `work` holds work_size() values.
  void forward(const cfloat* in, cfloat* out, cfloat* work) const;
  int64_t work_size() const { return bluestein_ ? 2 * m_ + sub_->work_size() : 0; }

 private:
  void recurse(const cfloat* in, int64_t stride, cfloat* out, int64_t n, size_t level) const;

  int64_t n_;
  std::vector<int> factors_;
  std::vector<cfloat> twiddles_;  // exp(-2 pi i j / n), j < n
  // Bluestein: chirp exp(-i pi k^2 / n), k < n, and the DFT of the conjugate chirp padded to m.
  bool bluestein_ = false;
  int64_t m_ = 0;
  std::vector<cfloat> chirp_, kernel_fft_;
  std::shared_ptr<const Plan> sub_;
};

std::shared_ptr<const Plan> get_plan(int64_t n) {
  static std::mutex mutex;
  static std::map<int64_t, std::shared_ptr<const Plan>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(n);
    if (it != cache.end()) {
      return it->second;
    }
  }
  auto plan = std::make_shared<const Plan>(n);
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(n, plan).first->second;
}

// The smallest 2^a 3^b 5^c >= n: a length the butterflies handle directly.
int64_t smooth_length(int64_t n) {
  int64_t best = 1;
  while (best < n) {
    best *= 2;
  }
  for (int64_t p5 = 1; p5 < best; p5 *= 5) {
    for (int64_t p35 = p5; p35 < best; p35 *= 3) {
      int64_t v = p35;
      while (v < n) {
        v *= 2;
      }
      best = std::min(best, v);
    }
  }
  return best;
}

// exp(-2 pi i k / n) for k <= n / 2: the twiddles that split a real transform of even length n
// into a complex transform of length n / 2, cached per n.
std::shared_ptr<const std::vector<cfloat>> get_half_twiddles(int64_t n) {
  static std::mutex mutex;
  static std::map<int64_t, std::shared_ptr<const std::vector<cfloat>>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& entry = cache[n];
  if (!entry) {
    auto tw = std::make_shared<std::vector<cfloat>>(n / 2 + 1);
    for (int64_t k = 0; k <= n / 2; ++k) {
      double phase = -2 * std::numbers::pi * static_cast<double>(k) / n;
      (*tw)[k] = cfloat(std::cos(phase), std::sin(phase));
    }
    entry = std::move(tw);
  }
  return entry;
}

Plan::Plan(int64_t n) : n_(n) {
  int64_t rest = n;
  // Powers of two as radix 4, an odd one out of radix 2 first (the top stage), so that the
  // many small transforms at the bottom of the recursion are radix-4 ones.
  int twos = 0;
  while (rest % 2 == 0) {
    ++twos;
    rest /= 2;
  }
  if (twos % 2 == 1) {
    factors_.push_back(2);
  }
  for (int i = 0; i < twos / 2; ++i) {
    factors_.push_back(4);
  }
  for (int64_t p = 2; p * p <= rest; ++p) {
    while (rest % p == 0) {
      factors_.push_back(static_cast<int>(p));
      rest /= p;
    }
  }
  if (rest > 1) {
    factors_.push_back(static_cast<int>(std::min<int64_t>(rest, INT32_MAX)));
  }
  for (int p : factors_) {
    bluestein_ = bluestein_ || p > kMaxRadix;
  }
  if (bluestein_) {
    factors_.clear();
    m_ = smooth_length(2 * n - 1);
    chirp_.resize(n);
    for (int64_t k = 0; k < n; ++k) {
      // k^2 mod 2n keeps the angle exact for large k.
      double phase = std::numbers::pi * static_cast<double>((k * k) % (2 * n)) / n;
      chirp_[k] = cfloat(std::cos(phase), -std::sin(phase));
    }
    sub_ = get_plan(m_);
    std::vector<cfloat> b(m_, cfloat(0)), work(sub_->work_size());
    for (int64_t k = 0; k < n; ++k) {
      b[k] = std::conj(chirp_[k]);
      if (k > 0) {
        b[m_ - k] = std::conj(chirp_[k]);
      }
    }
    kernel_fft_.resize(m_);
    sub_->forward(b.data(), kernel_fft_.data(), work.data());
    return;
  }
  twiddles_.resize(n);
  for (int64_t j = 0; j < n; ++j) {
    double phase = -2 * std::numbers::pi * static_cast<double>(j) / n;
    twiddles_[j] = cfloat(std::cos(phase), std::sin(phase));
  }
}

void Plan::forward(const cfloat* in, cfloat* out, cfloat* work) const {
  if (!bluestein_) {
    recurse(in, 1, out, n_, 0);
    return;
  }
  // X[k] = chirp[k] * sum_j (x[j] chirp[j]) conj(chirp[k - j]): a circular convolution of
  // length m, computed as IDFT(DFT(a) * DFT(b)) with IDFT(y) = conj(DFT(conj(y))) / m.
  cfloat* a = work;
  cfloat* fa = work + m_;
  cfloat* sub_work = work + 2 * m_;
  for (int64_t k = 0; k < n_; ++k) {
    a[k] = in[k] * chirp_[k];
  }
  std::fill(a + n_, a + m_, cfloat(0));
  sub_->forward(a, fa, sub_work);
  for (int64_t k = 0; k < m_; ++k) {
    fa[k] = std::conj(fa[k] * kernel_fft_[k]);
  }
  sub_->forward(fa, a, sub_work);
  const float inv_m = 1.0f / static_cast<float>(m_);
  for (int64_t k = 0; k < n_; ++k) {
    out[k] = std::conj(a[k]) * inv_m * chirp_[k];
  }
}

void Plan::recurse(const cfloat* in, int64_t stride, cfloat* out, int64_t n, size_t level) const {
  if (n == 1) {
    out[0] = in[0];
    return;
  }
  const int p = factors_[level];
  const int64_t m = n / p;
  if (m == 1) {
    // The last stage reads its p inputs directly (no calls for length-1 transforms).
    for (int r = 0; r < p; ++r) {
      out[r] = in[r * stride];
    }
  } else {
    for (int r = 0; r < p; ++r) {
      recurse(in + r * stride, stride * p, out + r * m, m, level + 1);
    }
  }
  // Twiddle W_n^x is twiddles_[x * (n_ / n)].
  const int64_t tw_step = n_ / n;
  const cfloat* tw = twiddles_.data();
  if (p == 2) {
    for (int64_t k = 0; k < m; ++k) {
      cfloat a = out[k], b = out[m + k] * tw[k * tw_step];
      out[k] = a + b;
      out[m + k] = a - b;
    }
  } else if (p == 4) {
    for (int64_t k = 0; k < m; ++k) {
      cfloat t0 = out[k];
      cfloat t1 = out[m + k] * tw[k * tw_step];
      cfloat t2 = out[2 * m + k] * tw[2 * k * tw_step];
      cfloat t3 = out[3 * m + k] * tw[3 * k * tw_step];
      cfloat s02 = t0 + t2, d02 = t0 - t2, s13 = t1 + t3, d13 = t1 - t3;
      cfloat d13_i(d13.imag(), -d13.real());  // -i * d13
      out[k] = s02 + s13;
      out[m + k] = d02 + d13_i;
      out[2 * m + k] = s02 - s13;
      out[3 * m + k] = d02 - d13_i;
    }
  } else if (p == 3) {
    const float c = -0.5f, sn = -static_cast<float>(std::sqrt(3.0) / 2);  // W_3 = c + i sn
    for (int64_t k = 0; k < m; ++k) {
      cfloat t0 = out[k];
      cfloat t1 = out[m + k] * tw[k * tw_step];
      cfloat t2 = out[2 * m + k] * tw[2 * k * tw_step];
      cfloat s = t1 + t2, d = t1 - t2;
      cfloat base = t0 + c * s;
      cfloat rot(-sn * d.imag(), sn * d.real());  // i * sn * d
      out[k] = t0 + s;
      out[m + k] = base + rot;
      out[2 * m + k] = base - rot;
    }
  } else if (p == 5) {
    const float c1 = static_cast<float>(std::cos(2 * std::numbers::pi / 5));
    const float c2 = static_cast<float>(std::cos(4 * std::numbers::pi / 5));
    const float s1 = static_cast<float>(std::sin(2 * std::numbers::pi / 5));
    const float s2 = static_cast<float>(std::sin(4 * std::numbers::pi / 5));
    auto minus_i = [](cfloat z) { return cfloat(z.imag(), -z.real()); };
    for (int64_t k = 0; k < m; ++k) {
      cfloat t0 = out[k];
      cfloat t1 = out[m + k] * tw[k * tw_step];
      cfloat t2 = out[2 * m + k] * tw[2 * k * tw_step];
      cfloat t3 = out[3 * m + k] * tw[3 * k * tw_step];
      cfloat t4 = out[4 * m + k] * tw[4 * k * tw_step];
      cfloat a1 = t1 + t4, b1 = t1 - t4, a2 = t2 + t3, b2 = t2 - t3;
      cfloat r1 = t0 + c1 * a1 + c2 * a2, r2 = t0 + c2 * a1 + c1 * a2;
      cfloat i1 = minus_i(s1 * b1 + s2 * b2), i2 = minus_i(s2 * b1 - s1 * b2);
      out[k] = t0 + a1 + a2;
      out[m + k] = r1 + i1;
      out[2 * m + k] = r2 + i2;
      out[3 * m + k] = r2 - i2;
      out[4 * m + k] = r1 - i1;
    }
  } else {
    // Generic radix: X[k + q m] = sum_r t_r W_p^{rq}, W_p^x = twiddles_[(x mod p) * (n_ / p)].
    cfloat t[kMaxRadix];
    const int64_t wp_step = n_ / p;
    for (int64_t k = 0; k < m; ++k) {
      for (int r = 0; r < p; ++r) {
        t[r] = out[r * m + k] * tw[r * k * tw_step];
      }
      for (int q = 0; q < p; ++q) {
        cfloat acc = t[0];
        int64_t x = 0;
        for (int r = 1; r < p; ++r) {
          x += q;
          if (x >= p) {
            x -= p;
          }
          acc += t[r] * tw[x * wp_step];
        }
        out[q * m + k] = acc;
      }
    }
  }
}

// Runs one line at a time: lines of the (outer, length, inner) contiguous input are gathered,
// transformed and scattered into the (outer, out length, inner) output.
template <typename In, typename Out, typename Line>
void for_each_line(const array& in, array& out, int axis, Line&& line) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) {
    outer *= in.shape(i);
  }
  for (int i = axis + 1; i < static_cast<int>(in.ndim()); ++i) {
    inner *= in.shape(i);
  }
  const int64_t len_in = in.shape(axis), len_out = out.shape(axis);
  const In* src = in.data<In>();
  Out* dst = out.data<Out>();
  // Lines along a non-last axis are gathered kBlock neighbours at a time, so that every read
  // and write touches kBlock contiguous elements instead of one per cache line.
  constexpr int64_t kBlock = 16;
  const int64_t block = std::min(inner, kBlock), blocks_per_outer = (inner + block - 1) / block;
  const int64_t units = outer * blocks_per_outer;
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / (8 * block * (len_in + len_out) + 1));
  parallel_for(units, grain, [&](int64_t u0, int64_t u1) {
    std::vector<In> a(block * len_in);
    std::vector<Out> b(block * len_out);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t o = u / blocks_per_outer, i0 = u % blocks_per_outer * block;
      const int64_t nb = std::min(block, inner - i0);
      const In* s = src + o * len_in * inner + i0;
      for (int64_t j = 0; j < len_in; ++j) {
        for (int64_t q = 0; q < nb; ++q) {
          a[q * len_in + j] = s[j * inner + q];
        }
      }
      for (int64_t q = 0; q < nb; ++q) {
        line(a.data() + q * len_in, b.data() + q * len_out);
      }
      Out* d = dst + o * len_out * inner + i0;
      for (int64_t j = 0; j < len_out; ++j) {
        for (int64_t q = 0; q < nb; ++q) {
          d[j * inner + q] = b[q * len_out + j];
        }
      }
    }
  });
}

}  // namespace

void FFT::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  std::optional<array> holder;
  const array& in = row_contiguous(inputs[0], inputs[0].dtype(), holder);
  const int64_t n = n_;
  const bool inverse = inverse_;
  // Even real transforms run a complex transform of half the length on the samples paired as
  // (even + i odd), split with the half twiddles.
  const bool half = real_ && n % 2 == 0;
  auto plan = get_plan(half ? n / 2 : n);
  auto tw = half ? get_half_twiddles(n) : nullptr;
  // Per-thread buffers for the transform itself.
  auto run = [&](auto&& body) {
    thread_local std::vector<cfloat> x, y, work;
    x.resize(n);
    y.resize(n);
    work.resize(plan->work_size());
    body(x.data(), y.data(), work.data());
  };
  if (!real_) {
    for_each_line<cfloat, cfloat>(in, out, axis_, [&](const cfloat* a, cfloat* b) {
      if (!inverse) {
        run([&](cfloat*, cfloat*, cfloat* w) { plan->forward(a, b, w); });
        return;
      }
      run([&](cfloat* x, cfloat*, cfloat* w) {
        for (int64_t j = 0; j < n; ++j) {
          x[j] = std::conj(a[j]);
        }
        plan->forward(x, b, w);
        for (int64_t j = 0; j < n; ++j) {
          b[j] = std::conj(b[j]);
        }
      });
    });
  } else if (!inverse && half) {
    // Z = DFT(x_even + i x_odd); X[k] = E[k] + W^k O[k] with E = (Z[k] + conj(Z[m - k])) / 2
    // and O = (Z[k] - conj(Z[m - k])) / 2i, for k = 0..m.
    const int64_t m = n / 2;
    const cfloat* t = tw->data();
    for_each_line<float, cfloat>(in, out, axis_, [&](const float* a, cfloat* b) {
      run([&](cfloat* x, cfloat* y, cfloat* w) {
        for (int64_t j = 0; j < m; ++j) {
          x[j] = cfloat(a[2 * j], a[2 * j + 1]);
        }
        plan->forward(x, y, w);
        for (int64_t k = 0; k <= m; ++k) {
          cfloat zk = y[k == m ? 0 : k], zc = std::conj(y[k == 0 ? 0 : m - k]);
          cfloat e = 0.5f * (zk + zc), d = zk - zc;
          cfloat o(0.5f * d.imag(), -0.5f * d.real());  // d / 2i
          b[k] = e + t[k] * o;
        }
      });
    });
  } else if (!inverse) {
    for_each_line<float, cfloat>(in, out, axis_, [&](const float* a, cfloat* b) {
      run([&](cfloat* x, cfloat* y, cfloat* w) {
        for (int64_t j = 0; j < n; ++j) {
          x[j] = cfloat(a[j], 0);
        }
        plan->forward(x, y, w);
        std::memcpy(b, y, (n / 2 + 1) * sizeof(cfloat));
      });
    });
  } else if (half) {
    // The split undone: E[k] = (X[k] + conj(X[m - k])) / 2, O[k] = (X[k] - conj(X[m - k]))
    // conj(W^k) / 2, Z = E + i O; then y_even + i y_odd = 2 IDFT_m(Z) (unnormalized), with
    // IDFT(Z) = conj(DFT(conj(Z))). The imaginary parts of X[0] and X[m] are ignored.
    const int64_t m = n / 2;
    const cfloat* t = tw->data();
    for_each_line<cfloat, float>(in, out, axis_, [&](const cfloat* a, float* b) {
      run([&](cfloat* x, cfloat* y, cfloat* w) {
        const cfloat x0(a[0].real(), 0), xm(a[m].real(), 0);
        for (int64_t k = 0; k < m; ++k) {
          cfloat xk = k == 0 ? x0 : a[k], xr = std::conj(k == 0 ? xm : a[m - k]);
          cfloat e = 0.5f * (xk + xr), o = 0.5f * (xk - xr) * std::conj(t[k]);
          cfloat z = e + cfloat(-o.imag(), o.real());  // e + i o
          x[k] = std::conj(z);
        }
        plan->forward(x, y, w);
        for (int64_t j = 0; j < m; ++j) {
          b[2 * j] = 2 * y[j].real();
          b[2 * j + 1] = -2 * y[j].imag();
        }
      });
    });
  } else {
    // IDFT(X) = conj(DFT(conj(X))): conj of the Hermitian extension is the extension of conj.
    const int64_t bins = n / 2 + 1;
    for_each_line<cfloat, float>(in, out, axis_, [&](const cfloat* a, float* b) {
      run([&](cfloat* x, cfloat* y, cfloat* w) {
        for (int64_t k = 0; k < bins; ++k) {
          x[k] = std::conj(a[k]);
        }
        for (int64_t k = bins; k < n; ++k) {
          x[k] = a[n - k];
        }
        plan->forward(x, y, w);
        for (int64_t j = 0; j < n; ++j) {
          b[j] = y[j].real();
        }
      });
    });
  }
}

}  // namespace mlx::core

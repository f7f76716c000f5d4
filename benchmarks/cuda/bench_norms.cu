// Checks and times the row kernels of mlx/backend/cuda/norm_kernels.cuh and
// softmax_kernels.cuh on their own, without the library:
//   nvcc -O3 -arch=sm_90 -std=c++17 -I. benchmarks/cuda/bench_norms.cu -o /tmp/b && /tmp/b
// (1) every kernel against a float64 CPU reference over odd and large row lengths, float32,
// bfloat16, float16 and float64, with and without weight and bias, special values for softmax
// and logsumexp, and each launch shape the timings compare; (2) bandwidth of the bf16 forward
// kernels at [16384, 4096] and the backward kernels at [16384, 768], for the launch shape the
// library picks and its alternatives. Exits 1 if a check fails, 2 on a CUDA error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "benchmarks/cuda/device_buffer.cuh"
#include "mlx/backend/cuda/norm_kernels.cuh"
#include "mlx/backend/cuda/softmax_kernels.cuh"

using namespace mlx::core::cu;
using namespace harness;
using bf16 = __nv_bfloat16;

namespace {

template <typename T>
struct TypeInfo;
template <>
struct TypeInfo<float> {
  static constexpr const char* name = "float32";
  static constexpr double rtol = 2e-5, atol = 2e-6;
};
template <>
struct TypeInfo<double> {
  static constexpr const char* name = "float64";
  static constexpr double rtol = 1e-10, atol = 1e-11;
};
template <>
struct TypeInfo<bf16> {
  static constexpr const char* name = "bfloat16";
  static constexpr double rtol = 1.6e-2, atol = 8e-3;
};
template <>
struct TypeInfo<__half> {
  static constexpr const char* name = "float16";
  static constexpr double rtol = 2e-3, atol = 1e-3;
};

// Values of T (rounded), mean `center`, spread `scale`.
template <typename T>
std::vector<T> random_values(size_t n, double center, double scale, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> dist(center, scale);
  std::vector<T> v(n);
  for (auto& x : v) {
    x = from_double<T>(dist(gen));
  }
  return v;
}

template <typename T>
std::vector<double> widened(const std::vector<T>& v) {
  std::vector<double> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), to_double<T>);
  return out;
}

int g_passed = 0, g_failed = 0;

// |got - ref| <= rtol |ref| + atol scale element by element, scale the larger of max|ref| and
// `terms` (the size of what a result is the difference of); NaN and infinities must match.
void compare(const std::string& what, const std::vector<double>& got,
             const std::vector<double>& ref, double rtol, double atol, double terms = 0) {
  double scale = terms;
  for (double r : ref) {
    if (std::isfinite(r)) {
      scale = std::max(scale, std::fabs(r));
    }
  }
  double max_abs = 0, worst = 0;
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double r = ref[i], g = got[i];
    bool ok;
    if (std::isnan(r) || std::isinf(r)) {
      ok = std::isnan(r) ? std::isnan(g) : g == r;
    } else {
      double diff = std::fabs(g - r);
      double allowed = rtol * std::fabs(r) + atol * std::max(scale, 1e-30);
      ok = diff <= allowed;  // false for a NaN result
      max_abs = std::max(max_abs, std::isnan(diff) ? INFINITY : diff);
      worst = std::max(worst, std::isnan(diff) ? INFINITY : diff / allowed);
    }
    if (!ok && bad++ == 0) {
      first_bad = i;
    }
  }
  bool pass = bad == 0 && got.size() == ref.size();
  (pass ? g_passed : g_failed)++;
  std::printf("%s  %-58s max|err| %.3e  err/tol %.3f", pass ? "PASS" : "FAIL", what.c_str(),
              max_abs, worst);
  if (!pass) {
    std::printf("  (%zu bad; first at %zu: got %.6g want %.6g)", bad, first_bad, got[first_bad],
                ref[first_bad]);
  }
  std::printf("\n");
}

std::string config_name(const RowConfig& c) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "n%d %s%d chunks%d", c.n, c.group == 32 ? "warp/blk" : "blk",
                c.block, c.chunks);
  return buf;
}

std::string case_name(const char* kernel, const char* dtype, int64_t rows, int d,
                      const RowConfig& c, const char* extra = "") {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s %s [%lld,%d] %s%s", kernel, dtype, (long long)rows, d,
                config_name(c).c_str(), extra);
  return buf;
}

int num_sms() {
  int dev = 0, sms = 0;
  cuda_ok(cudaGetDevice(&dev), "cudaGetDevice");
  cuda_ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
  return sms;
}

void synced(const char* what) {
  cuda_ok(cudaGetLastError(), what);
  cuda_ok(cudaDeviceSynchronize(), what);
}

// ---- references (float64) ----

void softmax_ref(const std::vector<double>& x, int64_t rows, int d, std::vector<double>& y,
                 std::vector<double>& lse) {
  y.assign(x.size(), 0);
  lse.assign(rows, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * d];
    double m = -INFINITY;
    bool nan = false;
    for (int i = 0; i < d; ++i) {
      nan |= std::isnan(xr[i]);
      m = std::max(m, xr[i]);
    }
    if (nan) {
      m = NAN;
    }
    double s = 0;
    for (int i = 0; i < d; ++i) {
      s += std::exp(xr[i] - m);  // NaN for a row of -inf or with +inf, as the kernels give
    }
    for (int i = 0; i < d; ++i) {
      y[r * d + i] = std::exp(xr[i] - m) / s;
    }
    lse[r] = std::isinf(m) ? m : m + std::log(s);
  }
}

// Forward (y) and backward (dx, dw, db for cotangent g) of LayerNorm / RMSNorm; w, b empty when
// absent. dx_terms: the largest |inv g w|, of which dx is a difference (it cancels to nearly 0
// when a row is one element).
void norm_ref(bool layer, const std::vector<double>& x, const std::vector<double>& w,
              const std::vector<double>& b, const std::vector<double>& g, int64_t rows, int d,
              double eps, std::vector<double>& y, std::vector<double>& dx, std::vector<double>& dw,
              std::vector<double>& db, double& dx_terms) {
  dx_terms = 0;
  y.assign(x.size(), 0);
  dx.assign(g.empty() ? 0 : x.size(), 0);
  dw.assign(d, 0);
  db.assign(d, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * d];
    double mean = 0;
    if (layer) {
      for (int i = 0; i < d; ++i) {
        mean += xr[i];
      }
      mean /= d;
    }
    double var = 0;
    for (int i = 0; i < d; ++i) {
      var += (xr[i] - mean) * (xr[i] - mean);
    }
    double inv = 1 / std::sqrt(var / d + eps);
    for (int i = 0; i < d; ++i) {
      double xhat = (xr[i] - mean) * inv;
      y[r * d + i] = xhat * (w.empty() ? 1 : w[i]) + (b.empty() ? 0 : b[i]);
    }
    if (g.empty()) {
      continue;
    }
    const double* gr = &g[r * d];
    double s1 = 0, s2 = 0;
    for (int i = 0; i < d; ++i) {
      double gw = gr[i] * (w.empty() ? 1 : w[i]);
      s1 += gw;
      s2 += gw * (xr[i] - mean) * inv;
    }
    s1 /= d;
    s2 /= d;
    for (int i = 0; i < d; ++i) {
      double xhat = (xr[i] - mean) * inv;
      double gw = gr[i] * (w.empty() ? 1 : w[i]);
      dx[r * d + i] = layer ? inv * (gw - s1 - xhat * s2) : inv * (gw - xhat * s2);
      dx_terms = std::max(dx_terms, std::fabs(inv * gw));
      dw[i] += gr[i] * xhat;
      db[i] += gr[i];
    }
  }
}

// Rows for a check of row length d: about a million elements, odd, 3 to 3001.
int64_t check_rows(int d) { return std::clamp<int64_t>((1 << 20) / d, 3, 3001) | 1; }

// ---- checks ----

template <typename T>
void check_softmax(int d, int64_t rows, const RowConfig& c) {
  using I = TypeInfo<T>;
  auto hx = random_values<T>(rows * d, 0.0, 3.0, 1000 + d);
  std::vector<double> y, lse;
  softmax_ref(widened(hx), rows, d, y, lse);
  DeviceBuffer<T> x(hx), out(hx.size()), out_lse(rows);
  launch_softmax<T, true>(x.ptr, out.ptr, rows, d, c, nullptr);
  launch_softmax<T, false>(x.ptr, out_lse.ptr, rows, d, c, nullptr);
  synced("softmax");
  compare(case_name("softmax", I::name, rows, d, c), out.download(), y, I::rtol, I::atol);
  compare(case_name("logsumexp", I::name, rows, d, c), out_lse.download(), lse, I::rtol, I::atol);
}

// Rows with -inf, NaN and +inf: a row of -inf (softmax NaN, logsumexp -inf), a row with some
// -inf (zeros there), a NaN (all NaN), a +inf (softmax NaN, logsumexp +inf), a plain row.
template <typename T>
void check_softmax_special(int d) {
  using I = TypeInfo<T>;
  const int64_t rows = 5;
  auto hx = random_values<T>(rows * d, 0.0, 2.0, 7 + d);
  const T ninf = from_double<T>(-INFINITY);
  for (int i = 0; i < d; ++i) {
    hx[i] = ninf;
  }
  for (int i = 0; i < d; i += 2) {
    hx[d + i] = ninf;
  }
  hx[2 * d + d / 2] = from_double<T>(NAN);
  hx[3 * d + d - 1] = from_double<T>(INFINITY);
  std::vector<double> y, lse;
  softmax_ref(widened(hx), rows, d, y, lse);
  RowConfig c = row_config<T>(d);
  DeviceBuffer<T> x(hx), out(hx.size()), out_lse(rows);
  launch_softmax<T, true>(x.ptr, out.ptr, rows, d, c, nullptr);
  launch_softmax<T, false>(x.ptr, out_lse.ptr, rows, d, c, nullptr);
  synced("softmax special");
  compare(case_name("softmax", I::name, rows, d, c, " -inf/nan/inf"), out.download(), y, I::rtol,
          I::atol);
  compare(case_name("logsumexp", I::name, rows, d, c, " -inf/nan/inf"), out_lse.download(), lse,
          I::rtol, I::atol);
}

// Forward and backward of one norm; x has mean 4 (the variance must not cancel).
template <typename T, bool kLayer>
void check_norm(int d, int64_t rows, bool has_w, bool has_b, const RowConfig& fwd,
                const RowConfig& bwd) {
  using I = TypeInfo<T>;
  using A = acc_t<T>;
  const float eps = 1e-5f;
  auto hx = random_values<T>(rows * d, 4.0, 1.0, 2000 + d);
  auto hg = random_values<T>(rows * d, 0.0, 1.0, 3000 + d);
  auto hw = random_values<T>(d, 1.0, 0.5, 4000 + d);
  auto hb = random_values<T>(d, 0.0, 0.5, 5000 + d);
  std::vector<double> y, dx, dw, db;
  double dx_terms;
  norm_ref(kLayer, widened(hx), has_w ? widened(hw) : std::vector<double>{},
           has_b ? widened(hb) : std::vector<double>{}, widened(hg), rows, d, eps, y, dx, dw, db,
           dx_terms);
  DeviceBuffer<T> x(hx), g(hg), w(hw), b(hb), out(hx.size()), gx(hx.size()), gw(d), gb(d);
  const T* wp = has_w ? w.ptr : nullptr;
  const T* bp = has_b ? b.ptr : nullptr;
  launch_norm<T, kLayer>(x.ptr, wp, bp, out.ptr, rows, d, eps, fwd, nullptr);
  NormVjpPlan plan = plan_norm_vjp<T, kLayer>(rows, d, bwd, num_sms());
  DeviceBuffer<A> scratch(plan.scratch_bytes(2, sizeof(A)) / sizeof(A));
  launch_norm_vjp<T, kLayer>(plan, x.ptr, wp, g.ptr, gx.ptr, has_w ? gw.ptr : nullptr,
                             has_b ? gb.ptr : nullptr, scratch.ptr, eps, nullptr);
  synced("norm");
  const char* name = kLayer ? "layer_norm" : "rms_norm";
  std::string params = std::string(has_w ? " w" : "") + (has_b ? " b" : "");
  compare(case_name(name, I::name, rows, d, fwd, params.c_str()), out.download(), y, I::rtol,
          I::atol);
  std::string vjp = std::string(name) + "_vjp";
  compare(case_name(vjp.c_str(), I::name, rows, d, bwd, (params + " dx").c_str()), gx.download(),
          dx, I::rtol, I::atol, dx_terms);
  if (has_w) {
    compare(case_name(vjp.c_str(), I::name, rows, d, bwd, (params + " dw").c_str()), gw.download(),
            dw, I::rtol, I::atol);
  }
  if (has_b) {
    compare(case_name(vjp.c_str(), I::name, rows, d, bwd, (params + " db").c_str()), gb.download(),
            db, I::rtol, I::atol);
  }
}

template <typename T>
void check_type() {
  for (int d : {1, 7, 64, 768, 1000, 1025, 4096, 8192, 50304, 131075}) {
    check_softmax<T>(d, check_rows(d), row_config<T>(d));
  }
  for (int d : {7, 1000, 4096, 20000}) {
    check_softmax_special<T>(d);
  }
  for (int d : {1, 7, 64, 768, 1000, 1025, 4096, 8192, 20000}) {
    int64_t rows = check_rows(d);
    RowConfig fwd = row_config<T>(d), bwd = norm_vjp_config<T>(d);
    check_norm<T, true>(d, rows, true, true, fwd, bwd);
    check_norm<T, true>(d, rows, false, false, fwd, bwd);
    check_norm<T, true>(d, rows, false, true, fwd, bwd);
    check_norm<T, false>(d, rows, true, false, fwd, bwd);
    check_norm<T, false>(d, rows, false, false, fwd, bwd);
  }
  // No rows (dw, db zero), a single row, fewer rows than a block's warps, an odd strip.
  for (int64_t rows : {int64_t(0), int64_t(1), int64_t(2), int64_t(37)}) {
    check_norm<T, true>(256, rows, true, true, row_config<T>(256), norm_vjp_config<T>(256));
  }
}

// ---- timings ----

// Microseconds per call: back to back (inputs partly in L2 across calls) and each call after an
// L2 flush.
struct Timing {
  double hot_us, cold_us;
};

Timing time_calls(const std::function<void()>& launch) {
  static DeviceBuffer<char> flush(size_t(512) << 20);
  const int iters = 50;
  cudaEvent_t start, stop;
  cuda_ok(cudaEventCreate(&start), "event");
  cuda_ok(cudaEventCreate(&stop), "event");
  for (int i = 0; i < 3; ++i) {
    launch();
  }
  synced("warm-up");
  cuda_ok(cudaEventRecord(start), "record");
  for (int i = 0; i < iters; ++i) {
    launch();
  }
  cuda_ok(cudaEventRecord(stop), "record");
  synced("timing");
  float ms = 0;
  cuda_ok(cudaEventElapsedTime(&ms, start, stop), "elapsed");
  double hot = ms * 1e3 / iters;
  double cold = 0;
  for (int i = 0; i < iters; ++i) {
    cuda_ok(cudaMemsetAsync(flush.ptr, i, flush.n), "flush");
    cuda_ok(cudaEventRecord(start), "record");
    launch();
    cuda_ok(cudaEventRecord(stop), "record");
    synced("timing");
    cuda_ok(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    cold += ms * 1e3;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return {hot, cold / iters};
}

void report(const char* kernel, int64_t rows, int d, const RowConfig& c, bool chosen, double bytes,
            Timing t) {
  std::printf("%-16s [%lld,%5d] %-24s %s %8.1f us %7.0f GB/s | cold L2 %8.1f us %7.0f GB/s\n",
              kernel, (long long)rows, d, config_name(c).c_str(), chosen ? "*" : " ", t.hot_us,
              bytes / t.hot_us * 1e-3, t.cold_us, bytes / t.cold_us * 1e-3);
}

// Forward kernels at [rows, d] bf16 for each launch shape in `configs` (the first the library's).
void time_forward(int64_t rows, int d, const std::vector<RowConfig>& configs) {
  const size_t n = size_t(rows) * d;
  auto hx = random_values<bf16>(n, 0.0, 1.0, 11);
  auto hp = random_values<bf16>(d, 1.0, 0.5, 12);
  DeviceBuffer<bf16> x(hx), y(n), w(hp), b(hp), lse(rows);
  const double io = 2.0 * n * sizeof(bf16);
  for (size_t k = 0; k < configs.size(); ++k) {
    const RowConfig& c = configs[k];
    bool chosen = k == 0;
    report("softmax", rows, d, c, chosen, io,
           time_calls([&] { launch_softmax<bf16, true>(x.ptr, y.ptr, rows, d, c, nullptr); }));
    report("logsumexp", rows, d, c, chosen, io / 2,
           time_calls([&] { launch_softmax<bf16, false>(x.ptr, lse.ptr, rows, d, c, nullptr); }));
    report("layer_norm w b", rows, d, c, chosen, io + 4.0 * d, time_calls([&] {
             launch_norm<bf16, true>(x.ptr, w.ptr, b.ptr, y.ptr, rows, d, 1e-5f, c, nullptr);
           }));
    report("rms_norm w", rows, d, c, chosen, io + 2.0 * d, time_calls([&] {
             launch_norm<bf16, false>(x.ptr, w.ptr, nullptr, y.ptr, rows, d, 1e-5f, c, nullptr);
           }));
  }
}

// Backward kernels at [rows, d] bf16: reads x, g, w; writes dx, dw (, db).
void time_backward(int64_t rows, int d, const std::vector<RowConfig>& configs) {
  const size_t n = size_t(rows) * d;
  auto hx = random_values<bf16>(n, 0.0, 1.0, 21);
  auto hg = random_values<bf16>(n, 0.0, 1.0, 22);
  auto hp = random_values<bf16>(d, 1.0, 0.5, 23);
  DeviceBuffer<bf16> x(hx), g(hg), w(hp), dx(n), dw(d), db(d);
  const double io = 3.0 * n * sizeof(bf16);
  for (size_t k = 0; k < configs.size(); ++k) {
    const RowConfig& c = configs[k];
    bool chosen = k == 0;
    for (bool layer : {true, false}) {
      NormVjpPlan plan = layer ? plan_norm_vjp<bf16, true>(rows, d, c, num_sms())
                               : plan_norm_vjp<bf16, false>(rows, d, c, num_sms());
      DeviceBuffer<float> scratch(plan.scratch_bytes(2, sizeof(float)) / sizeof(float));
      auto run = [&] {
        if (layer) {
          launch_norm_vjp<bf16, true>(plan, x.ptr, w.ptr, g.ptr, dx.ptr, dw.ptr, db.ptr,
                                      scratch.ptr, 1e-5f, nullptr);
        } else {
          launch_norm_vjp<bf16, false>(plan, x.ptr, w.ptr, g.ptr, dx.ptr, dw.ptr, nullptr,
                                       scratch.ptr, 1e-5f, nullptr);
        }
      };
      char name[64];
      std::snprintf(name, sizeof(name), "%s (%lld blk)", layer ? "ln_vjp w b" : "rms_vjp w",
                    (long long)plan.parts);
      report(name, rows, d, c, chosen, io + (layer ? 6.0 : 4.0) * d, time_calls(run));
    }
  }
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines appear as they come, also into a file
  cudaDeviceProp prop{};
  cuda_ok(cudaGetDeviceProperties(&prop, 0), "device properties");
  std::printf("device: %s, %d SMs\n\n== correctness (float64 CPU reference) ==\n", prop.name,
              prop.multiProcessorCount);
  check_type<float>();
  check_type<bf16>();
  check_type<__half>();
  check_type<double>();

  // The launch shapes timed below, each checked first.
  const std::vector<RowConfig> fwd4096 = {
      row_config<bf16>(4096), {16, 256, 256, 1}, {8, 256, 256, 2}};
  const std::vector<RowConfig> fwd768 = {row_config<bf16>(768), {8, 96, 96, 1}};
  const std::vector<RowConfig> bwd768 = {norm_vjp_config<bf16>(768), {8, 96, 96, 1}};
  const std::vector<RowConfig> bwd4096 = {norm_vjp_config<bf16>(4096), {8, 512, 512, 1}};
  for (const RowConfig& c : fwd4096) {
    check_softmax<bf16>(4096, 65, c);
    check_norm<bf16, true>(4096, 65, true, true, c, norm_vjp_config<bf16>(4096));
  }
  for (const RowConfig& c : fwd768) {
    check_softmax<bf16>(768, 65, c);
    check_norm<bf16, true>(768, 65, true, true, c, norm_vjp_config<bf16>(768));
  }
  for (const RowConfig& c : bwd768) {
    check_norm<bf16, true>(768, 999, true, true, row_config<bf16>(768), c);
    check_norm<bf16, false>(768, 999, true, false, row_config<bf16>(768), c);
  }
  for (const RowConfig& c : bwd4096) {
    check_norm<bf16, true>(4096, 333, true, true, row_config<bf16>(4096), c);
  }
  std::printf("\n%d passed, %d failed\n", g_passed, g_failed);

  std::printf("\n== bandwidth, bfloat16 (* = the library's launch shape; 50 calls each) ==\n");
  time_forward(16384, 4096, fwd4096);
  time_forward(16384, 768, fwd768);
  time_backward(16384, 768, bwd768);
  time_backward(16384, 4096, bwd4096);

  std::printf("\n%s: %d passed, %d failed\n", g_failed ? "FAIL" : "PASS", g_passed, g_failed);
  return g_failed ? 1 : 0;
}

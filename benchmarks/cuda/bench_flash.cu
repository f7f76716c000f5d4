// The fused attention kernels alone, without the library: correctness against a float64 host
// reference on small odd shapes, then TFLOP/s on the benchmark's shapes. For iterating on the
// kernels on the GPU machine in seconds instead of a full build:
//   build/benchmarks/bench_flash (built with the CUDA backend), or alone:
//   nvcc -O3 -std=c++20 -arch=sm_90 -I. benchmarks/cuda/bench_flash.cu -o /tmp/bench_flash
//   /tmp/bench_flash            (exit status 1 when a check fails)
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "benchmarks/cuda/device_buffer.cuh"
#include "mlx/backend/cuda/flash_backward.cuh"

using namespace mlx::core::cu::flash;
using namespace harness;

namespace {

// launch_* return a cudaError_t; the harness stops on the first.
#define CHECK(call) cuda_ok((call), #call)

struct Case {
  int b, hq, hkv, t_q, t_kv;
  bool causal;
};

// Reference forward and backward in float64 for one (batch, head).
void reference(const Case& c, int D, const std::vector<double>& q, const std::vector<double>& k,
               const std::vector<double>& v, const std::vector<double>& g, double scale,
               std::vector<double>& o, std::vector<double>& dq, std::vector<double>& dk,
               std::vector<double>& dv) {
  const int shift = c.t_kv - c.t_q;
  o.assign(size_t(c.b) * c.hq * c.t_q * D, 0.0);
  dq.assign(o.size(), 0.0);
  dk.assign(size_t(c.b) * c.hkv * c.t_kv * D, 0.0);
  dv.assign(dk.size(), 0.0);
  std::vector<double> p(c.t_kv), dp(c.t_kv);
  for (int b = 0; b < c.b; ++b) {
    for (int h = 0; h < c.hq; ++h) {
      const int hk = h / (c.hq / c.hkv);
      const double* qh = &q[(size_t(b) * c.hq + h) * c.t_q * D];
      const double* gh = &g[(size_t(b) * c.hq + h) * c.t_q * D];
      const double* kh = &k[(size_t(b) * c.hkv + hk) * c.t_kv * D];
      const double* vh = &v[(size_t(b) * c.hkv + hk) * c.t_kv * D];
      double* oh = &o[(size_t(b) * c.hq + h) * c.t_q * D];
      double* dqh = &dq[(size_t(b) * c.hq + h) * c.t_q * D];
      double* dkh = &dk[(size_t(b) * c.hkv + hk) * c.t_kv * D];
      double* dvh = &dv[(size_t(b) * c.hkv + hk) * c.t_kv * D];
      for (int i = 0; i < c.t_q; ++i) {
        const int last = c.causal ? std::min(c.t_kv - 1, i + shift) : c.t_kv - 1;
        if (last < 0) {
          continue;
        }
        double m = -INFINITY;
        for (int j = 0; j <= last; ++j) {
          double s = 0;
          for (int d = 0; d < D; ++d)
            s += qh[i * D + d] * kh[j * D + d];
          p[j] = s * scale;
          m = std::max(m, p[j]);
        }
        double sum = 0;
        for (int j = 0; j <= last; ++j)
          sum += (p[j] = std::exp(p[j] - m));
        double delta = 0;
        for (int d = 0; d < D; ++d) {
          double acc = 0;
          for (int j = 0; j <= last; ++j)
            acc += p[j] / sum * vh[j * D + d];
          oh[i * D + d] = acc;
          delta += acc * gh[i * D + d];
        }
        for (int j = 0; j <= last; ++j) {
          p[j] /= sum;
          double s = 0;
          for (int d = 0; d < D; ++d)
            s += gh[i * D + d] * vh[j * D + d];
          dp[j] = p[j] * (s - delta);  // dS
          for (int d = 0; d < D; ++d) {
            dvh[j * D + d] += p[j] * gh[i * D + d];
            dkh[j * D + d] += scale * dp[j] * qh[i * D + d];
            dqh[i * D + d] += scale * dp[j] * kh[j * D + d];
          }
        }
      }
    }
  }
}

double max_error(const std::vector<double>& got, const std::vector<double>& want,
                 double* scale_out) {
  double err = 0, mag = 1e-2;  // gradients that are 0 exactly come out as rounding noise
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(got[i] - want[i]));
    mag = std::max(mag, std::abs(want[i]));
  }
  *scale_out = mag;
  return err / mag;
}

template <typename T, int D>
bool check(const Case& c, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.f, 1.f);
  auto make = [&](size_t n, std::vector<T>& h, std::vector<double>& r) {
    h.resize(n);
    r.resize(n);
    for (size_t i = 0; i < n; ++i) {
      h[i] = static_cast<T>(normal(rng));
      r[i] = to_double(h[i]);
    }
  };
  const size_t nq = size_t(c.b) * c.hq * c.t_q * D, nk = size_t(c.b) * c.hkv * c.t_kv * D;
  std::vector<T> hq, hk, hv, hg;
  std::vector<double> rq, rk, rv, rg, ro, rdq, rdk, rdv;
  make(nq, hq, rq);
  make(nk, hk, rk);
  make(nk, hv, rv);
  make(nq, hg, rg);
  const double scale = 1.0 / std::sqrt(double(D));
  reference(c, D, rq, rk, rv, rg, scale, ro, rdq, rdk, rdv);

  DeviceBuffer<T> q(hq), k(hk), v(hv), g(hg), o(nq), dk(nk), dv(nk);
  const size_t rows = size_t(c.b) * c.hq * c.t_q;
  DeviceBuffer<float> lse(rows), delta(rows), dq(nq);
  CHECK(cudaMemset(dq.ptr, 0, nq * sizeof(float)));
  const AttentionShape shape{c.b, c.hq, c.hq / c.hkv, c.t_q, c.t_kv, c.causal};
  auto heads_q = [&](auto* p) { return dense_heads(p, c.hq, c.t_q, D); };
  auto heads_kv = [&](auto* p) { return dense_heads(p, c.hkv, c.t_kv, D); };
  const Heads<const T> hq_in = heads_q(static_cast<const T*>(q.ptr)),
                       hg_in = heads_q(static_cast<const T*>(g.ptr)),
                       ho_in = heads_q(static_cast<const T*>(o.ptr)),
                       hk_in = heads_kv(static_cast<const T*>(k.ptr)),
                       hv_in = heads_kv(static_cast<const T*>(v.ptr));
  CHECK((launch_forward<T, D, true>(hq_in, hk_in, hv_in, heads_q(o.ptr), nullptr, shape,
                                    float(scale), 0)));
  CHECK((launch_forward<T, D, false>(hq_in, hk_in, hv_in, Heads<T>{}, lse.ptr, shape, float(scale),
                                     0)));
  row_dots<T, D><<<256, 256>>>(ho_in, hg_in, delta.ptr, c.hq, c.t_q, int64_t(rows));
  CHECK((launch_backward<T, D>(hq_in, hk_in, hv_in, hg_in, lse.ptr, delta.ptr, heads_q(dq.ptr),
                               heads_kv(dk.ptr), heads_kv(dv.ptr), shape, float(scale), 0)));
  CHECK(cudaDeviceSynchronize());
  double m_o, m_dq, m_dk, m_dv;
  const double e_o = max_error(o.download(), ro, &m_o), e_dq = max_error(dq.download(), rdq, &m_dq);
  const double e_dk = max_error(dk.download(), rdk, &m_dk),
               e_dv = max_error(dv.download(), rdv, &m_dv);
  const double tol = std::is_same_v<T, __half> ? 1e-2 : 3e-2;
  const bool ok = e_o < tol && e_dq < tol && e_dk < tol && e_dv < tol;
  std::printf(
      "%s %-4s B%d Hq%d Hkv%d Tq%-4d Tkv%-4d D%-3d %-6s  rel err o %.1e dq %.1e dk %.1e dv %.1e\n",
      ok ? "PASS" : "FAIL", std::is_same_v<T, __half> ? "f16" : "bf16", c.b, c.hq, c.hkv, c.t_q,
      c.t_kv, D, c.causal ? "causal" : "none", e_o, e_dq, e_dk, e_dv);
  return ok;
}

template <typename T, int D>
void bench(int b, int h, int t, bool causal) {
  const size_t n = size_t(b) * h * t * D, rows = size_t(b) * h * t;
  std::vector<T> hx(n);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto& x : hx)
    x = static_cast<T>(normal(rng));
  DeviceBuffer<T> q(hx), k(hx), v(hx), g(hx), o(n), dk(n), dv(n);
  DeviceBuffer<float> lse(rows), delta(rows), dq(n);
  const AttentionShape shape{b, h, 1, t, t, causal};
  const float scale = 1.f / std::sqrt(float(D));
  auto heads = [&](auto* p) { return dense_heads(p, h, t, D); };
  const Heads<const T> hq = heads(static_cast<const T*>(q.ptr)),
                       hk = heads(static_cast<const T*>(k.ptr)),
                       hv = heads(static_cast<const T*>(v.ptr)),
                       hg = heads(static_cast<const T*>(g.ptr)),
                       ho = heads(static_cast<const T*>(o.ptr));
  auto fwd = [&] {
    CHECK((launch_forward<T, D, true>(hq, hk, hv, heads(o.ptr), nullptr, shape, scale, 0)));
  };
  auto bwd = [&] {
    CHECK((launch_forward<T, D, false>(hq, hk, hv, Heads<T>{}, lse.ptr, shape, scale, 0)));
    row_dots<T, D><<<1024, 256>>>(ho, hg, delta.ptr, h, t, int64_t(rows));
    CHECK(cudaMemsetAsync(dq.ptr, 0, n * sizeof(float)));
    CHECK((launch_backward<T, D>(hq, hk, hv, hg, lse.ptr, delta.ptr, heads(dq.ptr), heads(dk.ptr),
                                 heads(dv.ptr), shape, scale, 0)));
  };
  auto time = [&](auto f) {
    for (int i = 0; i < 3; ++i)
      f();
    cudaEvent_t a, z;
    cudaEventCreate(&a);
    cudaEventCreate(&z);
    const int iters = 20;
    cudaEventRecord(a);
    for (int i = 0; i < iters; ++i)
      f();
    cudaEventRecord(z);
    CHECK(cudaEventSynchronize(z));
    float ms;
    cudaEventElapsedTime(&ms, a, z);
    return ms / iters;
  };
  const double flops = 4.0 * b * h * double(t) * t * D / (causal ? 2 : 1);
  const float t_f = time(fwd), t_b = time(bwd);
  std::printf(
      "%-4s B%d H%d T%-5d D%-3d %-6s fwd %.3f ms %6.1f TFLOP/s | bwd %.3f ms | fwd+bwd %6.1f "
      "TFLOP/s\n",
      std::is_same_v<T, __half> ? "f16" : "bf16", b, h, t, D, causal ? "causal" : "none", t_f,
      flops / t_f / 1e9, t_b, 3.5 * flops / (t_f + t_b) / 1e9);
}

}  // namespace

int main() {
  std::mt19937 rng(0);
  bool ok = true;
  const Case cases[] = {
      {1, 2, 2, 64, 64, false},   {1, 2, 2, 64, 64, true},  {2, 4, 2, 100, 100, true},
      {1, 3, 1, 37, 200, true},   {1, 2, 2, 200, 37, true}, {1, 2, 1, 1, 300, false},
      {1, 2, 2, 129, 130, false}, {1, 1, 1, 1, 1, true},    {2, 2, 2, 250, 250, true},
  };
  for (Case c : cases) {
    ok &= check<__nv_bfloat16, 64>(c, rng);
    ok &= check<__half, 64>(c, rng);
    ok &= check<__nv_bfloat16, 128>(c, rng);
  }
  for (Case c : {cases[2], cases[3], cases[4]}) {
    ok &= check<__nv_bfloat16, 80>(c, rng);
    ok &= check<__half, 96>(c, rng);
  }
  std::printf("%s\n", ok ? "ALL PASS" : "SOME FAILED");
  bench<__nv_bfloat16, 64>(8, 12, 1024, true);
  bench<__nv_bfloat16, 64>(8, 12, 4096, true);
  bench<__nv_bfloat16, 64>(16, 12, 1024, true);
  bench<__nv_bfloat16, 128>(8, 12, 1024, true);
  bench<__nv_bfloat16, 64>(8, 12, 1024, false);
  return ok ? 0 : 1;
}

// Core CPU benchmark: bandwidth of elementwise ops and reductions next to this machine's
// memcpy, matmul next to OpenBLAS called directly, and graph/eval overheads.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "mlx/mlx.h"

using namespace mlx::core;
using Clock = std::chrono::steady_clock;

namespace {

// Best time in seconds over `reps` runs of fn (after one warm-up).
double best_of(int reps, const std::function<void()>& fn) {
  fn();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

double memcpy_gbs(size_t bytes, int threads) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double t = best_of(5, [&] {
    std::vector<std::thread> ts;
    size_t chunk = bytes / threads;
    for (int i = 0; i < threads; ++i) {
      ts.emplace_back(
          [&, i] { std::memcpy(dst.data() + i * chunk, src.data() + i * chunk, chunk); });
    }
    for (auto& th : ts)
      th.join();
  });
  return 2.0 * bytes / t / 1e9;  // read + write
}

void row(const char* name, double value, const char* unit, double reference, const char* ref_name) {
  if (reference > 0) {
    std::printf("| %-34s | %9.2f %-7s | %5.0f%% of %s |\n", name, value, unit,
                100 * value / reference, ref_name);
  } else {
    std::printf("| %-34s | %9.2f %-7s | %s |\n", name, value, unit, ref_name);
  }
}

}  // namespace

int main() {
  const int n = 1 << 24;  // 16M float32 = 64 MiB
  const size_t bytes = size_t(n) * sizeof(float);
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  double copy1 = memcpy_gbs(bytes, 1);
  double copyN = memcpy_gbs(bytes, threads);
  double copy_ref = std::max(copy1, copyN);
  std::printf("memcpy: %.2f GB/s on 1 thread, %.2f GB/s on %d threads (read+write bytes)\n\n",
              copy1, copyN, threads);
  std::printf("| %-34s | %17s | %s |\n", "benchmark", "result", "vs reference");
  std::printf("|%s|%s|%s|\n", std::string(36, '-').c_str(), std::string(19, '-').c_str(),
              std::string(20, '-').c_str());

  array a = random::uniform({n});
  array b = random::uniform({n});
  eval(a, b);
  auto gbs = [&](double moved_bytes, const std::function<array()>& f) {
    double t = best_of(5, [&] { eval(f()); });
    return moved_bytes / t / 1e9;
  };
  row("add (16M f32)", gbs(3.0 * bytes, [&] { return add(a, b); }), "GB/s", copy_ref, "memcpy");
  row("multiply (16M f32)", gbs(3.0 * bytes, [&] { return multiply(a, b); }), "GB/s", copy_ref,
      "memcpy");
  row("exp (16M f32)", gbs(2.0 * bytes, [&] { return exp(a); }), "GB/s", copy_ref, "memcpy");
  row("sum all (16M f32)", gbs(bytes, [&] { return sum(a); }), "GB/s", copy_ref, "memcpy");
  array m = reshape(a, {4096, 4096});
  row("sum last axis (4096x4096)", gbs(bytes, [&] { return sum(m, -1); }), "GB/s", copy_ref,
      "memcpy");
  row("sum first axis (4096x4096)", gbs(bytes, [&] { return sum(m, 0); }), "GB/s", copy_ref,
      "memcpy");
  row("softmax rows (4096x4096)", gbs(2.0 * bytes, [&] { return softmax(m, -1); }), "GB/s",
      copy_ref, "memcpy");

  for (int dim : {1024, 2048}) {
    array x = random::normal({dim, dim});
    array y = random::normal({dim, dim});
    eval(x, y);
    double flops = 2.0 * dim * dim * double(dim);
    double ours = flops / best_of(3, [&] { eval(matmul(x, y)); }) / 1e9;
    std::vector<float> c(size_t(dim) * dim);
    double blas =
        flops /
        best_of(3,
                [&] {
                  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dim, dim, dim, 1.0f,
                              x.data<float>(), dim, y.data<float>(), dim, 0.0f, c.data(), dim);
                }) /
        1e9;
    char name[64];
    std::snprintf(name, sizeof(name), "matmul %dx%d f32", dim, dim);
    row(name, ours, "GFLOP/s", blas, "OpenBLAS sgemm");
  }

  // Overheads.
  array one(1.0f);
  array x0(0.0f);
  eval(x0);
  const int k = 100000;
  double build = best_of(3, [&] {
    array y = x0;
    for (int i = 0; i < k; ++i)
      y = add(y, one);
  });
  row("graph build per op", build / k * 1e6, "us", 0, "target <= 1 us");
  double tiny = best_of(3, [&] {
    for (int i = 0; i < k; ++i) {
      array y = add(x0, one);
      eval(y);
    }
  });
  row("one tiny op + eval", tiny / k * 1e6, "us", 0, "target <= 3 us");
  double chain = best_of(1, [&] {
    array y = x0;
    for (int i = 0; i < 1000000; ++i)
      y = add(y, one);
    eval(y);
  });
  row("1,000,000-op chain build + eval", chain, "s", 0, "no stack overflow");
  auto stats = memory_stats();
  std::printf("\nmemory: peak %.1f MiB, cache %.1f MiB, hit rate %.3f, system allocs %.0f\n",
              stats["peak_memory"] / (1 << 20), stats["cache_memory"] / (1 << 20),
              stats["hit_rate"], stats["num_system_allocs"]);
  return 0;
}

// Cost of one allocator call (a cached malloc + free pair) with tracing off and on, and of a
// small eager op end to end: what tracing adds where it is felt most.
//   ./build/benchmarks/bench_memory_trace
#include <chrono>
#include <cstdio>
#include <vector>

#include "mlx/memory/caching_allocator.h"
#include "mlx/memory/trace.h"
#include "mlx/mlx.h"

using namespace mlx::core;
namespace alloc = mlx::core::allocator;

namespace {

template <typename F>
double best_ns(int reps, int n, F f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      f();
    }
    double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
    best = ns < best ? ns : best;
  }
  return best;
}

}  // namespace

int main() {
  alloc::Allocator& a = alloc::allocator();
  a.free(a.malloc(4096));  // the block the loop reuses
  const int n = 200000;
  auto pair = [&] { a.free(a.malloc(4096)); };
  array x = ones({16});
  eval(x);
  auto op = [&] { eval(exp(x)); };
  double pair_off = best_ns(5, n, pair), op_off = best_ns(5, n / 20, op);
  alloc::trace::start(nullptr);
  double pair_on = best_ns(5, n, pair), op_on = best_ns(5, n / 20, op);
  size_t events = alloc::trace::stop().size();
  std::printf("| measurement | tracing off | tracing on (no stacks) | added |\n");
  std::printf("|---|---:|---:|---:|\n");
  std::printf("| cached malloc + free (4 KiB) | %.0f ns | %.0f ns | %.0f ns |\n", pair_off, pair_on,
              pair_on - pair_off);
  std::printf("| eager exp on 16 floats, eval | %.0f ns | %.0f ns | %.0f ns |\n", op_off, op_on,
              op_on - op_off);
  std::printf("(%zu events recorded)\n", events);
  return 0;
}

// Where one tiny op's time goes on a device, from C++ (no Python): our build, eval and
// round trip beside the CUDA floor measured in the same process (a 16-byte memset launched on
// a stream, then a stream synchronize), and the pieces of a GPU op's host path (allocation,
// launch). Run: build/benchmarks/bench_eval_latency [cpu|gpu]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#ifdef MLX_BENCH_HAS_CUDA
#include <cuda_runtime.h>
#endif

#include "mlx/memory/residency.h"
#include "mlx/mlx.h"

using namespace mlx::core;
using Clock = std::chrono::steady_clock;

namespace {

// Median over 9 runs of the mean time of one call in a loop of `n`, in microseconds.
double us_per_call(int n, const std::function<void()>& fn) {
  for (int i = 0; i < n / 10 + 10; ++i) {
    fn();
  }
  std::vector<double> runs;
  for (int r = 0; r < 9; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      fn();
    }
    runs.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n);
  }
  std::nth_element(runs.begin(), runs.begin() + 4, runs.end());
  return runs[4];
}

void row(const char* what, double us) { std::printf("| %-52s | %8.2f |\n", what, us); }

}  // namespace

int main(int argc, char** argv) {
  const bool gpu = argc < 2 || std::strcmp(argv[1], "cpu") != 0;
  if (gpu && !is_available(Device(Device::gpu))) {
    std::printf("no GPU\n");
    return 0;
  }
  const Device dev = gpu ? Device(Device::gpu) : Device(Device::cpu);
  set_default_device(dev);
  std::printf("| %-52s | %8s |\n|---|---:|\n", gpu ? "tiny op on the GPU" : "tiny op on the CPU",
              "us");
#ifdef MLX_BENCH_HAS_CUDA
  if (gpu) {
    cudaStream_t s;
    void* p;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMalloc(&p, 16);
    row("CUDA: memset launch + stream synchronize", us_per_call(5000, [&] {
          cudaMemsetAsync(p, 0, 16, s);
          cudaStreamSynchronize(s);
        }));
    row("CUDA: memset launch alone (1000 queued)", us_per_call(20, [&] {
                                                     for (int i = 0; i < 1000; ++i) {
                                                       cudaMemsetAsync(p, 0, 16, s);
                                                     }
                                                     cudaStreamSynchronize(s);
                                                   }) / 1000);
    row("CUDA: stream synchronize of an idle stream",
        us_per_call(20000, [&] { cudaStreamSynchronize(s); }));
    cudaFree(p);
    cudaStreamDestroy(s);
    row("ours: gpu_malloc + gpu_free of 16 bytes",
        us_per_call(20000, [] { allocator::gpu_free(allocator::gpu_malloc(16), 0); }));
  }
#endif
  array a = ones({4});
  eval(a);
  row("ours: build one add", us_per_call(20000, [&] { array y = add(a, a); }));
  row("ours: build one add + eval", us_per_call(5000, [&] {
        array y = add(a, a);
        eval(y);
      }));
  row("ours: build + async_eval (a worker runs it)", us_per_call(5000, [&] {
        array y = add(a, a);
        async_eval({y});
      }));
  synchronize();
  row("ours: eval of an evaluated array", us_per_call(20000, [&] { eval(a); }));
  row("ours: per op of a 1000-add chain, built and evaluated", us_per_call(10, [&] {
                                                                 array y = a;
                                                                 for (int i = 0; i < 1000; ++i) {
                                                                   y = add(y, a);
                                                                 }
                                                                 eval(y);
                                                               }) / 1000);
  // Independent nodes, evaluated together: an optimizer update's shape (GPT-2 has 148
  // parameters). AdamUpdate reads 7 arrays and writes 3, an add 2 and 1: the difference is
  // the host's cost per array, the add's the cost per node.
  constexpr int kParams = 148;
  std::vector<array> params, grads, ms, vs;
  for (int i = 0; i < kParams; ++i) {
    for (auto* group : {&params, &grads, &ms, &vs}) {
      group->push_back(full({768}, 0.5f));
    }
  }
  array lr(1e-3f), c1(0.1f), c2(0.001f);
  std::vector<array> all = {lr, c1, c2};
  for (auto* group : {&params, &grads, &ms, &vs}) {
    all.insert(all.end(), group->begin(), group->end());
  }
  eval(all);
  auto adds = [&] {
    std::vector<array> outs;
    for (int i = 0; i < kParams; ++i) {
      outs.push_back(add(params[i], grads[i]));
    }
    eval(outs);
  };
  row("ours: per add of 148 independent adds, evaluated", us_per_call(50, adds) / kParams);
  row("ours: per AdamUpdate of 148 parameters, evaluated",
      us_per_call(50, [&] {
        std::vector<array> outs;
        for (int i = 0; i < kParams; ++i) {
          auto o = fast::adam_update(params[i], grads[i], ms[i], vs[i], lr, c1, c2, 0.9, 0.999,
                                     1e-8, 0.01);
          outs.insert(outs.end(), o.begin(), o.end());
        }
        eval(outs);
      }) / kParams);
  row("ours: synchronize() with nothing queued", us_per_call(20000, [] { synchronize(); }));
  // Last, as it cannot be undone: with a second stream of the device (mlx-lm makes one for
  // generation), a freed GPU block waits for events of the streams that used it.
  new_stream(dev);
  row("ours: per add of 148 adds, a second stream made", us_per_call(50, adds) / kParams);
  return 0;
}

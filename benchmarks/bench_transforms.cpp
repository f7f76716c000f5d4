// Transform overheads: a compiled 50-op function against building its graph on every call,
// the same for value_and_grad, and the memory a checkpointed gradient saves.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "mlx/mlx.h"

using namespace mlx::core;
using Clock = std::chrono::steady_clock;

namespace {

// Median time in microseconds of one call of fn over `reps` calls (after warm-up).
double median_us(int reps, const std::function<void()>& fn) {
  for (int i = 0; i < 20; ++i) {
    fn();
  }
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    fn();
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[reps / 2];
}

// 50 elementwise ops mixing both inputs.
std::vector<array> fifty_ops(const std::vector<array>& in) {
  array x = in[0];
  const array& y = in[1];
  for (int i = 0; i < 10; ++i) {
    x = multiply(x, y);
    x = add(x, array(0.5f));
    x = tanh(x);
    x = subtract(x, y);
    x = multiply(x, array(1.5f));
  }
  return {x};
}

std::vector<array> fifty_ops_loss(const std::vector<array>& in) { return {sum(fifty_ops(in)[0])}; }

void row(const char* name, double eager, double compiled) {
  std::printf("| %-40s | %9.1f us | %9.1f us | %5.2fx |\n", name, eager, compiled,
              eager / compiled);
}

size_t chain_gradient_peak(bool checkpointed, int depth, int n) {
  auto segment = [](const std::vector<array>& in) {
    array y = sin(in[0]);
    return std::vector<array>{multiply(y, exp(y))};
  };
  ArrayFn seg = checkpointed ? checkpoint(segment) : ArrayFn(segment);
  auto loss = [&](const array& x) {
    array h = x;
    for (int i = 0; i < depth; ++i) {
      h = seg({h})[0];
    }
    return sum(h);
  };
  array x = random::uniform({n});
  eval(x);
  clear_cache();
  reset_peak_memory();
  size_t base = get_active_memory();
  eval(grad(loss)(x));
  return get_peak_memory() - base;
}

}  // namespace

int main() {
  const int reps = 2000;
  std::printf("| %-40s | %12s | %12s | %6s |\n", "per call (median)", "graph each call", "compiled",
              "speedup");
  std::printf("|%s|%s|%s|%s|\n", std::string(42, '-').c_str(), std::string(14, '-').c_str(),
              std::string(14, '-').c_str(), std::string(8, '-').c_str());
  for (int n : {16, 4096}) {
    array x = random::uniform({n});
    array y = random::uniform({n});
    eval(x, y);
    auto compiled = compile(fifty_ops);
    char name[64];
    std::snprintf(name, sizeof(name), "50-op function, build only, n=%d", n);
    row(name,
        median_us(reps,
                  [&] {
                    fifty_ops({x, y});
                  }),
        median_us(reps, [&] {
          compiled({x, y});
        }));
    std::snprintf(name, sizeof(name), "50-op function + eval, n=%d", n);
    row(name,
        median_us(reps,
                  [&] {
                    eval(fifty_ops({x, y}));
                  }),
        median_us(reps, [&] {
          eval(compiled({x, y}));
        }));
    auto vg = value_and_grad(fifty_ops_loss, std::vector<int>{0, 1});
    auto compiled_vg_fn = compile([&vg](const std::vector<array>& in) {
      auto [values, grads] = vg(in);
      values.insert(values.end(), grads.begin(), grads.end());
      return values;
    });
    std::snprintf(name, sizeof(name), "value_and_grad + eval, n=%d", n);
    row(name,
        median_us(reps / 4,
                  [&] {
                    auto [v, g] = vg({x, y});
                    v.insert(v.end(), g.begin(), g.end());
                    eval(v);
                  }),
        median_us(reps / 4, [&] {
          eval(compiled_vg_fn({x, y}));
        }));
  }

  const int depth = 24, n = 1 << 20;
  size_t plain = chain_gradient_peak(false, depth, n);
  size_t ckpt = chain_gradient_peak(true, depth, n);
  std::printf("\nGradient of a %d-segment chain (sin, exp, multiply) on %d floats (%.0f MiB):\n",
              depth, n, n * 4.0 / 1048576);
  std::printf("  peak memory %.1f MiB plain, %.1f MiB with checkpoint per segment (%.0f%%)\n",
              plain / 1048576.0, ckpt / 1048576.0, 100.0 * ckpt / plain);
  return 0;
}

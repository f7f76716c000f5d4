// Linear regression trained by gradient descent written with our ops (the gradient is
// derived by hand here; autodiff arrives with the transforms). Prints loss and memory stats.
#include <cstdio>

#include "mlx/mlx.h"

using namespace mlx::core;

int main(int argc, char** argv) {
  int num_features = 100, num_examples = 1000, num_iters = argc > 1 ? std::atoi(argv[1]) : 200;
  float lr = 0.1f;

  array w_star = random::normal({num_features});  // the true parameters
  array X = random::normal({num_examples, num_features});
  array eps = multiply(array(1e-2f), random::normal({num_examples}));
  array y = add(matmul(X, w_star), eps);

  array w = multiply(array(1e-2f), random::normal({num_features}));
  reset_memory_stats();
  for (int it = 1; it <= num_iters; ++it) {
    array residual = subtract(matmul(X, w), y);
    array loss = multiply(array(0.5f), mean(square(residual)));
    array grad = divide(matmul(transpose(X), residual), array(static_cast<float>(num_examples)));
    w = subtract(w, multiply(array(lr), grad));
    eval(w, loss);
    if (it == 1 || it % 20 == 0) {
      auto s = get_memory_stats();
      std::printf(
          "iter %4d  loss %.6f  active %.2f MiB  peak %.2f MiB  cache %.2f MiB  hit rate %.3f\n",
          it, loss.item<float>(), s.active_memory / 1048576.0, s.peak_memory / 1048576.0,
          s.cache_memory / 1048576.0, s.hit_rate());
    }
  }
  float error = sqrt(sum(square(subtract(w, w_star)))).item<float>();
  std::printf("|w - w*| = %.6f\n", error);
  auto s = get_memory_stats();
  std::printf("system allocations %zu, frees %zu, cache hits %zu, misses %zu\n",
              s.num_system_allocs, s.num_system_frees, s.cache_hits, s.cache_misses);
  return error < 0.1f ? 0 : 1;
}

// DynamicUnbroadcast: the summed axes are found from the shapes being evaluated, then the
// backend's Reduce kernel sums them and the result is reshaped to input 1's shape.
#include "mlx/primitives/reduction.h"
#include "mlx/primitives/shape.h"
#include "mlx/primitives/transform.h"

namespace mlx::core {

namespace {

template <bool Gpu>
void unbroadcast_eval(Stream s, bool keep_front, const std::vector<array>& inputs, array& out) {
  const array& x = inputs[0];
  auto axes = DynamicUnbroadcast::summed_axes(x.shape(), out.shape(), keep_front);
  if (axes.empty()) {
    out.copy_shared_buffer(x);
    return;
  }
  Shape kept = x.shape();
  for (int a : axes) {
    kept[a] = 1;
  }
  array summed(kept, out.dtype(), nullptr, {});
  Reduce reduce(s, Reduce::Sum, axes);
  Reshape reshape(s, out.shape());
  if constexpr (Gpu) {
    reduce.eval_gpu({x}, summed);
    reshape.eval_gpu({summed}, out);
  } else {
    reduce.eval_cpu({x}, summed);
    reshape.eval_cpu({summed}, out);
  }
}

}  // namespace

void DynamicUnbroadcast::eval_cpu(const std::vector<array>& inputs, array& out) {
  unbroadcast_eval<false>(stream(), keep_front_, inputs, out);
}

void DynamicUnbroadcast::eval_gpu(const std::vector<array>& inputs, array& out) {
  unbroadcast_eval<true>(stream(), keep_front_, inputs, out);
}

}  // namespace mlx::core

// CPU evaluation of the transform primitives that compute something.
#include "mlx/primitives/transform.h"

#include "mlx/backend/cpu/dispatch.h"

namespace mlx::core {

void NumberOfElements::eval_cpu(const std::vector<array>& inputs, array& out) {
  double n = 1;
  for (int a : axes_) {
    n *= inputs[0].shape(a);
  }
  out.set_data(allocator::malloc(out.nbytes()));
  double value = inverted_ ? 1.0 / n : n;
  cpu::dispatch_all(out.dtype(), "NumberOfElements",
                    [&]<typename T>() { *out.data<T>() = cpu::cast_value<T>(value); });
}

}  // namespace mlx::core

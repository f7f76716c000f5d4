// NumberOfElements: a scalar computed from shapes on the host, the same for every backend
// (a GPU consumer uploads the one element).
#include "mlx/backend/common/convert.h"
#include "mlx/primitives/transform.h"

namespace mlx::core {

void NumberOfElements::eval_cpu(const std::vector<array>& inputs, array& out) {
  double n = 1;
  for (int a : axes_) {
    n *= inputs[0].shape(a);
  }
  out.set_data(allocator::malloc(out.nbytes()));
  double value = inverted_ ? 1.0 / n : n;
  dispatch_all(out.dtype(), "NumberOfElements",
               [&]<typename T>() { *out.data<T>() = cast_value<T>(value); });
}

void NumberOfElements::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

}  // namespace mlx::core

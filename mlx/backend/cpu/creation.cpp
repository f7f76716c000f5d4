#include "mlx/primitives/creation.h"

#include "mlx/backend/common/convert.h"
#include "mlx/backend/cpu/copy.h"

namespace mlx::core {

// The input is the fill value already broadcast to the output shape.
void Full::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::copy_to_contiguous(inputs[0], out);
}

void Arange::eval_cpu(const std::vector<array>&, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  dispatch_real(out.dtype(), "arange", [&]<typename T>() {
    T* dst = out.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      dst[i] = cast_value<T>(start_ + static_cast<double>(i) * step_);
    }
  });
}

}  // namespace mlx::core

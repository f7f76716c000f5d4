// CPU kernels of the layout primitives that copy: concatenation and slice updates.
#include <algorithm>

#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/common/views.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/backend/cpu/strided.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/shape.h"
#include "mlx/runtime/kernel_counter.h"

namespace mlx::core {

void Concatenate::eval_cpu(const std::vector<array>& inputs, array& out) {
  if (concatenate_as_view(inputs, axis_, out)) {
    detail::count_path("Concatenate:view");
    return;
  }
  out.set_data(allocator::malloc(out.nbytes()));
  std::vector<int64_t> offsets(inputs.size());
  int64_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    offsets[i] = offset;
    offset += inputs[i].shape(axis_) * out.strides()[axis_];
  }
  auto copy_range = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      cpu::copy_strided(inputs[i], inputs[i].strides(), 0, out, out.strides(), offsets[i],
                        inputs[i].shape());
    }
  };
  // Large pieces are split across threads inside copy_strided; many small pieces are instead
  // handed out to threads a group at a time.
  int64_t n = static_cast<int64_t>(inputs.size());
  int64_t mean_bytes = static_cast<int64_t>(out.nbytes()) / n;
  if (mean_bytes >= cpu::kParallelBytes) {
    copy_range(0, n);
  } else {
    cpu::parallel_for(n, cpu::kParallelBytes / std::max<int64_t>(mean_bytes, 1) + 1, copy_range);
  }
}

void SliceUpdate::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  const array& update = inputs[1];
  // A dense source nobody else holds is updated in place.
  if (src.is_donatable() && src.flags().contiguous) {
    out.copy_shared_buffer(src);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
    cpu::copy_strided(src, src.strides(), 0, out, out.strides(), 0, src.shape());
  }
  int64_t offset = 0;
  Strides strides(out.ndim());
  for (int i = 0; i < out.ndim(); ++i) {
    offset += static_cast<int64_t>(start_[i]) * out.strides()[i];
    strides[i] = out.strides()[i] * strides_[i];
  }
  cpu::copy_strided(update, update.strides(), 0, out, strides, offset, update.shape());
}

}  // namespace mlx::core

// CPU evaluation of the layout primitives that copy: casts, copies, and the reshapes and
// reinterpretations no view can express (the views are in backend/common/views.cpp).
#include "mlx/primitives/shape.h"

#include "mlx/backend/common/views.h"
#include "mlx/backend/cpu/copy.h"

namespace mlx::core {

void AsType::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::copy_to_contiguous(inputs[0], out);
}

void Copy::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.flags().row_contiguous && in.data_size() == in.size()) {
    out.copy_shared_buffer(in);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
    cpu::copy_strided(in, in.strides(), 0, out, out.strides(), 0, in.shape());
  }
}

void Reshape::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (reshape_as_view(in, out)) {
    return;
  }
  // Copy in the input's shape: the output's row-major order is the input's.
  out.set_data(allocator::malloc(out.nbytes()));
  cpu::copy_strided(in, in.strides(), 0, out, row_major_strides(in.shape()), 0, in.shape());
}

void View::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (reinterpret_as_view(in, out)) {
    return;
  }
  array dense(in.shape(), in.dtype(), nullptr, {});
  dense.set_data(allocator::malloc(dense.nbytes()));
  cpu::copy_strided(in, in.strides(), 0, dense, dense.strides(), 0, in.shape());
  set_view(dense, out, row_major_strides(out.shape()));
}

}  // namespace mlx::core

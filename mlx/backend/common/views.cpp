// Evaluation of the layout primitives that never move data: the output is a view of the
// input's buffer (wherever its bytes live), so one definition serves every backend. Reshape and
// View fall back to a backend's copy when no view expresses them (backend/<name>/shape.cpp).
#include "mlx/backend/common/views.h"

#include "mlx/primitives/shape.h"
#include "mlx/primitives/transform.h"

namespace mlx::core {

void set_view(const array& in, array& out, const Strides& strides, int64_t offset) {
  out.copy_shared_buffer(in, strides, flags_for_layout(out.shape(), strides),
                         span_for_layout(out.shape(), strides), offset);
}

bool concatenate_as_view(const std::vector<array>& inputs, int axis, array& out) {
  const array& first = inputs[0];
  const auto buffer = first.data_shared_ptr();
  if (inputs.size() < 2 || !buffer) {
    return false;
  }
  // The step between the inputs' positions along the axis: the stride of an input longer than
  // one there, else the distance from the first input to the second.
  const int64_t itemsize = static_cast<int64_t>(first.itemsize());
  std::optional<int64_t> step;
  for (const array& in : inputs) {
    if (in.shape(axis) > 1) {
      step = in.strides()[axis];
      break;
    }
  }
  if (!step) {
    step = (inputs[1].offset() - first.offset()) / itemsize;
  }
  int64_t position = 0;
  for (const array& in : inputs) {
    if (in.size() == 0 || in.dtype() != out.dtype() || in.data_shared_ptr() != buffer ||
        in.offset() != first.offset() + position * *step * itemsize) {
      return false;
    }
    for (int d = 0; d < in.ndim(); ++d) {
      const int64_t expected = d == axis ? *step : first.strides()[d];
      if (in.shape(d) > 1 && in.strides()[d] != expected) {
        return false;
      }
    }
    position += in.shape(axis);
  }
  Strides strides = first.strides();
  strides[axis] = *step;
  set_view(first, out, strides);
  return true;
}

// Strides that express `new_shape` over the same memory, if no copy is needed.
std::optional<Strides> reshape_strides(const Shape& shape, const Strides& strides,
                                       const Shape& new_shape) {
  Shape os;
  Strides ost;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != 1) {
      os.push_back(shape[i]);
      ost.push_back(strides[i]);
    }
  }
  Strides ns(new_shape.size(), 1);
  size_t oi = 0, ni = 0;
  while (oi < os.size() && ni < new_shape.size()) {
    if (new_shape[ni] == 1) {
      ++ni;
      continue;
    }
    int64_t op = os[oi], np = new_shape[ni];
    size_t oj = oi + 1, nj = ni + 1;
    while (op != np) {
      if (op < np) {
        op *= os[oj++];
      } else {
        np *= new_shape[nj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k) {
      if (ost[k] != ost[k + 1] * os[k + 1]) {
        return std::nullopt;
      }
    }
    int64_t s = ost[oj - 1];
    for (size_t k = nj; k-- > ni;) {
      ns[k] = s;
      s *= new_shape[k];
    }
    oi = oj;
    ni = nj;
  }
  return ns;
}

bool reshape_as_view(const array& in, array& out) {
  if (in.size() == 0) {
    out.set_data(allocator::malloc(0));
    return true;
  }
  if (in.flags().row_contiguous && in.data_size() == in.size()) {
    set_view(in, out, row_major_strides(out.shape()));
    return true;
  }
  if (auto strides = reshape_strides(in, out.shape())) {
    set_view(in, out, *strides);
    return true;
  }
  return false;
}

bool reinterpret_as_view(const array& in, array& out) {
  if (in.itemsize() == out.itemsize()) {
    out.copy_shared_buffer(in);
    return true;
  }
  if (out.size() == 0) {
    out.set_data(allocator::malloc(0));
    return true;
  }
  // Elements of the new size must not straddle rows or start misaligned.
  bool aligned = in.offset() % static_cast<int64_t>(out.itemsize()) == 0;
  if (in.flags().row_contiguous && aligned) {
    set_view(in, out, row_major_strides(out.shape()));
    return true;
  }
  return false;
}

namespace {

// Outputs share the leading inputs' buffers.
void share_leading_inputs(const std::vector<array>& inputs, std::vector<array>& outputs,
                          size_t first = 0) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].copy_shared_buffer(inputs[first + i]);
  }
}

}  // namespace

void Broadcast::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  Strides strides(out.ndim(), 0);
  int diff = out.ndim() - in.ndim();
  for (int i = 0; i < in.ndim(); ++i) {
    if (in.shape(i) == out.shape(i + diff) && in.shape(i) != 1) {
      strides[i + diff] = in.strides()[i];
    }
  }
  set_view(in, out, strides);
}

void Transpose::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  Strides strides(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) {
    strides[i] = in.strides()[axes_[i]];
  }
  set_view(in, out, strides);
}

void Slice::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (out.size() == 0) {
    out.set_data(allocator::malloc(0));
    return;
  }
  Strides strides(in.ndim());
  int64_t offset = 0;
  for (int i = 0; i < in.ndim(); ++i) {
    offset += static_cast<int64_t>(start_[i]) * in.strides()[i];
    strides[i] = in.strides()[i] * strides_[i];
  }
  set_view(in, out, strides, offset);
}

void Split::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  int64_t start = 0;
  for (auto& out : outputs) {
    if (out.size() == 0) {
      out.set_data(allocator::malloc(0));
    } else {
      set_view(in, out, in.strides(), start * in.strides()[axis_]);
    }
    start += out.shape(axis_);
  }
}

void AsStrided::eval_cpu(const std::vector<array>& inputs, array& out) {
  set_view(inputs[0], out, strides_, static_cast<int64_t>(offset_));
}

void Diagonal::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (out.size() == 0) {
    out.set_data(allocator::malloc(0));
    return;
  }
  // Stepping along the diagonal moves one step along both axes.
  Strides strides;
  for (int i = 0; i < in.ndim(); ++i) {
    if (i != axis1_ && i != axis2_) {
      strides.push_back(in.strides()[i]);
    }
  }
  strides.push_back(in.strides()[axis1_] + in.strides()[axis2_]);
  int64_t offset = offset_ >= 0 ? offset_ * in.strides()[axis2_]
                                : -static_cast<int64_t>(offset_) * in.strides()[axis1_];
  set_view(in, out, strides, offset);
}

void StopGradient::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.copy_shared_buffer(inputs[0]);
}

void Depends::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  share_leading_inputs(inputs, outputs);
}

void CustomTransforms::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  share_leading_inputs(inputs, outputs, num_primals_);
}

void DynamicBroadcast::eval_cpu(const std::vector<array>& inputs, array& out) {
  Broadcast(stream(), out.shape()).eval_cpu({inputs[0]}, out);
}

// Views are the same on every device.
#define MLX_GPU_EVAL_IS_CPU_EVAL(P)                                      \
  void P::eval_gpu(const std::vector<array>& inputs, Outputs& outputs) { \
    eval_cpu(inputs, outputs);                                           \
  }
MLX_GPU_EVAL_IS_CPU_EVAL(Broadcast)
MLX_GPU_EVAL_IS_CPU_EVAL(Transpose)
MLX_GPU_EVAL_IS_CPU_EVAL(Slice)
MLX_GPU_EVAL_IS_CPU_EVAL(Split)
MLX_GPU_EVAL_IS_CPU_EVAL(AsStrided)
MLX_GPU_EVAL_IS_CPU_EVAL(Diagonal)
MLX_GPU_EVAL_IS_CPU_EVAL(StopGradient)
MLX_GPU_EVAL_IS_CPU_EVAL(Depends)
MLX_GPU_EVAL_IS_CPU_EVAL(CustomTransforms)
MLX_GPU_EVAL_IS_CPU_EVAL(DynamicBroadcast)
#undef MLX_GPU_EVAL_IS_CPU_EVAL

// Squeezing and expanding are reshapes, on whichever backend the stream names.
void SqueezeAxes::eval_cpu(const std::vector<array>& inputs, array& out) {
  Reshape(stream(), out.shape()).eval_cpu(inputs, out);
}
void SqueezeAxes::eval_gpu(const std::vector<array>& inputs, array& out) {
  Reshape(stream(), out.shape()).eval_gpu(inputs, out);
}
void ExpandAxes::eval_cpu(const std::vector<array>& inputs, array& out) {
  Reshape(stream(), out.shape()).eval_cpu(inputs, out);
}
void ExpandAxes::eval_gpu(const std::vector<array>& inputs, array& out) {
  Reshape(stream(), out.shape()).eval_gpu(inputs, out);
}

Strides broadcast_strides(const array& x, const Shape& shape) {
  Strides strides = x.strides();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (x.shape(d) != shape[d]) {
      strides[d] = 0;
    }
  }
  return strides;
}

}  // namespace mlx::core

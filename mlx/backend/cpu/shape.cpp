// CPU evaluation of the layout primitives: views share the input buffer; copies go through
// the copy kernels.
#include "mlx/primitives/shape.h"

#include <optional>

#include "mlx/backend/cpu/copy.h"

namespace mlx::core {

namespace {

void set_view(const array& in, array& out, const Strides& strides, int64_t offset = 0) {
  out.copy_shared_buffer(in, strides, flags_for_layout(out.shape(), strides),
                         span_for_layout(out.shape(), strides), offset);
}

// Strides that express `new_shape` over the same memory, if no copy is needed.
std::optional<Strides> reshape_strides(const array& in, const Shape& new_shape) {
  Shape os;
  Strides ost;
  for (int i = 0; i < in.ndim(); ++i) {
    if (in.shape(i) != 1) {
      os.push_back(in.shape(i));
      ost.push_back(in.strides()[i]);
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

}  // namespace

void AsType::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::copy_to_contiguous(inputs[0], out);
}

void Copy::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.flags().row_contiguous && in.data_size() == in.size()) {
    out.copy_shared_buffer(in);
  } else {
    cpu::copy_to_contiguous(in, out);
  }
}

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

void Reshape::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.size() == 0) {
    out.set_data(allocator::malloc(0));
    return;
  }
  if (in.flags().row_contiguous && in.data_size() == in.size()) {
    set_view(in, out, row_major_strides(out.shape()));
    return;
  }
  if (auto strides = reshape_strides(in, out.shape())) {
    set_view(in, out, *strides);
    return;
  }
  cpu::copy_to_contiguous(in, out);
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

void AsStrided::eval_cpu(const std::vector<array>& inputs, array& out) {
  set_view(inputs[0], out, strides_, static_cast<int64_t>(offset_));
}

}  // namespace mlx::core

// Transform rules of the layout primitives.
#include "mlx/ops.h"
#include "mlx/primitives/shape.h"
#include "mlx/transforms/rule_utils.h"

namespace mlx::core {

std::vector<array> Copy::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  return {tangents[0]};
}
std::vector<array> Copy::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                             const std::vector<int>&, const std::vector<array>&) {
  return {cotangents[0]};
}
std::pair<std::vector<array>, std::vector<int>> Copy::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  return {{copy(inputs[0], stream())}, axes};
}

// AsType

std::vector<array> AsType::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                               const std::vector<int>&) {
  return {astype(tangents[0], dtype_, stream())};
}
std::vector<array> AsType::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents, const std::vector<int>&,
                               const std::vector<array>&) {
  return {astype(cotangents[0], primals[0].dtype(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> AsType::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  return {{astype(inputs[0], dtype_, stream())}, axes};
}

// Broadcast

std::vector<array> Broadcast::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {broadcast_to(tangents[0], shape_, stream())};
}
std::vector<array> Broadcast::vjp(const std::vector<array>& primals,
                                  const std::vector<array>& cotangents, const std::vector<int>&,
                                  const std::vector<array>&) {
  // Sum over the axes the broadcast created or stretched.
  const Shape& in = primals[0].shape();
  int lead = static_cast<int>(shape_.size()) - static_cast<int>(in.size());
  std::vector<int> axes;
  for (int i = 0; i < static_cast<int>(shape_.size()); ++i) {
    if (i < lead || (in[i - lead] == 1 && shape_[i] != 1)) {
      axes.push_back(i);
    }
  }
  array summed = axes.empty() ? cotangents[0] : sum(cotangents[0], axes, true, stream());
  return {reshape(summed, in, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Broadcast::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  array x = detail::batch_first(inputs[0], axes[0]);
  // Line the slice up with the target's trailing axes, then broadcast behind the batch axis.
  Shape aligned = x.shape();
  aligned.insert(aligned.begin() + 1, shape_.size() + 1 - x.ndim(), 1);
  Shape target = shape_;
  target.insert(target.begin(), x.shape(0));
  return {{broadcast_to(reshape(x, aligned, stream()), target, stream())}, {0}};
}

// Reshape

std::vector<array> Reshape::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                const std::vector<int>&) {
  return {reshape(tangents[0], shape_, stream())};
}
std::vector<array> Reshape::vjp(const std::vector<array>& primals,
                                const std::vector<array>& cotangents, const std::vector<int>&,
                                const std::vector<array>&) {
  return {reshape(cotangents[0], primals[0].shape(), stream())};
}
std::pair<std::vector<array>, std::vector<int>> Reshape::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  array x = detail::batch_first(inputs[0], axes[0]);
  Shape target = shape_;
  target.insert(target.begin(), x.shape(0));
  return {{reshape(x, target, stream())}, {0}};
}

// Transpose

std::vector<array> Transpose::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {transpose(tangents[0], axes_, stream())};
}
std::vector<array> Transpose::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  std::vector<int> inverse(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) {
    inverse[axes_[i]] = static_cast<int>(i);
  }
  return {transpose(cotangents[0], inverse, stream())};
}
std::pair<std::vector<array>, std::vector<int>> Transpose::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  // Keep the batch axis in front and permute the others around it.
  int b = axes[0];
  std::vector<int> perm{b};
  for (int a : axes_) {
    perm.push_back(a < b ? a : a + 1);
  }
  return {{transpose(inputs[0], perm, stream())}, {0}};
}

}  // namespace mlx::core

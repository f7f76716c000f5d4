#include "mlx/primitives/transform.h"

#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/ops/graph.h"
#include "mlx/primitives/shape.h"
#include "mlx/transforms/rule_utils.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

std::vector<array> leading(const std::vector<array>& v, size_t n) {
  return std::vector<array>(v.begin(), v.begin() + n);
}

}  // namespace

// StopGradient

std::vector<array> StopGradient::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&) {
  return {zeros_like(primals[0])};
}
std::vector<array> StopGradient::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0])};
}
std::pair<std::vector<array>, std::vector<int>> StopGradient::vmap(const std::vector<array>& inputs,
                                                                   const std::vector<int>& axes) {
  return {{stop_gradient(inputs[0], stream())}, axes};
}

// Depends

std::vector<Shape> Depends::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < num_outputs_; ++i) {
    shapes.push_back(inputs[i].shape());
  }
  return shapes;
}
std::vector<array> Depends::jvp(const std::vector<array>& primals,
                                const std::vector<array>& tangents,
                                const std::vector<int>& argnums) {
  std::vector<array> out;
  for (size_t i = 0; i < num_outputs_; ++i) {
    auto it = std::find(argnums.begin(), argnums.end(), static_cast<int>(i));
    out.push_back(it != argnums.end() ? tangents[it - argnums.begin()] : zeros_like(primals[i]));
  }
  return out;
}
std::vector<array> Depends::vjp(const std::vector<array>& primals,
                                const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> out;
  for (int a : argnums) {
    out.push_back(a < static_cast<int>(num_outputs_) ? cotangents[a] : zeros_like(primals[a]));
  }
  return out;
}
std::pair<std::vector<array>, std::vector<int>> Depends::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  std::vector<array> deps(inputs.begin() + num_outputs_, inputs.end());
  return {depends(leading(inputs, num_outputs_), deps),
          std::vector<int>(axes.begin(), axes.begin() + num_outputs_)};
}

// CustomTransforms

std::vector<Shape> CustomTransforms::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  for (size_t i = num_primals_; i < inputs.size(); ++i) {
    shapes.push_back(inputs[i].shape());
  }
  return shapes;
}

std::vector<array> CustomTransforms::vjp(const std::vector<array>& primals,
                                         const std::vector<array>& cotangents,
                                         const std::vector<int>& argnums,
                                         const std::vector<array>& outputs) {
  std::vector<array> args = leading(primals, num_primals_);
  std::vector<array> all = vjp_fun_ ? (*vjp_fun_)(args, cotangents, outputs)
                                    : mlx::core::vjp(fun_, args, cotangents).second;
  if (all.size() != num_primals_) {
    throw std::invalid_argument(msg("[custom_function] The vjp function returned ", all.size(),
                                    " cotangents for ", num_primals_, " inputs."));
  }
  std::vector<array> out;
  for (int a : argnums) {
    out.push_back(a < static_cast<int>(num_primals_) ? all[a] : zeros_like(primals[a]));
  }
  return out;
}

std::vector<array> CustomTransforms::jvp(const std::vector<array>& primals,
                                         const std::vector<array>& tangents,
                                         const std::vector<int>& argnums) {
  std::vector<array> args = leading(primals, num_primals_);
  std::vector<int> primal_argnums;
  std::vector<array> primal_tangents;
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] < static_cast<int>(num_primals_)) {
      primal_argnums.push_back(argnums[i]);
      primal_tangents.push_back(tangents[i]);
    }
  }
  if (jvp_fun_) {
    return (*jvp_fun_)(args, primal_tangents, primal_argnums);
  }
  std::vector<array> full;
  for (size_t i = 0; i < num_primals_; ++i) {
    auto it = std::find(primal_argnums.begin(), primal_argnums.end(), static_cast<int>(i));
    full.push_back(it != primal_argnums.end() ? primal_tangents[it - primal_argnums.begin()]
                                              : zeros_like(args[i]));
  }
  return mlx::core::jvp(fun_, args, full).second;
}

std::pair<std::vector<array>, std::vector<int>> CustomTransforms::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  std::vector<array> args = leading(inputs, num_primals_);
  std::vector<int> arg_axes(axes.begin(), axes.begin() + num_primals_);
  if (vmap_fun_) {
    return (*vmap_fun_)(args, arg_axes);
  }
  std::vector<array> outs = mlx::core::vmap(fun_, arg_axes)(args);
  return {outs, std::vector<int>(outs.size(), 0)};
}

// DynamicBroadcast

std::vector<Shape> DynamicBroadcast::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  for (auto& in : inputs) {
    shapes.push_back(in.shape());
  }
  return {broadcast_shapes(shapes, "broadcast")};
}
std::vector<array> DynamicBroadcast::jvp(const std::vector<array>& primals,
                                         const std::vector<array>& tangents,
                                         const std::vector<int>& argnums) {
  if (argnums[0] != 0) {
    return {zeros_like(dynamic_broadcast(primals, stream()))};
  }
  std::vector<array> inputs = primals;
  inputs[0] = tangents[0];
  return {dynamic_broadcast(inputs, stream())};
}
std::vector<array> DynamicBroadcast::vjp(const std::vector<array>& primals,
                                         const std::vector<array>& cotangents,
                                         const std::vector<int>& argnums,
                                         const std::vector<array>&) {
  std::vector<array> out;
  for (int a : argnums) {
    out.push_back(a == 0 ? unbroadcast(cotangents[0], primals[0], stream())
                         : zeros_like(primals[a], stream()));
  }
  return out;
}
std::pair<std::vector<array>, std::vector<int>> DynamicBroadcast::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  return {{dynamic_broadcast(detail::align_batch(inputs, axes), stream())}, {0}};
}

// DynamicUnbroadcast

std::vector<int> DynamicUnbroadcast::summed_axes(const Shape& from, const Shape& to,
                                                 bool keep_front) {
  int lead = static_cast<int>(from.size()) - static_cast<int>(to.size());
  auto fail = [&] {
    throw std::invalid_argument(
        msg("[unbroadcast] Cannot sum an array of shape ", from, " to shape ", to, "."));
  };
  if (lead < 0 || (keep_front && (lead != 0 || from.empty()))) {
    fail();
  }
  std::vector<int> axes;
  for (int i = keep_front ? 1 : 0; i < static_cast<int>(from.size()); ++i) {
    if (i < lead) {
      axes.push_back(i);
    } else if (to[i - lead] != from[i]) {
      if (to[i - lead] != 1) {
        fail();
      }
      axes.push_back(i);
    }
  }
  return axes;
}
std::vector<Shape> DynamicUnbroadcast::output_shapes(const std::vector<array>& inputs) {
  summed_axes(inputs[0].shape(), inputs[1].shape(), keep_front_);
  Shape out = inputs[1].shape();
  if (keep_front_) {
    out[0] = inputs[0].shape(0);
  }
  return {out};
}
std::vector<array> DynamicUnbroadcast::jvp(const std::vector<array>& primals,
                                           const std::vector<array>& tangents,
                                           const std::vector<int>& argnums) {
  std::vector<array> in{argnums[0] == 0 ? tangents[0] : primals[0], primals[1]};
  Shape shape = output_shapes(in)[0];
  array t(std::move(shape), in[0].dtype(),
          std::make_shared<DynamicUnbroadcast>(stream(), keep_front_), in);
  return {argnums[0] == 0 ? t : zeros_like(t, stream())};
}
std::vector<array> DynamicUnbroadcast::vjp(const std::vector<array>& primals,
                                           const std::vector<array>& cotangents,
                                           const std::vector<int>& argnums,
                                           const std::vector<array>&) {
  std::vector<array> out;
  for (int a : argnums) {
    out.push_back(a == 0 ? dynamic_broadcast({cotangents[0], primals[0]}, stream())
                         : zeros_like(primals[1], stream()));
  }
  return out;
}
std::pair<std::vector<array>, std::vector<int>> DynamicUnbroadcast::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  // Batch axes in front (size 1 for an unmapped input), the lending input padded with size-1
  // axes behind it to the rank of the summed one; keep_front leaves the batch axis alone.
  auto front = [&](int i) {
    return axes[i] >= 0 ? detail::batch_first(inputs[i], axes[i])
                        : expand_dims(inputs[i], 0, stream());
  };
  array x = front(0), like = front(1);
  std::vector<int> padded;
  for (int i = 1; i <= x.ndim() - like.ndim(); ++i) {
    padded.push_back(i);
  }
  if (!padded.empty()) {
    like = expand_dims(like, padded, stream());
  }
  summed_axes(x.shape(), like.shape(), true);
  Shape shape = like.shape();
  shape[0] = x.shape(0);
  array out(std::move(shape), x.dtype(), std::make_shared<DynamicUnbroadcast>(stream(), true),
            {x, like});
  if (!padded.empty()) {
    out = squeeze(out, padded, stream());
  }
  // An unmapped summand gives the same sum for every batch element.
  return axes[0] >= 0
             ? std::pair{std::vector<array>{out}, std::vector<int>{0}}
             : std::pair{std::vector<array>{squeeze(out, 0, stream())}, std::vector<int>{-1}};
}

// NumberOfElements

bool NumberOfElements::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const NumberOfElements*>(&other);
  return o && o->axes_ == axes_ && o->inverted_ == inverted_ && o->dtype_ == dtype_;
}
std::vector<array> NumberOfElements::jvp(const std::vector<array>&, const std::vector<array>&,
                                         const std::vector<int>&) {
  return {array(0.0, dtype_)};
}
std::vector<array> NumberOfElements::vjp(const std::vector<array>& primals,
                                         const std::vector<array>&, const std::vector<int>&,
                                         const std::vector<array>&) {
  return {zeros_like(primals[0])};
}
std::pair<std::vector<array>, std::vector<int>> NumberOfElements::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  // The count of one slice: the same axes, shifted past the batch axis.
  std::vector<int> shifted;
  for (int a : axes_) {
    shifted.push_back(a < axes[0] ? a : a + 1);
  }
  auto count = std::make_shared<NumberOfElements>(stream(), shifted, inverted_, dtype_);
  return {{array(Shape{}, dtype_, count, {inputs[0]})}, {-1}};
}

// SqueezeAxes and ExpandAxes (axes sorted, non-negative)

namespace {

std::vector<int> shift_past_batch(const std::vector<int>& axes) {
  std::vector<int> shifted;
  for (int a : axes) {
    shifted.push_back(a + 1);
  }
  return shifted;
}

}  // namespace

bool SqueezeAxes::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const SqueezeAxes*>(&other);
  return o && o->axes_ == axes_;
}
std::vector<Shape> SqueezeAxes::output_shapes(const std::vector<array>& inputs) {
  Shape shape;
  for (int i = 0; i < inputs[0].ndim(); ++i) {
    if (std::find(axes_.begin(), axes_.end(), i) == axes_.end()) {
      shape.push_back(inputs[0].shape(i));
    } else if (inputs[0].shape(i) != 1) {
      throw std::invalid_argument(
          msg("[squeeze] Cannot squeeze axis ", i, " of shape ", inputs[0].shape(), "."));
    }
  }
  return {shape};
}
std::vector<array> SqueezeAxes::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                    const std::vector<int>&) {
  return {squeeze(tangents[0], axes_, stream())};
}
std::vector<array> SqueezeAxes::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                    const std::vector<int>&, const std::vector<array>&) {
  return {expand_dims(cotangents[0], axes_, stream())};
}
std::pair<std::vector<array>, std::vector<int>> SqueezeAxes::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  array x = detail::batch_first(inputs[0], axes[0]);
  return {{squeeze(x, shift_past_batch(axes_), stream())}, {0}};
}

bool ExpandAxes::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ExpandAxes*>(&other);
  return o && o->axes_ == axes_;
}
std::vector<Shape> ExpandAxes::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  for (int a : axes_) {
    shape.insert(shape.begin() + a, 1);
  }
  return {shape};
}
std::vector<array> ExpandAxes::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                   const std::vector<int>&) {
  return {expand_dims(tangents[0], axes_, stream())};
}
std::vector<array> ExpandAxes::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                   const std::vector<int>&, const std::vector<array>&) {
  return {squeeze(cotangents[0], axes_, stream())};
}
std::pair<std::vector<array>, std::vector<int>> ExpandAxes::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  array x = detail::batch_first(inputs[0], axes[0]);
  return {{expand_dims(x, shift_past_batch(axes_), stream())}, {0}};
}

std::vector<array> detail::outputs_like(const std::vector<array>& like,
                                        std::shared_ptr<Primitive> primitive,
                                        const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (auto& a : like) {
    shapes.push_back(a.shape());
    dtypes.push_back(a.dtype());
  }
  return array::make_arrays(std::move(shapes), dtypes, primitive, inputs);
}

}  // namespace mlx::core

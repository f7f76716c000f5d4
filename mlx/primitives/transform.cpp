#include "mlx/primitives/transform.h"

#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/ops/graph.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// Outputs share the leading inputs' buffers.
void share_leading_inputs(const std::vector<array>& inputs, std::vector<array>& outputs,
                          size_t first = 0) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].copy_shared_buffer(inputs[first + i]);
  }
}

std::vector<array> leading(const std::vector<array>& v, size_t n) {
  return std::vector<array>(v.begin(), v.begin() + n);
}

}  // namespace

// StopGradient

void StopGradient::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.copy_shared_buffer(inputs[0]);
}
void StopGradient::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  share_leading_inputs(inputs, outputs);
}
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

void Depends::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  share_leading_inputs(inputs, outputs);
}
void Depends::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  share_leading_inputs(inputs, outputs);
}
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

void CustomTransforms::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  share_leading_inputs(inputs, outputs, num_primals_);
}
void CustomTransforms::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  share_leading_inputs(inputs, outputs, num_primals_);
}
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

}  // namespace mlx::core

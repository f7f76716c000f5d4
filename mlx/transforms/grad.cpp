// grad and value_and_grad: vjp of the first (scalar) output with a cotangent of one.
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

void check_argnums(const std::vector<int>& argnums, const std::vector<array>& inputs) {
  if (argnums.empty()) {
    throw std::invalid_argument("[grad] argnums must name at least one input.");
  }
  for (size_t i = 0; i < argnums.size(); ++i) {
    int a = argnums[i];
    if (a < 0 || a >= static_cast<int>(inputs.size())) {
      throw std::invalid_argument(msg("[grad] argnum ", a, " is out of range for a function of ",
                                      inputs.size(), " inputs."));
    }
    for (size_t j = 0; j < i; ++j) {
      if (argnums[j] == a) {
        throw std::invalid_argument(msg("[grad] argnum ", a, " is given twice."));
      }
    }
    if (!is_inexact(inputs[a].dtype())) {
      throw std::invalid_argument(msg("[grad] Cannot differentiate with respect to input ", a,
                                      " of dtype ", inputs[a].dtype(),
                                      "; only floating point and complex inputs have gradients."));
    }
  }
}

}  // namespace

ValueAndGradFn value_and_grad(const ArrayFn& fun, const std::vector<int>& argnums) {
  return [fun, argnums](const std::vector<array>& inputs) {
    check_argnums(argnums, inputs);
    // Only the first output is differentiated; the others ride along as auxiliary values.
    std::vector<array> outputs;
    auto first_output = [&](const std::vector<array>& x) {
      outputs = fun(x);
      if (outputs.empty()) {
        throw std::invalid_argument("[grad] The function must return at least one array.");
      }
      if (outputs[0].size() != 1) {
        throw std::invalid_argument(
            msg("[grad] The function must return a scalar to "
                "differentiate; its first output has shape ",
                outputs[0].shape(), "."));
      }
      return std::vector<array>{outputs[0]};
    };
    auto grads = detail::vjp(first_output, inputs, {}, argnums).second;
    return std::make_pair(std::move(outputs), std::move(grads));
  };
}

ValueAndGradFn value_and_grad(const ArrayFn& fun, int argnum) {
  return value_and_grad(fun, std::vector<int>{argnum});
}

SimpleValueAndGradFn value_and_grad(const ScalarFn& fun, const std::vector<int>& argnums) {
  auto vg = value_and_grad(
      [fun](const std::vector<array>& x) { return std::vector<array>{fun(x)}; }, argnums);
  return [vg](const std::vector<array>& inputs) {
    auto [values, grads] = vg(inputs);
    return std::make_pair(values[0], std::move(grads));
  };
}

SimpleValueAndGradFn value_and_grad(const ScalarFn& fun, int argnum) {
  return value_and_grad(fun, std::vector<int>{argnum});
}

std::function<std::pair<array, array>(const array&)> value_and_grad(const UnaryFn& fun) {
  auto vg = value_and_grad([fun](const std::vector<array>& x) { return fun(x[0]); }, 0);
  return [vg](const array& x) {
    auto [value, grads] = vg({x});
    return std::make_pair(value, grads[0]);
  };
}

std::function<std::vector<array>(const std::vector<array>&)> grad(const ScalarFn& fun,
                                                                  const std::vector<int>& argnums) {
  auto vg = value_and_grad(fun, argnums);
  return [vg](const std::vector<array>& inputs) { return vg(inputs).second; };
}

std::function<std::vector<array>(const std::vector<array>&)> grad(const ScalarFn& fun, int argnum) {
  return grad(fun, std::vector<int>{argnum});
}

UnaryFn grad(const UnaryFn& fun) {
  auto vg = value_and_grad(fun);
  return [vg](const array& x) { return vg(x).second; };
}

}  // namespace mlx::core

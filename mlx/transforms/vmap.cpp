// Vectorization: trace the function on placeholders for one slice of the inputs, then rebuild
// the traced graph with each primitive's vmap rule over the whole batch.
#include <stdexcept>
#include <unordered_map>

#include "mlx/ops.h"
#include "mlx/primitives/primitive.h"
#include "mlx/transforms/graph.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

struct Mapped {
  array value;
  int axis;  // -1: not mapped
};

// The batch size, after checking every in_axis against its input.
int check_in_axes(const std::vector<array>& inputs, const std::vector<int>& axes) {
  if (axes.size() != inputs.size()) {
    throw std::invalid_argument(
        msg("[vmap] Got ", axes.size(), " in_axes for ", inputs.size(), " inputs."));
  }
  int batch = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int ax = axes[i];
    if (ax == -1) {
      continue;
    }
    if (ax < 0 || ax >= inputs[i].ndim()) {
      throw std::invalid_argument(msg("[vmap] in_axis ", ax, " is out of range for input ", i,
                                      " of shape ", inputs[i].shape(),
                                      " (use -1 for an input that is not mapped)."));
    }
    int size = inputs[i].shape(ax);
    if (batch >= 0 && size != batch) {
      throw std::invalid_argument(msg("[vmap] Inconsistent sizes of the mapped axes: input ", i,
                                      " has ", size, " along axis ", ax, ", expected ", batch,
                                      "."));
    }
    batch = size;
  }
  if (batch < 0) {
    throw std::invalid_argument("[vmap] At least one input must be mapped.");
  }
  return batch;
}

// Puts the mapped axis of `m` at `out_axis`, broadcasting an unmapped value over the batch.
array place_batch_axis(const Mapped& m, int out_axis, int batch, size_t index) {
  int ndim = m.value.ndim() + (m.axis < 0 ? 1 : 0);
  if (out_axis < 0 || out_axis >= ndim) {
    throw std::invalid_argument(msg("[vmap] out_axis ", out_axis, " is out of range for output ",
                                    index, ", which has ", ndim, " dimensions when mapped."));
  }
  if (m.axis < 0) {
    array e = expand_dims(m.value, out_axis);
    Shape shape = e.shape();
    shape[out_axis] = batch;
    return broadcast_to(e, shape);
  }
  return moveaxis(m.value, m.axis, out_axis);
}

}  // namespace

ArrayFn vmap(const ArrayFn& fun, const std::vector<int>& in_axes,
             const std::vector<int>& out_axes) {
  return [fun, in_axes, out_axes](const std::vector<array>& inputs) {
    std::vector<int> axes = in_axes.empty() ? std::vector<int>(inputs.size(), 0) : in_axes;
    int batch = check_in_axes(inputs, axes);

    detail::TracingScope scope;
    std::vector<array> traced = inputs;
    detail::IdSet sources;
    std::unordered_map<uintptr_t, Mapped> mapped;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (axes[i] < 0) {
        continue;
      }
      Shape slice_shape = inputs[i].shape();
      slice_shape.erase(slice_shape.begin() + axes[i]);
      traced[i] = array(std::move(slice_shape), inputs[i].dtype(), nullptr, {});
      traced[i].set_tracer(true);
      sources.insert(traced[i].id());
      mapped.emplace(traced[i].id(), Mapped{inputs[i], axes[i]});
    }
    std::vector<array> outputs = fun(traced);
    if (!out_axes.empty() && out_axes.size() != outputs.size()) {
      throw std::invalid_argument(
          msg("[vmap] Got ", out_axes.size(), " out_axes for ", outputs.size(), " outputs."));
    }

    for (auto& node : detail::dependent_tape(outputs, sources, detail::Walk::vectorize)) {
      std::vector<array> node_inputs;
      std::vector<int> node_axes;
      for (auto& in : node.inputs()) {
        auto found = mapped.find(in.id());
        node_inputs.push_back(found != mapped.end() ? found->second.value : in);
        node_axes.push_back(found != mapped.end() ? found->second.axis : -1);
      }
      auto [outs, out_ax] = node.primitive().vmap(node_inputs, node_axes);
      std::vector<array> node_outputs = node.outputs();
      if (outs.size() != node_outputs.size() || out_ax.size() != outs.size()) {
        throw std::logic_error(msg("[vmap] The rule of ", node.primitive().name(),
                                   " returned the wrong number of outputs."));
      }
      for (size_t k = 0; k < outs.size(); ++k) {
        mapped.emplace(node_outputs[k].id(), Mapped{outs[k], out_ax[k]});
      }
    }

    std::vector<array> results;
    for (size_t j = 0; j < outputs.size(); ++j) {
      int out_axis = out_axes.empty() ? 0 : out_axes[j];
      auto found = mapped.find(outputs[j].id());
      Mapped m = found != mapped.end() ? found->second : Mapped{outputs[j], -1};
      results.push_back(place_batch_axis(m, out_axis, batch, j));
    }
    return results;
  };
}

UnaryFn vmap(const UnaryFn& fun, int in_axis, int out_axis) {
  auto f = vmap([fun](const std::vector<array>& x) { return std::vector<array>{fun(x[0])}; },
                {in_axis}, {out_axis});
  return [f](const array& x) { return f({x})[0]; };
}

std::function<array(const array&, const array&)> vmap(
    const std::function<array(const array&, const array&)>& fun, int in_axis_a, int in_axis_b,
    int out_axis) {
  auto f = vmap([fun](const std::vector<array>& x) { return std::vector<array>{fun(x[0], x[1])}; },
                {in_axis_a, in_axis_b}, {out_axis});
  return [f](const array& a, const array& b) { return f({a, b})[0]; };
}

}  // namespace mlx::core

// custom_function, custom_vjp and checkpoint: wrap a function's outputs in a CustomTransforms
// node whose rules replace those of the function's graph.
#include "mlx/ops/graph.h"
#include "mlx/primitives/transform.h"
#include "mlx/transforms/transforms.h"

namespace mlx::core {

ArrayFn custom_function(const ArrayFn& fun, std::optional<CustomVJPFn> fun_vjp,
                        std::optional<CustomJVPFn> fun_jvp, std::optional<CustomVmapFn> fun_vmap) {
  return [=](const std::vector<array>& args) {
    std::vector<array> outputs = fun(args);
    std::vector<array> inputs = args;
    inputs.insert(inputs.end(), outputs.begin(), outputs.end());
    auto primitive = std::make_shared<CustomTransforms>(to_stream({}), args.size(), fun, fun_vjp,
                                                        fun_jvp, fun_vmap);
    return detail::outputs_like(outputs, primitive, inputs);
  };
}

ArrayFn custom_vjp(const ArrayFn& fun, const CustomVJPFn& fun_vjp) {
  return custom_function(fun, fun_vjp);
}

ArrayFn checkpoint(const ArrayFn& fun) {
  CustomVJPFn recompute = [fun](const std::vector<array>& primals,
                                const std::vector<array>& cotangents, const std::vector<array>&) {
    // Recompute only once the cotangents exist, so at most one segment's intermediates are
    // alive at a time.
    return vjp(fun, depends(primals, cotangents), cotangents).second;
  };
  return custom_vjp(fun, recompute);
}

}  // namespace mlx::core

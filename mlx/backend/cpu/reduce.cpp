// Reduce::eval_cpu and the sum / prod / all / any instantiations of the engine in reduce.h.
#include "mlx/backend/cpu/reduce.h"

#include "mlx/utils.h"

namespace mlx::core {

namespace {

using namespace cpu;

// Sum and product outputs: small integers and bool widen to 32 bits as in MLX.
template <typename T>
using widened_t = std::conditional_t<
    std::is_same_v<T, bool> || std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t>, int32_t,
    std::conditional_t<std::is_same_v<T, uint8_t> || std::is_same_v<T, uint16_t>, uint32_t, T>>;

template <template <typename> class Op>
void reduce_arithmetic(const array& in, array& out, const std::vector<int>& axes,
                       const char* name) {
  dispatch_all(in.dtype(), name, [&]<typename T>() {
    if constexpr (is_half_v<T>) {
      // 16-bit floats accumulate in float32; the output may stay float32 (used by mean).
      if (out.dtype() == float32) {
        reduce<Op<float>, T, float>(in, out, axes);
      } else {
        reduce<Op<float>, T, T>(in, out, axes);
      }
    } else {
      using Out = widened_t<T>;
      if (out.dtype() != dtype_of<Out>()) {
        throw std::invalid_argument(
            msg("[", name, "] Unexpected output dtype ", out.dtype(), " for ", in.dtype(), "."));
      }
      reduce<Op<Out>, T, Out>(in, out, axes);
    }
  });
}

template <template <typename> class Op>
void reduce_logical(const array& in, array& out, const std::vector<int>& axes, const char* name) {
  dispatch_all(in.dtype(), name,
               [&]<typename T>() { reduce<Op<logical_lane_t<T>>, T, bool>(in, out, axes); });
}

}  // namespace

void Reduce::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  switch (type_) {
    case And:
      return reduce_logical<AndOp>(in, out, axes_, "all");
    case Or:
      return reduce_logical<OrOp>(in, out, axes_, "any");
    case Sum:
      return reduce_arithmetic<SumOp>(in, out, axes_, "sum");
    case Prod:
      return reduce_arithmetic<ProdOp>(in, out, axes_, "prod");
    case Min:
    case Max:
      return reduce_min_max(in, out, type_, axes_);
  }
}

}  // namespace mlx::core

// Reduce::eval_cpu and the sum / prod / all / any instantiations of the engine in reduce.h.
#include "mlx/backend/cpu/reduce.h"

#include "mlx/utils.h"

namespace mlx::core {

namespace cpu {

ReducePlan make_reduce_plan(const array& in, const array& out, const std::vector<int>& axes) {
  struct Dim {
    int64_t size, in, out;
    bool reduced;
  };
  ReducePlan p;
  std::vector<Dim> dims;
  for (int d = 0; d < in.ndim(); ++d) {
    if (in.shape(d) == 1) {
      continue;
    }
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    Dim x{in.shape(d), in.strides()[d], reduced ? 0 : out.strides()[d], reduced};
    if (x.in < 0) {
      // Reductions do not depend on order: walk the dimension forwards.
      p.in_offset += (x.size - 1) * x.in;
      p.out_offset += (x.size - 1) * x.out;
      x.in = -x.in;
      x.out = -x.out;
    }
    dims.push_back(x);
  }
  // Decreasing stride, broadcast (stride-0) dimensions outermost.
  auto key = [](const Dim& d) { return d.in == 0 ? std::numeric_limits<int64_t>::max() : d.in; };
  std::stable_sort(dims.begin(), dims.end(),
                   [&](const Dim& a, const Dim& b) { return key(a) > key(b); });
  for (const Dim& d : dims) {
    Shape& shape = d.reduced ? p.rshape : p.kshape;
    Strides& in_strides = d.reduced ? p.rin : p.kin;
    bool merge = !shape.empty() && in_strides.back() == d.in * d.size &&
                 (d.reduced || p.kout.back() == d.out * d.size);
    if (merge) {
      shape.back() *= d.size;
      in_strides.back() = d.in;
      if (!d.reduced) {
        p.kout.back() = d.out;
      }
    } else {
      shape.push_back(static_cast<int32_t>(d.size));
      in_strides.push_back(d.in);
      if (!d.reduced) {
        p.kout.push_back(d.out);
      }
    }
  }
  return p;
}

}  // namespace cpu

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

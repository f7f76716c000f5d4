#include "mlx/backend/common/reduce_plan.h"

#include <algorithm>
#include <limits>

namespace mlx::core {

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

}  // namespace mlx::core

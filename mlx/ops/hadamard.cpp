#include "mlx/ops/hadamard.h"

#include <cmath>

#include "mlx/backend/common/hadamard_matrices.h"
#include "mlx/ops/creation.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/hadamard.h"
#include "mlx/utils.h"

namespace mlx::core {

array hadamard_transform(const array& a, std::optional<float> scale, StreamOrDevice s) {
  if (is_complex(a.dtype())) {
    throw std::invalid_argument(
        msg("[hadamard_transform] Complex inputs are not supported, got ", a.dtype(), "."));
  }
  Dtype dt = is_floating_point(a.dtype()) ? a.dtype() : float32;
  array x = a.ndim() == 0 ? reshape(a, {1}, s) : a;
  int64_t n = x.shape(-1);
  if (n > 0 && hadamard_size(n).m == 0) {
    throw std::invalid_argument(msg("[hadamard_transform] The last dimension (", n,
                                    ") must be m * 2^k with m in (1, 12, 20, 28), got shape ",
                                    a.shape(), "."));
  }
  double sc =
      scale ? static_cast<double>(*scale) : (n > 0 ? 1.0 / std::sqrt(static_cast<double>(n)) : 1.0);
  array out = hadamard_node(astype(x, dt, s), sc, false, to_stream(s));
  return a.ndim() == 0 ? reshape(out, {}, s) : out;
}

}  // namespace mlx::core

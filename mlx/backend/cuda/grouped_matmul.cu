// GatherMM::eval_gpu and SegmentedMM::eval_gpu through cuBLASLt: gathered products grouped by
// right-hand matrix (grouped_products.h), one product per segment on views of the operands.
#include "mlx/backend/common/gathered_matrices.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/gemm.h"
#include "mlx/backend/cuda/grouped_products.h"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/primitives/grouped_matmul.h"

namespace mlx::core {

void GatherMM::eval_gpu(const std::vector<array>& inputs, array& out) {
  cu::allocate(out);
  const array& b = inputs[1];  // (E, K, N)
  auto lhs = matrix_indices(inputs[2], inputs[0].shape(0), "gather_mm");
  auto rhs = matrix_indices(inputs[3], b.shape(0), "gather_mm");
  if (out.size() == 0) {
    return;
  }
  array a = cu::dense_copy(inputs[0]);
  const int32_t K = b.shape(1), N = b.shape(2);
  cu::grouped_products(a, lhs, rhs, b.shape(0), out, [&](int64_t e, const array& rows, array& res) {
    array be = cu::view_of(b, {K, N}, {b.strides()[1], b.strides()[2]}, e * b.strides()[0]);
    cu::gemm(rows, be, res);
  });
}

void SegmentedMM::eval_gpu(const std::vector<array>& inputs, array& out) {
  cu::allocate(out);
  const array &a = inputs[0], &b = inputs[1];  // (M, K), (K, N)
  auto bounds = matrix_indices(inputs[2], a.shape(1) + 1, "segmented_mm");
  if (out.size() == 0) {
    return;
  }
  const int32_t M = a.shape(0), N = b.shape(1);
  for (size_t s = 0; s < bounds.size() / 2; ++s) {
    const int64_t start = bounds[2 * s];
    const int32_t len = static_cast<int32_t>(std::max<int64_t>(bounds[2 * s + 1] - start, 0));
    array as = cu::view_of(a, {M, len}, a.strides(), start * a.strides()[1]);
    array bs = cu::view_of(b, {len, N}, b.strides(), start * b.strides()[0]);
    array os = cu::view_of(out, {M, N}, {N, 1}, static_cast<int64_t>(s) * M * N);
    cu::gemm(as, bs, os);  // an empty segment gives zeros
  }
}

}  // namespace mlx::core

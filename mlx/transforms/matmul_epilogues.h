// compile's matrix-product epilogue pass: an elementwise op that is a product's only reader
// and that the GPU's matrix library can apply as the product is written becomes part of the
// product's step. Today that is the tanh-approximated GELU after a Linear layer whose output
// nothing else reads, gelu_approx(x @ W + b) (MatmulGeluApprox: cuBLASLt's GELU_BIAS
// epilogue), and its gradient, gelu_approx_vjp(h, reshape(dy @ W)) (MatmulGeluApproxVjp:
// cuBLASLt's DGELU epilogue reads h and writes the gradient). Either way the product's buffer
// is never written or read back.
#pragma once

#include <vector>

#include "mlx/array.h"
#include "mlx/transforms/compile_program.h"

namespace mlx::core::detail {

// `program` for `inputs` with its GELUs and GELU gradients fused into the products before
// them. The steps they replace are left unread: the elementwise pass that follows (fuse.h)
// drops them with every other dead step.
Program fuse_matmul_epilogues(const Program& program, const std::vector<array>& inputs);

}  // namespace mlx::core::detail

// The fused product steps of compile's epilogue pass (FusedMatmul) as the primitives they
// fuse, for any backend: the product, then the elementwise op over it (which writes over the
// product's buffer where it can). `run(primitive, inputs, out)` evaluates a single-output
// primitive on the backend.
#pragma once

#include <vector>

#include "mlx/backend/common/views.h"
#include "mlx/primitives/elementwise.h"
#include "mlx/primitives/linalg.h"

namespace mlx::core {

// MatmulGeluApprox: inputs {a, b [, bias]}.
template <class Run>
void matmul_then_gelu_approx(Stream stream, const std::vector<array>& inputs, array& out, Run run) {
  std::vector<array> gelu_inputs{array(out.shape(), out.dtype(), nullptr, {})};
  if (inputs.size() == 3) {
    AddMM addmm(stream, 1.0f, 1.0f);
    run(addmm, {inputs[2], inputs[0], inputs[1]}, gelu_inputs[0]);
  } else {
    Matmul matmul(stream);
    run(matmul, {inputs[0], inputs[1]}, gelu_inputs[0]);
  }
  Unary gelu(stream, UnaryOp::GeluApprox);
  run(gelu, gelu_inputs, out);
}

// MatmulGeluApproxVjp: inputs {a, b, x}.
template <class Run>
void matmul_then_gelu_approx_vjp(Stream stream, const std::vector<array>& inputs, array& out,
                                 Run run) {
  const array& x = inputs[2];
  std::vector<array> vjp_inputs{x};
  {
    array product({inputs[0].shape(0), inputs[1].shape(1)}, out.dtype(), nullptr, {});
    Matmul matmul(stream);
    run(matmul, {inputs[0], inputs[1]}, product);
    array product_as_x(x.shape(), out.dtype(), nullptr, {});
    set_view(product, product_as_x, row_major_strides(x.shape()));
    vjp_inputs.push_back(std::move(product_as_x));
  }  // the product's only holder is now the view: the derivative may write over it
  Binary gelu_vjp(stream, BinaryOp::GeluApproxVjp);
  run(gelu_vjp, vjp_inputs, out);
}

}  // namespace mlx::core

// scaled_dot_product_attention on the GPU: both passes through the fused kernels where they
// apply (flash_attention.h: half precision, head dims 64 / 80 / 96 / 128, no mask or causal),
// otherwise as the composites the rules differentiate (fast.h: matmuls, the softmax kernel,
// masks by where), run here with their own GPU kernels. Also the fused kernels' operand
// layouts.
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/flash_attention.h"
#include "mlx/backend/cuda/run_graph.h"
#include "mlx/memory/residency.h"
#include "mlx/primitives/fast.h"
#include "mlx/primitives/shape.h"

namespace mlx::core::cu::flash {

array kernel_operand(const array& a, Dtype dtype) {
  bool addressable = a.dtype() == dtype && a.strides(3) == 1 &&
                     reinterpret_cast<uintptr_t>(a.gpu_data<char>()) % 16 == 0;
  for (int i = 0; i < 3; ++i) {
    addressable &= a.shape(i) == 1 || a.strides(i) % 8 == 0;
  }
  return addressable ? a : dense_copy(a, dtype);
}

void allocate_in_order_of(array& out, const array& like) {
  allocator::Buffer buffer = allocator::gpu_malloc(out.nbytes());
  if (like.shape(1) == 1 || like.shape(2) == 1 || like.strides(1) > like.strides(2)) {
    out.set_gpu_data(buffer);
    return;
  }
  const int64_t heads = out.shape(1), t = out.shape(2), d = out.shape(3);
  const Strides strides{t * heads * d, d, heads * d, 1};
  out.set_gpu_data(buffer, out.size(), strides, flags_for_layout(out.shape(), strides));
}

}  // namespace mlx::core::cu::flash

namespace mlx::core::fast {

void ScaledDotProductAttention::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (attention_gpu_kernel_applies(out.dtype(), inputs[0].shape(3), inputs[2].shape(3), has_mask_,
                                   has_sinks_)) {
    cu::flash_attention(inputs[0], inputs[1], inputs[2], out, scale_, causal_);
    return;
  }
  std::vector<array> outs = {out};
  cu::run_graph_into(
      {attention_composite(inputs, scale_, causal_, has_mask_, has_sinks_, stream())}, outs);
}

// Inputs {q, k, v, mask?, sinks?, out, d_out}.
void ScaledDotProductAttentionVJP::eval_gpu(const std::vector<array>& inputs,
                                            std::vector<array>& outputs) {
  if (attention_gpu_kernel_applies(inputs[0].dtype(), inputs[0].shape(3), inputs[2].shape(3),
                                   has_mask_, has_sinks_)) {
    cu::flash_attention_backward(inputs[0], inputs[1], inputs[2], inputs[3], inputs[4], outputs[0],
                                 outputs[1], outputs[2], scale_, causal_);
    return;
  }
  cu::run_graph_into(
      attention_vjp_composite(inputs, scale_, causal_, has_mask_, has_sinks_, stream()), outputs);
}

}  // namespace mlx::core::fast

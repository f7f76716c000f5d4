// scaled_dot_product_attention on the GPU, forward and backward, as the composites the rules
// differentiate (fast.h: matmuls, the softmax kernel, masks by where), run here with their own
// GPU kernels. The op layer builds the composite itself on GPU streams; these serve the
// primitives made elsewhere (an imported function, a CPU-made graph moved to the GPU). The fused
// kernels are issue 13's.
#include "mlx/backend/cuda/run_graph.h"
#include "mlx/primitives/fast.h"

namespace mlx::core::fast {

void ScaledDotProductAttention::eval_gpu(const std::vector<array>& inputs, array& out) {
  std::vector<array> outs = {out};
  cu::run_graph_into(
      {attention_composite(inputs, scale_, causal_, has_mask_, has_sinks_, stream())}, outs);
}

void ScaledDotProductAttentionVJP::eval_gpu(const std::vector<array>& inputs,
                                            std::vector<array>& outputs) {
  cu::run_graph_into(
      attention_vjp_composite(inputs, scale_, causal_, has_mask_, has_sinks_, stream()), outputs);
}

}  // namespace mlx::core::fast

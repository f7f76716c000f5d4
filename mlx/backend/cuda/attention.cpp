// scaled_dot_product_attention on the GPU: both passes fused where the fused kernels apply
// (half precision, head dims 64 / 80 / 96 / 128, no sinks): without a mask array, cuDNN's
// fused attention (cudnn_attention.h) where it takes the geometry, the decoding kernel for a
// few query rows against a long cache, else our flash kernels (flash_attention.h), which alone
// take mask arrays.
// Otherwise the composites the rules differentiate (fast.h: matmuls, the softmax kernel, masks
// by where), run here with their own GPU kernels. Also the fused kernels' operand layouts.
#include <optional>
#include <utility>

#include "mlx/backend/common/views.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/cudnn_attention.h"
#include "mlx/backend/cuda/flash_attention.h"
#include "mlx/backend/cuda/run_graph.h"
#include "mlx/backend/cuda/runtime.h"
#include "mlx/memory/residency.h"
#include "mlx/primitives/fast.h"
#include "mlx/primitives/shape.h"
#include "mlx/runtime/kernel_counter.h"

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

namespace mlx::core::cu {

namespace {

void zero(array& a) {
  if (a.nbytes() > 0) {
    MLX_CUDA_CHECK(cudaMemsetAsync(a.gpu_data<char>(), 0, a.nbytes(), stream()));
  }
}

// out, and each row's natural-log log-sum-exp into lse (dense float32 (B, N_q, T_q)) where
// it is not null. mask: the op's mask array broadcast to the scores' shape, or null.
void fused_attention(const array& queries, const array& keys, const array& values,
                     const array* mask, array& out, array* lse, float scale, bool causal) {
  const Dtype dtype = out.dtype();
  array q = flash::kernel_operand(queries, dtype), k = flash::kernel_operand(keys, dtype),
        v = flash::kernel_operand(values, dtype);
  flash::allocate_in_order_of(out, q);
  float* lse_data = nullptr;
  if (lse) {
    lse->set_gpu_data(allocator::gpu_malloc(lse->nbytes()));
    lse_data = lse->gpu_data<float>();
    detail::count_path("ScaledDotProductAttention:lse");
  }
  if (out.size() == 0) {  // so is lse: the value dim is at least 64
    return;
  }
  if (k.shape(2) == 0) {  // no keys: every row is zeros, its log-sum-exp -inf
    zero(out);
    if (lse) {
      flash::no_key_lse(lse_data, lse->size());
    }
    return;
  }
  if (mask == nullptr && flash_decode_applies(q, k, causal)) {
    flash_decode(q, k, v, out, lse_data, scale, causal);
    detail::count_path("ScaledDotProductAttention:decode");
  } else if (mask == nullptr && cudnn_attention(q, k, v, out, lse_data, scale, causal)) {
    detail::count_path("ScaledDotProductAttention:cudnn");
  } else {
    flash_attention(q, k, v, mask, out, lse_data, scale, causal);
    detail::count_path("ScaledDotProductAttention:flash");
  }
}

// Where q, k and v are the three parts of one packed projection, (B, T, 3, H, D) in memory (a
// Linear layer's qkv output split into heads), their gradients get one buffer laid out the
// same way: the projection's gradient, their concatenation, is then a view of it
// (concatenate_as_view) instead of a copy of all three.
bool allocate_packed_gradients(const array& q, const array& k, const array& v,
                               std::vector<array>& grads) {
  const int64_t H = q.shape(1), T = q.shape(2), D = q.shape(3);
  const Strides packed{T * 3 * H * D, D, 3 * H * D, 1};
  for (const array* a : {&q, &k, &v}) {
    if (a->size() == 0 || a->shape() != q.shape() || a->strides() != packed) {
      return false;
    }
  }
  array projection({q.shape(0), q.shape(2), 3, q.shape(1), q.shape(3)}, q.dtype(), nullptr, {});
  projection.set_gpu_data(allocator::gpu_malloc(projection.nbytes()));
  for (int64_t i = 0; i < 3; ++i) {
    set_view(projection, grads[i], packed, i * H * D);
  }
  return true;
}

// Gradients in their inputs' layouts. Inputs {q, k, v, mask?, out, d_out, lse?}.
void fused_attention_backward(const std::vector<array>& inputs, std::vector<array>& grads,
                              bool has_mask, bool has_lse, float scale, bool causal) {
  const Dtype dtype = inputs[0].dtype();
  const size_t out_index = 3 + has_mask;
  const array* mask = has_mask ? &inputs[3] : nullptr;
  array q = flash::kernel_operand(inputs[0], dtype), k = flash::kernel_operand(inputs[1], dtype),
        v = flash::kernel_operand(inputs[2], dtype),
        o = flash::kernel_operand(inputs[out_index], dtype),
        g = flash::kernel_operand(inputs[out_index + 1], dtype);
  const bool packed = allocate_packed_gradients(q, k, v, grads);
  if (packed) {
    detail::count_path("ScaledDotProductAttentionVJP:packed");
  } else {
    flash::allocate_in_order_of(grads[0], q);
    flash::allocate_in_order_of(grads[1], k);
    flash::allocate_in_order_of(grads[2], v);
  }
  if (q.size() == 0 || k.shape(2) == 0) {  // no queries or no keys: every gradient is zero
    for (array& a : grads) {
      zero(a);
    }
    return;
  }
  // The forward's lse as both backward paths read it: dense float32 rows (the forward writes
  // it so, and dense_copy then returns it as it is; a mapped or imported one may be a view).
  std::optional<array> lse;
  if (has_lse) {
    lse = dense_copy(inputs[out_index + 2], float32);
  }
  const float* lse_data = lse ? std::as_const(*lse).gpu_data<float>() : nullptr;
  if (mask == nullptr && cudnn_attention_backward(q, k, v, o, g, lse_data, grads[0], grads[1],
                                                  grads[2], scale, causal)) {
    detail::count_path("ScaledDotProductAttentionVJP:cudnn");
  } else if (!packed) {
    flash_attention_backward(q, k, v, mask, o, g, lse_data, grads[0], grads[1], grads[2], scale,
                             causal);
    detail::count_path("ScaledDotProductAttentionVJP:flash");
  } else {
    // The flash kernels write dense gradients: to scratch, then into the packed views.
    std::vector<array> dense;
    for (const array& grad : grads) {
      dense.emplace_back(grad.shape(), dtype, nullptr, std::vector<array>{});
      flash::allocate_in_order_of(dense.back(), q);
    }
    flash_attention_backward(q, k, v, mask, o, g, lse_data, dense[0], dense[1], dense[2], scale,
                             causal);
    for (size_t i = 0; i < grads.size(); ++i) {
      copy_strided(dense[i], dense[i].strides(), 0, grads[i], grads[i].strides(), 0,
                   grads[i].shape());
    }
    detail::count_path("ScaledDotProductAttentionVJP:flash");
  }
  // Whether the row statistics came with the inputs or took another forward pass.
  detail::count_path(has_lse ? "ScaledDotProductAttentionVJP:lse-reused"
                             : "ScaledDotProductAttentionVJP:lse-recomputed");
}

}  // namespace

}  // namespace mlx::core::cu

namespace mlx::core::fast {

void ScaledDotProductAttention::eval_gpu(const std::vector<array>& inputs,
                                         std::vector<array>& outputs) {
  if (attention_gpu_kernel_applies(outputs[0].dtype(), inputs[0].shape(3), inputs[2].shape(3),
                                   has_sinks_)) {
    cu::fused_attention(inputs[0], inputs[1], inputs[2], has_mask_ ? &inputs[3] : nullptr,
                        outputs[0], output_lse_ ? &outputs[1] : nullptr, scale_, causal_);
    return;
  }
  cu::run_graph_into(
      attention_composite(inputs, scale_, causal_, has_mask_, has_sinks_, output_lse_, stream()),
      outputs);
}

// Inputs {q, k, v, mask?, sinks?, out, d_out, lse?}.
void ScaledDotProductAttentionVJP::eval_gpu(const std::vector<array>& inputs,
                                            std::vector<array>& outputs) {
  if (attention_gpu_kernel_applies(inputs[0].dtype(), inputs[0].shape(3), inputs[2].shape(3),
                                   has_sinks_)) {
    cu::fused_attention_backward(inputs, outputs, has_mask_, has_lse_, scale_, causal_);
    return;
  }
  cu::run_graph_into(
      attention_vjp_composite(inputs, scale_, causal_, has_mask_, has_sinks_, stream()), outputs);
}

}  // namespace mlx::core::fast

// Products with quantized matrices: quantized_matmul and gather_qmm (primitives reading the
// packed codes), qqmm and gather_qqmm (compositions: both operands quantized and dequantized,
// then a float32 product; float operands get straight-through gradients).
#include "mlx/ops/composites.h"
#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/grouped_matmul.h"
#include "mlx/ops/linalg.h"
#include "mlx/ops/quantized.h"
#include "mlx/ops/quantized_params.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/quantized.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using detail::QuantParams;

Dtype product_dtype(const array& x, const array& scales, const QuantParams& p, const char* op) {
  Dtype dt = p.mode == QuantMode::affine ? promote_types(x.dtype(), scales.dtype()) : x.dtype();
  if (!is_floating_point(dt) || dt == float64) {
    throw std::invalid_argument(msg("[", op,
                                    "] Expected float16, bfloat16 or float32 inputs, got x "
                                    "of type ",
                                    x.dtype(), " and scales of type ", scales.dtype(), "."));
  }
  return dt;
}

void check_x(const array& x, int inner, int rows, int cols, bool transpose, const char* op) {
  if (x.ndim() < 1 || x.shape(-1) != inner) {
    throw std::invalid_argument(msg("[", op, "] The last dimension of x (shape ", x.shape(),
                                    ") must be ", inner, " for the quantized matrix of shape (",
                                    rows, ", ", cols, ")", (transpose ? " (transposed)." : ".")));
  }
}

// The primitive's inputs after w: scales in the product dtype (affine) or as codes, then the
// biases (affine) or the float32 global scale (nvfp4, when given).
std::vector<array> scale_inputs(const array& scales, const std::optional<array>& biases,
                                const std::optional<array>& global_scale, const QuantParams& p,
                                Dtype dt, StreamOrDevice s) {
  if (p.mode == QuantMode::affine) {
    return {astype(scales, dt, s), astype(*biases, dt, s)};
  }
  std::vector<array> out{scales};
  if (global_scale) {
    out.push_back(astype(reshape(*global_scale, {}, s), float32, s));
  }
  return out;
}

// x dequantized after quantization in the mode of p (float32); the gradient passes through.
array fake_quantize(const array& x, const QuantParams& p, const std::optional<array>& global_scale,
                    const char* op, StreamOrDevice s) {
  if (x.shape(-1) % p.group_size != 0) {
    throw std::invalid_argument(msg("[", op, "] The last dimension of ", x.shape(),
                                    " must be divisible by the group size ", p.group_size, "."));
  }
  const char* mode = quant_mode_name(p.mode);
  int gs = p.group_size, bits = p.bits;
  auto fun = [=](const std::vector<array>& in) {
    array flat = in[0].ndim() < 2 ? reshape(in[0], {1, -1}, s) : in[0];
    auto q = quantize(flat, gs, bits, mode, global_scale, s);
    array d = dequantize(q[0], q[1], std::nullopt, gs, bits, mode, float32, global_scale, s);
    return std::vector<array>{reshape(d, in[0].shape(), s)};
  };
  auto straight = [](const std::vector<array>&, const std::vector<array>& cotangents,
                     const std::vector<array>&) { return std::vector<array>{cotangents[0]}; };
  return custom_vjp(fun, straight)({x})[0];
}

struct QQOperands {
  array x;  // float32, fake-quantized
  array w;  // float32 (..., N, K), dequantized or fake-quantized
};

QQOperands qq_operands(const array& x, const array& w, const std::optional<array>& scales,
                       const QuantParams& p, const std::optional<array>& gsx,
                       const std::optional<array>& gsw, int w_rank, const char* op,
                       StreamOrDevice s) {
  if (p.mode == QuantMode::affine) {
    throw std::invalid_argument(
        msg("[", op, "] The 'affine' mode is not supported; use nvfp4, mxfp8 or mxfp4."));
  }
  detail::check_global_scale(gsx, p, op);
  detail::check_global_scale(gsw, p, op);
  if (!is_floating_point(x.dtype()) || x.dtype() == float64 || x.ndim() < 1) {
    throw std::invalid_argument(msg("[", op,
                                    "] x must be a float16, bfloat16 or float32 array, got ",
                                    x.dtype(), " of shape ", x.shape(), "."));
  }
  if (w_rank == 2 ? w.ndim() != 2 : w.ndim() < 3) {
    throw std::invalid_argument(msg("[", op, "] w must have ", (w_rank == 2 ? "2" : "at least 3"),
                                    " dimensions, got shape ", w.shape(), "."));
  }
  array wd = w;
  if (scales) {
    detail::check_packed(w, *scales, std::nullopt, p, op);
    wd = dequantize(w, *scales, std::nullopt, p.group_size, p.bits, quant_mode_name(p.mode),
                    float32, gsw, s);
  } else {
    if (!is_floating_point(w.dtype()) || w.dtype() == float64) {
      throw std::invalid_argument(msg("[", op,
                                      "] An unquantized w must be float16, bfloat16 or "
                                      "float32, got ",
                                      w.dtype(), " (pass scales for a quantized w)."));
    }
    wd = fake_quantize(w, p, gsw, op, s);
  }
  if (x.shape(-1) != wd.shape(-1)) {
    throw std::invalid_argument(msg("[", op, "] The last dimension of x (shape ", x.shape(),
                                    ") must match the last dimension of w (", wd.shape(-1), ")."));
  }
  return {fake_quantize(x, p, gsx, op, s), wd};
}

}  // namespace

array quantized_matmul(const array& x, const array& w, const array& scales,
                       const std::optional<array>& biases, bool transpose,
                       std::optional<int> group_size, std::optional<int> bits,
                       const std::string& mode, StreamOrDevice s) {
  auto p = detail::quant_params(group_size, bits, mode, "quantized_matmul");
  int cols = detail::check_packed(w, scales, biases, p, "quantized_matmul");
  int rows = w.shape(-2);
  check_x(x, transpose ? cols : rows, rows, cols, transpose, "quantized_matmul");
  Dtype dt = product_dtype(x, scales, p, "quantized_matmul");
  if (w.ndim() > 2) {
    // Batched quantized matrices: the product with the dequantized matrix.
    array W = dequantize(w, scales, biases, p.group_size, p.bits, mode, dt, std::nullopt, s);
    return matmul(astype(x, dt, s), transpose ? swapaxes(W, -1, -2, s) : W, s);
  }
  Shape out = x.shape();
  out.back() = transpose ? rows : cols;
  std::vector<array> inputs{astype(x, dt, s), w};
  for (auto& a : scale_inputs(scales, biases, std::nullopt, p, dt, s)) {
    inputs.push_back(std::move(a));
  }
  return array(
      std::move(out), dt,
      std::make_shared<QuantizedMatmul>(to_stream(s), p.group_size, p.bits, transpose, p.mode),
      std::move(inputs));
}

array gather_qmm(const array& x_in, const array& w, const array& scales,
                 const std::optional<array>& biases, const std::optional<array>& lhs_indices,
                 const std::optional<array>& rhs_indices, bool transpose,
                 std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                 const std::optional<array>& global_scale, bool sorted_indices, StreamOrDevice s) {
  auto p = detail::quant_params(group_size, bits, mode, "gather_qmm");
  detail::check_global_scale(global_scale, p, "gather_qmm");
  int cols = detail::check_packed(w, scales, biases, p, "gather_qmm");
  int rows = w.shape(-2);
  check_x(x_in, transpose ? cols : rows, rows, cols, transpose, "gather_qmm");
  Dtype dt = product_dtype(x_in, scales, p, "gather_qmm");
  for (const auto& idx : {lhs_indices, rhs_indices}) {
    if (idx && !issubdtype(idx->dtype(), DtypeCategory::integer)) {
      throw std::invalid_argument(msg("[gather_qmm] Got indices with invalid dtype ", idx->dtype(),
                                      ". Indices must be integral."));
    }
  }
  array x = x_in.ndim() == 1 ? reshape(x_in, {1, x_in.shape(0)}, s) : x_in;
  array li = lhs_indices ? *lhs_indices : detail::matrix_numbers(x, s);
  array ri = rhs_indices ? *rhs_indices : detail::matrix_numbers(w, s);
  Shape batch = broadcast_shapes(li.shape(), ri.shape(), "gather_qmm");
  Shape shape = batch;
  shape.push_back(x.shape(-2));
  shape.push_back(transpose ? rows : cols);
  std::vector<array> inputs{astype(detail::matrix_stack(x, s), dt, s), detail::matrix_stack(w, s)};
  for (auto& a : scale_inputs(scales, biases, global_scale, p, dt, s)) {
    // Scales and biases are batched like w; the global scale is a scalar.
    inputs.push_back(a.ndim() >= 2 ? detail::matrix_stack(a, s) : a);
  }
  inputs.push_back(broadcast_to(li, batch, s));
  inputs.push_back(broadcast_to(ri, batch, s));
  array out(std::move(shape), dt,
            std::make_shared<GatherQMM>(to_stream(s), p.group_size, p.bits, transpose, p.mode,
                                        sorted_indices),
            std::move(inputs));
  return x_in.ndim() == 1 ? squeeze(out, -2, s) : out;
}

array qqmm(const array& x, const array& w, const std::optional<array>& scales,
           std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
           const std::optional<array>& global_scale_x, const std::optional<array>& global_scale_w,
           StreamOrDevice s) {
  auto p = detail::quant_params(group_size, bits, mode, "qqmm");
  auto ops = qq_operands(x, w, scales, p, global_scale_x, global_scale_w, 2, "qqmm", s);
  return astype(matmul(ops.x, transpose(ops.w, s), s), x.dtype(), s);
}

array gather_qqmm(const array& x, const array& w, const std::optional<array>& scales,
                  const std::optional<array>& lhs_indices, const std::optional<array>& rhs_indices,
                  std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                  const std::optional<array>& global_scale_x,
                  const std::optional<array>& global_scale_w, bool sorted_indices,
                  StreamOrDevice s) {
  auto p = detail::quant_params(group_size, bits, mode, "gather_qqmm");
  auto ops = qq_operands(x, w, scales, p, global_scale_x, global_scale_w, 3, "gather_qqmm", s);
  return astype(
      gather_mm(ops.x, swapaxes(ops.w, -1, -2, s), lhs_indices, rhs_indices, sorted_indices, s),
      x.dtype(), s);
}

}  // namespace mlx::core

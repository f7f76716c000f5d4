#include "mlx/ops/quantized.h"

#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/indexing.h"
#include "mlx/ops/linalg.h"
#include "mlx/ops/reduction.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/quantized.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

struct QuantParams {
  int group_size;
  int bits;
};

QuantParams check_params(std::optional<int> group_size, std::optional<int> bits,
                         const std::string& mode, const char* op) {
  if (mode != "affine") {
    throw std::invalid_argument(
        msg("[", op, "] Quantization mode '", mode, "' is not supported; only 'affine' is."));
  }
  QuantParams p{group_size.value_or(64), bits.value_or(4)};
  if (p.group_size != 32 && p.group_size != 64 && p.group_size != 128) {
    throw std::invalid_argument(msg("[", op, "] The requested group size ", p.group_size,
                                    " is not supported. The supported group sizes are 32, 64 "
                                    "and 128."));
  }
  if (p.bits < 2 || p.bits > 8 || p.bits == 7) {
    throw std::invalid_argument(msg("[", op, "] The requested number of bits ", p.bits,
                                    " is not supported. The supported bits are 2, 3, 4, 5, 6 "
                                    "and 8."));
  }
  return p;
}

array u32(uint32_t v) { return array(v, uint32); }

// The codes (uint32, (..., K)) packed into a little-endian bit stream per row: 32 values make
// `bits` words.
array pack(const array& q, int bits, StreamOrDevice s) {
  Shape chunks = q.shape();
  chunks.back() /= 32;
  chunks.push_back(32);
  array c = reshape(q, chunks, s);  // (..., K / 32, 32)
  std::vector<array> words;
  for (int w = 0; w < bits; ++w) {
    std::vector<uint32_t> left(32), right(32);
    std::vector<bool> valid(32);
    std::vector<uint32_t> keep(32);
    for (int j = 0; j < 32; ++j) {
      int off = j * bits - 32 * w;  // where value j starts, relative to word w
      keep[j] = off > -bits && off < 32;
      left[j] = off >= 0 && off < 32 ? off : 0;
      right[j] = off < 0 && off > -bits ? -off : 0;
    }
    array l(left.data(), {32}, uint32), r(right.data(), {32}, uint32), k(keep.data(), {32}, uint32);
    array term = multiply(right_shift(left_shift(c, l, s), r, s), k, s);
    words.push_back(sum(term, -1, false, s));
  }
  array packed = stack(words, -1, s);  // (..., K / 32, bits)
  Shape out = q.shape();
  out.back() = out.back() / 32 * bits;
  return reshape(packed, out, s);
}

// The codes of a packed (..., K bits / 32) uint32 array as uint32 (..., K).
array unpack(const array& w, int bits, StreamOrDevice s) {
  Shape chunks = w.shape();
  chunks.back() /= bits;
  chunks.push_back(bits);
  array c = reshape(w, chunks, s);  // (..., K / 32, bits)
  std::vector<int32_t> lo_idx(32), hi_idx(32);
  std::vector<uint32_t> lo_shift(32), hi_shift(32), has_hi(32);
  for (int j = 0; j < 32; ++j) {
    int start = j * bits, word = start / 32, shift = start % 32;
    lo_idx[j] = word;
    lo_shift[j] = shift;
    has_hi[j] = shift + bits > 32;
    hi_idx[j] = has_hi[j] ? word + 1 : word;
    hi_shift[j] = has_hi[j] ? 32 - shift : 0;
  }
  array lo = take(c, array(lo_idx.data(), {32}, int32), -1, s);
  array hi = take(c, array(hi_idx.data(), {32}, int32), -1, s);
  array v = right_shift(lo, array(lo_shift.data(), {32}, uint32), s);
  array upper = multiply(left_shift(hi, array(hi_shift.data(), {32}, uint32), s),
                         array(has_hi.data(), {32}, uint32), s);
  v = bitwise_and(bitwise_or(v, upper, s), u32((1u << bits) - 1), s);
  Shape out = w.shape();
  out.back() = out.back() / bits * 32;
  return reshape(v, out, s);
}

}  // namespace

std::vector<array> quantize(const array& w, std::optional<int> group_size, std::optional<int> bits,
                            const std::string& mode, StreamOrDevice s) {
  auto p = check_params(group_size, bits, mode, "quantize");
  if (w.ndim() < 2) {
    throw std::invalid_argument(
        msg("[quantize] The matrix to be quantized must have at least 2 "
            "dimensions, got shape ",
            w.shape(), "."));
  }
  if (w.shape(-1) % p.group_size != 0) {
    throw std::invalid_argument(msg("[quantize] The last dimension of the matrix (", w.shape(-1),
                                    ") must be divisible by the group size (", p.group_size, ")."));
  }
  if (!is_floating_point(w.dtype()) || w.dtype() == float64) {
    throw std::invalid_argument(
        msg("[quantize] Only float16, bfloat16 and float32 inputs are "
            "supported, got ",
            w.dtype(), "."));
  }
  Dtype dt = w.dtype();
  Shape groups = w.shape();
  groups.back() /= p.group_size;
  groups.push_back(p.group_size);
  array g = reshape(astype(w, float32, s), groups, s);
  array wmax = max(g, -1, true, s), wmin = min(g, -1, true, s);
  const float levels = static_cast<float>((1 << p.bits) - 1);
  // Scales and biases are rounded to the weights' dtype first, so the codes fit them.
  array scale =
      astype(astype(divide(subtract(wmax, wmin, s), array(levels), s), dt, s), float32, s);
  array bias = astype(astype(wmin, dt, s), float32, s);
  array safe = where(greater(scale, array(0.f), s), scale, array(1.f), s);
  array q = clip(round(divide(subtract(g, bias, s), safe, s), s), array(0.f), array(levels), s);
  q = reshape(astype(q, uint32, s), w.shape(), s);
  Shape sb = groups;
  sb.pop_back();
  return {pack(q, p.bits, s), astype(reshape(scale, sb, s), dt, s),
          astype(reshape(bias, sb, s), dt, s)};
}

array dequantize(const array& w, const array& scales, const std::optional<array>& biases,
                 std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                 std::optional<Dtype> dtype, StreamOrDevice s) {
  auto p = check_params(group_size, bits, mode, "dequantize");
  if (!biases) {
    throw std::invalid_argument("[dequantize] Affine quantization needs biases.");
  }
  if (w.dtype() != uint32) {
    throw std::invalid_argument(
        msg("[dequantize] The packed matrix must be uint32, got ", w.dtype(), "."));
  }
  if (w.ndim() < 2 || w.shape(-1) % p.bits != 0) {
    throw std::invalid_argument(
        msg("[dequantize] Invalid packed matrix of shape ", w.shape(), " for ", p.bits, " bits."));
  }
  int K = w.shape(-1) / p.bits * 32;
  Shape expect = w.shape();
  expect.back() = K / p.group_size;
  if (scales.shape() != expect || biases->shape() != expect) {
    throw std::invalid_argument(msg("[dequantize] Shape of scales ", scales.shape(), " and biases ",
                                    biases->shape(), " must be ", expect,
                                    " for a packed matrix of shape ", w.shape(),
                                    " with group size ", p.group_size, " and ", p.bits, " bits."));
  }
  Dtype out_dt = dtype.value_or(scales.dtype());
  Shape groups = w.shape();
  groups.back() = K / p.group_size;
  groups.push_back(p.group_size);
  array q = reshape(astype(unpack(w, p.bits, s), float32, s), groups, s);
  array sc = expand_dims(astype(scales, float32, s), -1, s);
  array bi = expand_dims(astype(*biases, float32, s), -1, s);
  Shape out = w.shape();
  out.back() = K;
  return astype(reshape(add(multiply(q, sc, s), bi, s), out, s), out_dt, s);
}

array quantized_matmul(const array& x, const array& w, const array& scales,
                       const std::optional<array>& biases, bool transpose,
                       std::optional<int> group_size, std::optional<int> bits,
                       const std::string& mode, StreamOrDevice s) {
  auto p = check_params(group_size, bits, mode, "quantized_matmul");
  if (!biases) {
    throw std::invalid_argument("[quantized_matmul] Affine quantization needs biases.");
  }
  if (w.dtype() != uint32 || w.ndim() < 2 || w.shape(-1) % p.bits != 0) {
    throw std::invalid_argument(msg("[quantized_matmul] Invalid packed matrix of type ", w.dtype(),
                                    " and shape ", w.shape(), " for ", p.bits, " bits."));
  }
  int rows = w.shape(-2), cols = w.shape(-1) / p.bits * 32;
  int inner = transpose ? cols : rows;
  if (x.ndim() < 1 || x.shape(-1) != inner) {
    throw std::invalid_argument(msg("[quantized_matmul] The last dimension of x (shape ", x.shape(),
                                    ") must be ", inner, " for the quantized matrix of shape (",
                                    rows, ", ", cols, ")", (transpose ? " (transposed)." : ".")));
  }
  Shape expect = w.shape();
  expect.back() = cols / p.group_size;
  if (scales.shape() != expect || biases->shape() != expect) {
    throw std::invalid_argument(msg("[quantized_matmul] Shape of scales ", scales.shape(),
                                    " and biases ", biases->shape(), " must be ", expect, "."));
  }
  Dtype dt = promote_types(x.dtype(), scales.dtype());
  if (!is_floating_point(dt) || dt == float64) {
    throw std::invalid_argument(
        msg("[quantized_matmul] Expected float16, bfloat16 or float32 "
            "inputs, got x of type ",
            x.dtype(), " and scales of type ", scales.dtype(), "."));
  }
  if (w.ndim() > 2) {
    // Batched quantized matrices: the product with the dequantized matrix.
    array W = dequantize(w, scales, biases, p.group_size, p.bits, mode, dt, s);
    return matmul(astype(x, dt, s), transpose ? swapaxes(W, -1, -2, s) : W, s);
  }
  Shape out = x.shape();
  out.back() = transpose ? rows : cols;
  return array(std::move(out), dt,
               std::make_shared<QuantizedMatmul>(to_stream(s), p.group_size, p.bits, transpose),
               {astype(x, dt, s), w, astype(scales, dt, s), astype(*biases, dt, s)});
}

}  // namespace mlx::core

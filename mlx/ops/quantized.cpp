#include "mlx/ops/quantized.h"

#include "mlx/backend/common/quantized_formats.h"
#include "mlx/ops/composites.h"
#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/indexing.h"
#include "mlx/ops/quantized_params.h"
#include "mlx/ops/reduction.h"
#include "mlx/ops/shape.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace detail {

QuantParams quant_params(std::optional<int> group_size, std::optional<int> bits,
                         const std::string& mode, const char* op) {
  QuantMode m = quant_mode(mode, op);
  if (m == QuantMode::affine) {
    QuantParams p{m, group_size.value_or(64), bits.value_or(4)};
    if (p.group_size != 32 && p.group_size != 64 && p.group_size != 128) {
      throw std::invalid_argument(msg("[", op, "] The requested group size ", p.group_size,
                                      " is not supported. The supported group sizes are 32, 64 "
                                      "and 128."));
    }
    if (p.bits < 1 || p.bits > 8 || p.bits == 7) {
      throw std::invalid_argument(msg("[", op, "] The requested number of bits ", p.bits,
                                      " is not supported. The supported bits are 1, 2, 3, 4, 5, "
                                      "6 and 8."));
    }
    return p;
  }
  const int gs = m == QuantMode::nvfp4 ? 16 : 32, b = m == QuantMode::mxfp8 ? 8 : 4;
  QuantParams p{m, group_size.value_or(gs), bits.value_or(b)};
  if (p.group_size != gs) {
    throw std::invalid_argument(msg("[", op, "] ", mode, " quantization requires group size ", gs,
                                    " but got ", p.group_size, "."));
  }
  if (p.bits != b) {
    throw std::invalid_argument(msg("[", op, "] ", mode, " quantization requires bits to be ", b,
                                    " but got ", p.bits, "."));
  }
  return p;
}

int check_packed(const array& w, const array& scales, const std::optional<array>& biases,
                 const QuantParams& p, const char* op) {
  if (w.dtype() != uint32 || w.ndim() < 2 || (w.shape(-1) * 32) % p.bits != 0 ||
      (w.shape(-1) * 32 / p.bits) % p.group_size != 0) {
    throw std::invalid_argument(msg(
        "[", op, "] Invalid packed matrix of type ", w.dtype(), " and shape ", w.shape(), " for ",
        p.bits, " bits and group size ", p.group_size, " (expected uint32 of rank >= 2)."));
  }
  int cols = w.shape(-1) * 32 / p.bits;
  Shape expect = w.shape();
  expect.back() = cols / p.group_size;
  if (p.mode == QuantMode::affine) {
    if (!biases) {
      throw std::invalid_argument(msg("[", op, "] Affine quantization needs biases."));
    }
    if (scales.shape() != expect || biases->shape() != expect) {
      throw std::invalid_argument(
          msg("[", op, "] Shape of scales ", scales.shape(), " and biases ", biases->shape(),
              " must be ", expect, " for a packed matrix of shape ", w.shape(), " with group size ",
              p.group_size, " and ", p.bits, " bits."));
    }
    return cols;
  }
  if (biases) {
    throw std::invalid_argument(msg("[", op, "] Biases must be null for quantization mode '",
                                    quant_mode_name(p.mode), "'."));
  }
  if (scales.dtype() != uint8 || scales.shape() != expect) {
    throw std::invalid_argument(msg("[", op, "] The scales of mode '", quant_mode_name(p.mode),
                                    "' must be uint8 of shape ", expect, ", got ", scales.dtype(),
                                    " of shape ", scales.shape(), "."));
  }
  return cols;
}

void check_global_scale(const std::optional<array>& global_scale, const QuantParams& p,
                        const char* op) {
  if (!global_scale) {
    return;
  }
  if (p.mode != QuantMode::nvfp4) {
    throw std::invalid_argument(msg("[", op,
                                    "] A global scale applies to the 'nvfp4' mode only, not '",
                                    quant_mode_name(p.mode), "'."));
  }
  if (global_scale->size() != 1 || !is_floating_point(global_scale->dtype())) {
    throw std::invalid_argument(msg("[", op, "] The global scale must be a float scalar, got ",
                                    global_scale->dtype(), " of shape ", global_scale->shape(),
                                    "."));
  }
}

}  // namespace detail

namespace {

using detail::QuantParams;

array u32(uint32_t v) { return array(v, uint32); }

// The smallest affine step (groups of equal values).
constexpr float kAffineMinStep = 1e-7f;

// The codes (uint32, (..., K)) packed into a little-endian bit stream per row.
array pack(const array& q, int bits, StreamOrDevice s) {
  Shape out = q.shape();
  out.back() = out.back() * bits / 32;
  if (32 % bits == 0) {
    // Whole codes per word: word w holds codes [w per, (w + 1) per).
    const int per = 32 / bits;
    Shape chunks = q.shape();
    chunks.back() /= per;
    chunks.push_back(per);
    std::vector<uint32_t> shifts(per);
    for (int j = 0; j < per; ++j) {
      shifts[j] = j * bits;
    }
    array c = left_shift(reshape(q, chunks, s), array(shifts.data(), {per}, uint32), s);
    return reshape(sum(c, -1, false, s), out, s);
  }
  // 32 codes fill `bits` words; a code may straddle two of them.
  Shape chunks = q.shape();
  chunks.back() /= 32;
  chunks.push_back(32);
  array c = reshape(q, chunks, s);  // (..., K / 32, 32)
  std::vector<array> words;
  for (int w = 0; w < bits; ++w) {
    std::vector<uint32_t> left(32), right(32), keep(32);
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
  return reshape(stack(words, -1, s), out, s);
}

// The codes of a packed (..., K bits / 32) uint32 array as uint32 (..., K).
array unpack(const array& w, int bits, StreamOrDevice s) {
  Shape out = w.shape();
  out.back() = out.back() * 32 / bits;
  const uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1;
  if (32 % bits == 0) {
    const int per = 32 / bits;
    std::vector<uint32_t> shifts(per);
    for (int j = 0; j < per; ++j) {
      shifts[j] = j * bits;
    }
    array v = right_shift(expand_dims(w, -1, s), array(shifts.data(), {per}, uint32), s);
    return reshape(bitwise_and(v, u32(mask), s), out, s);
  }
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
  v = bitwise_and(bitwise_or(v, upper, s), u32(mask), s);
  return reshape(v, out, s);
}

// E2M1 codes of v (float32): the nearest of 0, 0.5, 1, 1.5, 2, 3, 4, 6 with ties toward zero
// (saturating), the sign bit only on nonzero codes.
array fp4_codes(const array& v, StreamOrDevice s) {
  const float cuts[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  array mag = abs(v, s);
  array code = zeros(v.shape(), uint32, s);
  for (float c : cuts) {
    code = add(code, astype(greater(mag, array(c), s), uint32, s), s);
  }
  array neg = logical_and(less(v, array(0.0f), s), greater(code, u32(0), s), s);
  return bitwise_or(code, multiply(astype(neg, uint32, s), u32(8), s), s);
}

// E4M3 codes of v (float32), nearest even and saturating (negative values that round to zero
// keep their sign bit, as MLX's codes do).
array fp8_codes(const array& v, StreamOrDevice s) { return astype(to_fp8(v, s), uint32, s); }

array lut(const float* values, int n) { return array(values, {n}, float32); }

// Per group of g (float32, (..., groups, gs)): the uint8 scale codes and the float32 divisor.
std::pair<array, array> fp_scales(const array& g, const QuantParams& p,
                                  const std::optional<array>& global_scale, StreamOrDevice s) {
  array amax = max(abs(g, s), -1, true, s);
  if (p.mode == QuantMode::nvfp4) {
    array target = divide(amax, array(6.0f), s);
    std::optional<array> gs;
    if (global_scale) {
      gs = astype(reshape(*global_scale, {}, s), float32, s);
      target = divide(multiply(target, array(kNvfp4GlobalDivisor), s), *gs, s);
    }
    array code = astype(fp8_codes(target, s), uint8, s);
    array dec = take(lut(fp8_e4m3_values().data(), 256), astype(code, uint32, s), s);
    if (gs) {
      dec = divide(multiply(dec, *gs, s), array(kNvfp4GlobalDivisor), s);
    }
    return {code, dec};
  }
  // mx: the smallest power of two 2^e with amax / 2^e <= the largest element (6 or 448):
  // e = ceil(log2(amax / largest)), from the float's exponent and mantissa bits.
  const float largest = p.mode == QuantMode::mxfp4 ? 6.0f : 448.0f;
  array y = divide(amax, array(largest), s);
  array bits = view(y, uint32, s);
  array exp_field = astype(bitwise_and(right_shift(bits, u32(23), s), u32(0xFF), s), int32, s);
  array inexact = astype(not_equal(bitwise_and(bits, u32(0x7FFFFF), s), u32(0), s), int32, s);
  array e = add(subtract(exp_field, array(127, int32), s), inexact, s);
  e = where(equal(amax, array(0.0f), s), array(0, int32),
            clip(e, array(-127, int32), array(127, int32), s), s);
  array code = astype(add(e, array(127, int32), s), uint8, s);
  array dec = take(lut(e8m0_values().data(), 256), astype(code, uint32, s), s);
  return {code, dec};
}

std::vector<array> quantize_fp(const array& w, const QuantParams& p,
                               const std::optional<array>& global_scale, StreamOrDevice s) {
  Shape groups = w.shape();
  groups.back() /= p.group_size;
  groups.push_back(p.group_size);
  array g = reshape(astype(w, float32, s), groups, s);
  auto [code, dec] = fp_scales(g, p, global_scale, s);
  array safe = where(equal(dec, array(0.0f), s), array(1.0f), dec, s);
  array v = divide(g, safe, s);
  array q = p.mode == QuantMode::mxfp8 ? fp8_codes(v, s) : fp4_codes(v, s);
  Shape sb = groups;
  sb.pop_back();
  return {pack(reshape(q, w.shape(), s), p.bits, s), reshape(code, sb, s)};
}

}  // namespace

std::vector<array> quantize(const array& w, std::optional<int> group_size, std::optional<int> bits,
                            const std::string& mode, const std::optional<array>& global_scale,
                            StreamOrDevice s) {
  auto p = detail::quant_params(group_size, bits, mode, "quantize");
  detail::check_global_scale(global_scale, p, "quantize");
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
  if (p.mode != QuantMode::affine) {
    return quantize_fp(w, p, global_scale, s);
  }
  Dtype dt = w.dtype();
  Shape groups = w.shape();
  groups.back() /= p.group_size;
  groups.push_back(p.group_size);
  array g = reshape(astype(w, float32, s), groups, s);
  array wmax = max(g, -1, true, s), wmin = min(g, -1, true, s);
  const float levels = static_cast<float>((1 << p.bits) - 1);
  // With 2 bits or more the edge of larger magnitude is a code exactly (code 0, the bias) and
  // the step is chosen so that zero is one too; its sign makes the other edge land at
  // 2^bits - 1. One bit keeps the plain (max - min, min).
  array delta =
      maximum(divide(subtract(wmax, wmin, s), array(levels), s), array(kAffineMinStep), s);
  array step = delta, bias = wmin;
  if (p.bits > 1) {
    array neg = greater(abs(wmin, s), abs(wmax, s), s);
    array edge = where(neg, wmin, wmax, s);
    step = where(neg, delta, negative(delta, s), s);
    array q0 = round(divide(edge, step, s), s);
    array zero_code = equal(q0, array(0.0f), s);
    step = where(zero_code, step, divide(edge, q0, s), s);
    bias = where(zero_code, array(0.0f), edge, s);
  }
  // Scales and biases are rounded to the weights' dtype first, so the codes fit them.
  array scale = astype(astype(step, dt, s), float32, s);
  bias = astype(astype(bias, dt, s), float32, s);
  array q = clip(round(divide(subtract(g, bias, s), scale, s), s), array(0.f), array(levels), s);
  q = reshape(astype(q, uint32, s), w.shape(), s);
  Shape sb = groups;
  sb.pop_back();
  return {pack(q, p.bits, s), astype(reshape(scale, sb, s), dt, s),
          astype(reshape(bias, sb, s), dt, s)};
}

array dequantize(const array& w, const array& scales, const std::optional<array>& biases,
                 std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                 std::optional<Dtype> dtype, const std::optional<array>& global_scale,
                 StreamOrDevice s) {
  auto p = detail::quant_params(group_size, bits, mode, "dequantize");
  detail::check_global_scale(global_scale, p, "dequantize");
  int K = detail::check_packed(w, scales, biases, p, "dequantize");
  Dtype out_dt = dtype.value_or(p.mode == QuantMode::affine ? scales.dtype() : bfloat16);
  if (!is_floating_point(out_dt)) {
    throw std::invalid_argument(
        msg("[dequantize] The output dtype must be floating point, got ", out_dt, "."));
  }
  Shape groups = w.shape();
  groups.back() = K / p.group_size;
  groups.push_back(p.group_size);
  Shape out = w.shape();
  out.back() = K;
  array codes = unpack(w, p.bits, s);
  if (p.mode == QuantMode::affine) {
    array q = reshape(astype(codes, float32, s), groups, s);
    array sc = expand_dims(astype(scales, float32, s), -1, s);
    array bi = expand_dims(astype(*biases, float32, s), -1, s);
    return astype(reshape(add(multiply(q, sc, s), bi, s), out, s), out_dt, s);
  }
  array values = p.mode == QuantMode::mxfp8 ? take(lut(fp8_e4m3_values().data(), 256), codes, s)
                                            : take(lut(fp4_values().data(), 16), codes, s);
  array sc_codes = astype(scales, uint32, s);
  array sc =
      take(lut(p.mode == QuantMode::nvfp4 ? fp8_e4m3_values().data() : e8m0_values().data(), 256),
           sc_codes, s);
  if (global_scale) {
    sc = divide(multiply(sc, astype(reshape(*global_scale, {}, s), float32, s), s),
                array(kNvfp4GlobalDivisor), s);
  }
  array v = multiply(reshape(values, groups, s), expand_dims(sc, -1, s), s);
  return astype(reshape(v, out, s), out_dt, s);
}

}  // namespace mlx::core

// CPU products with a quantized matrix. Affine x @ W.T with few rows of x (the decode path of
// LLM inference) decodes each group of W once into floats and takes its dot products with
// the rows of x: out = sum over groups of s (x_g . q_g) + b sum(x_g), threads over output
// features. Other products (and the microscaled modes, whose codes map through a table of
// values) decode W in blocks of rows into float32 and multiply them with BLAS. GatherQMM groups
// its products by quantized matrix and runs one such product per group.
#include "mlx/primitives/quantized.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/common/gathered_matrices.h"
#include "mlx/backend/common/quantized_formats.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/backend/cpu/dense.h"
#include "mlx/backend/cpu/gemm.h"
#include "mlx/backend/cpu/scratch.h"
#include "mlx/backend/cpu/simd/vec.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core {

namespace {

using namespace cpu;

// Decodes the n codes (n a multiple of 32) of a little-endian bit stream into floats.
template <int Bits>
void decode(const uint32_t* words, int64_t n, float* out) {
  constexpr uint32_t mask = (1u << Bits) - 1;
  if constexpr (32 % Bits == 0) {
    constexpr int per = 32 / Bits;
    for (int64_t w = 0; w < n / per; ++w) {
      uint32_t v = words[w];
      for (int j = 0; j < per; ++j) {
        out[w * per + j] = static_cast<float>((v >> (Bits * j)) & mask);
      }
    }
  } else {
    // 32 codes fill exactly Bits words; unrolled, every position and shift is a constant.
    for (int64_t c = 0; c < n / 32; ++c) {
      const uint32_t* wd = words + c * Bits;
#pragma GCC unroll 32
      for (int i = 0; i < 32; ++i) {
        const int bit = i * Bits, w = bit >> 5, sh = bit & 31;
        uint32_t v = wd[w] >> sh;
        if (sh + Bits > 32) {
          v |= wd[w + 1] << (32 - sh);
        }
        out[c * 32 + i] = static_cast<float>(v & mask);
      }
    }
  }
}

struct Operands {
  const float* x;  // (M, K)
  const uint32_t* w;
  const float* scales;
  const float* biases;  // affine only
  const float* table;   // the value of each code (microscaled modes), else null
  int64_t M, K, N;
  int group_size;
};

// Rows [r0, r1) of the dequantized stored matrix (rows x cols, quantized along cols) into dst.
template <int Bits>
void dequantize_rows(const Operands& p, int64_t cols, int64_t r0, int64_t r1, float* dst) {
  const int64_t words_per_row = cols * Bits / 32, groups = cols / p.group_size;
  for (int64_t r = r0; r < r1; ++r) {
    float* row = dst + (r - r0) * cols;
    decode<Bits>(p.w + r * words_per_row, cols, row);
    for (int64_t g = 0; g < groups; ++g) {
      float s = p.scales[r * groups + g];
      float* v = row + g * p.group_size;
      if (p.table) {
        for (int i = 0; i < p.group_size; ++i) {
          v[i] = p.table[static_cast<int>(v[i])] * s;
        }
      } else {
        float b = p.biases[r * groups + g];
        for (int i = 0; i < p.group_size; ++i) {
          v[i] = v[i] * s + b;
        }
      }
    }
  }
}

// x_g . q_g for one group of a power-of-two width, with x permuted so that xp[j][w] multiplies
// code j of word w: fixed-size loops over the group's words (shifts, masks, conversions and
// fused multiply-adds on whole vectors).
template <int Bits, int GS>
inline float group_dot(const uint32_t* __restrict words, const float* __restrict xp) {
  constexpr int kWords = GS * Bits / 32, kPer = 32 / Bits;
  constexpr uint32_t mask = (1u << Bits) - 1;
  float lanes[kWords] = {};
  for (int j = 0; j < kPer; ++j) {
    for (int w = 0; w < kWords; ++w) {
      lanes[w] += xp[j * kWords + w] * static_cast<float>((words[w] >> (Bits * j)) & mask);
    }
  }
  float dot = 0;
  for (int w = 0; w < kWords; ++w) {
    dot += lanes[w];
  }
  return dot;
}

// out (M, N) = x (M, K) @ W.T, W stored (N, K), for small M: per output feature, per group,
// s (x_g . q_g) + b sum(x_g).
template <int Bits, int GS>
void matvec(const Operands& p, float* out) {
  constexpr bool kWordAligned = 32 % Bits == 0;
  constexpr int kPer = kWordAligned ? 32 / Bits : 1;
  constexpr int64_t kWords = GS * Bits / 32;
  const int64_t groups = p.K / GS, words_per_row = p.K * Bits / 32;
  std::vector<float> xsum(p.M * groups), xp;
  for (int64_t m = 0; m < p.M; ++m) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* xg = p.x + m * p.K + g * GS;
      float acc = 0;
      for (int i = 0; i < GS; ++i) {
        acc += xg[i];
      }
      xsum[m * groups + g] = acc;
    }
  }
  if constexpr (kWordAligned) {
    xp.resize(p.M * p.K);
    for (int64_t m = 0; m < p.M; ++m) {
      for (int64_t g = 0; g < groups; ++g) {
        const float* xg = p.x + m * p.K + g * GS;
        float* dst = xp.data() + m * p.K + g * GS;
        for (int64_t w = 0; w < kWords; ++w) {
          for (int j = 0; j < kPer; ++j) {
            dst[j * kWords + w] = xg[w * kPer + j];
          }
        }
      }
    }
  }
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / (words_per_row * 4 + 1));
  parallel_for(p.N, grain, [&](int64_t n0, int64_t n1) {
    float q[GS];
    std::vector<float> acc(p.M);
    for (int64_t n = n0; n < n1; ++n) {
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t g = 0; g < groups; ++g) {
        const uint32_t* words = p.w + n * words_per_row + g * kWords;
        float s = p.scales[n * groups + g], b = p.biases[n * groups + g];
        if constexpr (!kWordAligned) {
          decode<Bits>(words, GS, q);
        }
        for (int64_t m = 0; m < p.M; ++m) {
          float dot = 0;
          if constexpr (kWordAligned) {
            dot = group_dot<Bits, GS>(words, xp.data() + m * p.K + g * GS);
          } else {
            const float* xg = p.x + m * p.K + g * GS;
            for (int i = 0; i < GS; ++i) {
              dot += xg[i] * q[i];
            }
          }
          acc[m] += s * dot + b * xsum[m * groups + g];
        }
      }
      for (int64_t m = 0; m < p.M; ++m) {
        out[m * p.N + n] = acc[m];
      }
    }
  });
}

// Any M: W dequantized in blocks of rows, each multiplied with BLAS.
template <int Bits>
void blocked(const Operands& p, bool transpose, float* out) {
  if (!transpose) {
    // W stored (K, N), quantized along N: dequantize it whole, out = x @ W.
    Scratch<float> wf(p.K * p.N);
    parallel_for(p.K, 16, [&](int64_t r0, int64_t r1) {
      dequantize_rows<Bits>(p, p.N, r0, r1, wf.data() + r0 * p.N);
    });
    matmul_gemm(false, false, static_cast<int>(p.M), static_cast<int>(p.N), static_cast<int>(p.K),
                1.f, p.x, static_cast<int>(p.K), wf.data(), static_cast<int>(p.N), 0.f, out,
                static_cast<int>(p.N));
    return;
  }
  constexpr int64_t kBlockRows = 512;
  const int64_t rows = std::min(kBlockRows, p.N);
  Scratch<float> wf(rows * p.K);
  for (int64_t n0 = 0; n0 < p.N; n0 += rows) {
    int64_t n1 = std::min(p.N, n0 + rows);
    parallel_for(n1 - n0, 16, [&](int64_t a, int64_t b) {
      dequantize_rows<Bits>(p, p.K, n0 + a, n0 + b, wf.data() + a * p.K);
    });
    matmul_gemm(false, true, static_cast<int>(p.M), static_cast<int>(n1 - n0),
                static_cast<int>(p.K), 1.f, p.x, static_cast<int>(p.K), wf.data(),
                static_cast<int>(p.K), 0.f, out + n0, static_cast<int>(p.N));
  }
}

// The eight values of one word of codes (eight fp4 or four fp8 codes: the first four lanes
// for fp8, done twice per eight values) through the value table.
#ifdef MLX_SIMD_AVX2
inline simd::VecF fp4_word(uint32_t word, __m256 magnitudes) {
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  __m256i c = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), shifts),
                               _mm256_set1_epi32(15));
  __m256 mag = _mm256_permutevar8x32_ps(magnitudes, c);
  __m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(8)), 28);
  return _mm256_or_ps(mag, _mm256_castsi256_ps(sign));
}
// E4M3 by its bits (a gather from the table is slower): exponent and mantissa moved into a
// float32's with the bias changed from 7 to 127, subnormals m 2^-9, S.1111.111 NaN.
inline simd::VecF fp8_words(const uint32_t* w) {
  // Eight codes, one byte each (little-endian), widened to 32-bit lanes.
  __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w)));
  __m256i em = _mm256_and_si256(c, _mm256_set1_epi32(0x7F));
  __m256 normal = _mm256_castsi256_ps(
      _mm256_add_epi32(_mm256_slli_epi32(em, 20), _mm256_set1_epi32(120 << 23)));
  __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(em), _mm256_set1_ps(1.0f / 512));
  __m256 is_sub = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), em));
  __m256 v = _mm256_blendv_ps(normal, sub, is_sub);
  __m256 is_nan = _mm256_castsi256_ps(_mm256_cmpeq_epi32(em, _mm256_set1_epi32(0x7F)));
  v = _mm256_blendv_ps(v, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), is_nan);
  __m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x80)), 24);
  return _mm256_or_ps(v, _mm256_castsi256_ps(sign));
}
#endif

// out (M, N) = x (M, K) @ W.T for the microscaled modes and small M: per output feature, per
// group, the codes decoded through the value table eight at a time and s (x_g . v_g)
// accumulated in eight lanes.
template <int Bits, int GS>
void fp_matvec(const Operands& p, float* out) {
  static_assert(Bits == 4 || Bits == 8, "microscaled codes are 4 or 8 bits");
  constexpr int kWords = GS * Bits / 32;
  const int64_t groups = p.K / GS, words_per_row = p.K * Bits / 32;
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / (words_per_row * 4 + 1));
  parallel_for(p.N, grain, [&](int64_t n0, int64_t n1) {
    alignas(32) float v[GS];
#ifdef MLX_SIMD_AVX2
    const __m256 magnitudes = _mm256_loadu_ps(p.table);  // codes 0-7: the fp4 magnitudes
#endif
    std::vector<simd::VecF> acc(p.M);
    for (int64_t n = n0; n < n1; ++n) {
      std::fill(acc.begin(), acc.end(), simd::VecF(0.f));
      const uint32_t* row = p.w + n * words_per_row;
      for (int64_t g = 0; g < groups; ++g) {
        const uint32_t* words = row + g * kWords;
#ifdef MLX_SIMD_AVX2
        for (int i = 0; i < GS / 8; ++i) {
          simd::VecF vals = Bits == 4 ? fp4_word(words[i], magnitudes) : fp8_words(words + 2 * i);
          simd::store(v + 8 * i, vals);
        }
#else
        const uint8_t* codes = reinterpret_cast<const uint8_t*>(words);
        for (int b = 0; b < GS * Bits / 8; ++b) {
          if constexpr (Bits == 4) {
            v[2 * b] = p.table[codes[b] & 15];
            v[2 * b + 1] = p.table[codes[b] >> 4];
          } else {
            v[b] = p.table[codes[b]];
          }
        }
#endif
        const simd::VecF sc(p.scales[n * groups + g]);
        for (int64_t m = 0; m < p.M; ++m) {
          const float* xg = p.x + m * p.K + g * GS;
          simd::VecF lanes(0.f);
          for (int i = 0; i < GS; i += simd::kWidth) {
            lanes = simd::fma(simd::load(xg + i), simd::load(v + i), lanes);
          }
          acc[m] = simd::fma(lanes, sc, acc[m]);
        }
      }
      for (int64_t m = 0; m < p.M; ++m) {
        out[m * p.N + n] = simd::hsum(acc[m]);
      }
    }
  });
}

// out (M, N) in float32 for the operands of one stored matrix.
void quantized_product(const Operands& p, int bits, bool transpose, bool affine, float* dst) {
  if (p.K == 0) {
    std::fill_n(dst, p.M * p.N, 0.f);
    return;
  }
  constexpr int64_t kMatvecRows = 8;
  if (!affine && transpose && p.M <= kMatvecRows) {
    if (bits == 8) {
      fp_matvec<8, 32>(p, dst);
    } else if (p.group_size == 16) {
      fp_matvec<4, 16>(p, dst);
    } else {
      fp_matvec<4, 32>(p, dst);
    }
    return;
  }
  dispatch_quant_bits(bits, "quantized_matmul", [&]<int Bits>() {
    if (affine && transpose && p.M <= kMatvecRows) {
      if (p.group_size == 32) {
        matvec<Bits, 32>(p, dst);
      } else if (p.group_size == 64) {
        matvec<Bits, 64>(p, dst);
      } else {
        matvec<Bits, 128>(p, dst);
      }
    } else {
      blocked<Bits>(p, transpose, dst);
    }
  });
}

// The packed matrices (w), their per-group float scales and biases, and the code table, read
// from the inputs {.., w, scales, [biases | global scale], ..} of either primitive.
class StoredMatrices {
 public:
  StoredMatrices(const std::vector<array>& inputs, QuantMode mode, size_t extras_end) {
    w_ = row_contiguous(inputs[1], uint32, wh_).data<uint32_t>();
    if (mode == QuantMode::affine) {
      scales_ = row_contiguous(inputs[2], float32, sh_).data<float>();
      biases_ = row_contiguous(inputs[3], float32, bh_).data<float>();
      return;
    }
    table_ = mode == QuantMode::mxfp8 ? fp8_e4m3_values().data() : fp4_values().data();
    const uint8_t* codes = row_contiguous(inputs[2], uint8, sh_).data<uint8_t>();
    const float* decode =
        mode == QuantMode::nvfp4 ? fp8_e4m3_values().data() : e8m0_values().data();
    float mult = 1.f;
    if (extras_end > 3) {
      mult = inputs[3].data<float>()[0] / kNvfp4GlobalDivisor;
    }
    const size_t n = inputs[2].size();
    decoded_.emplace(n);
    for (size_t i = 0; i < n; ++i) {
      decoded_->data()[i] = decode[codes[i]] * mult;
    }
    scales_ = decoded_->data();
  }
  // The operands of stored matrix `index` (of `words` packed words and `groups` scales each).
  Operands operands(int64_t index, int64_t words, int64_t groups, int group_size) const {
    return Operands{nullptr,
                    w_ + index * words,
                    scales_ + index * groups,
                    biases_ ? biases_ + index * groups : nullptr,
                    table_,
                    0,
                    0,
                    0,
                    group_size};
  }

 private:
  std::optional<array> wh_, sh_, bh_;
  std::optional<Scratch<float>> decoded_;
  const uint32_t* w_ = nullptr;
  const float* scales_ = nullptr;
  const float* biases_ = nullptr;
  const float* table_ = nullptr;
};

// A float32 result buffer for `out`: out's own memory when it is float32.
struct Result {
  explicit Result(array& out) {
    if (out.dtype() == float32) {
      ptr = out.data<float>();
    } else {
      acc.emplace(out.size());
      ptr = acc->data();
    }
  }
  void finish(array& out) {
    if (acc) {
      convert_contiguous(acc->data(), float32, out.data<uint8_t>(), out.dtype(), out.size());
    }
  }
  std::optional<Scratch<float>> acc;
  float* ptr;
};

}  // namespace

void QuantizedMatmul::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  std::optional<array> xh;
  StoredMatrices stored(inputs, mode_, inputs.size());
  Operands p = stored.operands(0, 0, 0, group_size_);
  p.x = row_contiguous(inputs[0], float32, xh).data<float>();
  p.K = inputs[0].shape(-1);
  p.M = inputs[0].size() / std::max<int64_t>(p.K, 1);
  p.N = out.shape(-1);
  Result res(out);
  quantized_product(p, bits_, transpose_, mode_ == QuantMode::affine, res.ptr);
  res.finish(out);
}

void GatherQMM::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  const size_t n_in = inputs.size();
  const array &x = inputs[0], &w = inputs[1];
  auto lhs = matrix_indices(inputs[n_in - 2], x.shape(0), "gather_qmm");
  auto rhs = matrix_indices(inputs[n_in - 1], w.shape(0), "gather_qmm");
  if (out.size() == 0) {
    return;
  }
  const int64_t M = x.shape(1), K = x.shape(2), N = out.shape(-1);
  const int64_t words = static_cast<int64_t>(w.size()) / w.shape(0);
  const int64_t groups = static_cast<int64_t>(inputs[2].size()) / w.shape(0);
  std::optional<array> xh;
  const float* xf = row_contiguous(x, float32, xh).data<float>();
  StoredMatrices stored(inputs, mode_, n_in - 2);
  Result res(out);
  ProductGroups pg = group_by_rhs(rhs, w.shape(0));
  int64_t largest = 0;
  for (size_t g = 0; g + 1 < pg.starts.size(); ++g) {
    largest = std::max(largest, pg.starts[g + 1] - pg.starts[g]);
  }
  Scratch<float> x_rows(largest * M * K), c_rows(largest * M * N);
  for (size_t g = 0; g + 1 < pg.starts.size(); ++g) {
    const int64_t first = pg.starts[g], n = pg.starts[g + 1] - first;
    Operands p = stored.operands(rhs[pg.order[first]], words, groups, group_size_);
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(x_rows.data() + j * M * K, xf + lhs[pg.order[first + j]] * M * K,
                  M * K * sizeof(float));
    }
    p.x = x_rows.data();
    p.M = n * M;
    p.K = K;
    p.N = N;
    quantized_product(p, bits_, transpose_, mode_ == QuantMode::affine, c_rows.data());
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(res.ptr + pg.order[first + j] * M * N, c_rows.data() + j * M * N,
                  M * N * sizeof(float));
    }
  }
  res.finish(out);
}

}  // namespace mlx::core

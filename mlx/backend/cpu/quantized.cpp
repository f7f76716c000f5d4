// CPU product with an affine-quantized matrix. x @ W.T with few rows of x (the decode path of
// LLM inference) decodes each group of W once into floats and takes its dot products with
// the rows of x: out = sum over groups of s (x_g . q_g) + b sum(x_g), threads over output
// features. Other products decode W in blocks of rows into float32 and multiply them with BLAS.
#include "mlx/primitives/quantized.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/backend/cpu/dense.h"
#include "mlx/backend/cpu/gemm.h"
#include "mlx/backend/cpu/scratch.h"
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

template <typename F>
void dispatch_bits(int bits, F&& f) {
  switch (bits) {
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    case 4:
      return f.template operator()<4>();
    case 5:
      return f.template operator()<5>();
    case 6:
      return f.template operator()<6>();
    case 8:
      return f.template operator()<8>();
    default:
      throw std::invalid_argument("[QuantizedMatmul] Unsupported number of bits.");
  }
}

struct Operands {
  const float* x;  // (M, K)
  const uint32_t* w;
  const float* scales;
  const float* biases;
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
      float s = p.scales[r * groups + g], b = p.biases[r * groups + g];
      float* v = row + g * p.group_size;
      for (int i = 0; i < p.group_size; ++i) {
        v[i] = v[i] * s + b;
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

}  // namespace

void QuantizedMatmul::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  std::optional<array> xh, wh, sh, bh;
  Operands p{row_contiguous(inputs[0], float32, xh).data<float>(),
             row_contiguous(inputs[1], uint32, wh).data<uint32_t>(),
             row_contiguous(inputs[2], float32, sh).data<float>(),
             row_contiguous(inputs[3], float32, bh).data<float>(),
             0,
             0,
             0,
             group_size_};
  p.K = inputs[0].shape(-1);
  p.M = inputs[0].size() / std::max<int64_t>(p.K, 1);
  p.N = out.shape(-1);
  std::optional<Scratch<float>> acc;
  float* dst = out.dtype() == float32 ? out.data<float>() : (acc.emplace(out.size()), acc->data());
  if (p.K == 0) {
    std::fill_n(dst, out.size(), 0.f);
  } else {
    constexpr int64_t kMatvecRows = 8;
    dispatch_bits(bits_, [&]<int Bits>() {
      if (transpose_ && p.M <= kMatvecRows) {
        if (group_size_ == 32) {
          matvec<Bits, 32>(p, dst);
        } else if (group_size_ == 64) {
          matvec<Bits, 64>(p, dst);
        } else {
          matvec<Bits, 128>(p, dst);
        }
      } else {
        blocked<Bits>(p, transpose_, dst);
      }
    });
  }
  if (acc) {
    convert_contiguous(acc->data(), float32, out.data<uint8_t>(), out.dtype(), out.size());
  }
}

}  // namespace mlx::core

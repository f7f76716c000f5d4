// CPU convolution. Channels-last operands make every kernel tap a contiguous run of input
// channels, so the general scheme is im2col over a chunk of output rows (one row per output
// pixel: kernel taps x group channels, zeros for taps in the padding or between dilated input
// elements) followed by one BLAS product with the group's weights. Pointwise convolutions
// (1x1, stride 1, no padding) are one product on the input itself; depthwise convolutions
// (one input and one output channel per group) and their weight derivative have direct
// kernels (conv_depthwise.h), other groups of one output channel and few input channels a
// direct loop vectorized over channels. float16 / bfloat16 compute in float32. On AVX-512 CPUs
// float32 convolutions whose shapes suit its register tiles go to the implicit GEMM of
// conv_avx512.h instead (no im2col matrix). On CPUs with AVX512-BF16, bfloat16 convolutions
// stay in bfloat16: that implicit GEMM where its runs hold whole pairs of values (float32 sums
// rounded once into the output), else im2col of bfloat16 (or, pointwise, the input itself)
// and bf16_gemm into float32.
#include "mlx/primitives/conv.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "mlx/backend/common/conv_geometry.h"
#include "mlx/backend/common/dispatch.h"
#include "mlx/backend/cpu/conv_avx512.h"
#include "mlx/backend/cpu/conv_depthwise.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/backend/cpu/dense.h"
#include "mlx/backend/cpu/gemm.h"
#include "mlx/backend/cpu/gemm_bf16.h"
#include "mlx/backend/cpu/scratch.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core {

namespace {

using namespace cpu;

// The geometry and, per spatial dimension, which input element each output element reads
// through each kernel tap.
struct Geometry : ConvGeometry {
  // taps[d][x * k[d] + j]: input index along d read by output x through weight tap j, or -1.
  std::vector<int64_t> taps[3];
};

Geometry make_geometry(const ConvParams& p, const array& in, const array& wt, const array& out) {
  Geometry g{conv_geometry(p, in, wt, out), {}};
  for (int d = 0; d < 3; ++d) {
    auto& t = g.taps[d];
    t.resize(g.out[d] * g.k[d]);
    for (int64_t x = 0; x < g.out[d]; ++x) {
      for (int64_t j = 0; j < g.k[d]; ++j) {
        t[x * g.k[d] + j] = conv_source(g, d, x, g.flip ? g.k[d] - 1 - j : j);
      }
    }
  }
  return g;
}

// Calls f(row, n, x0, x1, x2) for the output rows [r0, r1) (row = (n * out0 + x0) * ... ).
template <typename F>
void for_rows(const Geometry& g, int64_t r0, int64_t r1, F&& f) {
  int64_t r = r0;
  int64_t x2 = r % g.out[2], x1 = r / g.out[2] % g.out[1],
          x0 = r / (g.out[2] * g.out[1]) % g.out[0];
  int64_t n = r / g.X;
  for (; r < r1; ++r) {
    f(r, n, x0, x1, x2);
    if (++x2 == g.out[2]) {
      x2 = 0;
      if (++x1 == g.out[1]) {
        x1 = 0;
        if (++x0 == g.out[0]) {
          x0 = 0;
          ++n;
        }
      }
    }
  }
}

// Calls f(tap, input pixel offset or -1) for the kernel taps [begin, end) of output pixel
// (x0, x1, x2).
template <typename F>
void for_taps(const Geometry& g, int64_t x0, int64_t x1, int64_t x2, int64_t begin, int64_t end,
              F&& f) {
  const int64_t* t0 = g.taps[0].data() + x0 * g.k[0];
  const int64_t* t1 = g.taps[1].data() + x1 * g.k[1];
  const int64_t* t2 = g.taps[2].data() + x2 * g.k[2];
  int64_t j2 = begin % g.k[2], j1 = begin / g.k[2] % g.k[1], j0 = begin / (g.k[2] * g.k[1]);
  for (int64_t tap = begin; tap < end; ++tap) {
    int64_t i0 = t0[j0], i1 = t1[j1], i2 = t2[j2];
    bool ok = i0 >= 0 && i1 >= 0 && i2 >= 0;
    f(tap, ok ? (i0 * g.in[1] + i1) * g.in[2] + i2 : int64_t(-1));
    if (++j2 == g.k[2]) {
      j2 = 0;
      if (++j1 == g.k[1]) {
        j1 = 0;
        ++j0;
      }
    }
  }
}

// Copies n elements; short runs (a few channels) are copied element by element, since a
// library memcpy call per kernel tap would cost more than the copy (the attribute keeps the
// compiler from turning the loop back into such a call).
template <typename T>
__attribute__((optimize("no-tree-loop-distribute-patterns"))) inline void copy_run(T* dst,
                                                                                   const T* src,
                                                                                   int64_t n) {
  if (n >= 16) {
    std::memcpy(dst, src, n * sizeof(T));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = src[i];
  }
}

// Rows [r0, r0 + rows) of group grp's im2col matrix, taps [tb, te) only: row r - r0 holds
// (te - tb) * Cg values, the taps' input channels (zeros in the padding).
template <typename T>
void fill_cols(const Geometry& g, const T* in, int64_t r0, int64_t rows, int64_t grp, int64_t tb,
               int64_t te, T* cols) {
  const int64_t cw = (te - tb) * g.Cg;
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / (cw * sizeof(T)));
  parallel_for(rows, grain, [&](int64_t a, int64_t b) {
    for_rows(g, r0 + a, r0 + b, [&](int64_t r, int64_t n, int64_t x0, int64_t x1, int64_t x2) {
      T* row = cols + (r - r0) * cw;
      const T* img = in + n * g.S * g.C + grp * g.Cg;
      for_taps(g, x0, x1, x2, tb, te, [&](int64_t tap, int64_t pix) {
        T* dst = row + (tap - tb) * g.Cg;
        if (pix < 0) {
          std::fill_n(dst, g.Cg, T(0));
        } else {
          copy_run(dst, img + pix * g.C, g.Cg);
        }
      });
    });
  });
}

// Output rows go in chunks, and when one row of taps x channels is itself large the taps go in
// blocks too: the scratch stays near kChunkBytes whatever the shapes. Calls
// f(r0, rows, grp, tb, cols, width) for each block, cols (rows, width) filled.
template <typename T, typename F>
void for_col_blocks(const Geometry& g, const T* in, F&& f) {
  const int64_t M = g.N * g.X;
  constexpr int64_t kChunkBytes = 8 << 20, kMinRows = 256;
  const int64_t tap_bytes = g.Cg * static_cast<int64_t>(sizeof(T));  // one tap of one row
  const int64_t chunk = std::min(M, std::max(kMinRows, kChunkBytes / (g.K * tap_bytes)));
  const int64_t tap_block = std::max<int64_t>(1, std::min(g.K, kChunkBytes / (chunk * tap_bytes)));
  Scratch<T> cols(chunk * tap_block * g.Cg);
  for (int64_t r0 = 0; r0 < M; r0 += chunk) {
    const int64_t rows = std::min(chunk, M - r0);
    for (int64_t grp = 0; grp < g.G; ++grp) {
      for (int64_t tb = 0; tb < g.K; tb += tap_block) {
        const int64_t te = std::min(g.K, tb + tap_block);
        fill_cols(g, in, r0, rows, grp, tb, te, cols.data());
        f(r0, rows, grp, tb, cols.data(), (te - tb) * g.Cg);
      }
    }
  }
}

// out (rows, O) = cols times the group's weights (Og, K Cg) transposed, accumulated over tap
// blocks with beta = 1 (O: T, or float32 for bfloat16 operands).
template <typename T, typename O>
void im2col_conv(const Geometry& g, const T* in, const T* wt, O* out) {
  const int64_t KC = g.K * g.Cg;
  for_col_blocks(
      g, in, [&](int64_t r0, int64_t rows, int64_t grp, int64_t tb, const T* c, int64_t cw) {
        matmul_gemm(false, true, static_cast<int>(rows), static_cast<int>(g.Og),
                    static_cast<int>(cw), O(1), c, static_cast<int>(cw),
                    wt + grp * g.Og * KC + tb * g.Cg, static_cast<int>(KC), tb == 0 ? O(0) : O(1),
                    out + r0 * g.O + grp * g.Og, static_cast<int>(g.O));
      });
}

// The weight derivative dw (O, K Cg): the group's cotangent columns (rows, Og) transposed
// times cols, accumulated over row chunks with beta = 1.
template <typename T, typename O>
void im2col_weight_grad(const Geometry& g, const T* in, const T* cot, O* dw) {
  const int64_t KC = g.K * g.Cg;
  for_col_blocks(
      g, in, [&](int64_t r0, int64_t rows, int64_t grp, int64_t tb, const T* c, int64_t cw) {
        matmul_gemm(true, false, static_cast<int>(g.Og), static_cast<int>(cw),
                    static_cast<int>(rows), O(1), cot + r0 * g.O + grp * g.Og,
                    static_cast<int>(g.O), c, static_cast<int>(cw), r0 == 0 ? O(0) : O(1),
                    dw + grp * g.Og * KC + tb * g.Cg, static_cast<int>(KC));
      });
}

// One output channel and a few input channels per group (depthwise convolutions, one input
// channel, have their own kernels in conv_depthwise.h):
// out[.., g] = sum over taps and the group's channels c of w[g, tap, c] * in[.., g Cg + c],
// accumulated over all C channels at once (contiguous, vectorized) and summed per group.
template <typename T>
void grouped_direct_conv(const Geometry& g, const T* in, const T* wt, T* out) {
  const int64_t C = g.C, Cg = g.Cg;
  // (G, taps, Cg) -> (taps, G, Cg) in blocks, so that reads and writes both stay in cache.
  std::vector<T> wt_t(g.K * C);
  constexpr int64_t kBlock = 32;
  for (int64_t g0 = 0; g0 < g.G; g0 += kBlock) {
    for (int64_t t0 = 0; t0 < g.K; t0 += kBlock) {
      for (int64_t grp = g0; grp < std::min(g.G, g0 + kBlock); ++grp) {
        for (int64_t t = t0; t < std::min(g.K, t0 + kBlock); ++t) {
          copy_run(wt_t.data() + t * C + grp * Cg, wt + (grp * g.K + t) * Cg, Cg);
        }
      }
    }
  }
  // Tiles of output rows: each tap's weights are applied to every row of the tile while they
  // are in cache (the weight derivative has few rows and many taps).
  constexpr int64_t kTileBytes = 16 << 10;
  const int64_t tile = std::max<int64_t>(1, std::min<int64_t>(64, kTileBytes / (C * sizeof(T))));
  const int64_t rows = g.N * g.X, tiles = (rows + tile - 1) / tile;
  parallel_for(tiles, 1, [&](int64_t t0, int64_t t1) {
    std::vector<T> acc(tile * C);
    std::vector<int64_t> coords(tile * 4);  // n, x0, x1, x2 per row of the tile
    for (int64_t ti = t0; ti < t1; ++ti) {
      const int64_t r0 = ti * tile, r1 = std::min(rows, r0 + tile), nr = r1 - r0;
      for_rows(g, r0, r1, [&](int64_t r, int64_t n, int64_t x0, int64_t x1, int64_t x2) {
        int64_t* c = coords.data() + (r - r0) * 4;
        c[0] = n, c[1] = x0, c[2] = x1, c[3] = x2;
      });
      std::fill_n(acc.data(), nr * C, T(0));
      int64_t tap = 0;
      for (int64_t j0 = 0; j0 < g.k[0]; ++j0) {
        for (int64_t j1 = 0; j1 < g.k[1]; ++j1) {
          for (int64_t j2 = 0; j2 < g.k[2]; ++j2, ++tap) {
            const T* __restrict w = wt_t.data() + tap * C;
            for (int64_t r = 0; r < nr; ++r) {
              const int64_t* c = coords.data() + r * 4;
              int64_t i0 = g.taps[0][c[1] * g.k[0] + j0], i1 = g.taps[1][c[2] * g.k[1] + j1],
                      i2 = g.taps[2][c[3] * g.k[2] + j2];
              if (i0 < 0 || i1 < 0 || i2 < 0) {
                continue;
              }
              const T* __restrict src = in + (c[0] * g.S + (i0 * g.in[1] + i1) * g.in[2] + i2) * C;
              T* __restrict a = acc.data() + r * C;
              for (int64_t ch = 0; ch < C; ++ch) {
                a[ch] += w[ch] * src[ch];
              }
            }
          }
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        const T* a = acc.data() + r * C;
        T* dst = out + (r0 + r) * g.G;
        if (Cg == 1) {
          std::copy_n(a, C, dst);
          continue;
        }
        for (int64_t grp = 0; grp < g.G; ++grp) {
          T sum = 0;
          for (int64_t c = 0; c < Cg; ++c) {
            sum += a[grp * Cg + c];
          }
          dst[grp] = sum;
        }
      }
    }
  });
}

// Up to this many channels per group, single-output groups use the direct loop (per-group
// products would be tiny).
constexpr int64_t kDirectMaxGroupChannels = 16;

bool is_pointwise(const ConvParams& p, const Geometry& g) {
  for (size_t i = 0; i < p.stride.size(); ++i) {
    if (p.stride[i] != 1 || p.padding_lo[i] != 0 || p.padding_hi[i] != 0 ||
        p.input_dilation[i] != 1) {
      return false;
    }
  }
  return g.K == 1;
}

bool is_grouped_direct(const Geometry& g) {
  return g.Og == 1 && g.G > 1 && g.Cg <= kDirectMaxGroupChannels;
}

// Whether a bfloat16 convolution (or weight derivative) that the implicit GEMM does not take
// keeps its operands in bfloat16 for bf16_gemm: the im2col and pointwise paths, where the CPU
// has AVX512-BF16, with at least kBf16MinChannels per group: fewer make im2col rows of short
// runs, copied a value at a time, while float32 reads the image in place (own_conv). 2 Zen 4
// cores, ResNet-50's conv1 (7x7/2, 3 -> 64 channels, batch 4): 7.6 ms this way, 5.7 ms through
// float32.
constexpr int64_t kBf16MinChannels = 16;

bool bf16_operands(const Geometry& g, Dtype dtype) {
  return dtype == bfloat16 && use_bf16_gemm() && g.Cg >= kBf16MinChannels && !is_depthwise(g) &&
         !is_grouped_direct(g);
}

// Depthwise with a channel multiplier: one input channel and several output channels per
// group, in more than one group (a one-channel image's convolution stays a product).
bool is_depthwise_multiplier(const Geometry& g) { return g.Cg == 1 && g.Og > 1 && g.G > 1; }

// Runs f(r, rep) where rep is `in` with each channel repeated Og times (channel c at c Og ..
// c Og + Og - 1) and r the plain depthwise geometry over it: a depthwise convolution with a
// channel multiplier, or its weight derivative, then takes the depthwise kernels instead of
// a product per group of Og columns (5x5, 512 channels x 2 on 14x14, batch 4: 64 ms before).
template <typename F>
void with_repeated_channels(const Geometry& g, const float* in, F&& f) {
  ConvGeometry r = g;
  r.C = r.G = g.O;
  r.Og = 1;
  Scratch<float> rep(g.N * g.S * g.O);
  float* dst = rep.data();
  parallel_for(g.N * g.S, 1024, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      for (int64_t c = 0; c < g.C; ++c) {
        std::fill_n(dst + p * g.O + c * g.Og, g.Og, in[p * g.C + c]);
      }
    }
  });
  f(r, static_cast<const float*>(dst));
}

// out = the convolution, O being T or float32 for bfloat16 operands (bf16_operands: then only
// the GEMM paths are reached).
template <typename T, typename O>
void convolve(const ConvParams& p, const Geometry& g, const T* in, const T* wt, O* out) {
  if constexpr (std::is_same_v<T, float>) {
    if (is_depthwise(g)) {
      depthwise_conv(g, in, wt, out);
      return;
    }
    if (is_depthwise_multiplier(g)) {
      with_repeated_channels(
          g, in, [&](const ConvGeometry& r, const float* rep) { depthwise_conv(r, rep, wt, out); });
      return;
    }
    if (g.Cg > 0 && use_own_conv(g)) {
      own_conv(g, in, wt, out);
      return;
    }
  }
  if constexpr (std::is_same_v<T, O>) {
    if (g.Cg == 0) {
      std::fill_n(out, g.N * g.X * g.O, T(0));
      return;
    }
    if (is_grouped_direct(g)) {
      grouped_direct_conv(g, in, wt, out);
      return;
    }
  }
  if (is_pointwise(p, g)) {
    for (int64_t grp = 0; grp < g.G; ++grp) {
      matmul_gemm(false, true, static_cast<int>(g.N * g.X), static_cast<int>(g.Og),
                  static_cast<int>(g.Cg), O(1), in + grp * g.Cg, static_cast<int>(g.C),
                  wt + grp * g.Og * g.Cg, static_cast<int>(g.Cg), O(0), out + grp * g.Og,
                  static_cast<int>(g.O));
    }
  } else {
    im2col_conv(g, in, wt, out);
  }
}

// Runs f(a, b, out) on row-contiguous copies of a and b in the accumulation type (float32 for
// float16 / bfloat16, whose result is converted back into out), or with bf16 (bf16_operands)
// on bfloat16 operands and a float32 out, rounded once into out.
template <typename F>
void eval_accumulated(const array& a, const array& b, array& out, bool bf16, F&& f) {
  dispatch_float(out.dtype(), "conv", [&]<typename T>() {
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    using In = std::conditional_t<std::is_same_v<T, bfloat16_t>, bfloat16_t, Acc>;
    auto run = [&]<typename X>() {
      std::optional<array> a_copy, b_copy;
      const X* pa = row_contiguous(a, dtype_of<X>(), a_copy).template data<X>();
      const X* pb = row_contiguous(b, dtype_of<X>(), b_copy).template data<X>();
      if constexpr (std::is_same_v<T, Acc>) {
        f(pa, pb, out.data<T>());
      } else {
        Scratch<float> acc(out.size());
        f(pa, pb, acc.data());
        convert_contiguous(acc.data(), float32, out.data<T>(), out.dtype(), out.size());
      }
    };
    if (bf16) {
      run.template operator()<In>();
    } else {
      run.template operator()<Acc>();
    }
  });
}

}  // namespace

void Convolution::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  Geometry g = make_geometry(params_, inputs[0], inputs[1], out);
  if (out.dtype() == bfloat16 && g.Cg > 0 && use_own_conv_bf16(g)) {
    // Operands read in bfloat16 and the output rounded from the kernel's float32 sums: no
    // float32 pass over either.
    std::optional<array> in_copy, wt_copy;
    own_conv(g, row_contiguous(inputs[0], bfloat16, in_copy).data<bfloat16_t>(),
             row_contiguous(inputs[1], bfloat16, wt_copy).data<bfloat16_t>(),
             out.data<bfloat16_t>());
    return;
  }
  const bool bf16 = bf16_operands(g, out.dtype());
  eval_accumulated(inputs[0], inputs[1], out, bf16, [&](const auto* in, const auto* wt, auto* o) {
    convolve(params_, g, in, wt, o);
  });
}

void ConvWeightGrad::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  // The output has the weight's shape and the cotangent the convolution output's.
  const Geometry g = make_geometry(params_, inputs[0], out, inputs[1]);
  const bool bf16 = bf16_operands(g, out.dtype());
  eval_accumulated(inputs[0], inputs[1], out, bf16, [&](const auto* in, const auto* cot, auto* dw) {
    using T = std::remove_cvref_t<decltype(*in)>;
    if (g.N * g.X == 0 || g.Cg == 0) {
      std::fill_n(dw, out.size(), std::remove_cvref_t<decltype(*dw)>(0));
    } else if constexpr (std::is_same_v<T, float>) {
      if (is_depthwise(g)) {
        depthwise_weight_grad(g, in, cot, dw);
      } else if (is_depthwise_multiplier(g)) {
        with_repeated_channels(g, in, [&](const ConvGeometry& r, const float* rep) {
          depthwise_weight_grad(r, rep, cot, dw);
        });
      } else {
        im2col_weight_grad(g, in, cot, dw);
      }
    } else {
      im2col_weight_grad(g, in, cot, dw);
    }
  });
}

}  // namespace mlx::core

// Implicit-GEMM convolution (conv_avx512.h). out[pixel, o] = sum over k of A[pixel, k] *
// B[k, o], with k = (tap, channel) and A the im2col matrix, which is never formed: in
// channels-last layout, A's row for one pixel is a few runs of contiguous image memory (one
// per kernel tap, or one per row of taps when their channels are adjacent), so the
// micro-kernel broadcasts A straight from the image through one pointer per pixel. Padding and
// input dilation are made real by a zero-padded copy of the image first, after which every
// tap of every pixel is in bounds. Only B (the weights, small) is packed, once per call.
// bfloat16 takes k two at a time: the micro-kernel broadcasts one 32-bit word of a run (two
// neighbouring values) and vdpbf16ps adds both products into float32 lanes, against B packed
// in K pairs as bf16_gemm's (pack_pairs), so every run holds whole pairs.
//
// Loop nest: tasks over the pool (a block of row panels x a range of column panels, whose B
// for one block of runs stays in L2); within a task, blocks of runs up to kDepth deep, then
// row panels (a panel's image runs stay in L1 across the column panels), then column panels
// (micro-kernel: kMR pixels x kNR output channels in registers, summed over the run block).
#include "mlx/backend/cpu/conv_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "mlx/backend/cpu/gemm_avx512.h"
#include "mlx/backend/cpu/gemm_bf16.h"
#include "mlx/backend/cpu/scratch.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

namespace {

constexpr int kMR = kGemmMR;  // the own GEMM's register tile
constexpr int kNR = kGemmNR;
// k per pass of a tile over its runs: 48 KiB of one panel of B for either element type.
template <typename T>
constexpr int64_t kDepth = 1536 / sizeof(T);
constexpr int64_t kTaskBytes = 512 << 10;  // B read by one task per block of runs (in L2)
constexpr int64_t kRowPanels = 8;          // row panels per task: 96 pixels
constexpr int64_t kMinRun = 8;  // float32: shorter runs spend more on their pointers than on FMAs
constexpr int64_t kMinChannels = 16;

// The image values each pixel reads per kernel tap, or per row of taps: the taps along the last
// dimension read one contiguous run when the group is every channel and the kernel is not
// dilated there.
bool merges_taps(const ConvGeometry& g) { return g.Cg == g.C && g.kdil[2] == 1; }
int64_t run_length(const ConvGeometry& g) { return merges_taps(g) ? g.k[2] * g.C : g.Cg; }

// What the kernel reads: the spatial size of the image (the input, or its padded copy), and
// each pixel's runs: run t is run_len[t] values at run_off[t] from the pixel's first tap, in
// the order of B's rows. Runs are cut to at most `depth` (at multiples of `step`, the values
// of one broadcast), and go in blocks of consecutive runs at most `depth` long in all (or one
// run): blocks[b] is the first run of block b (blocks ends with the run count), blocks_depth[b]
// the block's length.
struct Plan {
  int64_t dims[3];
  bool padded;  // reads a zero-padded, dilated copy of the input
  std::vector<int64_t> run_off, run_len, blocks, blocks_depth;
};

Plan make_plan(const ConvGeometry& g, int64_t depth, int64_t step) {
  Plan p{};
  for (int d = 0; d < 3; ++d) {
    // Image extent that the output reads, in dilated, padded coordinates.
    const int64_t extent = (g.out[d] - 1) * g.stride[d] + (g.k[d] - 1) * g.kdil[d] + 1;
    p.padded |= g.lo[d] != 0 || g.idil[d] != 1 || extent > g.in[d];
    p.dims[d] = extent;
  }
  if (!p.padded) {
    std::copy_n(g.in, 3, p.dims);
  }
  const int64_t k2 = merges_taps(g) ? 1 : g.k[2], len = run_length(g);
  const int64_t pieces = ceil_div(len, depth);
  for (int64_t j0 = 0; j0 < g.k[0]; ++j0) {
    for (int64_t j1 = 0; j1 < g.k[1]; ++j1) {
      for (int64_t j2 = 0; j2 < k2; ++j2) {
        const int64_t off =
            ((j0 * g.kdil[0] * p.dims[1] + j1 * g.kdil[1]) * p.dims[2] + j2 * g.kdil[2]) * g.C;
        for (int64_t i = 0; i < pieces; ++i) {
          const int64_t b = len * i / pieces / step * step;
          const int64_t e = len * (i + 1) / pieces / step * step;
          if (p.blocks.empty() || p.blocks_depth.back() + e - b > depth) {
            p.blocks.push_back(static_cast<int64_t>(p.run_off.size()));
            p.blocks_depth.push_back(0);
          }
          p.blocks_depth.back() += e - b;
          p.run_off.push_back(off + b);
          p.run_len.push_back(e - b);
        }
      }
    }
  }
  p.blocks.push_back(static_cast<int64_t>(p.run_off.size()));
  return p;
}

// The zero-padded image: input element i lands at i * idil + lo along each dimension (when
// that is inside the extent the output reads).
template <typename T>
void pad_image(const ConvGeometry& g, const Plan& p, const T* in, T* dst) {
  const int64_t row = p.dims[2] * g.C;
  // Input index along d of padded index u, or -1.
  auto source = [&](int d, int64_t u) -> int64_t {
    const int64_t q = u - g.lo[d];
    return q >= 0 && q % g.idil[d] == 0 && q / g.idil[d] < g.in[d] ? q / g.idil[d] : -1;
  };
  const int64_t rows = g.N * p.dims[0] * p.dims[1];
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / (row * sizeof(T)));
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* out = dst + r * row;
      std::fill_n(out, row, T(0));
      const int64_t u1 = r % p.dims[1], u0 = r / p.dims[1] % p.dims[0],
                    n = r / (p.dims[0] * p.dims[1]);
      const int64_t i0 = source(0, u0), i1 = source(1, u1);
      if (i0 < 0 || i1 < 0) {
        continue;
      }
      const T* src = in + ((n * g.in[0] + i0) * g.in[1] + i1) * g.in[2] * g.C;
      for (int64_t i2 = 0; i2 < g.in[2]; ++i2) {
        const int64_t u2 = i2 * g.idil[2] + g.lo[2];
        if (u2 >= 0 && u2 < p.dims[2]) {
          std::memcpy(out + u2 * g.C, src + i2 * g.C, g.C * sizeof(T));
        }
      }
    }
  });
}

// dst[j * kNR + i] = src[i * ld + j] for a 16 x 16 block.
MLX_TARGET_AVX512 void transpose_block(const float* src, int64_t ld, float* dst) {
  __m512 r[16];
  for (int i = 0; i < 16; ++i) {
    r[i] = _mm512_loadu_ps(src + i * ld);
  }
  transpose16(r);
  for (int j = 0; j < 16; ++j) {
    _mm512_storeu_ps(dst + j * kNR, r[j]);
  }
}

// The group's weights as column panels of B: panel q holds k = (tap, channel) rows of kNR
// output channels, zeros past the group's last; a flipped kernel is read tap-reversed. Whole
// 16 x 16 blocks are transposed in registers, the edges one value at a time.
void pack_weights(const ConvGeometry& g, const float* wt, int64_t grp, float* dst) {
  const int64_t KC = g.K * g.Cg, panels = ceil_div(g.Og, kNR);
  const int64_t full_c = g.Cg / 16 * 16;
  parallel_for(panels, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t cols = std::min<int64_t>(kNR, g.Og - q * kNR), full_v = cols / 16 * 16;
      const float* w = wt + (grp * g.Og + q * kNR) * KC;
      for (int64_t tap = 0; tap < g.K; ++tap) {
        const float* src = w + (g.flip ? g.K - 1 - tap : tap) * g.Cg;
        float* panel = dst + (q * KC + tap * g.Cg) * kNR;
        for (int64_t v = 0; v < full_v; v += 16) {
          for (int64_t c = 0; c < full_c; c += 16) {
            transpose_block(src + v * KC + c, KC, panel + c * kNR + v);
          }
        }
        for (int64_t c = 0; c < g.Cg; ++c) {
          for (int64_t v = c < full_c ? full_v : 0; v < kNR; ++v) {
            panel[c * kNR + v] = v < cols ? src[v * KC + c] : 0.0f;
          }
        }
      }
    }
  });
}

// The bfloat16 panels: the same rows in pairs (pack_pairs), the whole K at once, or tap by tap
// (each tap's channels an even count, use_own_conv_bf16) when the kernel is flipped.
void pack_weights(const ConvGeometry& g, const uint16_t* wt, int64_t grp, uint16_t* dst) {
  const int64_t KC = g.K * g.Cg, panels = ceil_div(g.Og, kNR);
  const int64_t pieces = g.flip ? g.K : 1, piece = KC / pieces;
  parallel_for(panels, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t cols = std::min<int64_t>(kNR, g.Og - q * kNR);
      const uint16_t* w = wt + (grp * g.Og + q * kNR) * KC;
      for (int64_t i = 0; i < pieces; ++i) {
        const int64_t src = g.flip ? pieces - 1 - i : i;
        pack_pairs<kNR>(w + src * piece, KC, 1, cols, piece, dst + (q * KC + i * piece) * kNR);
      }
    }
  });
}

// The micro-kernel's arithmetic per element type: a broadcast of kStep values of a pixel's run
// (a float, or a word of two bfloat16) times a vector of B (16 float32 lanes of kStep values
// each), added into 16 float32 sums.
struct Float32Ops {
  using T = float;
  static constexpr int kStep = 1;
  MLX_TARGET_AVX512 static __m512 broadcast(const float* a) { return _mm512_set1_ps(*a); }
  MLX_TARGET_AVX512 static __m512 multiply_add(__m512 a, __m512 b, __m512 c) {
    return _mm512_fmadd_ps(a, b, c);
  }
};

struct Bfloat16Ops {
  using T = uint16_t;
  static constexpr int kStep = 2;
  MLX_TARGET_AVX512 static __m512 broadcast(const uint16_t* a) {
    int32_t word;
    std::memcpy(&word, a, 4);
    return _mm512_castsi512_ps(_mm512_set1_epi32(word));
  }
  MLX_TARGET_AVX512_BF16 static __m512 multiply_add(__m512 a, __m512 b, __m512 c) {
    return _mm512_dpbf16_ps(c, (__m512bh)a, (__m512bh)b);
  }
};

// The 16 values of v rounded to bfloat16 bits as float_to_bfloat_bits does (to nearest even,
// NaN kept quiet).
MLX_TARGET_AVX512 __m256i round_to_bfloat16(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i high = _mm512_srli_epi32(x, 16);
  const __m512i bias =
      _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(high, _mm512_set1_epi32(1)));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  r = _mm512_mask_or_epi32(r, nan, high, _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(r);
}

// Stores the lanes of m of v at c: float32, or rounded to bfloat16.
MLX_TARGET_AVX512 void store_lanes(float* c, __mmask16 m, __m512 v) {
  _mm512_mask_storeu_ps(c, m, v);
}
MLX_TARGET_AVX512 void store_lanes(uint16_t* c, __mmask16 m, __m512 v) {
  _mm256_mask_storeu_epi16(c, m, round_to_bfloat16(v));
}

// C[:mr, :nr] = partial sums (float32 at `sums` with C's strides, or none) + the kMR pixels at
// rows[] times the packed B rows pb, over `runs` runs of lens[t] values at rows[r] + offs[t].
// Rows past mr repeat rows[0] and are not stored. Compiled with AVX512-BF16 for both types;
// the float32 instance holds no BF16 instruction, so it runs on any AVX-512 CPU.
template <typename Ops, typename Out, typename T = typename Ops::T>
MLX_TARGET_AVX512_BF16 void micro_kernel(const T* const* rows, int mr, const int64_t* offs,
                                         const int64_t* lens, int64_t runs, const T* __restrict pb,
                                         const float* sums, Out* c, int64_t ldc, int nr) {
  constexpr int kStep = Ops::kStep;
  __m512 c0[kMR], c1[kMR];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    c0[r] = _mm512_setzero_ps();
    c1[r] = _mm512_setzero_ps();
  }
  for (int64_t t = 0; t < runs; ++t) {
    const T* a[kMR];
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
      a[r] = rows[r] + offs[t];
    }
    for (int64_t k = 0; k < lens[t]; k += kStep) {
      const __m512 b0 = _mm512_loadu_ps(pb);
      const __m512 b1 = _mm512_loadu_ps(pb + 16 * kStep);
#pragma GCC unroll 12
      for (int r = 0; r < kMR; ++r) {
        const __m512 av = Ops::broadcast(a[r] + k);
        c0[r] = Ops::multiply_add(av, b0, c0[r]);
        c1[r] = Ops::multiply_add(av, b1, c1[r]);
      }
      pb += kNR * kStep;
    }
  }
  const __mmask16 m0 = nr >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << nr) - 1);
  const __mmask16 m1 =
      nr >= 32 ? 0xFFFF : (nr > 16 ? static_cast<__mmask16>((1u << (nr - 16)) - 1) : 0);
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    if (r < mr) {
      __m512 x0 = c0[r], x1 = c1[r];
      if (sums) {
        x0 = _mm512_add_ps(x0, _mm512_maskz_loadu_ps(m0, sums + r * ldc));
        x1 = _mm512_add_ps(x1, _mm512_maskz_loadu_ps(m1, sums + r * ldc + 16));
      }
      store_lanes(c + r * ldc, m0, x0);
      store_lanes(c + r * ldc + 16, m1, x1);
    }
  }
}

// Offset of output pixel m's first tap in the image read.
int64_t pixel_offset(const ConvGeometry& g, const Plan& p, int64_t m) {
  const int64_t x2 = m % g.out[2], x1 = m / g.out[2] % g.out[1],
                x0 = m / (g.out[2] * g.out[1]) % g.out[0], n = m / g.X;
  return (((n * p.dims[0] + x0 * g.stride[0]) * p.dims[1] + x1 * g.stride[1]) * p.dims[2] +
          x2 * g.stride[2]) *
         g.C;
}

// out = the convolution, Out being float32, or bfloat16 rounded once from float32 sums.
template <typename Ops, typename Out, typename T = typename Ops::T>
void implicit_gemm(const ConvGeometry& g, const T* in, const T* wt, Out* out) {
  const Plan p = make_plan(g, kDepth<T>, Ops::kStep);
  const T* img = in;
  std::optional<Scratch<T>> padded;
  if (p.padded) {
    padded.emplace(g.N * p.dims[0] * p.dims[1] * p.dims[2] * g.C);
    pad_image(g, p, in, padded->data());
    img = padded->data();
  }
  const int64_t M = g.N * g.X, KC = g.K * g.Cg;
  const int64_t row_panels = ceil_div(M, kMR), col_panels = ceil_div(g.Og, kNR);
  // Row blocks of at most kRowPanels panels, as even as they can be.
  const int64_t row_blocks = ceil_div(row_panels, kRowPanels);
  const int64_t block_rows = ceil_div(row_panels, row_blocks) * kMR;
  // A task's column panels: their B for one block of runs within kTaskBytes, and more parts
  // when there are few row blocks, so that every thread has work; as many panels in each part,
  // so that a row block's tasks cost the same (16 panels in 6 parts of 2 or 3 left a thread
  // idle at the end: ResNet-50's l4 3x3 512, batch 4, bfloat16 on 2 threads, 1.29-1.49 ms,
  // in 8 parts 1.14-1.18).
  const int64_t depth = *std::max_element(p.blocks_depth.begin(), p.blocks_depth.end());
  const int64_t threads = num_threads();
  int64_t col_parts = std::clamp<int64_t>(
      std::max(ceil_div(col_panels * depth * kNR * static_cast<int64_t>(sizeof(T)), kTaskBytes),
               ceil_div(8 * threads, row_blocks)),
      1, col_panels);
  while (col_panels % col_parts != 0) {
    ++col_parts;
  }
  Scratch<T> pb(KC * col_panels * kNR);
  // The sums over every block of runs but the last: in the output itself where it is float32.
  std::optional<Scratch<float>> sums_buffer;
  float* sums = nullptr;
  if constexpr (std::is_same_v<Out, float>) {
    sums = out;
  } else if (p.blocks.size() > 2) {
    sums_buffer.emplace(M * g.O);
    sums = sums_buffer->data();
  }
  for (int64_t grp = 0; grp < g.G; ++grp) {
    pack_weights(g, wt, grp, pb.data());
    parallel_for(row_blocks * col_parts, 1, [&](int64_t t0, int64_t t1) {
      const T* rows[kRowPanels * kMR];  // each pixel's first tap
      for (int64_t task = t0; task < t1; ++task) {
        const int64_t rb = task / col_parts, part = task % col_parts;
        const int64_t m0 = rb * block_rows, m1 = std::min(M, m0 + block_rows);
        const int64_t q0 = col_panels * part / col_parts, q1 = col_panels * (part + 1) / col_parts;
        for (int64_t m = m0; m < m1; ++m) {
          rows[m - m0] = img + pixel_offset(g, p, m) + grp * g.Cg;
        }
        for (int64_t m = m1; m < m0 + block_rows; ++m) {
          rows[m - m0] = rows[(m - m0) / kMR * kMR];
        }
        int64_t k0 = 0;  // B's first row for the block
        for (size_t blk = 0; blk + 1 < p.blocks.size(); ++blk) {
          const int64_t tb = p.blocks[blk], te = p.blocks[blk + 1];
          const bool last = blk + 2 == p.blocks.size();
          for (int64_t m = m0; m < m1; m += kMR) {
            const int mr = static_cast<int>(std::min<int64_t>(kMR, m1 - m));
            for (int64_t q = q0; q < q1; ++q) {
              const int nr = static_cast<int>(std::min<int64_t>(kNR, g.Og - q * kNR));
              const T* b = pb.data() + (q * KC + k0) * kNR;
              const int64_t tile = m * g.O + grp * g.Og + q * kNR;
              const float* before = blk > 0 ? sums + tile : nullptr;
              const auto run = [&](auto* c) {
                micro_kernel<Ops>(rows + (m - m0), mr, p.run_off.data() + tb, p.run_len.data() + tb,
                                  te - tb, b, before, c + tile, g.O, nr);
              };
              if (last) {
                run(out);
              } else {
                run(sums);
              }
            }
          }
          k0 += p.blocks_depth[blk];
        }
      }
    });
  }
}

}  // namespace

bool use_own_conv(const ConvGeometry& g) {
  return own_gemm_supported() && g.Og >= kMinChannels && run_length(g) >= kMinRun;
}

// bfloat16 takes runs down to one pair, below kMinRun: what those convolutions get otherwise is
// float32 im2col of the same short runs, slower still (the weight derivative of a 3x3 stride-2
// convolution, 128 channels, batch 4, runs of 4 values: 12.1 -> 4.9 ms on one Zen core).
bool use_own_conv_bf16(const ConvGeometry& g) {
  const int64_t len = run_length(g);
  return use_bf16_gemm() && g.Og >= kMinChannels && len > 0 && len % 2 == 0 &&
         (!g.flip || g.Cg % 2 == 0);
}

void own_conv(const ConvGeometry& g, const float* in, const float* wt, float* out) {
  implicit_gemm<Float32Ops>(g, in, wt, out);
}

void own_conv(const ConvGeometry& g, const bfloat16_t* in, const bfloat16_t* wt, bfloat16_t* out) {
  implicit_gemm<Bfloat16Ops>(g, reinterpret_cast<const uint16_t*>(in),
                             reinterpret_cast<const uint16_t*>(wt),
                             reinterpret_cast<uint16_t*>(out));
}

}  // namespace mlx::core::cpu

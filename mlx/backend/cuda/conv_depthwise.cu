// Depthwise convolutions, channels last (conv_depthwise.h): groups of CG input and OG output
// channels with CG or OG equal to 1, on ConvGeometry (spatial dimensions padded in front to
// three), so one kernel runs every stride, padding (asymmetric and negative too: the low
// padding and the output size say it all), kernel and input dilation and flip. The forward
// kernel therefore also runs the input derivative of a depthwise convolution, a transposed
// convolution (input dilation = the forward stride, flipped kernel, CG = the forward's OG) in
// its gather form: each output sums the taps that land on a stored input, no atomics.
//
// Bandwidth: a thread owns U consecutive groups (a pack of U CG input and U OG output channels,
// 16 bytes on the wider side) for a run of kDwPixels neighbouring outputs along the last
// spatial dimension; packs are single aligned accesses where every group is whole (groups a
// multiple of U, 16-byte aligned operands), else element by element. A block is bx threads
// across the channels (coalesced: one pixel's channels are contiguous) by `by` runs; it stages
// its channels' filter taps in shared memory (float, or double for double), in chunks of taps
// where the kernel is large, and every run reads them from there; the taps' input pixels
// (neighbours of the run's) come through L1/L2. Sums are in float (double for double).
//
// The weight derivative sums in[pixel read by the tap, c] * cot[pixel, o] over the batch's
// output pixels per output channel o (input channel c = o / OG) and tap: a thread owns a pack
// of channels (8 bytes on the wider side) and up to kDwGradTaps taps (sums in registers),
// walks a slice of the pixels, reading each cotangent pack once; the block adds its rows in
// shared memory and writes one partial sum per slice, tap and channel, and a second pass adds
// the slices in order (the result does not depend on scheduling).
//
// Positions along a spatial dimension (and pixels within an image) are 32-bit, offsets into the
// operands 64-bit; geometries whose positions would not fit are not taken (the supported
// checks).
#include <algorithm>
#include <climits>
#include <cstdlib>

#include "mlx/backend/cuda/conv_depthwise.h"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/backend/cuda/occupancy.cuh"

namespace mlx::core::cu {

namespace {

constexpr int kDwThreads = 256;
// Outputs per thread along the last spatial dimension (forward).
constexpr int kDwPixels = 4;
// Taps per thread (weight derivative); larger kernels split their taps over blockIdx.y.
constexpr int kDwGradTaps = 9;
// Shared memory for the forward kernel's staged taps; larger kernels go in chunks.
constexpr int64_t kDwStageBytes = int64_t(32) << 10;
// Most channels per group on the wider side (the channel multiplier).
constexpr int64_t kDwMaxMultiplier = 4;
// A forward thread sums its outputs' taps one after another: past kDwLongKernel taps the
// kernels take only convolutions of at least kDwManyOutputs outputs (pixels x groups), so that
// a long kernel over few outputs (the weight derivative of a transposed convolution, whose
// kernel is the cotangent) goes to cuDNN or im2col, whose products split such sums.
constexpr int64_t kDwLongKernel = 1024;
constexpr int64_t kDwManyOutputs = int64_t(1) << 20;

// N consecutive elements, loaded or stored as one access (or a few, past 16 bytes), aligned to
// the largest power of two up to 16 that divides their size.
template <typename T, int N, int Bytes = static_cast<int>(sizeof(T)) * N>
struct alignas(Bytes % 16 == 0  ? 16
               : Bytes % 8 == 0 ? 8
               : Bytes % 4 == 0 ? 4
               : Bytes % 2 == 0 ? 2
                                : 1) Pack {
  T v[N];
};

// A thread's share of the channels: U groups, IN = U CG input and OUT = U OG output channels
// (the wider one `Bytes` where the multiplier allows).
template <typename T, int CG, int OG, int Bytes = 16>
struct DwShape {
  static constexpr int kWide = CG > OG ? CG : OG;
  static constexpr int kPerAccess = Bytes / static_cast<int>(sizeof(T));
  static constexpr int U = kPerAccess / kWide > 0 ? kPerAccess / kWide : 1;
  static constexpr int IN = U * CG;
  static constexpr int OUT = U * OG;
};

// The weight derivative's share: 8-byte packs, so that kDwGradTaps taps of sums stay in
// registers beside a few blocks per multiprocessor.
template <typename T, int OG>
using DwGradShape = DwShape<T, 1, OG, 8>;

// ConvGeometry as the kernels read it: spatial quantities in 32 bits (fits_32_bits), the sizes
// that scale offsets in 64.
struct DwGeometry {
  int64_t N, C, O, G, S, X;
  int K;
  int in[3], k[3], out[3], stride[3], lo[3], kdil[3], idil[3];
  bool flip;
};

// Whether every position the kernels compute fits in 32 bits: o stride - lo + t kdil along each
// dimension (at most (out - 1) stride + |lo| + (k - 1) kdil in size), pixels within an image,
// taps, and a row's coordinate advanced by a block's rows.
bool fits_32_bits(const ConvGeometry& g) {
  constexpr int64_t kMax = INT_MAX - kDwThreads;
  if (g.K > kMax || g.S > kMax || g.X > kMax) {
    return false;
  }
  for (int d = 0; d < 3; ++d) {
    const int64_t reach =
        (g.out[d] - 1) * g.stride[d] + std::abs(g.lo[d]) + (g.k[d] - 1) * g.kdil[d];
    if (reach > kMax) {
      return false;
    }
  }
  return true;
}

DwGeometry dw_geometry(const ConvGeometry& g) {
  DwGeometry d{g.N, g.C, g.O, g.G, g.S, g.X, static_cast<int>(g.K)};
  for (int i = 0; i < 3; ++i) {
    d.in[i] = static_cast<int>(g.in[i]);
    d.k[i] = static_cast<int>(g.k[i]);
    d.out[i] = static_cast<int>(g.out[i]);
    d.stride[i] = static_cast<int>(g.stride[i]);
    d.lo[i] = static_cast<int>(g.lo[i]);
    d.kdil[i] = static_cast<int>(g.kdil[i]);
    d.idil[i] = static_cast<int>(g.idil[i]);
  }
  d.flip = g.flip;
  return d;
}

// a / b for a >= 0 and b > 0, in 32 bits where both fit.
__device__ __forceinline__ int64_t div_nn(int64_t a, int64_t b) {
  return ((a | b) >> 31) == 0 ? int64_t(uint32_t(a) / uint32_t(b)) : a / b;
}

// The input index along one dimension at position q of the padded, dilated input, or -1 where
// q falls in the padding or between dilated input elements (n: the input's size there).
__device__ __forceinline__ int dw_source(int q, int idil, int n) {
  if (q < 0) {
    return -1;
  }
  if (idil != 1) {
    const int d = static_cast<int>(unsigned(q) / unsigned(idil));
    if (d * idil != q) {
      return -1;
    }
    q = d;
  }
  return q < n ? q : -1;
}

// Each tap of [c0, c0 + kc): its offsets in the padded, dilated input (the window position,
// after any flip, times the kernel dilation), per dimension, in offs[3 i + d].
__device__ __forceinline__ void dw_tap_offsets(const DwGeometry& g, int c0, int kc, int* offs) {
  const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
  for (int i = tid; i < kc; i += nthreads) {
    int t = c0 + i, ts[3];
    ts[2] = t % g.k[2];
    t /= g.k[2];
    ts[1] = t % g.k[1];
    ts[0] = t / g.k[1];
#pragma unroll
    for (int d = 0; d < 3; ++d) {
      offs[3 * i + d] = (g.flip ? g.k[d] - 1 - ts[d] : ts[d]) * g.kdil[d];
    }
  }
}

// xs = the N channels at p: one pack access when `vec`, else element by element for the first
// `valid` (zeros after them).
template <int N, typename T, typename Acc>
__device__ __forceinline__ void load_channels(const T* p, bool vec, int valid, Acc (&xs)[N]) {
  if (vec) {
    const Pack<T, N> pk = *reinterpret_cast<const Pack<T, N>*>(p);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      xs[k] = static_cast<Acc>(pk.v[k]);
    }
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      xs[k] = k < valid ? static_cast<Acc>(p[k]) : Acc(0);
    }
  }
}

template <int N, typename T, typename Acc>
__device__ __forceinline__ void store_channels(T* p, bool vec, int valid, const Acc (&ys)[N]) {
  if (vec) {
    Pack<T, N> pk;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      pk.v[k] = cast_to<T>(ys[k]);
    }
    *reinterpret_cast<Pack<T, N>*>(p) = pk;
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (k < valid) {
        p[k] = cast_to<T>(ys[k]);
      }
    }
  }
}

// How a launch divides the work (both kernels).
struct DwLaunch {
  int64_t packs;  // channel packs: groups / U, rounded up
  int64_t runs;   // forward: runs of kDwPixels outputs per row of the last spatial dimension
  int64_t items;  // forward: N out[0] out[1] runs; weight derivative: pixels per slice
  int kc;         // forward: taps per chunk of staged weights
  bool vec;       // every pack whole and aligned: single accesses
};

// Threads across the channel packs (at most 32, as even as the packs allow) and along the
// pixels, kDwThreads at most together.
dim3 dw_block(int64_t packs) {
  const int64_t blocks = (packs + 31) / 32;
  const int bx = static_cast<int>((packs + blocks - 1) / blocks);
  return dim3(bx, kDwThreads / bx);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The forward kernel (see the file's comment). Shared memory: the chunk's tap offsets (kc x 3
// int), then its weights (kc x W x bx, Acc).
template <typename T, int CG, int OG>
__global__ void __launch_bounds__(kDwThreads, 2)
    depthwise_conv_kernel(const T* in, const T* wt, T* out, DwGeometry g, DwLaunch l) {
  using S = DwShape<T, CG, OG>;
  using Acc = acc_t<T>;
  constexpr int kW = S::OUT * CG;  // weights per tap
  extern __shared__ __align__(16) unsigned char dw_smem[];
  int* offs = reinterpret_cast<int*>(dw_smem);
  Acc* sw = reinterpret_cast<Acc*>(dw_smem + (3 * l.kc * sizeof(int) + 15) / 16 * 16);
  const int bx = blockDim.x, by = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * bx + tx, nthreads = bx * by;
  const int64_t pack = int64_t(blockIdx.x) * bx + tx, grp0 = pack * S::U;
  const bool lane = pack < l.packs;
  const int groups = lane ? static_cast<int>(min(int64_t(S::U), g.G - grp0)) : 0;
  const int in_valid = groups * CG, out_valid = groups * OG;
  const int64_t first = int64_t(blockIdx.x) * bx * S::U;  // the block's first group

  // Stages the taps [c0, c0 + kc) and the block's weights for them, in [tap][e][x] order with
  // e = (u OG + o) CG + c for thread x's group u, output o and input channel c (zero past the
  // last group).
  auto stage = [&](int c0, int kc) {
    dw_tap_offsets(g, c0, kc, offs);
    for (int i = tid; i < kc * kW * bx; i += nthreads) {
      const int x = i % bx, e = i / bx % kW, tl = i / (bx * kW);
      const int u = e / (OG * CG), o = e / CG % OG, c = e % CG;
      const int64_t grp = first + int64_t(x) * S::U + u;
      sw[i] = grp < g.G ? static_cast<Acc>(wt[((grp * OG + o) * g.K + c0 + tl) * CG + c]) : Acc(0);
    }
  };

  const bool one_chunk = l.kc >= g.K;
  if (one_chunk) {
    stage(0, g.K);
    __syncthreads();
  }
  const int64_t tiles = (l.items + by - 1) / by;
  // Every thread of a block runs the same tiles and chunks (the barriers below).
  for (int64_t tile = blockIdx.y; tile < tiles; tile += gridDim.y) {
    const int64_t item = tile * by + ty;
    const bool active = lane && item < l.items;
    // item = ((n out[0] + o0) out[1] + o1) runs + run.
    int64_t r = active ? item : 0;
    int64_t q = div_nn(r, l.runs);
    const int x0 = static_cast<int>(r - q * l.runs) * kDwPixels;
    r = q;
    q = div_nn(r, g.out[1]);
    const int o1 = static_cast<int>(r - q * g.out[1]);
    r = q;
    q = div_nn(r, g.out[0]);
    const int o0 = static_cast<int>(r - q * g.out[0]);
    const int64_t n = q;
    const int np = min(kDwPixels, g.out[2] - x0);
    // Window starts in the padded, dilated input; the image's first element of our channels.
    const int b0 = o0 * g.stride[0] - g.lo[0], b1 = o1 * g.stride[1] - g.lo[1];
    const int b2 = x0 * g.stride[2] - g.lo[2];
    const T* image = in + n * g.S * g.C + grp0 * CG;
    Acc acc[kDwPixels][S::OUT];
#pragma unroll
    for (int p = 0; p < kDwPixels; ++p) {
#pragma unroll
      for (int k = 0; k < S::OUT; ++k) {
        acc[p][k] = 0;
      }
    }
    for (int c0 = 0; c0 < g.K; c0 += l.kc) {
      const int kc = min(l.kc, g.K - c0);
      if (!one_chunk) {
        __syncthreads();
        stage(c0, kc);
        __syncthreads();
      }
      if (!active) {
        continue;
      }
      for (int t = 0; t < kc; ++t) {
        const int i0 = dw_source(b0 + offs[3 * t], g.idil[0], g.in[0]);
        const int i1 = dw_source(b1 + offs[3 * t + 1], g.idil[1], g.in[1]);
        if (i0 < 0 || i1 < 0) {
          continue;
        }
        const int row = (i0 * g.in[1] + i1) * g.in[2];
        Acc w[kW];
#pragma unroll
        for (int e = 0; e < kW; ++e) {
          w[e] = sw[(t * kW + e) * bx + tx];
        }
        const int q2 = b2 + offs[3 * t + 2];
#pragma unroll
        for (int p = 0; p < kDwPixels; ++p) {
          const int i2 = p < np ? dw_source(q2 + p * g.stride[2], g.idil[2], g.in[2]) : -1;
          if (i2 < 0) {
            continue;
          }
          Acc xs[S::IN];
          load_channels(image + int64_t(row + i2) * g.C, l.vec, in_valid, xs);
#pragma unroll
          for (int u = 0; u < S::U; ++u) {
#pragma unroll
            for (int o = 0; o < OG; ++o) {
#pragma unroll
              for (int c = 0; c < CG; ++c) {
                acc[p][u * OG + o] += w[(u * OG + o) * CG + c] * xs[u * CG + c];
              }
            }
          }
        }
      }
    }
    if (active) {
      T* dst = out + (n * g.X + (o0 * g.out[1] + o1) * g.out[2] + x0) * g.O + grp0 * OG;
#pragma unroll
      for (int p = 0; p < kDwPixels; ++p) {
        if (p < np) {
          store_channels(dst + p * g.O, l.vec, out_valid, acc[p]);
        }
      }
    }
  }
}

template <typename T, int CG, int OG>
void launch_depthwise_conv(const ConvGeometry& geo, const array& in, const array& wt, array& out) {
  using S = DwShape<T, CG, OG>;
  constexpr int kW = S::OUT * CG;
  const DwGeometry g = dw_geometry(geo);
  DwLaunch l{};
  l.packs = (g.G + S::U - 1) / S::U;
  l.runs = (g.out[2] + kDwPixels - 1) / kDwPixels;
  l.items = g.N * g.out[0] * g.out[1] * l.runs;
  l.vec = g.G % S::U == 0 && aligned16(in.gpu_data<T>()) && aligned16(out.gpu_data<T>());
  const dim3 block = dw_block(l.packs);
  // Taps per chunk: as many as kDwStageBytes holds, the chunks as even as possible.
  const int64_t per_tap = 3 * sizeof(int) + int64_t(kW) * block.x * sizeof(acc_t<T>);
  const int64_t most = std::max<int64_t>((kDwStageBytes - 16) / per_tap, 1);
  const int64_t chunks = (g.K + most - 1) / most;
  l.kc = static_cast<int>((g.K + chunks - 1) / chunks);
  const size_t smem = (3 * l.kc * sizeof(int) + 15) / 16 * 16 + l.kc * (per_tap - 3 * sizeof(int));
  const int64_t tiles = (l.items + block.y - 1) / block.y;
  const dim3 grid(static_cast<unsigned>((l.packs + block.x - 1) / block.x),
                  static_cast<unsigned>(std::min<int64_t>(tiles, 65535)));
  depthwise_conv_kernel<T, CG, OG><<<grid, block, smem, stream()>>>(
      in.gpu_data<T>(), wt.gpu_data<T>(), out.gpu_data<T>(), g, l);
  check_launch("conv");
}

// The weight derivative's partial sums (see the file's comment): blockIdx.y picks the taps
// [kDwGradTaps y, + kDwGradTaps), blockIdx.z the slice of pixels [z items, (z + 1) items);
// partial[(slice K + tap) O + o].
template <typename T, int OG>
__global__ void __launch_bounds__(kDwThreads, 2)
    depthwise_weight_partials(const T* in, const T* cot, acc_t<T>* partial, DwGeometry g,
                              DwLaunch l) {
  using S = DwGradShape<T, OG>;
  using Acc = acc_t<T>;
  __shared__ int offs[3 * kDwGradTaps];
  __shared__ Acc rows[kDwThreads * S::OUT];
  const int bx = blockDim.x, by = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * bx + tx;
  const int64_t pack = int64_t(blockIdx.x) * bx + tx, grp0 = pack * S::U;
  const bool lane = pack < l.packs;
  const int groups = lane ? static_cast<int>(min(int64_t(S::U), g.G - grp0)) : 0;
  const int c0 = blockIdx.y * kDwGradTaps, kc = min(kDwGradTaps, g.K - c0);
  dw_tap_offsets(g, c0, kc, offs);
  __syncthreads();
  Acc acc[kDwGradTaps][S::OUT];
#pragma unroll
  for (int t = 0; t < kDwGradTaps; ++t) {
#pragma unroll
    for (int k = 0; k < S::OUT; ++k) {
      acc[t][k] = 0;
    }
  }
  const int64_t p0 = int64_t(blockIdx.z) * l.items, p1 = min(g.N * g.X, p0 + l.items);
  int64_t p = p0 + ty;
  if (lane && p < p1) {
    // The pixel's image n and coordinates o, advanced by `by` pixels per step (a carry, no
    // division, while rows are longer than the step).
    int64_t n = div_nn(p, g.X);
    int x = static_cast<int>(p - n * g.X), o[3];
    for (int d = 2; d > 0; --d) {
      o[d] = x % g.out[d];
      x /= g.out[d];
    }
    o[0] = x;
    for (; p < p1; p += by) {
      Acc cs[S::OUT];
      load_channels(cot + p * g.O + grp0 * OG, l.vec, groups * OG, cs);
      const int b0 = o[0] * g.stride[0] - g.lo[0], b1 = o[1] * g.stride[1] - g.lo[1];
      const int b2 = o[2] * g.stride[2] - g.lo[2];
      const T* image = in + n * g.S * g.C + grp0;
#pragma unroll
      for (int t = 0; t < kDwGradTaps; ++t) {
        if (t >= kc) {
          continue;
        }
        const int i0 = dw_source(b0 + offs[3 * t], g.idil[0], g.in[0]);
        const int i1 = dw_source(b1 + offs[3 * t + 1], g.idil[1], g.in[1]);
        const int i2 = dw_source(b2 + offs[3 * t + 2], g.idil[2], g.in[2]);
        if (i0 < 0 || i1 < 0 || i2 < 0) {
          continue;
        }
        Acc xs[S::IN];
        load_channels(image + int64_t((i0 * g.in[1] + i1) * g.in[2] + i2) * g.C, l.vec, groups, xs);
#pragma unroll
        for (int u = 0; u < S::U; ++u) {
#pragma unroll
          for (int j = 0; j < OG; ++j) {
            acc[t][u * OG + j] += xs[u] * cs[u * OG + j];
          }
        }
      }
      o[2] += by;
      if (o[2] >= g.out[2]) {
        const int carry = o[2] / g.out[2];
        o[2] -= carry * g.out[2];
        o[1] += carry;
        if (o[1] >= g.out[1]) {
          const int carry1 = o[1] / g.out[1];
          o[1] -= carry1 * g.out[1];
          o[0] += carry1;
          if (o[0] >= g.out[0]) {
            const int carry0 = o[0] / g.out[0];
            o[0] -= carry0 * g.out[0];
            n += carry0;
          }
        }
      }
    }
  }
  // The block's rows summed in order, tap by tap (kc is the same for the whole block); thread
  // x k of the first bx OUT writes output channel (block's first pack + x) OUT + k (OUT <= by).
#pragma unroll
  for (int t = 0; t < kDwGradTaps; ++t) {
    if (t < kc) {
#pragma unroll
      for (int k = 0; k < S::OUT; ++k) {
        rows[(ty * S::OUT + k) * bx + tx] = acc[t][k];
      }
      __syncthreads();
      if (tid < bx * S::OUT) {
        const int x = tid % bx, k = tid / bx;
        Acc s = 0;
        for (int y = 0; y < by; ++y) {
          s += rows[(y * S::OUT + k) * bx + x];
        }
        const int64_t oc = (int64_t(blockIdx.x) * bx + x) * S::OUT + k;
        if (oc < g.O) {
          partial[(int64_t(blockIdx.z) * g.K + c0 + t) * g.O + oc] = s;
        }
      }
      __syncthreads();
    }
  }
}

// dw[o, tap] = the sum of partial[slice, tap, o] over the slices, in order.
template <typename T, typename Acc>
__global__ void depthwise_weight_sum(const Acc* partial, T* dw, int64_t K, int64_t O,
                                     int64_t slices) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // tap O + o
  if (i >= K * O) {
    return;
  }
  Acc v = 0;
  for (int64_t s = 0; s < slices; ++s) {
    v += partial[s * K * O + i];
  }
  const int64_t tap = i / O, o = i - tap * O;
  dw[o * K + tap] = cast_to<T>(v);
}

template <typename T, int OG>
void launch_depthwise_weight_grad(const ConvGeometry& geo, const array& in, const array& cot,
                                  array& dw) {
  using S = DwGradShape<T, OG>;
  using Acc = acc_t<T>;
  const DwGeometry g = dw_geometry(geo);
  DwLaunch l{};
  l.packs = (g.G + S::U - 1) / S::U;
  l.vec = g.G % S::U == 0 && aligned16(in.gpu_data<T>()) && aligned16(cot.gpu_data<T>());
  const dim3 block = dw_block(l.packs);
  const int64_t pixels = g.N * g.X, chunks = (g.K + kDwGradTaps - 1) / kDwGradTaps;
  const int64_t per_slice_blocks = (l.packs + block.x - 1) / block.x * chunks;
  // Slices of pixels so that the grid fills the GPU about twice, each of at least 64 pixels.
  const int64_t wave = resident_blocks<depthwise_weight_partials<T, OG>, kDwThreads>();
  const int64_t slices =
      std::clamp<int64_t>(std::min(2 * wave / per_slice_blocks, (pixels + 63) / 64), 1, 65535);
  l.items = (pixels + slices - 1) / slices;
  Scratch partial(sizeof(Acc) * slices * g.K * g.O);
  const dim3 grid(static_cast<unsigned>((l.packs + block.x - 1) / block.x),
                  static_cast<unsigned>(chunks), static_cast<unsigned>(slices));
  depthwise_weight_partials<T, OG>
      <<<grid, block, 0, stream()>>>(in.gpu_data<T>(), cot.gpu_data<T>(), partial.as<Acc>(), g, l);
  check_launch("ConvWeightGrad");
  depthwise_weight_sum<T, Acc><<<blocks_for(g.K * g.O), kThreads, 0, stream()>>>(
      partial.as<Acc>(), dw.gpu_data<T>(), g.K, g.O, slices);
  check_launch("ConvWeightGrad");
}

// f.template operator()<CG, OG>() for the group shapes the kernels are built for.
template <typename F>
void dispatch_groups(const ConvGeometry& g, F&& f) {
  if (g.Cg == 1) {
    switch (g.Og) {
      case 1:
        return f.template operator()<1, 1>();
      case 2:
        return f.template operator()<1, 2>();
      case 3:
        return f.template operator()<1, 3>();
      case 4:
        return f.template operator()<1, 4>();
    }
  } else if (g.Og == 1) {
    switch (g.Cg) {
      case 2:
        return f.template operator()<2, 1>();
      case 3:
        return f.template operator()<3, 1>();
      case 4:
        return f.template operator()<4, 1>();
    }
  }
  throw std::logic_error("[conv] not a depthwise geometry");
}

}  // namespace

bool depthwise_conv_supported(const ConvGeometry& g) {
  return ((g.Cg == 1 && g.Og >= 1 && g.Og <= kDwMaxMultiplier) ||
          (g.Og == 1 && g.Cg >= 1 && g.Cg <= kDwMaxMultiplier)) &&
         (g.K <= kDwLongKernel || g.N * g.X * g.G >= kDwManyOutputs) && fits_32_bits(g);
}

void depthwise_conv(const ConvGeometry& g, const array& in, const array& wt, array& out) {
  dispatch_float<DeviceTypes>(out.dtype(), "conv", [&]<typename T>() {
    dispatch_groups(g, [&]<int CG, int OG>() { launch_depthwise_conv<T, CG, OG>(g, in, wt, out); });
  });
}

bool depthwise_weight_grad_supported(const ConvGeometry& g) {
  // blockIdx.y holds the chunks of taps.
  return g.Cg == 1 && g.Og >= 1 && g.Og <= kDwMaxMultiplier && fits_32_bits(g) &&
         (g.K + kDwGradTaps - 1) / kDwGradTaps <= 65535;
}

void depthwise_weight_grad(const ConvGeometry& g, const array& in, const array& cot, array& dw) {
  dispatch_float<DeviceTypes>(dw.dtype(), "ConvWeightGrad", [&]<typename T>() {
    dispatch_groups(g, [&]<int CG, int OG>() {
      if constexpr (CG == 1) {
        launch_depthwise_weight_grad<T, OG>(g, in, cot, dw);
      } else {
        throw std::logic_error("[ConvWeightGrad] not a depthwise geometry");
      }
    });
  });
}

}  // namespace mlx::core::cu

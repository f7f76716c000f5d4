// A convolution's geometry with its spatial dimensions padded in front to three (size 1,
// stride 1, no padding or dilation), as every backend's kernels walk it.
#pragma once

#include <cstdint>

#include "mlx/array.h"
#include "mlx/primitives/conv.h"

namespace mlx::core {

struct ConvGeometry {
  int64_t N, C, O, G, Cg, Og;  // batch, channels, output channels, groups, per group
  int64_t in[3], k[3], out[3];
  int64_t stride[3], lo[3], kdil[3], idil[3];
  int64_t S, K, X;  // input pixels, kernel taps, output pixels per image
  bool flip;
};

inline ConvGeometry conv_geometry(const ConvParams& p, const array& in, const array& wt,
                                  const array& out) {
  const int nd = static_cast<int>(in.ndim()) - 2;
  ConvGeometry g{};
  g.N = in.shape(0);
  g.C = in.shape(-1);
  g.O = wt.shape(0);
  g.G = p.groups;
  g.Cg = g.C / g.G;
  g.Og = g.O / g.G;
  g.S = g.K = g.X = 1;
  g.flip = p.flip;
  for (int d = 0; d < 3; ++d) {
    const int src = d - (3 - nd);
    const bool real = src >= 0;
    g.in[d] = real ? in.shape(src + 1) : 1;
    g.k[d] = real ? wt.shape(src + 1) : 1;
    g.out[d] = real ? out.shape(src + 1) : 1;
    g.stride[d] = real ? p.stride[src] : 1;
    g.lo[d] = real ? p.padding_lo[src] : 0;
    g.kdil[d] = real ? p.kernel_dilation[src] : 1;
    g.idil[d] = real ? p.input_dilation[src] : 1;
    g.S *= g.in[d];
    g.K *= g.k[d];
    g.X *= g.out[d];
  }
  return g;
}

// The input index along dimension d that output index x reads at window position pos (the
// kernel tap pos before any flip), or -1 where that falls in the padding or between dilated
// input elements.
inline int64_t conv_source(const ConvGeometry& g, int d, int64_t x, int64_t pos) {
  const int64_t q = x * g.stride[d] + pos * g.kdil[d] - g.lo[d];
  return q >= 0 && q % g.idil[d] == 0 && q / g.idil[d] < g.in[d] ? q / g.idil[d] : -1;
}

}  // namespace mlx::core

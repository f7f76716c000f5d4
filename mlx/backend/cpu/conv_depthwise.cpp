// Depthwise kernels (conv_depthwise.h). Both walk output lines (one image and one output index
// along every spatial dimension but the last): a line reads a few input rows (the valid taps
// of the outer dimensions), and each of its pixels reads, along the last dimension, taps that
// depend on the pixel alone. Interior pixels read every tap there, at inputs shifted by the
// stride from one pixel to the next, so the kernels keep blocks of them (the convolution:
// several pixels; the weight derivative: several taps, summed over every pixel) in registers
// over chunks of channels; border pixels go one by one. With input dilation along the last
// dimension (the input derivative of a strided convolution), the pixels of one phase
// (x mod period) are the ones that share taps.
#include "mlx/backend/cpu/conv_depthwise.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "mlx/backend/cpu/simd/vec.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core::cpu {

namespace {

using simd::VecF;
constexpr int kW = simd::kWidth;

// The convolution's register tile: kPixels pixels x 2 vectors of channels; single (border)
// pixels take 8 vectors, for as many independent sums.
constexpr int kPixels = 4;
constexpr int forward_vectors(int pixels) { return 8 / pixels; }

// The weight derivative's register tile for nt taps: nt x (4 - nt / 2) vectors (4, 9, 10 and 7
// accumulators for 1, 3, 5 and 7 taps), a vector of the cotangent per vector of channels.
constexpr int weight_vectors(int nt) { return 4 - nt / 2; }

template <bool Tail>
inline VecF load(const float* p, int lanes) {
  if constexpr (Tail) {
    return simd::load_partial(p, lanes);
  } else {
    return simd::load(p);
  }
}

template <bool Tail>
inline void store(float* p, VecF a, int lanes) {
  if constexpr (Tail) {
    simd::store_partial(p, a, lanes);
  } else {
    simd::store(p, a);
  }
}

// Covers the channels [0, C) with calls f.template operator()<V, Tail>(c0, chunks, lanes), each
// for `chunks` consecutive chunks of V vectors from channel c0: chunks of V vectors, then
// single vectors, then one vector of the remaining lanes (Tail). Kernels loop over the chunks
// of a call themselves (a call per chunk would cost more than a chunk of a short run).
template <int V, typename F>
void for_chunks(int64_t C, F&& f) {
  const int64_t full = C / (V * kW), c1 = full * V * kW, singles = (C - c1) / kW;
  if (full > 0) {
    f.template operator()<V, false>(0, full, kW);
  }
  if (V > 1 && singles > 0) {
    f.template operator()<1, false>(c1, singles, kW);
  }
  if (c1 + singles * kW < C) {
    f.template operator()<1, true>(c1 + singles * kW, 1, static_cast<int>(C % kW));
  }
}

// An input row that an output line reads: the offset of its first pixel from the start of the
// input (in floats) and the kernel tap (flattened, unflipped) of its first tap along the last
// dimension.
struct Row {
  int64_t off, tap;
};

// The rows that output line l reads.
void line_rows(const ConvGeometry& g, int64_t l, std::vector<Row>& rows) {
  rows.clear();
  const int64_t x1 = l % g.out[1], x0 = l / g.out[1] % g.out[0], n = l / (g.out[0] * g.out[1]);
  for (int64_t p0 = 0; p0 < g.k[0]; ++p0) {
    const int64_t i0 = conv_source(g, 0, x0, p0);
    for (int64_t p1 = 0; i0 >= 0 && p1 < g.k[1]; ++p1) {
      const int64_t i1 = conv_source(g, 1, x1, p1);
      if (i1 >= 0) {
        rows.push_back(
            {(n * g.S + (i0 * g.in[1] + i1) * g.in[2]) * g.C, (p0 * g.k[1] + p1) * g.k[2]});
      }
    }
  }
}

// The last spatial dimension: pixels x and x + period read the same taps, at input pixels
// `step` apart (period 1, step = stride without input dilation).
struct LastDim {
  int64_t k, n, period, step;
  std::vector<int64_t> src;  // src[x * k + pos]: the input pixel x reads at tap pos, or -1

  explicit LastDim(const ConvGeometry& g)
      : k(g.k[2]),
        n(g.out[2]),
        period(g.idil[2] / std::gcd(g.stride[2], g.idil[2])),
        step(period * g.stride[2] / g.idil[2]),
        src(n * k) {
    for (int64_t x = 0; x < n; ++x) {
      for (int64_t pos = 0; pos < k; ++pos) {
        src[x * k + pos] = conv_source(g, 2, x, pos);
      }
    }
  }
  int64_t valid_taps(int64_t x) const {
    return std::count_if(src.begin() + x * k, src.begin() + (x + 1) * k,
                         [](int64_t i) { return i >= 0; });
  }
};

// out[p * out_step] = sum over taps t of in[p * in_step + offs[t]] * w[wofs[t]], for XB pixels
// p and `chunks` chunks of V vectors of channels (w is padded to whole vectors).
template <int XB, int V, bool Tail>
void forward_tile(const float* in, int64_t in_step, const int64_t* offs, const float* w,
                  const int64_t* wofs, int64_t taps, float* out, int64_t out_step, int64_t chunks,
                  int lanes) {
  for (int64_t ch = 0; ch < chunks; ++ch, in += V * kW, w += V * kW, out += V * kW) {
    VecF acc[XB][V];
#pragma GCC unroll 8
    for (int p = 0; p < XB; ++p) {
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        acc[p][v] = simd::broadcast(0.0f);
      }
    }
    for (int64_t t = 0; t < taps; ++t) {
      const float* src = in + offs[t];
      const float* wt = w + wofs[t];
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        const VecF wv = simd::load(wt + v * kW);
#pragma GCC unroll 8
        for (int p = 0; p < XB; ++p) {
          acc[p][v] = simd::fma(load<Tail>(src + p * in_step + v * kW, lanes), wv, acc[p][v]);
        }
      }
    }
#pragma GCC unroll 8
    for (int p = 0; p < XB; ++p) {
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        store<Tail>(out + p * out_step + v * kW, acc[p][v], lanes);
      }
    }
  }
}

// acc[t * acc_ld] += sum over `count` pixels p of in[p * in_step + t * tap_step] *
// cot[p * cot_step], for NT taps t and `chunks` chunks of V vectors of channels (acc is padded
// to whole vectors).
template <int NT, int V, bool Tail>
void weight_tile(const float* in, int64_t in_step, int64_t tap_step, const float* cot,
                 int64_t cot_step, int64_t count, float* acc, int64_t acc_ld, int64_t chunks,
                 int lanes) {
  for (int64_t ch = 0; ch < chunks; ++ch, in += V * kW, cot += V * kW, acc += V * kW) {
    VecF a[NT][V];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        a[t][v] = simd::load(acc + t * acc_ld + v * kW);
      }
    }
    const float* x = in;
    const float* c = cot;
    for (int64_t p = 0; p < count; ++p, x += in_step, c += cot_step) {
      VecF cv[V];
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        cv[v] = load<Tail>(c + v * kW, lanes);
      }
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) {
          a[t][v] = simd::fma(load<Tail>(x + t * tap_step + v * kW, lanes), cv[v], a[t][v]);
        }
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        simd::store(acc + t * acc_ld + v * kW, a[t][v]);
      }
    }
  }
}

// A run of pixels along the last dimension for the weight derivative: nt taps from pos,
// `count` pixels from x, one period apart, every one of which reads all nt taps.
struct Piece {
  int64_t pos, nt, x, count;
};

// The weight derivative's pieces: per tap, the pixels that read it; where whole rows of `tile`
// taps are read by the same pixels (no input dilation), those pixels go in one piece of `tile`
// taps and only the border pixels tap by tap.
std::vector<Piece> weight_pieces(const LastDim& d, int64_t tile) {
  std::vector<int64_t> first(d.k), count(d.k);
  for (int64_t pos = 0; pos < d.k; ++pos) {
    int64_t x = 0;
    while (x < d.n && d.src[x * d.k + pos] < 0) {
      ++x;
    }
    first[pos] = x;
    for (count[pos] = 0; x < d.n && d.src[x * d.k + pos] >= 0; x += d.period) {
      ++count[pos];
    }
  }
  std::vector<Piece> pieces;
  int64_t xa = 0, xb = 0;  // the pixels that read every tap, with tiles
  if (tile > 1) {
    xa = *std::max_element(first.begin(), first.end());
    xb = d.n;
    for (int64_t pos = 0; pos < d.k; ++pos) {
      xb = std::min(xb, first[pos] + count[pos]);
    }
    xb = std::max(xa, xb);
    if (xb > xa) {
      pieces.push_back({0, tile, xa, xb - xa});
    }
  }
  for (int64_t pos = 0; pos < d.k; ++pos) {
    const int64_t end = first[pos] + count[pos] * d.period;
    if (xb > xa) {
      pieces.push_back({pos, 1, first[pos], xa - first[pos]});
      pieces.push_back({pos, 1, xb, end - xb});
    } else if (count[pos] > 0) {
      pieces.push_back({pos, 1, first[pos], count[pos]});
    }
  }
  std::erase_if(pieces, [](const Piece& p) { return p.count <= 0; });
  return pieces;
}

template <int Tile>
void weight_grad_lines(const ConvGeometry& g, const LastDim& d, const std::vector<Piece>& pieces,
                       const float* in, const float* cot, int64_t l0, int64_t l1, float* acc,
                       int64_t acc_ld) {
  const int64_t C = g.C;
  std::vector<Row> rows;
  for (int64_t l = l0; l < l1; ++l) {
    line_rows(g, l, rows);
    const float* cl = cot + l * d.n * C;
    for (const Row& r : rows) {
      for (const Piece& p : pieces) {
        const float* src = in + r.off + d.src[p.x * d.k + p.pos] * C;
        float* a = acc + (r.tap + p.pos) * acc_ld;
        const float* c = cl + p.x * C;
        for_chunks<weight_vectors(Tile)>(
            C, [&]<int V, bool Tail>(int64_t c0, int64_t chunks, int lanes) {
              if (p.nt == 1) {
                weight_tile<1, V, Tail>(src + c0, d.step * C, 0, c + c0, d.period * C, p.count,
                                        a + c0, acc_ld, chunks, lanes);
              } else {
                weight_tile<Tile, V, Tail>(src + c0, d.step * C, g.kdil[2] * C, c + c0, C, p.count,
                                           a + c0, acc_ld, chunks, lanes);
              }
            });
      }
    }
  }
}

}  // namespace

void depthwise_conv(const ConvGeometry& g, const float* in, const float* wt, float* out) {
  const int64_t C = g.C, Cp = (C + kW - 1) / kW * kW, K = g.K;
  // Tap-major weights in window order (a flipped kernel read reversed), padded to vectors.
  std::vector<float> w(K * Cp, 0.0f);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t pos = 0; pos < K; ++pos) {
      w[pos * Cp + c] = wt[c * K + (g.flip ? K - 1 - pos : pos)];
    }
  }
  const LastDim d(g);
  // Groups of pixels that read the same taps: runs of one phase that read every tap the
  // phase can read, and the other pixels one by one.
  struct Group {
    int64_t x, count;
  };
  std::vector<Group> groups;
  for (int64_t ph = 0; ph < std::min(d.period, d.n); ++ph) {
    int64_t full = 0;
    for (int64_t pos = 0; pos < d.k; ++pos) {
      const int64_t q = ph * g.stride[2] + pos * g.kdil[2] - g.lo[2];
      full += (q % g.idil[2] + g.idil[2]) % g.idil[2] == 0;
    }
    for (int64_t x = ph; x < d.n;) {
      int64_t e = x;
      while (e < d.n && d.valid_taps(e) == full) {
        e += d.period;
      }
      groups.push_back({x, e > x ? (e - x) / d.period : 1});
      x = e > x ? e : x + d.period;
    }
  }
  const int64_t lines = g.N * g.out[0] * g.out[1], line_bytes = d.n * C * 4;
  const int64_t grain = std::max<int64_t>(1, kParallelBytes / (2 * line_bytes));
  parallel_for(lines, grain, [&](int64_t l0, int64_t l1) {
    std::vector<Row> rows;
    std::vector<int64_t> offs, wofs;
    for (int64_t l = l0; l < l1; ++l) {
      line_rows(g, l, rows);
      float* ol = out + l * d.n * C;
      for (const Group& grp : groups) {
        offs.clear();
        wofs.clear();
        for (const Row& r : rows) {
          for (int64_t pos = 0; pos < d.k; ++pos) {
            const int64_t i = d.src[grp.x * d.k + pos];
            if (i >= 0) {
              offs.push_back(r.off + i * C);
              wofs.push_back((r.tap + pos) * Cp);
            }
          }
        }
        const int64_t taps = static_cast<int64_t>(offs.size());
        const int64_t in_step = d.step * C, out_step = d.period * C;
        auto run = [&]<int XB>(int64_t p) {
          for_chunks<forward_vectors(XB)>(
              C, [&]<int V, bool Tail>(int64_t c0, int64_t chunks, int lanes) {
                forward_tile<XB, V, Tail>(
                    in + p * in_step + c0, in_step, offs.data(), w.data() + c0, wofs.data(), taps,
                    ol + (grp.x + p * d.period) * C + c0, out_step, chunks, lanes);
              });
        };
        int64_t p = 0;
        for (; p + kPixels <= grp.count; p += kPixels) {
          run.template operator()<kPixels>(p);
        }
        for (; p < grp.count; ++p) {
          run.template operator()<1>(p);
        }
      }
    }
  });
}

void depthwise_weight_grad(const ConvGeometry& g, const float* in, const float* cot, float* dw) {
  const int64_t C = g.C, Cp = (C + kW - 1) / kW * kW, K = g.K;
  const LastDim d(g);
  const int64_t tile = d.period == 1 && (d.k == 3 || d.k == 5 || d.k == 7) ? d.k : 1;
  const std::vector<Piece> pieces = weight_pieces(d, tile);
  // Lines split over slots, each summing into its own partial derivative; then one reduction.
  const int64_t lines = g.N * g.out[0] * g.out[1];
  const int64_t bytes = g.N * (g.S + g.X) * C * 4;
  const int64_t slots = std::clamp<int64_t>(
      std::min<int64_t>(num_threads(), bytes / kParallelBytes), 1, std::max<int64_t>(1, lines));
  std::vector<float> partial(slots * K * Cp, 0.0f);
  parallel_for(slots, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t l0 = lines * s / slots, l1 = lines * (s + 1) / slots;
      float* acc = partial.data() + s * K * Cp;
      switch (tile) {
        case 3:
          weight_grad_lines<3>(g, d, pieces, in, cot, l0, l1, acc, Cp);
          break;
        case 5:
          weight_grad_lines<5>(g, d, pieces, in, cot, l0, l1, acc, Cp);
          break;
        case 7:
          weight_grad_lines<7>(g, d, pieces, in, cot, l0, l1, acc, Cp);
          break;
        default:
          weight_grad_lines<1>(g, d, pieces, in, cot, l0, l1, acc, Cp);
      }
    }
  });
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t pos = 0; pos < K; ++pos) {
      float sum = 0.0f;
      for (int64_t s = 0; s < slots; ++s) {
        sum += partial[(s * K + pos) * Cp + c];
      }
      dw[c * K + (g.flip ? K - 1 - pos : pos)] = sum;
    }
  }
}

}  // namespace mlx::core::cpu

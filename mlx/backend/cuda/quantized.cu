// QuantizedMatmul::eval_gpu and GatherQMM::eval_gpu. Few rows of x against W.T (the decode path
// of LLM inference) run as one warp per output feature that reads W once, each lane decoding 32
// codes per step. Other products decode W into x's dtype in device memory and multiply it with
// cuBLASLt. Codes of a row form a little-endian bit stream (32 codes fill `bits` words); scales
// and values decode as the CPU's (backend/common/quantized_formats.h).
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "mlx/backend/common/gathered_matrices.h"
#include "mlx/backend/common/quantized_formats.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/gemm.h"
#include "mlx/backend/cuda/grouped_products.h"
#include "mlx/backend/cuda/host_fallback.h"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/primitives/quantized.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using namespace cu;

// The code tables on the device: fp4 values (16), then E4M3 values (256), then E8M0 (256).
constexpr int kFp4 = 0, kE4m3 = 16, kE8m0 = 16 + 256, kTableSize = 16 + 256 + 256;

const float* device_tables(int device) {
  static std::mutex mutex;
  static std::vector<float*> tables;  // per device, never freed
  std::lock_guard<std::mutex> lock(mutex);
  if (static_cast<int>(tables.size()) <= device) {
    tables.resize(device + 1, nullptr);
  }
  if (tables[device] == nullptr) {
    std::vector<float> host(kTableSize);
    std::copy(fp4_values().begin(), fp4_values().end(), host.begin() + kFp4);
    std::copy(fp8_e4m3_values().begin(), fp8_e4m3_values().end(), host.begin() + kE4m3);
    std::copy(e8m0_values().begin(), e8m0_values().end(), host.begin() + kE8m0);
    MLX_CUDA_CHECK(cudaMalloc(&tables[device], kTableSize * sizeof(float)));
    MLX_CUDA_CHECK(cudaMemcpy(tables[device], host.data(), kTableSize * sizeof(float),
                              cudaMemcpyHostToDevice));
  }
  return tables[device];
}

// One stored matrix (rows x cols, quantized along cols) as the kernels read it; affine scales
// and biases have the kernel's element type T.
struct QuantMatrix {
  const uint32_t* w;
  const void* scales;          // affine: T per group
  const void* biases;          // affine: T per group
  const uint8_t* scale_codes;  // microscaled: E8M0 / E4M3 per group
  const float* values;         // microscaled: the value of each element code
  const float* scale_values;   // microscaled: the value of each scale code
  const float* global;         // nvfp4: the optional global scale (float32), else null
  int64_t rows, cols, groups;  // groups per row
  int group_size;
};

// The words of one chunk (32 codes fill Bits words), in 16-byte loads where Bits allows (the
// chunk then starts 16-byte aligned: rows hold whole chunks).
template <int Bits>
__device__ __forceinline__ void load_chunk(const uint32_t* src, uint32_t words[Bits]) {
  if constexpr (Bits % 4 == 0) {
#pragma unroll
    for (int i = 0; i < Bits / 4; ++i) {
      uint4 u = reinterpret_cast<const uint4*>(src)[i];
      words[4 * i] = u.x;
      words[4 * i + 1] = u.y;
      words[4 * i + 2] = u.z;
      words[4 * i + 3] = u.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < Bits; ++i) {
      words[i] = src[i];
    }
  }
}

// The 32 values of chunk `c` (codes 32c .. 32c + 31) of row r, from its loaded words.
template <typename T, int Bits>
__device__ __forceinline__ void chunk_values(const QuantMatrix& m, const uint32_t words[Bits],
                                             int64_t r, int64_t c, float v[32]) {
  constexpr uint32_t mask = (1u << Bits) - 1;
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int bit = i * Bits, w = bit >> 5, sh = bit & 31;
    uint32_t q = words[w] >> sh;
    if (sh + Bits > 32) {
      q |= words[w + 1] << (32 - sh);
    }
    v[i] = m.values ? m.values[q & mask] : static_cast<float>(q & mask);
  }
  // A chunk lies in one group, or (group size 16) in two.
  const int64_t g = r * m.groups + c * 32 / m.group_size;
  const int halves = m.group_size < 32 ? 2 : 1;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (h < halves) {
      float s, b = 0.0f;
      if (m.scales) {
        s = static_cast<float>(static_cast<const T*>(m.scales)[g + h]);
        b = static_cast<float>(static_cast<const T*>(m.biases)[g + h]);
      } else {
        s = m.scale_values[m.scale_codes[g + h]];
        s = m.global ? s * (*m.global / kNvfp4GlobalDivisor) : s;
      }
      const int lo = h * 32 / halves, hi = (h + 1) * 32 / halves;
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        if (i >= lo && i < hi) {
          v[i] = fmaf(v[i], s, b);
        }
      }
    }
  }
}

// 32 consecutive elements of x (32-element aligned) as floats, in 16-byte loads.
template <typename T>
__device__ __forceinline__ void load32(const T* p, float out[32]) {
  constexpr int per = 16 / sizeof(T);
#pragma unroll
  for (int i = 0; i < 32 / per; ++i) {
    uint4 u = reinterpret_cast<const uint4*>(p)[i];
    const T* e = reinterpret_cast<const T*>(&u);
#pragma unroll
    for (int k = 0; k < per; ++k) {
      out[i * per + k] = static_cast<float>(e[k]);
    }
  }
}

constexpr int kMatvecRows = 8;
// Chunks a lane loads before it computes: enough bytes in flight to cover memory latency.
constexpr int kChunksInFlight = 4;

// out (M, N) = x (M, K) @ W.T for M <= kMatvecRows: warp n reads row n of W once.
template <typename T, int Bits>
__global__ void qmv_kernel(const T* x, QuantMatrix m, T* out, int M) {
  const int64_t n = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (n >= m.rows) {
    return;  // the whole warp
  }
  const int64_t K = m.cols, chunks = K / 32;
  const uint32_t* row = m.w + n * (K * Bits / 32);
  float acc[kMatvecRows] = {};
  for (int64_t c0 = lane; c0 < chunks; c0 += 32 * kChunksInFlight) {
    uint32_t words[kChunksInFlight][Bits];
#pragma unroll
    for (int u = 0; u < kChunksInFlight; ++u) {
      const int64_t c = c0 + 32 * u;
      if (c < chunks) {
        load_chunk<Bits>(row + c * Bits, words[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < kChunksInFlight; ++u) {
      const int64_t c = c0 + 32 * u;
      if (c < chunks) {
        float v[32];
        chunk_values<T, Bits>(m, words[u], n, c, v);
#pragma unroll
        for (int r = 0; r < kMatvecRows; ++r) {
          if (r < M) {
            float xs[32];
            load32(x + r * K + c * 32, xs);
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < 32; ++i) {
              s = fmaf(xs[i], v[i], s);
            }
            acc[r] += s;
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kMatvecRows; ++r) {
    if (r < M) {
      float s = acc[r];
#pragma unroll
      for (int off = 16; off > 0; off /= 2) {
        s += __shfl_down_sync(0xffffffff, s, off);
      }
      if (lane == 0) {
        out[r * m.rows + n] = cast_to<T>(s);
      }
    }
  }
}

// dst (rows, cols) = the decoded stored matrix, one chunk of 32 codes per thread step, written
// in 16-byte stores.
template <typename T, int Bits>
__global__ void dequantize_kernel(QuantMatrix m, T* dst) {
  const int64_t chunks_per_row = m.cols / 32, total = m.rows * chunks_per_row;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / chunks_per_row, c = i - r * chunks_per_row;
    uint32_t words[Bits];
    load_chunk<Bits>(m.w + r * (m.cols * Bits / 32) + c * Bits, words);
    float v[32];
    chunk_values<T, Bits>(m, words, r, c, v);
    constexpr int per = 16 / sizeof(T);
    uint4* d = reinterpret_cast<uint4*>(dst + r * m.cols + c * 32);
#pragma unroll
    for (int k = 0; k < 32 / per; ++k) {
      uint4 u;
      T* e = reinterpret_cast<T*>(&u);
#pragma unroll
      for (int j = 0; j < per; ++j) {
        e[j] = cast_to<T>(v[k * per + j]);
      }
      d[k] = u;
    }
  }
}

// The stored matrices of the inputs {.., w, scales, [biases | global scale], ..} of either
// primitive, in the layouts the kernels read, and the operands of one of them.
class StoredMatrices {
 public:
  StoredMatrices(const std::vector<array>& inputs, QuantMode mode, size_t extras_end, int bits,
                 int group_size, Dtype dtype)
      : w_(dense_copy(inputs[1], uint32)), bits_(bits) {
    const array& w = inputs[1];
    rows_ = w.shape(-2);
    cols_ = static_cast<int64_t>(w.shape(-1)) * 32 / bits;
    base_.group_size = group_size;
    base_.rows = rows_;
    base_.cols = cols_;
    base_.groups = cols_ / group_size;
    if (mode == QuantMode::affine) {
      scales_ = dense_copy(inputs[2], dtype);
      biases_ = dense_copy(inputs[3], dtype);
    } else {
      scales_ = dense_copy(inputs[2], uint8);
      const float* tables = device_tables(current().device);
      base_.values = tables + (mode == QuantMode::mxfp8 ? kE4m3 : kFp4);
      base_.scale_values = tables + (mode == QuantMode::nvfp4 ? kE4m3 : kE8m0);
      if (extras_end > 3) {
        global_ = dense_copy(inputs[3], float32);
      }
    }
  }

  QuantMatrix matrix(int64_t index) const {
    QuantMatrix m = base_;
    const int64_t words = rows_ * cols_ * bits_ / 32, groups = rows_ * base_.groups;
    m.w = w_.gpu_data<uint32_t>() + index * words;
    if (biases_) {
      m.scales = scales_->gpu_data<char>() + index * groups * scales_->itemsize();
      m.biases = biases_->gpu_data<char>() + index * groups * biases_->itemsize();
    } else {
      m.scale_codes = scales_->gpu_data<uint8_t>() + index * groups;
      m.global = global_ ? global_->gpu_data<float>() : nullptr;
    }
    return m;
  }

 private:
  array w_;
  std::optional<array> scales_, biases_, global_;
  QuantMatrix base_{};
  int64_t rows_ = 0, cols_ = 0;
  int bits_;
};

// out (M, N) = x (M, K) @ W (transposed: W stored (N, K)) for stored matrix `index`.
void quantized_product(const StoredMatrices& st, int64_t index, int bits, bool transpose,
                       const array& x, array& out) {
  const int64_t K = x.shape(-1);
  const int M = static_cast<int>(x.size() / std::max<int64_t>(K, 1));
  QuantMatrix m = st.matrix(index);
  dispatch_float<DeviceTypes>(out.dtype(), "quantized_matmul", [&]<typename T>() {
    if constexpr (is_half_v<T> || std::is_same_v<T, float>) {
      dispatch_quant_bits(bits, "quantized_matmul", [&]<int Bits>() {
        if (transpose && M <= kMatvecRows) {
          const int64_t threads = m.rows * 32;
          qmv_kernel<T, Bits><<<blocks_for(threads), kThreads, 0, stream()>>>(x.gpu_data<T>(), m,
                                                                              out.gpu_data<T>(), M);
          check_launch("quantized_matmul");
          return;
        }
        array dense({static_cast<int32_t>(m.rows), static_cast<int32_t>(m.cols)}, out.dtype(),
                    nullptr, {});
        allocate(dense);
        dequantize_kernel<T, Bits>
            <<<blocks_for(m.rows * m.cols / 32), kThreads, 0, stream()>>>(m, dense.gpu_data<T>());
        check_launch("quantized_matmul");
        const int32_t R = static_cast<int32_t>(m.rows), C = static_cast<int32_t>(m.cols);
        array rhs = transpose ? view_of(dense, {C, R}, {1, C}) : dense;
        array lhs = view_of(x, {M, static_cast<int32_t>(K)}, {K, 1});
        array res = view_of(out, {M, static_cast<int32_t>(rhs.shape(1))}, {rhs.shape(1), 1});
        gemm(lhs, rhs, res);
      });
    }
  });
}

// Whether the GPU kernels take this quantization: rows of whole 32-code chunks in float types.
bool gpu_supported(const array& x, int64_t cols) {
  return cols % 32 == 0 && is_floating_point(x.dtype()) && x.dtype() != float64;
}

}  // namespace

void QuantizedMatmul::eval_gpu(const std::vector<array>& inputs, array& out) {
  const int64_t cols = static_cast<int64_t>(inputs[1].shape(-1)) * 32 / bits_;
  if (!gpu_supported(inputs[0], cols)) {
    cu::inputs_to_host(inputs);  // e.g. nvfp4 rows of 16-code multiples: the CPU kernel
    return eval_cpu(inputs, out);
  }
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  StoredMatrices st(inputs, mode_, inputs.size(), bits_, group_size_, out.dtype());
  array x = dense_copy(inputs[0], out.dtype());
  quantized_product(st, 0, bits_, transpose_, x, out);
}

void GatherQMM::eval_gpu(const std::vector<array>& inputs, array& out) {
  const int64_t cols = static_cast<int64_t>(inputs[1].shape(-1)) * 32 / bits_;
  if (!gpu_supported(inputs[0], cols)) {
    cu::inputs_to_host(inputs);
    return eval_cpu(inputs, out);
  }
  cu::allocate(out);
  const size_t n_in = inputs.size();
  const array& w = inputs[1];
  auto lhs = matrix_indices(inputs[n_in - 2], inputs[0].shape(0), "gather_qmm");
  auto rhs = matrix_indices(inputs[n_in - 1], w.shape(0), "gather_qmm");
  if (out.size() == 0) {
    return;
  }
  StoredMatrices st(inputs, mode_, n_in - 2, bits_, group_size_, out.dtype());
  array x = dense_copy(inputs[0], out.dtype());
  cu::grouped_products(x, lhs, rhs, w.shape(0), out, [&](int64_t e, const array& rows, array& res) {
    quantized_product(st, e, bits_, transpose_, rows, res);
  });
}

}  // namespace mlx::core

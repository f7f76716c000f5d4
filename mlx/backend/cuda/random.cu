// RandomBits::eval_gpu: the CPU's Threefry-2x32 stream (primitives/random.h) with one thread
// per 8-byte block, so both devices draw the same bits for the same key.
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/primitives/random.h"

namespace mlx::core {

namespace {

__global__ void random_bits(const uint32_t* keys, cu::StridedParams<1> key_layout, uint8_t* out,
                            int64_t num_keys, int64_t bytes_per_key, int64_t blocks_per_key) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < num_keys * blocks_per_key;
       u += step) {
    const int64_t k = u / blocks_per_key;
    const uint64_t c = static_cast<uint64_t>(u % blocks_per_key);
    int64_t off0[1], off1[1];
    cu::strided_offsets(key_layout, 2 * k, off0);
    cu::strided_offsets(key_layout, 2 * k + 1, off1);
    ThreefryBlock y = threefry2x32(keys[off0[0]], keys[off1[0]], static_cast<uint32_t>(c),
                                   static_cast<uint32_t>(c >> 32));
    uint8_t bytes[8];
    for (int b = 0; b < 4; ++b) {
      bytes[b] = static_cast<uint8_t>(y.x0 >> (8 * b));
      bytes[4 + b] = static_cast<uint8_t>(y.x1 >> (8 * b));
    }
    const int64_t byte0 = static_cast<int64_t>(c) * 8;
    const int64_t n = min(int64_t(8), bytes_per_key - byte0);
    uint8_t* dst = out + k * bytes_per_key + byte0;
    for (int64_t b = 0; b < n; ++b) {
      dst[b] = bytes[b];
    }
  }
}

}  // namespace

void RandomBits::eval_gpu(const std::vector<array>& inputs, array& out) {
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  const array& keys = inputs[0];
  const int64_t num_keys = static_cast<int64_t>(keys.size() / 2);
  const int64_t bytes_per_key = static_cast<int64_t>(out.nbytes()) / num_keys;
  const int64_t blocks_per_key = (bytes_per_key + 7) / 8;
  auto layout = collapse_dims<1>(keys.shape(), {keys.strides()});
  random_bits<<<cu::blocks_for(num_keys * blocks_per_key), cu::kThreads, 0, cu::stream()>>>(
      keys.gpu_data<uint32_t>(), cu::make_params(layout, "random_bits"), out.gpu_data<uint8_t>(),
      num_keys, bytes_per_key, blocks_per_key);
  cu::check_launch("random_bits");
}

}  // namespace mlx::core

#include "mlx/primitives/random.h"

#include <algorithm>
#include <cstring>

#include "mlx/backend/cpu/strided.h"
#include "mlx/backend/cpu/thread_pool.h"

namespace mlx::core {

namespace {

// Blocks (8 bytes each) hashed into a stack buffer before being copied out: the copy handles
// keys whose bytes do not start on a word boundary and partial last blocks.
constexpr int64_t kChunkBlocks = 256;

// The keys in row-major order, whatever their layout.
std::vector<uint32_t> gather_keys(const array& keys) {
  std::vector<uint32_t> out(keys.size());
  auto layout = collapse_dims<1>(keys.shape(), {keys.strides()});
  int64_t len = layout.shape.back();
  int64_t stride = layout.strides[0].back();
  const uint32_t* src = keys.data<uint32_t>();
  uint32_t* dst = out.data();
  cpu::for_each_row(layout, 0, num_rows(layout.shape), [&](const std::array<int64_t, 1>& off) {
    for (int64_t i = 0; i < len; ++i) {
      *dst++ = src[off[0] + i * stride];
    }
  });
  return out;
}

// Blocks first, first + 1, ..., first + n - 1 (n <= kChunkBlocks, first a multiple of it, so the
// low counter word does not wrap) as interleaved word pairs.
void hash_chunk(uint32_t k0, uint32_t k1, uint64_t first, int64_t n, uint32_t* out) {
  const uint32_t c0 = static_cast<uint32_t>(first);
  const uint32_t c1 = static_cast<uint32_t>(first >> 32);
  for (int64_t i = 0; i < n; ++i) {
    auto y = threefry2x32(k0, k1, c0 + static_cast<uint32_t>(i), c1);
    out[2 * i] = y[0];
    out[2 * i + 1] = y[1];
  }
}

}  // namespace

void RandomBits::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  if (out.size() == 0) {
    return;
  }
  const std::vector<uint32_t> keys = gather_keys(inputs[0]);
  const int64_t num_keys = static_cast<int64_t>(keys.size() / 2);
  const int64_t bytes_per_key = static_cast<int64_t>(out.nbytes()) / num_keys;
  const int64_t blocks_per_key = (bytes_per_key + 7) / 8;
  const int64_t chunks_per_key = (blocks_per_key + kChunkBlocks - 1) / kChunkBlocks;
  uint8_t* dst = out.data<uint8_t>();
  cpu::parallel_for(
      num_keys * chunks_per_key, std::max<int64_t>(1, cpu::kParallelBytes / (8 * kChunkBlocks)),
      [&](int64_t begin, int64_t end) {
        uint32_t buf[2 * kChunkBlocks];
        for (int64_t u = begin; u < end; ++u) {
          const int64_t k = u / chunks_per_key;
          const int64_t first = (u % chunks_per_key) * kChunkBlocks;
          const int64_t n = std::min(kChunkBlocks, blocks_per_key - first);
          hash_chunk(keys[2 * k], keys[2 * k + 1], static_cast<uint64_t>(first), n, buf);
          const int64_t byte0 = first * 8;
          std::memcpy(dst + k * bytes_per_key + byte0, buf,
                      static_cast<size_t>(std::min(n * 8, bytes_per_key - byte0)));
        }
      });
}

}  // namespace mlx::core

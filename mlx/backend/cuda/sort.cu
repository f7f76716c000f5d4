// SortAlongAxis::eval_gpu: every lane (the elements along the axis at one position of the other
// axes) becomes a contiguous run of unsigned keys (backend/common/sort_keys.h; complex numbers
// as their real and imaginary keys side by side) paired with their positions, CUB sorts the
// pairs stably (ties keep index order, as on the CPU), and the results are written back through
// the output's strides. Partitions are full sorts, which satisfy their contract.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include "mlx/backend/common/sort_keys.h"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/primitives/indexing.h"

namespace mlx::core {

namespace {

using namespace cu;

// A few lanes at least this long are sorted one by one with the device-wide radix sort.
constexpr int64_t kLongLane = 1 << 16;
constexpr int64_t kFewLanes = 16;

// How the values of the device type T become keys of type Key.
template <typename T>
struct DeviceSortKey {
  static constexpr SortKeyKind kind = std::is_same_v<T, __half>          ? SortKeyKind::float16
                                      : std::is_same_v<T, __nv_bfloat16> ? SortKeyKind::bfloat16
                                      : std::is_same_v<T, float>         ? SortKeyKind::float32
                                      : std::is_same_v<T, double>        ? SortKeyKind::float64
                                                                         : SortKeyKind::integer;
  using Key = SortKeyUInt<sizeof(T)>;
  using Bits = SortKeyOf<Key, kind, std::is_signed_v<T>>;
  __device__ static Key encode(T x, bool merge_zeros) {
    Key u;
    memcpy(&u, &x, sizeof(T));
    return Bits::encode(u, merge_zeros);
  }
  __device__ static T decode(Key k) {
    k = Bits::decode(k);
    T x;
    memcpy(&x, &k, sizeof(T));
    return x;
  }
};

// Complex numbers order by real part, then imaginary part; sorting them reads the values back
// through the positions, so the keys need not decode.
template <>
struct DeviceSortKey<complex_t> {
  using Key = uint64_t;
  using Part = DeviceSortKey<float>;
  __device__ static Key encode(complex_t x, bool) {
    return (uint64_t(Part::encode(x.real(), true)) << 32) | Part::encode(x.imag(), true);
  }
};

template <typename T>
__global__ void make_keys(const T* in, typename DeviceSortKey<T>::Key* keys, uint32_t* pos,
                          StridedParams<2> lanes, int64_t n, int64_t axis_stride, int64_t total,
                          bool merge_zeros) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t lane = i / n, k = i - lane * n;
    int64_t off[2];
    strided_offsets(lanes, lane, off);
    keys[i] = DeviceSortKey<T>::encode(in[off[0] + k * axis_stride], merge_zeros);
    pos[i] = static_cast<uint32_t>(k);
  }
}

// Writes lane results: positions (argsort), decoded keys, or (complex) the values at the
// sorted positions.
template <typename T, bool kArg>
__global__ void write_sorted(const T* in, const typename DeviceSortKey<T>::Key* keys,
                             const uint32_t* pos, std::conditional_t<kArg, uint32_t, T>* out,
                             StridedParams<2> lanes, int64_t n, int64_t in_axis_stride,
                             int64_t out_axis_stride, int64_t total) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t lane = i / n, k = i - lane * n;
    int64_t off[2];
    strided_offsets(lanes, lane, off);
    auto& dst = out[off[1] + k * out_axis_stride];
    if constexpr (kArg) {
      dst = pos[i];
    } else if constexpr (is_complex_v<T>) {
      dst = in[off[0] + int64_t(pos[i]) * in_axis_stride];
    } else {
      dst = DeviceSortKey<T>::decode(keys[i]);
    }
  }
}

__global__ void lane_offsets(int64_t* offsets, int64_t lanes, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i <= lanes;
       i += int64_t(gridDim.x) * blockDim.x) {
    offsets[i] = i * n;
  }
}

// Sorts `lanes` runs of n (key, position) pairs from keys/pos into keys_out/pos_out.
template <typename Key>
void sort_pairs(const Key* keys, Key* keys_out, const uint32_t* pos, uint32_t* pos_out,
                int64_t lanes, int64_t n, const char* op) {
  cudaStream_t s = cu::stream();
  size_t bytes = 0;
  if (lanes <= kFewLanes && n >= kLongLane) {
    MLX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, keys_out, pos, pos_out, n,
                                                   0, int(8 * sizeof(Key)), s));
    Scratch temp(std::max<size_t>(bytes, 1));  // null storage would mean "query"
    for (int64_t l = 0; l < lanes; ++l) {
      MLX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.as<void>(), bytes, keys + l * n,
                                                     keys_out + l * n, pos + l * n, pos_out + l * n,
                                                     n, 0, int(8 * sizeof(Key)), s));
    }
    return;
  }
  Scratch offsets((lanes + 1) * sizeof(int64_t));
  lane_offsets<<<blocks_for(lanes + 1), kThreads, 0, s>>>(offsets.as<int64_t>(), lanes, n);
  check_launch(op);
  const int64_t* begin = offsets.as<int64_t>();
  MLX_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(
      nullptr, bytes, keys, keys_out, pos, pos_out, lanes * n, lanes, begin, begin + 1, s));
  Scratch temp(std::max<size_t>(bytes, 1));  // null storage would mean "query"
  MLX_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(
      temp.as<void>(), bytes, keys, keys_out, pos, pos_out, lanes * n, lanes, begin, begin + 1, s));
}

}  // namespace

void SortAlongAxis::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  const int64_t n = in.shape(axis_);
  const int64_t total = static_cast<int64_t>(in.size());
  const int64_t lanes = total / n;
  if (n > int64_t(UINT32_MAX)) {
    throw std::invalid_argument(std::string("[") + name() + "] Axes longer than 2^32 elements.");
  }
  auto params = make_params(collapse_dims_except(in, out, axis_), name());
  const bool arg = kind_ == SortKind::ArgSort || kind_ == SortKind::ArgPartition;
  dispatch_all<DeviceTypes>(in.dtype(), name(), [&]<typename V>() {
    using T = std::conditional_t<std::is_same_v<V, bool>, uint8_t, V>;
    using Key = typename DeviceSortKey<T>::Key;
    // positions, sorted positions, keys, sorted keys (8-byte aligned after 2 * total uint32)
    Scratch scratch(total * 2 * (sizeof(Key) + sizeof(uint32_t)));
    uint32_t* pos = scratch.as<uint32_t>();
    uint32_t* pos_out = pos + total;
    Key* keys = reinterpret_cast<Key*>(pos_out + total);
    Key* keys_out = keys + total;
    const T* src = reinterpret_cast<const T*>(in.gpu_data<char>());
    cudaStream_t s = cu::stream();
    make_keys<T><<<blocks_for(total), kThreads, 0, s>>>(src, keys, pos, params, n,
                                                        in.strides()[axis_], total, arg);
    check_launch(name());
    sort_pairs<Key>(keys, keys_out, pos, pos_out, lanes, n, name());
    if (arg) {
      write_sorted<T, true><<<blocks_for(total), kThreads, 0, s>>>(
          src, keys_out, pos_out, out.gpu_data<uint32_t>(), params, n, in.strides()[axis_],
          out.strides()[axis_], total);
    } else {
      write_sorted<T, false><<<blocks_for(total), kThreads, 0, s>>>(
          src, keys_out, pos_out, reinterpret_cast<T*>(out.gpu_data<char>()), params, n,
          in.strides()[axis_], out.strides()[axis_], total);
    }
    check_launch(name());
  });
}

}  // namespace mlx::core

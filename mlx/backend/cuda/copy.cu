#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/elementwise.cuh"

namespace mlx::core::cu {

namespace {

// Dense conversions are the unary kernel with a cast for the op.
template <typename To>
struct CastTo {
  template <typename From>
  __device__ To operator()(From x) const {
    return cast_to<To>(x);
  }
};

template <typename From, typename To>
__global__ void copy_general(const From* src, To* dst, int64_t n, StridedParams<2> p) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[2];
    strided_offsets(p, i, off);
    dst[off[1]] = cast_to<To>(src[off[0]]);
  }
}

// Batched transposition through shared memory: dims (batch, rows, cols) where the destination
// walks cols with stride 1 and the source walks rows with stride 1, so both sides are read and
// written in coalesced 32-element runs.
constexpr int kTile = 32;
template <typename From, typename To>
__global__ void copy_transpose(const From* src, To* dst, int32_t rows, int32_t cols,
                               int64_t s_batch, int64_t s_col, int64_t d_batch, int64_t d_row) {
  __shared__ From tile[kTile][kTile + 1];
  const int64_t b = blockIdx.z;
  const int r0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;
  src += b * s_batch;
  dst += b * d_batch;
  // Read: threads run along rows (source stride 1).
  for (int k = threadIdx.y; k < kTile; k += blockDim.y) {
    int r = r0 + threadIdx.x, c = c0 + k;
    if (r < rows && c < cols) {
      tile[threadIdx.x][k] = src[r + int64_t(c) * s_col];
    }
  }
  __syncthreads();
  // Write: threads run along cols (destination stride 1).
  for (int k = threadIdx.y; k < kTile; k += blockDim.y) {
    int r = r0 + k, c = c0 + threadIdx.x;
    if (r < rows && c < cols) {
      dst[int64_t(r) * d_row + c] = cast_to<To>(tile[k][threadIdx.x]);
    }
  }
}

// One dtype, the innermost dimension contiguous on both sides (head splits and merges,
// concatenations, slices): each thread moves one Word (several elements) of a row, so the
// index arithmetic runs once per Word and the accesses are wide. `outer` walks the rows, its
// strides in Words.
template <typename Word>
__global__ void copy_rows(const Word* src, Word* dst, int64_t rows, int32_t row_words,
                          StridedParams<2> outer) {
  const int64_t n = rows * row_words, step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t r = i / row_words;
    const int64_t j = i - r * row_words;
    int64_t off[2];
    strided_offsets(outer, r, off);
    dst[off[1] + j] = src[off[0] + j];
  }
}

// copy_rows for `layout` (2 or more dimensions) with the widest Word of at most 16 bytes that
// the rows, the outer strides and both pointers are multiples of; false where no Word holds two
// elements or more (copy_typed then runs).
bool copy_by_rows(const char* src, char* dst, const Layout<2>& layout, int64_t itemsize) {
  const size_t nd = layout.shape.size();
  if (nd < 2 || layout.strides[0][nd - 1] != 1 || layout.strides[1][nd - 1] != 1) {
    return false;
  }
  for (int64_t word = 16; word >= 2 * itemsize; word /= 2) {
    const int64_t per_word = word / itemsize;
    bool fits = layout.shape[nd - 1] % per_word == 0 &&
                reinterpret_cast<uintptr_t>(src) % word == 0 &&
                reinterpret_cast<uintptr_t>(dst) % word == 0;
    Layout<2> outer;
    outer.shape.assign(layout.shape.begin(), layout.shape.end() - 1);
    for (size_t k = 0; k < 2 && fits; ++k) {
      for (size_t d = 0; d + 1 < nd && fits; ++d) {
        fits = layout.strides[k][d] % per_word == 0;
        outer.strides[k].push_back(layout.strides[k][d] / per_word);
      }
    }
    if (!fits) {
      continue;
    }
    const int64_t rows = shape_size(outer.shape);
    const int32_t row_words = static_cast<int32_t>(layout.shape[nd - 1] / per_word);
    auto launch = [&]<typename Word>() {
      copy_rows<Word><<<blocks_for(rows * row_words), kThreads, 0, stream()>>>(
          reinterpret_cast<const Word*>(src), reinterpret_cast<Word*>(dst), rows, row_words,
          make_params(outer, "copy"));
    };
    if (word == 16) {
      launch.template operator()<uint4>();
    } else if (word == 8) {
      launch.template operator()<uint2>();
    } else if (word == 4) {
      launch.template operator()<uint32_t>();
    } else {
      launch.template operator()<uint16_t>();
    }
    return true;
  }
  return false;
}

template <typename From, typename To>
void copy_typed(const From* src, To* dst, const Layout<2>& layout, int64_t n) {
  const int nd = static_cast<int>(layout.shape.size());
  const auto& ss = layout.strides[0];
  const auto& ds = layout.strides[1];
  if (nd == 1 && ss[0] == 1 && ds[0] == 1) {
    constexpr int V = vec_width<From, To>();
    if (aligned16(src) && aligned16(dst)) {
      unary_dense<CastTo<To>, From, To, V>
          <<<blocks_for((n + V - 1) / V), kThreads, 0, stream()>>>(src, dst, n);
    } else {
      unary_dense<CastTo<To>, From, To, 1><<<blocks_for(n), kThreads, 0, stream()>>>(src, dst, n);
    }
  } else if ((nd == 2 || nd == 3) && ds[nd - 1] == 1 && ss[nd - 2] == 1 &&
             layout.shape[nd - 1] >= 8 && layout.shape[nd - 2] >= 8) {
    int32_t rows = layout.shape[nd - 2], cols = layout.shape[nd - 1];
    int64_t batch = nd == 3 ? layout.shape[0] : 1;
    dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile, static_cast<unsigned>(batch));
    copy_transpose<From, To><<<grid, dim3(kTile, 8), 0, stream()>>>(
        src, dst, rows, cols, nd == 3 ? ss[0] : 0, ss[nd - 1], nd == 3 ? ds[0] : 0, ds[nd - 2]);
  } else {
    copy_general<From, To>
        <<<blocks_for(n), kThreads, 0, stream()>>>(src, dst, n, make_params(layout, "copy"));
  }
}

}  // namespace

void copy_strided(const array& src, const Strides& src_strides, int64_t src_offset, array& dst,
                  const Strides& dst_strides, int64_t dst_offset, const Shape& shape) {
  int64_t n = static_cast<int64_t>(shape_size(shape));
  if (n == 0) {
    return;
  }
  auto layout = collapse_dims<2>(shape, {src_strides, dst_strides});
  if (src.dtype() == dst.dtype() && layout.shape.size() == 1 && layout.strides[0][0] == 1 &&
      layout.strides[1][0] == 1) {
    MLX_CUDA_CHECK(cudaMemcpyAsync(dst.gpu_data<char>() + dst_offset * dst.itemsize(),
                                   src.gpu_data<char>() + src_offset * src.itemsize(),
                                   n * src.itemsize(), cudaMemcpyDeviceToDevice, stream()));
    return;
  }
  if (src.dtype() == dst.dtype() &&
      copy_by_rows(src.gpu_data<char>() + src_offset * src.itemsize(),
                   dst.gpu_data<char>() + dst_offset * dst.itemsize(), layout, src.itemsize())) {
    check_launch("copy");
    return;
  }
  auto run = [&]<typename From, typename To>() {
    copy_typed<From, To>(src.gpu_data<From>() + src_offset, dst.gpu_data<To>() + dst_offset, layout,
                         n);
  };
  if (src.dtype() == dst.dtype()) {
    dispatch_by_size(src.itemsize(), "copy",
                     [&]<typename T>() { run.template operator()<T, T>(); });
  } else {
    dispatch_all<DeviceTypes>(src.dtype(), "astype", [&]<typename From>() {
      dispatch_all<DeviceTypes>(dst.dtype(), "astype",
                                [&]<typename To>() { run.template operator()<From, To>(); });
    });
  }
  check_launch("copy");
}

void copy_to_contiguous(const array& in, array& out) {
  bool in_place = in.is_donatable() && in.flags().row_contiguous && in.itemsize() == out.itemsize();
  if (in_place) {
    out.copy_shared_buffer(in);
    if (in.dtype() == out.dtype()) {
      return;
    }
  } else {
    allocate(out);
  }
  copy_strided(in, in.strides(), 0, out, row_major_strides(in.shape()), 0, in.shape());
}

array dense_copy(const array& in, Dtype dtype) {
  if (in.dtype() == dtype && in.flags().row_contiguous && in.data_size() == in.size() &&
      reinterpret_cast<uintptr_t>(in.gpu_data<char>()) % 16 == 0) {
    return in;
  }
  array out(in.shape(), dtype, nullptr, {});
  copy_to_contiguous(in, out);
  return out;
}

}  // namespace mlx::core::cu

#include <algorithm>

#include "mlx/backend/common/gathered_matrices.h"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/gemm.h"
#include "mlx/backend/cuda/grouped_products.h"
#include "mlx/backend/cuda/kernel_utils.cuh"

namespace mlx::core::cu {

namespace {

// dst block dst_of[j] (or j) = src block src_of[j] (or j), for j < n, blocks of `len` elements.
template <typename T>
__global__ void copy_blocks(const T* src, T* dst, const int64_t* src_of, const int64_t* dst_of,
                            int64_t n, int64_t len) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n * len;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = i / len, e = i - j * len;
    int64_t s = src_of ? src_of[j] : j;
    int64_t d = dst_of ? dst_of[j] : j;
    dst[d * len + e] = src[s * len + e];
  }
}

void launch_copy_blocks(const array& src, array& dst, const int64_t* src_of, const int64_t* dst_of,
                        int64_t n, int64_t len) {
  if (n * len == 0) {
    return;
  }
  dispatch_by_size(src.itemsize(), "gather_mm", [&]<typename T>() {
    copy_blocks<T><<<blocks_for(n * len), kThreads, 0, stream()>>>(
        src.gpu_data<T>(), dst.gpu_data<T>(), src_of, dst_of, n, len);
  });
  check_launch("gather_mm");
}

}  // namespace

void grouped_products(const array& a, const std::vector<int64_t>& lhs,
                      const std::vector<int64_t>& rhs, int64_t n_matrices, array& out,
                      const GroupProduct& product) {
  const int64_t S = static_cast<int64_t>(rhs.size());
  const int64_t M = a.shape(1), K = a.shape(2), N = out.shape(-1);
  ProductGroups groups = group_by_rhs(rhs, n_matrices);
  // The blocks of a each position reads, and the output block it writes, in group order.
  std::vector<int64_t> lists(2 * S);
  for (int64_t j = 0; j < S; ++j) {
    lists[j] = lhs[groups.order[j]];
    lists[S + j] = groups.order[j];
  }
  Scratch dev_lists(lists.size() * sizeof(int64_t));
  MLX_CUDA_CHECK(cudaMemcpyAsync(dev_lists.as<int64_t>(), lists.data(),
                                 lists.size() * sizeof(int64_t), cudaMemcpyHostToDevice, stream()));
  const int64_t* src_of = dev_lists.as<int64_t>();
  const int64_t* dst_of = src_of + S;
  int64_t largest = 0;
  for (size_t g = 0; g + 1 < groups.starts.size(); ++g) {
    largest = std::max(largest, groups.starts[g + 1] - groups.starts[g]);
  }
  array rows_buf({static_cast<int32_t>(largest * M), static_cast<int32_t>(K)}, a.dtype(), nullptr,
                 {});
  array res_buf({static_cast<int32_t>(largest * M), static_cast<int32_t>(N)}, out.dtype(), nullptr,
                {});
  allocate(rows_buf);
  allocate(res_buf);
  for (size_t g = 0; g + 1 < groups.starts.size(); ++g) {
    const int64_t first = groups.starts[g], n = groups.starts[g + 1] - first;
    const int32_t r = static_cast<int32_t>(n * M);
    launch_copy_blocks(a, rows_buf, src_of + first, nullptr, n, M * K);
    array rows = view_of(rows_buf, {r, static_cast<int32_t>(K)}, {K, 1});
    array res = view_of(res_buf, {r, static_cast<int32_t>(N)}, {N, 1});
    product(rhs[groups.order[first]], rows, res);
    launch_copy_blocks(res_buf, out, nullptr, dst_of + first, n, M * N);
  }
}

}  // namespace mlx::core::cu

// Gather::eval_gpu and GatherAxis::eval_gpu: one thread per output element. Elements whose
// index is out of range read as zero; the index is reported (index_errors.h) and raised when
// the host next waits for the GPU.
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/indexing.cuh"
#include "mlx/primitives/indexing.h"

namespace mlx::core {

namespace {

using namespace cu;

// out[p, s] = src[offset(indices at p) + offset of s in the slice box].
template <typename T>
__global__ void gather_kernel(const T* src, T* out, IndexArrays ix, SliceBox box, int64_t total,
                              const char* op, IndexErrorRecord* err) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t p = i / box.size;
    int64_t s = i - p * box.size;
    int64_t off;
    out[i] = index_offset(ix, p, op, err, off) ? src[off + box_offset(box, s)] : T{};
  }
}

// out[q] = src[q's position off the axis + wrapped(idx[q]) * axis_stride].
template <typename T>
__global__ void gather_axis_kernel(const void* idx, IndexType itype, const T* src, T* out,
                                   StridedParams<3> p, int64_t total, int64_t n,
                                   int64_t axis_stride, int axis, const char* op,
                                   IndexErrorRecord* err) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[3];
    strided_offsets(p, i, off);
    int64_t v = checked_index(load_index(idx, itype, off[0]), itype, n, 1, axis, op, err);
    out[off[2]] = v < 0 ? T{} : src[off[1] + v * axis_stride];
  }
}

}  // namespace

void Gather::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  cu::allocate(out);
  std::vector<array> indices(inputs.begin() + 1, inputs.end());
  int64_t n_idx = indices.empty() ? 1 : static_cast<int64_t>(indices[0].size());
  if (n_idx == 0) {
    return;
  }
  auto ix = make_index_arrays(indices, axes_, src.shape(), src.strides(), slice_sizes_, op_);
  auto* err = index_error_record();
  if (out.size() == 0) {
    // Zero-size slices still check their indices, as on the CPU.
    check_indices(ix, n_idx, op_, err);
    return;
  }
  auto box = make_slice_box(slice_sizes_, src.strides(), op_);
  int64_t total = static_cast<int64_t>(out.size());
  dispatch_by_size(out.itemsize(), op_, [&]<typename T>() {
    gather_kernel<T><<<blocks_for(total), kThreads, 0, cu::stream()>>>(
        src.gpu_data<T>(), out.gpu_data<T>(), ix, box, total, op_, err);
  });
  check_launch(name());
}

void GatherAxis::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  const array& idx = inputs[1];
  const char* op = "take_along_axis";
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  Strides src_strides = src.strides();
  src_strides[axis_] = 0;  // the index supplies the position along `axis`
  auto layout = collapse_dims<3>(out.shape(), {idx.strides(), src_strides, out.strides()});
  auto params = make_params(layout, op);
  int64_t total = static_cast<int64_t>(out.size());
  IndexType itype = index_type(idx.dtype(), op);
  auto* err = index_error_record();
  dispatch_by_size(out.itemsize(), op, [&]<typename T>() {
    gather_axis_kernel<T><<<blocks_for(total), kThreads, 0, cu::stream()>>>(
        idx.gpu_data<char>(), itype, src.gpu_data<T>(), out.gpu_data<T>(), params, total,
        src.shape(axis_), src.strides()[axis_], axis_, op, err);
  });
  check_launch(name());
}

}  // namespace mlx::core

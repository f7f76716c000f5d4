// Host side of indexing.cuh: packing index arrays and slice boxes for the kernels.
#include <stdexcept>

#include "mlx/backend/common/layout.h"
#include "mlx/backend/cuda/indexing.cuh"
#include "mlx/utils.h"

namespace mlx::core::cu {

IndexType index_type(Dtype dt, const char* op) {
  switch (dt.val) {
    case Dtype::Val::uint8:
      return IndexType::u8;
    case Dtype::Val::uint16:
      return IndexType::u16;
    case Dtype::Val::uint32:
      return IndexType::u32;
    case Dtype::Val::uint64:
      return IndexType::u64;
    case Dtype::Val::int8:
      return IndexType::i8;
    case Dtype::Val::int16:
      return IndexType::i16;
    case Dtype::Val::int32:
      return IndexType::i32;
    case Dtype::Val::int64:
      return IndexType::i64;
    default:
      throw std::invalid_argument(
          msg("[", op, "] Indices must be integers, got ", dtype_name(dt), "."));
  }
}

IndexArrays make_index_arrays(const std::vector<array>& indices, const std::vector<int>& axes,
                              const Shape& shape, const Strides& strides, const Shape& slice_sizes,
                              const char* op) {
  IndexArrays ix{};
  ix.count = static_cast<int>(indices.size());
  if (ix.count > kMaxDims) {
    throw std::invalid_argument(msg("[", op, "] At most ", kMaxDims, " index arrays on the GPU."));
  }
  if (ix.count == 0) {
    return ix;
  }
  const Shape& ishape = indices[0].shape();
  if (ishape.size() > static_cast<size_t>(kMaxDims)) {
    throw std::invalid_argument(
        msg("[", op, "] Index arrays of more than ", kMaxDims, " dimensions on the GPU."));
  }
  ix.ndim = static_cast<int>(ishape.size());
  for (int d = 0; d < ix.ndim; ++d) {
    ix.shape[d] = ishape[d];
  }
  for (int k = 0; k < ix.count; ++k) {
    const array& idx = indices[k];
    ix.data[k] = idx.gpu_data<char>();
    ix.type[k] = index_type(idx.dtype(), op);
    for (int d = 0; d < ix.ndim; ++d) {
      ix.strides[k][d] = idx.strides()[d];
    }
    int ax = axes[k];
    ix.axis[k] = ax;
    ix.axis_size[k] = shape[ax];
    ix.axis_stride[k] = strides[ax];
    ix.slice[k] = slice_sizes[ax];
  }
  return ix;
}

namespace {

__global__ void check_indices_kernel(IndexArrays ix, int64_t count, const char* op,
                                     IndexErrorRecord* err) {
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < count;
       p += int64_t(gridDim.x) * blockDim.x) {
    int64_t off;
    index_offset(ix, p, op, err, off);
  }
}

}  // namespace

void check_indices(const IndexArrays& ix, int64_t count, const char* op, IndexErrorRecord* err) {
  check_indices_kernel<<<blocks_for(count), kThreads, 0, stream()>>>(ix, count, op, err);
  check_launch(op);
}

SliceBox make_slice_box(const Shape& slice_sizes, const Strides& strides, const char* op) {
  auto layout = collapse_dims<1>(slice_sizes, {strides});
  if (layout.shape.size() > static_cast<size_t>(kMaxDims)) {
    throw std::invalid_argument(
        msg("[", op, "] Slices of more than ", kMaxDims, " strided dimensions on the GPU."));
  }
  SliceBox b{};
  b.ndim = static_cast<int>(layout.shape.size());
  b.size = 1;
  for (int d = 0; d < b.ndim; ++d) {
    b.shape[d] = layout.shape[d];
    b.strides[d] = layout.strides[0][d];
    b.size *= layout.shape[d];
  }
  return b;
}

}  // namespace mlx::core::cu

// Scatter::eval_gpu and ScatterAxis::eval_gpu: the output starts as a copy of the array, then one
// thread per update element applies it. Reductions are atomic, so duplicates accumulate (in no
// fixed order). Plain scatter keeps the last of colliding updates, as the CPU does: a first pass
// claims each destination for its highest update number, a second writes only the claimed
// ones. Updates with an index out of range are skipped and the index is raised at the next wait
// (index_errors.h).
#include "mlx/backend/cuda/atomic_ops.cuh"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/indexing.cuh"
#include "mlx/primitives/indexing.h"

namespace mlx::core {

namespace {

using namespace cu;

struct Assign {};

// Applies update number i to out[dst]. Assignments run twice: `claim` records i + 1 as the
// destination's owner if it is the highest so far; then the owner writes.
template <typename Op, typename T>
__device__ __forceinline__ void apply(T* out, int64_t dst, T update, int64_t i, uint32_t* owner,
                                      bool claim) {
  if constexpr (std::is_same_v<Op, Assign>) {
    if (claim) {
      atomicMax(owner + dst, static_cast<uint32_t>(i + 1));
    } else if (owner[dst] == static_cast<uint32_t>(i + 1)) {
      out[dst] = update;
    }
  } else {
    atomic_update<Op>(out + dst, update);
  }
}

template <typename Op, typename T>
__global__ void scatter_kernel(const T* upd, T* out, IndexArrays ix, SliceBox box, int64_t total,
                               const char* op, IndexErrorRecord* err, uint32_t* owner, bool claim) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t p = i / box.size;
    // The second pass of an assignment finds the same indices: report them once.
    int64_t off;
    if (index_offset(ix, p, op, claim || owner == nullptr ? err : nullptr, off)) {
      apply<Op>(out, off + box_offset(box, i - p * box.size), upd[i], i, owner, claim);
    }
  }
}

// Over the [outer, axis, inner] view of row-major arrays: out[o, idx[o, j, k], k] (op)=
// upd[o, j, k].
template <typename Op, typename T>
__global__ void scatter_axis_kernel(const void* idx, IndexType itype, const T* upd, T* out,
                                    int64_t total, int64_t n, int64_t n_idx_axis, int64_t inner,
                                    int axis, const char* op, IndexErrorRecord* err,
                                    uint32_t* owner, bool claim) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = i / (n_idx_axis * inner);
    int64_t k = i % inner;
    int64_t v = checked_index(load_index(idx, itype, i), itype, n, 1, axis, op,
                              claim || owner == nullptr ? err : nullptr);
    if (v >= 0) {
      apply<Op>(out, (o * n + v) * inner + k, upd[i], i, owner, claim);
    }
  }
}

// Runs launch(owner, claim) once for a reduction, twice (claim, then write) for an assignment,
// with the owners of out's elements in scratch memory.
template <typename Op, typename Launch>
void run_passes(const array& out, int64_t total, const char* name, Launch&& launch) {
  if constexpr (std::is_same_v<Op, Assign>) {
    if (total >= int64_t(UINT32_MAX)) {
      throw std::invalid_argument(std::string("[") + name +
                                  "] More than 2^32 - 1 updates on the GPU.");
    }
    Scratch owner(out.size() * sizeof(uint32_t));
    MLX_CUDA_CHECK(
        cudaMemsetAsync(owner.as<void>(), 0, out.size() * sizeof(uint32_t), cu::stream()));
    launch(owner.as<uint32_t>(), true);
    launch(owner.as<uint32_t>(), false);
  } else {
    launch(static_cast<uint32_t*>(nullptr), false);
  }
}

// Runs f.template operator()<Op, T>() for the reduction and the output dtype; assignments only
// move bytes, so they dispatch by size.
template <typename F>
void dispatch_scatter(Dtype dt, ScatterReduce r, const char* name, F&& f) {
  if (r == ScatterReduce::None) {
    return dispatch_by_size(size_of(dt), name,
                            [&]<typename T>() { f.template operator()<Assign, T>(); });
  }
  dispatch_all<DeviceTypes>(dt, name, [&]<typename T>() {
    switch (r) {
      case ScatterReduce::Prod:
        return f.template operator()<red::Prod, T>();
      case ScatterReduce::Max:
        return f.template operator()<red::Max, T>();
      case ScatterReduce::Min:
        return f.template operator()<red::Min, T>();
      default:
        return f.template operator()<red::Sum, T>();
    }
  });
}

}  // namespace

void Scatter::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& upd = inputs.back();
  const char* name = op_name();
  Shape slice = update_slice(a, upd);
  copy_to_contiguous(a, out);
  std::vector<array> indices(inputs.begin() + 1, inputs.end() - 1);
  int64_t n_idx = indices.empty() ? 1 : static_cast<int64_t>(indices[0].size());
  if (n_idx == 0) {
    return;
  }
  auto ix = make_index_arrays(indices, axes_, out.shape(), out.strides(), slice, name);
  auto* err = index_error_record();
  if (upd.size() == 0) {
    // Zero-size update slices still check their indices, as on the CPU.
    check_indices(ix, n_idx, name, err);
    return;
  }
  auto box = make_slice_box(slice, out.strides(), name);
  int64_t total = static_cast<int64_t>(upd.size());
  dispatch_scatter(out.dtype(), reduce_, name, [&]<typename Op, typename T>() {
    run_passes<Op>(out, total, name, [&](uint32_t* owner, bool claim) {
      scatter_kernel<Op, T><<<blocks_for(total), kThreads, 0, cu::stream()>>>(
          upd.gpu_data<T>(), out.gpu_data<T>(), ix, box, total, name, err, owner, claim);
    });
  });
  check_launch(this->name());
}

void ScatterAxis::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  const array& idx = inputs[1];
  const array& upd = inputs[2];
  const char* name = op_name();
  copy_to_contiguous(a, out);
  if (idx.size() == 0) {
    return;
  }
  int64_t inner = 1;
  for (int d = axis_ + 1; d < a.ndim(); ++d) {
    inner *= a.shape(d);
  }
  int64_t total = static_cast<int64_t>(idx.size());
  IndexType itype = index_type(idx.dtype(), name);
  auto* err = index_error_record();
  dispatch_scatter(out.dtype(), reduce_, name, [&]<typename Op, typename T>() {
    run_passes<Op>(out, total, name, [&](uint32_t* owner, bool claim) {
      scatter_axis_kernel<Op, T><<<blocks_for(total), kThreads, 0, cu::stream()>>>(
          idx.gpu_data<char>(), itype, upd.gpu_data<T>(), out.gpu_data<T>(), total, a.shape(axis_),
          idx.shape(axis_), inner, axis_, name, err, owner, claim);
    });
  });
  check_launch(this->name());
}

}  // namespace mlx::core

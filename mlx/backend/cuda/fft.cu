// FFT::eval_gpu through cuFFT: the transform axis is made the last one of a dense batch of
// lines (one strided copy, unless the input already is such a batch), the lines go through
// one batched cuFFT plan, and the output lines are copied back to the axis when it is not the
// last. Plans are cached per (stream, length, kind, batch). Unnormalized, as the primitive is.
#include <cufft.h>

#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/primitives/fft.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using namespace cu;

void check_cufft(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS) {
    if (r == CUFFT_ALLOC_FAILED) {
      throw std::bad_alloc();
    }
    throw std::runtime_error(
        msg("[fft] ", what, " failed (cuFFT error ", static_cast<int>(r), ")."));
  }
}

// Plans by (device, stream, length, kind, batch). A plan's work area belongs to one stream:
// shared by two, one stream's transform could overwrite it while the other's runs.
using PlanKey = std::tuple<int, cudaStream_t, int64_t, int, int64_t>;
struct PlanCache {
  std::mutex mutex;  // held from the lookup to the transform's issue: a full cache is emptied
  std::map<PlanKey, cufftHandle> plans;
};
PlanCache& plan_cache() {
  static auto* c = new PlanCache();  // leaked, with its plans
  return *c;
}

// The plan for `batch` dense lines of length n (input line n, or n / 2 + 1 complex for c2r) on
// the current stream; the caller holds the cache's mutex.
cufftHandle plan_for(PlanCache& cache, int64_t n, cufftType type, int64_t batch) {
  const PlanKey key{current().device, cu::stream(), n, static_cast<int>(type), batch};
  auto it = cache.plans.find(key);
  if (it != cache.plans.end()) {
    return it->second;
  }
  // Bounded: batches of many sizes (a shapeless loop) would otherwise keep every work area.
  if (cache.plans.size() >= 64) {
    for (auto& [k, handle] : cache.plans) {
      cufftDestroy(handle);
    }
    cache.plans.clear();
  }
  cufftHandle handle;
  check_cufft(cufftCreate(&handle), "cufftCreate");
  long long len = n;
  size_t work = 0;
  cufftResult r =
      cufftMakePlanMany64(handle, 1, &len, nullptr, 1, 0, nullptr, 1, 0, type, batch, &work);
  if (r != CUFFT_SUCCESS) {
    cufftDestroy(handle);
    check_cufft(r, "cufftMakePlanMany64");
  }
  check_cufft(cufftSetStream(handle, cu::stream()), "cufftSetStream");
  cache.plans.emplace(key, handle);
  return handle;
}

// The shape of `a` with `axis` moved last, and a's strides in that order.
std::pair<Shape, Strides> axis_last(const Shape& shape, const Strides& strides, int axis) {
  Shape s;
  Strides st;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d != axis) {
      s.push_back(shape[d]);
      st.push_back(strides[d]);
    }
  }
  s.push_back(shape[axis]);
  st.push_back(strides[axis]);
  return {s, st};
}

}  // namespace

void FFT::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  const int ax = axis_;
  const bool last = ax == in.ndim() - 1;
  const int64_t batch = static_cast<int64_t>(in.size()) / in.shape(ax);
  // c2r overwrites its input, so it always reads a copy.
  const bool c2r = real_ && inverse_;
  array lines = in;
  if (!(last && is_dense(in)) || c2r) {
    auto [shape, strides] = axis_last(in.shape(), in.strides(), ax);
    lines = array(shape, in.dtype(), nullptr, {});
    cu::allocate(lines);
    cu::copy_strided(in, strides, 0, lines, row_major_strides(shape), 0, shape);
  }
  array result = out;
  if (!last) {
    result = array(axis_last(out.shape(), out.strides(), ax).first, out.dtype(), nullptr, {});
    cu::allocate(result);
  }
  cufftType type = !real_ ? CUFFT_C2C : (inverse_ ? CUFFT_C2R : CUFFT_R2C);
  {
    PlanCache& cache = plan_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    cufftHandle plan = plan_for(cache, n_, type, batch);
    if (type == CUFFT_C2C) {
      check_cufft(
          cufftExecC2C(plan, lines.gpu_data<cufftComplex>(), result.gpu_data<cufftComplex>(),
                       inverse_ ? CUFFT_INVERSE : CUFFT_FORWARD),
          "cufftExecC2C");
    } else if (type == CUFFT_R2C) {
      check_cufft(cufftExecR2C(plan, lines.gpu_data<cufftReal>(), result.gpu_data<cufftComplex>()),
                  "cufftExecR2C");
    } else {
      check_cufft(cufftExecC2R(plan, lines.gpu_data<cufftComplex>(), result.gpu_data<cufftReal>()),
                  "cufftExecC2R");
    }
  }
  if (!last) {
    // result is out with the axis last: copy it back with out's strides in that order.
    auto [shape, strides] = axis_last(out.shape(), out.strides(), ax);
    cu::copy_strided(result, row_major_strides(shape), 0, out, strides, 0, shape);
  }
}

}  // namespace mlx::core

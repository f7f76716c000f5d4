// Convolution::eval_gpu and ConvWeightGrad::eval_gpu, channels last (primitives/conv.h).
// Which path runs:
// 1. Depthwise geometries (groups of one input channel and at most 4 output channels, or the
//    transposed form: one output and at most 4 input channels, as their input derivatives are)
//    run their own kernels (conv_depthwise.h), whatever the dtype, stride, padding or
//    dilations; so do depthwise weight derivatives. cuDNN's grouped NHWC kernels are slow for
//    them (an H100, bf16 28x28x256 3x3: 0.37 ms forward against PyTorch's 0.03).
// 2. cuDNN (loaded at run time, cudnn_api.h) wherever backend/common/cudnn_conv_plan.h maps
//    the convolution: float32 (FMA math; TF32 only under MLX_ENABLE_TF32), float16 and bfloat16
//    (tensor-op math) with any groups, stride, kernel dilation and padding (negative padding
//    crops a copy of the input; asymmetric padding has cuDNN write a temporary output whose
//    window is copied) through cudnnConvolutionForward, and input dilation with stride 1
//    (transposed convolutions and the input derivatives of strided ones) through
//    cudnnConvolutionBackwardData with a per-group transposed copy of the weight (none where
//    the transpose keeps the layout). A weight derivative whose convolution maps to the forward
//    call runs cudnnConvolutionBackwardFilter on the same descriptors (the cotangent
//    zero-padded into a temporary y where ours is a window of it). Descriptors are cached per
//    device, pass and geometry; the algorithm is chosen at a geometry's first run by timing
//    cuDNN's algorithms on its operands (Find, run twice so that lazy kernel loading does not
//    count; at most 256 MiB of workspace from our allocator), or from the heuristics under
//    MLX_CUDNN_FIND=0 (at most 1 GiB).
// 3. Otherwise (float64, input dilation beside a stride above 1, sizes past 32-bit indices,
//    cuDNN missing or rejecting the geometry, MLX_CUDA_CONV=im2col): im2col over a chunk of
//    output pixels (one row per pixel: kernel taps x group channels, zeros for taps in the
//    padding or between dilated input elements) followed by one cuBLASLt product per group with
//    the group's weights (for the weight derivative: the group's cotangent transposed times the
//    columns, summed over chunks).
// MLX_CUDA_CONV=im2col keeps every convolution off cuDNN (depthwise ones still take 1, the
// rest 3); MLX_CUDA_CONV=cudnn gives cuDNN the depthwise geometries it maps too (the depthwise
// kernels then run only what it does not take: float64, refusals), to compare with it.
// While mx._kernel_counts counts, each evaluation also counts its path ("Convolution:depthwise",
// ":cudnn", ":im2col"; "ConvWeightGrad:depthwise", ":cudnn", ":im2col"); MLX_CUDNN_DEBUG=1
// prints each geometry's cuDNN plan and algorithm or its reason to fall back.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "mlx/backend/common/conv_geometry.h"
#include "mlx/backend/common/cudnn_conv_plan.h"
#include "mlx/backend/cuda/conv_depthwise.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/cudnn_api.h"
#include "mlx/backend/cuda/cudnn_conv_graph.h"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/gemm.h"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/backend/cuda/tf32.h"
#include "mlx/primitives/conv.h"
#include "mlx/runtime/kernel_counter.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using namespace cu;

// The input pixel (within its image) that output pixel `x` reads through tap `tap`, or -1
// when the tap falls in the padding or between dilated input elements.
__device__ __forceinline__ int64_t input_pixel(const ConvGeometry& g, int64_t x, int64_t tap) {
  int64_t xs[3], ts[3];
  xs[2] = x % g.out[2];
  xs[1] = x / g.out[2] % g.out[1];
  xs[0] = x / (g.out[2] * g.out[1]);
  ts[2] = tap % g.k[2];
  ts[1] = tap / g.k[2] % g.k[1];
  ts[0] = tap / (g.k[2] * g.k[1]);
  int64_t pix = 0;
#pragma unroll
  for (int d = 0; d < 3; ++d) {
    const int64_t j = g.flip ? g.k[d] - 1 - ts[d] : ts[d];
    const int64_t q = xs[d] * g.stride[d] + j * g.kdil[d] - g.lo[d];
    if (q < 0 || q % g.idil[d] != 0 || q / g.idil[d] >= g.in[d]) {
      return -1;
    }
    pix = pix * g.in[d] + q / g.idil[d];
  }
  return pix;
}

// cols (rows, K Cg) for the output rows [r0, r0 + rows) of group grp.
template <typename T>
__global__ void im2col_kernel(const T* in, T* cols, ConvGeometry g, int64_t r0, int64_t rows,
                              int64_t grp) {
  const int64_t width = g.K * g.Cg, total = rows * width;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = r0 + i / width, col = i % width;
    const int64_t n = r / g.X, x = r - n * g.X, tap = col / g.Cg, c = col - tap * g.Cg;
    const int64_t pix = input_pixel(g, x, tap);
    cols[i] = pix < 0 ? T(0) : in[(n * g.S + pix) * g.C + grp * g.Cg + c];
  }
}

// Bytes of im2col columns per chunk of output rows.
constexpr int64_t kChunkBytes = int64_t(64) << 20;

// A new row-contiguous array of `shape` for the task's temporaries.
array scratch_array(Shape shape, Dtype dtype) {
  array a(std::move(shape), dtype, nullptr, {});
  allocate(a);
  return a;
}

template <typename T>
void im2col_conv(const ConvGeometry& g, const array& in, const array& wt, array& out) {
  const int64_t M = g.N * g.X, width = g.K * g.Cg;
  const int64_t chunk =
      std::clamp<int64_t>(kChunkBytes / std::max<int64_t>(width * sizeof(T), 1), 1, M);
  const int32_t Og = static_cast<int32_t>(g.Og), W = static_cast<int32_t>(width);
  array cols({static_cast<int32_t>(chunk), W}, in.dtype(), nullptr, {});
  allocate(cols);
  // Groups write a column block of out: through a dense block when there are several.
  std::optional<array> block;
  if (g.G > 1) {
    block.emplace(Shape{static_cast<int32_t>(chunk), Og}, out.dtype(), nullptr,
                  std::vector<array>{});
    allocate(*block);
  }
  for (int64_t r0 = 0; r0 < M; r0 += chunk) {
    const int32_t rows = static_cast<int32_t>(std::min(chunk, M - r0));
    for (int64_t grp = 0; grp < g.G; ++grp) {
      im2col_kernel<T><<<blocks_for(rows * width), kThreads, 0, stream()>>>(
          in.gpu_data<T>(), cols.gpu_data<T>(), g, r0, rows, grp);
      check_launch("conv");
      array lhs = view_of(cols, {rows, W}, {width, 1});
      // The group's weights (Og, K Cg) read transposed.
      array rhs = view_of(wt, {W, Og}, {1, width}, grp * g.Og * width);
      if (g.G == 1) {
        array res = view_of(out, {rows, Og}, {Og, 1}, r0 * g.O);
        gemm(lhs, rhs, res);
      } else {
        array res = view_of(*block, {rows, Og}, {Og, 1});
        gemm(lhs, rhs, res);
        copy_strided(res, {Og, 1}, 0, out, {g.O, 1}, r0 * g.O + grp * g.Og, {rows, Og});
      }
    }
  }
}

// acc (+)= part, a (rows, cols) block of a matrix with leading dimension ld.
template <typename T, typename Acc>
__global__ void accumulate_block(const T* part, Acc* acc, int64_t rows, int64_t cols, int64_t ld,
                                 bool first) {
  const int64_t total = rows * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    Acc* dst = acc + i / cols * ld + i % cols;
    *dst = (first ? Acc(0) : *dst) + static_cast<Acc>(part[i]);
  }
}

template <typename T, typename Acc>
__global__ void cast_all(const Acc* from, T* to, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    to[i] = cast_to<T>(from[i]);
  }
}

// ConvWeightGrad where neither cuDNN nor the depthwise kernels take it: per chunk of output
// rows and group, dw (Og, K Cg) += the group's cotangent columns transposed (Og, rows) times
// cols (rows, K Cg), each chunk's product summed into an accumulator in acc_t.
template <typename T>
void im2col_weight_grad(const ConvGeometry& g, const array& in, const array& cot, array& dw) {
  using Acc = acc_t<T>;
  const int64_t M = g.N * g.X, width = g.K * g.Cg;
  const int64_t chunk =
      std::clamp<int64_t>(kChunkBytes / std::max<int64_t>(width * sizeof(T), 1), 1, M);
  const int32_t Og = static_cast<int32_t>(g.Og), W = static_cast<int32_t>(width);
  array cols = scratch_array({static_cast<int32_t>(chunk), W}, in.dtype());
  array part = scratch_array({Og, W}, dw.dtype());
  Scratch acc(sizeof(Acc) * g.O * width);
  for (int64_t r0 = 0; r0 < M; r0 += chunk) {
    const int32_t rows = static_cast<int32_t>(std::min(chunk, M - r0));
    for (int64_t grp = 0; grp < g.G; ++grp) {
      im2col_kernel<T><<<blocks_for(rows * width), kThreads, 0, stream()>>>(
          in.gpu_data<T>(), cols.gpu_data<T>(), g, r0, rows, grp);
      check_launch("ConvWeightGrad");
      array lhs = view_of(cot, {Og, rows}, {1, g.O}, r0 * g.O + grp * g.Og);
      array rhs = view_of(cols, {rows, W}, {width, 1});
      gemm(lhs, rhs, part);
      accumulate_block<T, Acc><<<blocks_for(g.Og * width), kThreads, 0, stream()>>>(
          part.gpu_data<T>(), acc.as<Acc>() + grp * g.Og * width, g.Og, width, width, r0 == 0);
      check_launch("ConvWeightGrad");
    }
  }
  cast_all<T, Acc><<<blocks_for(g.O * width), kThreads, 0, stream()>>>(
      acc.as<Acc>(), dw.gpu_data<T>(), g.O * width);
  check_launch("ConvWeightGrad");
}

// cuDNN (see the file's comment).

// The most workspace an algorithm may take; cuDNN's ranking continues past larger ones. Find
// (measuring each algorithm) gets at most kFindWorkspace.
constexpr size_t kMaxCudnnWorkspace = size_t(1) << 30;
constexpr size_t kFindWorkspace = size_t(256) << 20;

// MLX_CUDA_CONV (see the file's comment): unset (or any other value) the depthwise kernels,
// then cuDNN, then im2col; "im2col" no cuDNN; "cudnn" cuDNN before the depthwise kernels.
enum class ConvPaths { standard, im2col, cudnn_first };
ConvPaths conv_paths() {
  static const ConvPaths paths = [] {
    const char* v = std::getenv("MLX_CUDA_CONV");
    return v == nullptr                    ? ConvPaths::standard
           : std::strcmp(v, "im2col") == 0 ? ConvPaths::im2col
           : std::strcmp(v, "cudnn") == 0  ? ConvPaths::cudnn_first
                                           : ConvPaths::standard;
  }();
  return paths;
}

bool cudnn_enabled() { return conv_paths() != ConvPaths::im2col; }

// MLX_CUDNN_FIND=0 takes the heuristics' first algorithm instead of timing them (Find): no
// first-call cost per geometry, but the heuristics' pick can be several times slower.
bool cudnn_find() {
  static const bool on = [] {
    const char* v = std::getenv("MLX_CUDNN_FIND");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

// MLX_CUDNN_CONV_GRAPHS=0 keeps 16-bit convolutions on the legacy calls (cudnn_conv_graph.h).
bool conv_graphs_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("MLX_CUDNN_CONV_GRAPHS");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

using Pass = ConvPass;

// One geometry's descriptors and algorithm (chosen at its first run, when its operands exist
// for Find), or its frontend graph (built then too); unusable ones run our own kernels.
struct CudnnConv {
  bool usable = false;
  Pass pass = Pass::forward;
  CudnnConvPlan plan;
  CudnnConvDescriptors d;
  bool fma_only = false;                      // float32 without TF32: FMA kernels only
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // what Find may try
  bool chosen = false;
  int algo = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  size_t workspace = 0;
  bool graph_tried = false;
  std::shared_ptr<ConvGraph> graph;  // where built, it runs instead of the legacy call
};

bool not_supported(cudnnStatus_t status) {
  return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED;
}

const char* pass_name(Pass pass) {
  return pass == Pass::forward         ? "forward"
         : pass == Pass::backward_data ? "backward data"
                                       : "backward filter";
}

std::string describe(const ConvParams& p, const array& in, const array& wt) {
  return msg(in.dtype(), " in ", in.shape(), " weight ", wt.shape(), " stride ", Shape(p.stride),
             " padding ", Shape(p.padding_lo), " ", Shape(p.padding_hi), " dilation ",
             Shape(p.kernel_dilation), " input dilation ", Shape(p.input_dilation), " groups ",
             p.groups, p.flip ? " flipped" : "");
}

void debug_line(const std::string& what, const ConvParams& p, const array& in, const array& wt) {
  if (cudnn_debug()) {
    std::fprintf(stderr, "[conv] %s: %s\n", what.c_str(), describe(p, in, wt).c_str());
  }
}

// Takes the first usable entry of a ranking (Find's, by measured time, or the heuristics'):
// it succeeded, has an allowed math type, and its workspace (bytes_of(entry): nullopt when
// cuDNN refuses the algorithm) fits the limit. FMA only: entries listed with tensor-op math are
// skipped, and the others run under CUDNN_FMA_MATH whatever math type the ranking reports (it
// may say DEFAULT_MATH, which would allow TF32).
template <typename Perf, typename Bytes>
bool take_first(const CudnnApi& api, CudnnConv& c, const Perf* perfs, int n, Bytes bytes_of) {
  for (int i = 0; i < n; ++i) {
    const Perf& r = perfs[i];
    if (r.status != CUDNN_STATUS_SUCCESS ||
        (c.fma_only && r.mathType != CUDNN_FMA_MATH && r.mathType != CUDNN_DEFAULT_MATH)) {
      continue;
    }
    cudnn_check(api.SetConvolutionMathType(c.d.conv, c.fma_only ? CUDNN_FMA_MATH : r.mathType),
                "cudnnSetConvolutionMathType", "conv");
    std::optional<size_t> bytes = bytes_of(r);
    if (bytes && *bytes <= kMaxCudnnWorkspace) {
      c.algo = static_cast<int>(r.algo);
      c.workspace = *bytes;
      return true;
    }
  }
  return false;
}

// Chooses c's algorithm for one pass: Find times every algorithm on the operands (x, w, y: the
// buffers of c.d.x, c.d.w and c.d.y, the written one clobbered), else the heuristics rank them.
// The functions are cuDNN's `family`AlgorithmMaxCount, `family`Algorithm_v7, Find...Ex and
// `family`WorkspaceSize, called as count_of(&n), rank(n, &returned, perfs),
// find(n, &returned, perfs, workspace, bytes) and workspace_of(algo, &bytes).
template <typename Perf, typename Count, typename Rank, typename Find, typename Workspace>
bool choose(const CudnnApi& api, CudnnConv& c, const char* family, Count count_of, Rank rank,
            Find find, Workspace workspace_of) {
  int max_count = 0, returned = 0;
  cudnn_check(count_of(&max_count), (std::string(family) + "AlgorithmMaxCount").c_str(), "conv");
  std::vector<Perf> perfs(std::max(max_count, 1));
  if (cudnn_find()) {
    // The descriptor's math type bounds what Find tries: FMA for float32 without TF32.
    cudnn_check(api.SetConvolutionMathType(c.d.conv, c.math), "cudnnSetConvolutionMathType",
                "conv");
    // Without the memory for Find's workspace (an out-of-memory error), the heuristics choose.
    std::optional<Scratch> workspace;
    try {
      workspace.emplace(kFindWorkspace);
    } catch (const std::exception&) {
    }
    // Twice, ranked by the second: CUDA loads kernels lazily, at their first launch, so in a
    // first pass every algorithm not yet run in this process carries its loading time. Seen
    // on an H100: a single pass picked forward algorithms up to 4.7x slower than the
    // heuristics' (the loaded ones won), early in a process most.
    cudnnStatus_t status = CUDNN_STATUS_ALLOC_FAILED;
    for (int pass = 0; pass < 2 && workspace; ++pass) {
      status = find(max_count, &returned, perfs.data(), workspace->as<void>(), kFindWorkspace);
      if (status != CUDNN_STATUS_SUCCESS) {
        break;
      }
    }
    if (status == CUDNN_STATUS_SUCCESS &&
        take_first(api, c, perfs.data(), returned,
                   [](const Perf& r) -> std::optional<size_t> { return r.memory; })) {
      return true;
    }
  }
  cudnnStatus_t status = rank(max_count, &returned, perfs.data());
  if (not_supported(status)) {
    return false;
  }
  cudnn_check(status, (std::string(family) + "Algorithm_v7").c_str(), "conv");
  return take_first(api, c, perfs.data(), returned, [&](const Perf& r) -> std::optional<size_t> {
    size_t bytes = 0;
    cudnnStatus_t s = workspace_of(r.algo, &bytes);
    if (not_supported(s)) {
      return std::nullopt;
    }
    cudnn_check(s, (std::string(family) + "WorkspaceSize").c_str(), "conv");
    return bytes;
  });
}

bool choose_algorithm(const CudnnApi& api, cudnnHandle_t h, CudnnConv& c, const void* x,
                      const void* w, const void* y) {
  const CudnnConvDescriptors& d = c.d;
  switch (c.pass) {
    case Pass::forward:
      return choose<cudnnConvolutionFwdAlgoPerf_t>(
          api, c, "cudnnGetConvolutionForward",
          [&](int* n) { return api.GetConvolutionForwardAlgorithmMaxCount(h, n); },
          [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* perfs) {
            return api.GetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, n, got, perfs);
          },
          [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* perfs, void* ws, size_t bytes) {
            return api.FindConvolutionForwardAlgorithmEx(
                h, d.x, x, d.w, w, d.conv, d.y, const_cast<void*>(y), n, got, perfs, ws, bytes);
          },
          [&](cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
            return api.GetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, bytes);
          });
    case Pass::backward_data:
      return choose<cudnnConvolutionBwdDataAlgoPerf_t>(
          api, c, "cudnnGetConvolutionBackwardData",
          [&](int* n) { return api.GetConvolutionBackwardDataAlgorithmMaxCount(h, n); },
          [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* perfs) {
            return api.GetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.x, d.conv, d.y, n, got,
                                                              perfs);
          },
          [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* perfs, void* ws, size_t bytes) {
            return api.FindConvolutionBackwardDataAlgorithmEx(
                h, d.w, w, d.x, x, d.conv, d.y, const_cast<void*>(y), n, got, perfs, ws, bytes);
          },
          [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
            return api.GetConvolutionBackwardDataWorkspaceSize(h, d.w, d.x, d.conv, d.y, algo,
                                                               bytes);
          });
    case Pass::backward_filter:
      return choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
          api, c, "cudnnGetConvolutionBackwardFilter",
          [&](int* n) { return api.GetConvolutionBackwardFilterAlgorithmMaxCount(h, n); },
          [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* perfs) {
            return api.GetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, n, got,
                                                                perfs);
          },
          [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* perfs, void* ws, size_t bytes) {
            return api.FindConvolutionBackwardFilterAlgorithmEx(
                h, d.x, x, d.y, y, d.conv, d.w, const_cast<void*>(w), n, got, perfs, ws, bytes);
          },
          [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
            return api.GetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, algo,
                                                                 bytes);
          });
  }
  return false;
}

// Runs c's pass on the buffers of c.d.x, c.d.w and c.d.y (the pass writes y, y as dx, or w).
cudnnStatus_t run_pass(const CudnnApi& api, cudnnHandle_t h, const CudnnConv& c, const void* x,
                       const void* w, const void* y, void* workspace) {
  const float one = 1, zero = 0;
  const CudnnConvDescriptors& d = c.d;
  switch (c.pass) {
    case Pass::forward:
      return api.ConvolutionForward(h, &one, d.x, x, d.w, w, d.conv,
                                    static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), workspace,
                                    c.workspace, &zero, d.y, const_cast<void*>(y));
    case Pass::backward_data:
      return api.ConvolutionBackwardData(h, &one, d.w, w, d.x, x, d.conv,
                                         static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                                         workspace, c.workspace, &zero, d.y, const_cast<void*>(y));
    case Pass::backward_filter:
      return api.ConvolutionBackwardFilter(
          h, &one, d.x, x, d.y, y, d.conv, static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo),
          workspace, c.workspace, &zero, d.w, const_cast<void*>(w));
  }
  return CUDNN_STATUS_NOT_SUPPORTED;
}

// Descriptors for a geometry (unusable, with a debug line, where cuDNN cannot run it). For
// the filter pass, wt is the weight derivative and out the cotangent.
std::unique_ptr<CudnnConv> make_cudnn_conv(const CudnnApi& api, bool filter_pass,
                                           const ConvParams& p, const array& in, const array& wt,
                                           const array& out) {
  auto c = std::make_unique<CudnnConv>();
  c->plan = plan_cudnn_conv(p, in.shape(), wt.shape(), out.shape(), out.dtype());
  const CudnnConvPlan& plan = c->plan;
  if (plan.op == CudnnConvPlan::Op::fallback) {
    debug_line("own kernels (" + plan.reason + ")", p, in, wt);
    return c;
  }
  if (filter_pass && plan.op != CudnnConvPlan::Op::forward) {
    debug_line("own kernels (a filter derivative with input dilation)", p, in, wt);
    return c;
  }
  c->pass = filter_pass                             ? Pass::backward_filter
            : plan.op == CudnnConvPlan::Op::forward ? Pass::forward
                                                    : Pass::backward_data;
  // float32 never runs TF32 unless asked: FMA kernels only.
  c->fma_only = out.dtype() == float32 && !tf32_enabled();
  c->math = out.dtype() != float32 ? CUDNN_TENSOR_OP_MATH
            : c->fma_only          ? CUDNN_FMA_MATH
                                   : CUDNN_DEFAULT_MATH;
  c->d = make_conv_descriptors(api, plan, out.dtype(), c->math);
  if (!cudnn_agrees(api, c->d, plan)) {
    debug_line("own kernels (cuDNN's output size differs from the plan's)", p, in, wt);
    return c;
  }
  c->usable = true;
  return c;
}

std::vector<int64_t> cache_key(int device, bool filter_pass, const ConvParams& p, const array& in,
                               const array& wt, const array& out) {
  std::vector<int64_t> key{device, filter_pass, static_cast<int64_t>(out.dtype().val), p.groups,
                           p.flip};
  for (const Shape* s : {&in.shape(), &wt.shape(), &out.shape()}) {
    key.insert(key.end(), s->begin(), s->end());
  }
  for (auto* v : {&p.stride, &p.padding_lo, &p.padding_hi, &p.kernel_dilation, &p.input_dilation}) {
    key.insert(key.end(), v->begin(), v->end());
  }
  return key;
}

// cuDNN's y (forward) as one of our arrays' shape: (N, spatial..., C).
Shape y_shape(const CudnnConvPlan& plan, int nd, int lead) {
  Shape shape{plan.y_dims[0]};
  for (int i = 0; i < nd; ++i) {
    shape.push_back(plan.y_dims[2 + lead + i]);
  }
  shape.push_back(plan.y_dims[1]);
  return shape;
}

// Where our output (a convolution's, or the cotangent shaped like it) lies inside cuDNN's y:
// the window's shape and both offsets.
struct Window {
  Shape shape;
  int64_t in_y = 0, in_ours = 0;
};
Window output_window(const CudnnConvPlan& plan, int nd, int lead, const array& y,
                     const array& ours) {
  Window w{ours.shape()};
  for (int i = 0; i < nd; ++i) {
    const int dim = lead + i, begin = plan.window_begin(dim);
    w.shape[i + 1] = plan.window_end(dim) - begin;
    w.in_y += (begin + plan.keep[dim]) * y.strides()[i + 1];
    w.in_ours += begin * ours.strides()[i + 1];
  }
  return w;
}

// Runs c's pass through the legacy calls, choosing its algorithm at the first run; false, with
// nothing run and c unusable from now on, where cuDNN has no algorithm or refuses it.
bool run_legacy(const CudnnApi& api, CudnnDevice& dev, CudnnConv& c, const ConvParams& p,
                const array& in, const array& wt, const void* x, const void* w, const void* y) {
  if (!c.chosen) {
    if (!choose_algorithm(api, dev.handle, c, x, w, y)) {
      c.usable = false;
      debug_line(msg("own kernels (no cuDNN ", pass_name(c.pass), " algorithm for it)"), p, in, wt);
      return false;
    }
    c.chosen = true;
    debug_line(
        msg("cuDNN ", pass_name(c.pass), " algorithm ", c.algo, cudnn_find() ? " (timed)" : "",
            ", workspace ", c.workspace, c.plan.crops_input() ? ", cropped input" : "",
            c.plan.temp_output() ? ", temporary output" : ""),
        p, in, wt);
  }
  Scratch workspace(c.workspace);
  cudnnStatus_t status = run_pass(api, dev.handle, c, x, w, y, workspace.as<void>());
  if (not_supported(status)) {
    // Nothing ran: this geometry goes to our own kernels from now on.
    c.usable = false;
    debug_line(msg("own kernels (cuDNN ", pass_name(c.pass), ": ", api.GetErrorString(status), ")"),
               p, in, wt);
    return false;
  }
  cudnn_check(status, "cudnnConvolution", "conv");
  return true;
}

// Runs the convolution (or, with `filter_pass`, the weight derivative: wt is then the
// derivative, written, and out the cotangent, read) through cuDNN where it applies (operands
// dense, the written one allocated); false leaves it to our own kernels.
bool cudnn_convolution(const ConvParams& p, bool filter_pass, const array& in, array& wt,
                       array& out) {
  const CudnnApi* api = cudnn_enabled() ? cudnn_api() : nullptr;
  CudnnDevice* dev = api ? cudnn_device(current_device()) : nullptr;
  if (!dev) {
    return false;
  }
  std::lock_guard<std::mutex> lock(dev->mutex);
  static std::mutex cache_mutex;
  static auto* cache = new std::map<std::vector<int64_t>, std::unique_ptr<CudnnConv>>();
  auto key = cache_key(current_device(), filter_pass, p, in, wt, out);
  CudnnConv* c = nullptr;
  {
    std::lock_guard<std::mutex> cache_lock(cache_mutex);
    auto it = cache->find(key);
    c = it == cache->end() ? nullptr : it->second.get();
  }
  if (!c) {
    auto made = make_cudnn_conv(*api, filter_pass, p, in, wt, out);
    c = made.get();
    std::lock_guard<std::mutex> cache_lock(cache_mutex);
    (*cache)[key] = std::move(made);
  }
  if (!c->usable) {
    return false;
  }
  const CudnnConvPlan& plan = c->plan;
  const int nd = static_cast<int>(in.ndim()) - 2;
  const int lead = static_cast<int>(plan.x_dims.size()) - 2 - nd;  // unit dimensions in front
  // Negative padding: the input's cropped region, dense.
  std::optional<array> cropped;
  if (plan.crops_input()) {
    Shape shape = in.shape();
    int64_t offset = 0;
    for (int i = 0; i < nd; ++i) {
      shape[i + 1] -= plan.crop[lead + i];
      offset += plan.crop[lead + i] * in.strides()[i + 1];
    }
    cropped = scratch_array(shape, in.dtype());
    copy_strided(in, in.strides(), offset, *cropped, cropped->strides(), 0, shape);
  }
  // Backward data's filter: (G, Og, taps, Cg) -> (G, Cg, taps, Og).
  std::optional<array> transposed;
  if (plan.transpose_weight) {
    const int64_t G = p.groups, Og = wt.shape(0) / G, Cg = wt.shape(-1);
    const int64_t T = static_cast<int64_t>(wt.size()) / (wt.shape(0) * Cg);
    Shape shape = wt.shape();
    shape.front() = static_cast<int32_t>(G * Cg);
    shape.back() = static_cast<int32_t>(Og);
    transposed = scratch_array(shape, wt.dtype());
    copy_strided(wt, {Og * T * Cg, 1, Cg, T * Cg}, 0, *transposed, {Cg * T * Og, T * Og, Og, 1}, 0,
                 {static_cast<int32_t>(G), static_cast<int32_t>(Cg), static_cast<int32_t>(T),
                  static_cast<int32_t>(Og)});
  }
  // cuDNN's y, when ours is a window of it: the forward pass writes it and the window is copied
  // out; the filter pass reads it, the cotangent copied in and zeros around it (the cotangent
  // of outputs outside y multiplies only padding).
  std::optional<array> temp;
  std::optional<Window> window;
  if (plan.temp_output()) {
    temp = scratch_array(y_shape(plan, nd, lead), out.dtype());
    window = output_window(plan, nd, lead, *temp, out);
    if (filter_pass) {
      MLX_CUDA_CHECK(cudaMemsetAsync(temp->gpu_data<char>(), 0, temp->nbytes(), stream()));
      copy_strided(out, out.strides(), window->in_ours, *temp, temp->strides(), window->in_y,
                   window->shape);
    }
  }
  const void* x = (cropped ? *cropped : in).gpu_data<char>();
  const void* w = (transposed ? *transposed : wt).gpu_data<char>();
  const void* y = (temp ? *temp : out).gpu_data<char>();
  cudnn_set_stream(*api, *dev, stream(), "conv");
  if (!c->graph_tried) {
    c->graph_tried = true;
    if (conv_graphs_enabled() && in.dtype() != float32) {
      std::string why;
      c->graph = make_conv_graph(dev->handle, plan, c->pass, in.dtype(), x, w, y, &why);
      debug_line(c->graph ? msg("cuDNN graph, ", pass_name(c->pass), " engine ",
                                conv_graph_engine(*c->graph))
                          : msg("cuDNN legacy call (no graph: ", why, ")"),
                 p, in, wt);
    }
  }
  if (c->graph) {
    try {
      run_conv_graph(*c->graph, dev->handle, x, w, y);
      detail::count_path("CudnnConvGraph");
    } catch (const std::runtime_error& e) {
      // A plan that cannot execute ran nothing: this geometry takes the legacy calls from now.
      debug_line(msg("cuDNN legacy call (graph failed: ", e.what(), ")"), p, in, wt);
      c->graph.reset();
    }
  }
  if (!c->graph && !run_legacy(*api, *dev, *c, p, in, wt, x, w, y)) {
    return false;
  }
  if (temp && !filter_pass) {
    // Our output j is y's j + keep; zero where y does not reach.
    if (plan.zero_fill()) {
      MLX_CUDA_CHECK(cudaMemsetAsync(out.gpu_data<char>(), 0, out.nbytes(), stream()));
    }
    copy_strided(*temp, temp->strides(), window->in_y, out, out.strides(), window->in_ours,
                 window->shape);
  }
  detail::count_path(filter_pass ? "ConvWeightGrad:cudnn" : "Convolution:cudnn");
  return true;
}

// Runs the first path that takes an evaluation (see the file's comment): the depthwise kernels
// where `depthwise` (they apply) and cuDNN has not been asked first (MLX_CUDA_CONV=cudnn), else
// cudnn() (true where cuDNN ran it; it counts its own path), else the depthwise kernels where
// they apply, else im2col(); counted as `depthwise_path` or `im2col_path`.
template <typename Cudnn, typename Depthwise, typename Im2col>
void run_first_path(bool depthwise, const char* depthwise_path, const char* im2col_path,
                    Cudnn&& cudnn, Depthwise&& run_depthwise, Im2col&& im2col) {
  if ((!depthwise || conv_paths() == ConvPaths::cudnn_first) && cudnn()) {
    return;
  }
  if (depthwise) {
    run_depthwise();
    detail::count_path(depthwise_path);
  } else {
    im2col();
    detail::count_path(im2col_path);
  }
}

}  // namespace

void ConvWeightGrad::eval_gpu(const std::vector<array>& inputs, array& out) {
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  array in = dense_copy(inputs[0]);
  array cot = dense_copy(inputs[1]);
  // The output has the weight's shape and the cotangent the convolution output's.
  const ConvGeometry g = conv_geometry(params_, in, out, cot);
  if (g.N * g.X == 0 || g.Cg == 0) {
    MLX_CUDA_CHECK(cudaMemsetAsync(out.gpu_data<char>(), 0, out.nbytes(), cu::stream()));
    return;
  }
  run_first_path(
      depthwise_weight_grad_supported(g), "ConvWeightGrad:depthwise", "ConvWeightGrad:im2col",
      [&] { return cudnn_convolution(params_, /*filter_pass=*/true, in, out, cot); },
      [&] { depthwise_weight_grad(g, in, cot, out); },
      [&] {
        dispatch_float<DeviceTypes>(out.dtype(), "ConvWeightGrad",
                                    [&]<typename T>() { im2col_weight_grad<T>(g, in, cot, out); });
      });
}

void Convolution::eval_gpu(const std::vector<array>& inputs, array& out) {
  cu::allocate(out);
  if (out.size() == 0) {
    return;
  }
  array in = dense_copy(inputs[0]);
  array wt = dense_copy(inputs[1]);
  const ConvGeometry g = conv_geometry(params_, in, wt, out);
  if (g.Cg == 0) {
    MLX_CUDA_CHECK(cudaMemsetAsync(out.gpu_data<char>(), 0, out.nbytes(), cu::stream()));
    return;
  }
  run_first_path(
      depthwise_conv_supported(g), "Convolution:depthwise", "Convolution:im2col",
      [&] { return cudnn_convolution(params_, /*filter_pass=*/false, in, wt, out); },
      [&] { depthwise_conv(g, in, wt, out); },
      [&] {
        dispatch_float<DeviceTypes>(out.dtype(), "conv",
                                    [&]<typename T>() { im2col_conv<T>(g, in, wt, out); });
      });
}

}  // namespace mlx::core

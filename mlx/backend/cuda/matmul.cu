// Matmul, AddMM and MatmulColumnSums on the GPU: floating types through cuBLASLt (row-major
// products as column-major ones of the transposes; batches as one strided-batched call when
// their offsets are regular; TF32 for float32 under MLX_ENABLE_TF32), integers through a simple
// kernel. Operands are read in place when their last two dimensions are row- or column-major.
// A bias row is added, and a Linear layer's bias gradient summed, by cuBLASLt's epilogues.
// MLX_GEMM_AUTOTUNE=1 times the heuristics' candidate algorithms on each shape's first call.
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "mlx/backend/common/matmul_epilogue_fallbacks.h"
#include "mlx/backend/common/views.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/elementwise.cuh"
#include "mlx/backend/cuda/elementwise_ops.cuh"
#include "mlx/backend/cuda/gemm.h"
#include "mlx/backend/cuda/tf32.h"
#include "mlx/primitives/linalg.h"
#include "mlx/primitives/reduction.h"
#include "mlx/runtime/kernel_counter.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using namespace cu;

// One operand: in-place layout (transposed or not, leading dimension) and batch offsets.
struct Operand {
  const array* a;
  array dense;              // row-major copy when the memory cannot be read in place
  bool transposed = false;  // stored column-major
  int64_t ld = 0;
};

// Rows r and columns c with strides (sr, sc): readable by BLAS when one stride is 1 and the
// other spans the matrix.
bool blas_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool* transposed,
                 int64_t* ld) {
  if (sc == 1 && (sr >= std::max<int64_t>(cols, 1) || rows == 1)) {
    *transposed = false;
    *ld = std::max<int64_t>(rows == 1 ? cols : sr, 1);
    return true;
  }
  if (sr == 1 && (sc >= std::max<int64_t>(rows, 1) || cols == 1)) {
    *transposed = true;
    *ld = std::max<int64_t>(cols == 1 ? rows : sc, 1);
    return true;
  }
  return false;
}

struct Batches {
  int64_t count = 1;
  int64_t a_stride = 0, b_stride = 0;  // elements between consecutive batches (regular case)
  bool regular = true;
  std::vector<int64_t> a_off, b_off;
};

Batches batch_offsets(const array& a, const array& b) {
  Batches bt;
  int nb = a.ndim() - 2;
  for (int d = 0; d < nb; ++d) {
    bt.count *= a.shape(d);
  }
  std::vector<int32_t> idx(std::max(nb, 1), 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < bt.count; ++i) {
    bt.a_off.push_back(oa);
    bt.b_off.push_back(ob);
    for (int d = nb - 1; d >= 0; --d) {
      oa += a.strides()[d];
      ob += b.strides()[d];
      if (++idx[d] < a.shape(d)) {
        break;
      }
      oa -= a.shape(d) * a.strides()[d];
      ob -= a.shape(d) * b.strides()[d];
      idx[d] = 0;
    }
  }
  if (bt.count > 1) {
    bt.a_stride = bt.a_off[1] - bt.a_off[0];
    bt.b_stride = bt.b_off[1] - bt.b_off[0];
    for (int64_t i = 1; i < bt.count && bt.regular; ++i) {
      bt.regular = bt.a_off[i] == i * bt.a_stride && bt.b_off[i] == i * bt.b_stride;
    }
  }
  return bt;
}

cudaDataType_t cuda_type(Dtype dt) {
  switch (dt.val) {
    case Dtype::Val::float16:
      return CUDA_R_16F;
    case Dtype::Val::bfloat16:
      return CUDA_R_16BF;
    case Dtype::Val::float32:
      return CUDA_R_32F;
    case Dtype::Val::float64:
      return CUDA_R_64F;
    case Dtype::Val::complex64:
      return CUDA_C_32F;
    default:
      throw std::invalid_argument(msg("[matmul] No cuBLASLt type for ", dt, "."));
  }
}

// Column-major D[m, n] = alpha * op(A)[m, k] op(B)[k, n] + beta * C, batched. A and B are of
// `type`, C and D of `out_type` (float32 for a widened product of 16-bit operands, else `type`).
struct GemmShape {
  cudaDataType_t type;
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc, batch, sa, sb, sc;
  // Byte alignment of the A, B and C pointers: views can start anywhere, and cuBLASLt assumes
  // 256-byte aligned operands unless told otherwise.
  uint32_t align_a = 256, align_b = 256, align_c = 256;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  uint32_t align_bias = 256, align_aux = 256;
  int64_t aux_ld = 0;
  cudaDataType_t out_type = CUDA_R_32F;
  cudaDataType_t bias_type = CUDA_R_32F;  // the bias (or its gradient) vector's
  auto key() const {
    return std::make_tuple(int(type), int(out_type), ta, tb, m, n, k, lda, ldb, ldc, batch, sa, sb,
                           sc, align_a, align_b, align_c, int(epilogue), align_bias, int(bias_type),
                           align_aux, aux_ld);
  }
};

// What cuBLASLt does besides the product: add a bias vector (length m of the column-major
// product, broadcast over its columns and batches) or write the sums of A over k (the bias
// gradient), at `bias`, of dtype `bias_dtype` (cuBLASLt's default is D's type); apply the
// tanh-approximated GELU (after the bias, if any: GELU, GELU_BIAS); or multiply the product by
// GELU's derivative at `aux`, a matrix laid out as D with leading dimension `aux_ld` (DGELU).
struct Epilogue {
  cublasLtEpilogue_t kind = CUBLASLT_EPILOGUE_DEFAULT;
  void* bias = nullptr;
  Dtype bias_dtype = float32;
  const void* aux = nullptr;
  int64_t aux_ld = 0;
};

uint32_t alignment(const void* p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  return v == 0 ? 256u : static_cast<uint32_t>(std::min<uintptr_t>(256, v & (~v + 1)));
}

// cuBLASLt's algorithm type is an unnamed struct, which nvcc cannot keep in a std::vector.
struct Algorithm {
  cublasLtMatmulAlgo_t algo;
};

struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;  // an epilogue may have no algorithm for this shape
  // With MLX_GEMM_AUTOTUNE=1: the heuristics' algorithms, timed on the first call (`algo` is
  // the fastest from then on).
  std::vector<Algorithm> candidates;
  bool tuned = false;
  // With an epilogue the descriptor holds the bias pointer of the call being issued.
  std::unique_ptr<std::mutex> call_mutex = std::make_unique<std::mutex>();
};

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                                   int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l;
  MLX_CUDA_CHECK(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    MLX_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                    sizeof(count)));
    MLX_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                    &stride, sizeof(stride)));
  }
  return l;
}

// Points the descriptor at the call's epilogue operands.
void set_epilogue_pointers(cublasLtMatmulDesc_t desc, const Epilogue& e) {
  MLX_CUDA_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &e.bias,
                                                sizeof(e.bias)));
  if (e.aux != nullptr) {
    MLX_CUDA_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                                  &e.aux, sizeof(e.aux)));
  }
}

// Whether products time cuBLASLt's candidate algorithms on their first call
// (MLX_GEMM_AUTOTUNE=1; off by default until measured against the heuristics' first).
bool gemm_autotune() {
  static const bool on = [] {
    const char* v = std::getenv("MLX_GEMM_AUTOTUNE");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}
constexpr int kAutotuneCandidates = 8;
// Products whose output is larger are not timed: the timing writes to scratch of its size.
constexpr size_t kAutotuneMaxOutputBytes = size_t(256) << 20;

// Plans are cached by shape: a training step asks for the same few products every step.
GemmPlan& gemm_plan(const GemmShape& g, const Epilogue& epilogue) {
  static std::mutex mutex;
  static std::map<decltype(g.key()), GemmPlan> plans;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(g.key());
  if (it != plans.end()) {
    return it->second;
  }
  GemmPlan p;
  cublasComputeType_t compute = g.type == CUDA_R_64F ? CUBLAS_COMPUTE_64F
                                : (g.type == CUDA_R_32F && tf32_enabled())
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = g.type == CUDA_R_64F   ? CUDA_R_64F
                         : g.type == CUDA_C_32F ? CUDA_C_32F
                                                : CUDA_R_32F;
  MLX_CUDA_CHECK(cublasLtMatmulDescCreate(&p.desc, compute, scale));
  cublasOperation_t opa = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opb = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  MLX_CUDA_CHECK(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
  MLX_CUDA_CHECK(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
  if (g.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    // The heuristic reads the bias and aux pointers' alignment from the descriptor.
    MLX_CUDA_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                  &g.epilogue, sizeof(g.epilogue)));
    set_epilogue_pointers(p.desc, epilogue);
    if (epilogue.aux != nullptr) {
      MLX_CUDA_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                    &g.aux_ld, sizeof(g.aux_ld)));
    }
    if (g.bias_type != g.out_type) {
      // A float32 bias gradient of a 16-bit product, or the reverse: where cuBLASLt lacks the
      // pair the heuristic finds no algorithm or calls the pair invalid (CUDA 13 on an H200),
      // and the caller falls back.
      MLX_CUDA_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                    &g.bias_type, sizeof(g.bias_type)));
    }
  }
  p.a = make_layout(g.type, g.ta ? g.k : g.m, g.ta ? g.m : g.k, g.lda, g.batch, g.sa);
  p.b = make_layout(g.type, g.tb ? g.n : g.k, g.tb ? g.k : g.n, g.ldb, g.batch, g.sb);
  p.c = make_layout(g.out_type, g.m, g.n, g.ldc, g.batch, g.sc);
  cublasLtMatmulPreference_t pref;
  MLX_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = DeviceContext::kCublasLtWorkspaceBytes;
  MLX_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, g.align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, g.align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, g.align_c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, g.align_c}};
  for (const auto& [attr, value] : aligns) {
    MLX_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
  }
  // Split-K partial sums must not be rounded to a 16-bit output type (the CPU rounds once).
  uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  MLX_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions, sizeof(reductions)));
  cublasLtMatmulHeuristicResult_t results[kAutotuneCandidates]{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      device(current_device()).cublaslt(), p.desc, p.a, p.b, p.c, p.c, pref,
      gemm_autotune() ? kAutotuneCandidates : 1, results, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  const cublasLtMatmulHeuristicResult_t& result = results[0];
  for (int i = 0; gemm_autotune() && i < found; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) {
      p.candidates.push_back({results[i].algo});
    }
  }
  if (g.epilogue == CUBLASLT_EPILOGUE_DEFAULT) {
    MLX_CUDA_CHECK(status);
    if (found == 0) {
      throw std::runtime_error(
          msg("[matmul] cuBLASLt has no algorithm for ", g.m, "x", g.n, "x", g.k, "."));
    }
  }
  p.found = status == CUBLAS_STATUS_SUCCESS && found > 0;
  p.algo = result.algo;
  return plans.emplace(g.key(), std::move(p)).first->second;
}

template <typename T>
__global__ void int_matmul(const T* a, const T* b, T* c, int64_t M, int64_t N, int64_t K,
                           int64_t a_sr, int64_t a_sc, int64_t b_sr, int64_t b_sc,
                           const int64_t* a_off, const int64_t* b_off) {
  const int64_t batch = blockIdx.z;
  const int64_t i = int64_t(blockIdx.y) * blockDim.y + threadIdx.y;
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) {
    return;
  }
  const T* pa = a + a_off[batch] + i * a_sr;
  const T* pb = b + b_off[batch] + j * b_sc;
  T acc = 0;
  for (int64_t k = 0; k < K; ++k) {
    if constexpr (std::is_same_v<T, bool>) {
      acc = acc || (pa[k * a_sc] && pb[k * b_sr]);
    } else {
      acc += pa[k * a_sc] * pb[k * b_sr];
    }
  }
  c[(batch * M + i) * N + j] = acc;
}

template <typename T>
__global__ void scale_kernel(T* x, int64_t n, float s) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    x[i] = cast_to<T>(op::up(x[i]) * s);
  }
}

void int_products(const array& a, const array& b, array& out) {
  int nd = a.ndim();
  Batches bt = batch_offsets(a, b);
  int64_t M = a.shape(-2), N = b.shape(-1), K = a.shape(-1);
  Scratch offs(sizeof(int64_t) * 2 * bt.count);
  int64_t* d_off = offs.as<int64_t>();
  std::vector<int64_t> host(bt.a_off);
  host.insert(host.end(), bt.b_off.begin(), bt.b_off.end());
  MLX_CUDA_CHECK(cudaMemcpyAsync(d_off, host.data(), sizeof(int64_t) * host.size(),
                                 cudaMemcpyHostToDevice, stream()));
  dim3 block(32, 8);
  dim3 grid((N + 31) / 32, (M + 7) / 8, static_cast<unsigned>(bt.count));
  dispatch_real<DeviceTypes>(out.dtype(), "matmul", [&]<typename T>() {
    if constexpr (!is_float_v<T>) {
      int_matmul<T><<<grid, block, 0, stream()>>>(
          a.gpu_data<T>(), b.gpu_data<T>(), out.gpu_data<T>(), M, N, K, a.strides()[nd - 2],
          a.strides()[nd - 1], b.strides()[nd - 2], b.strides()[nd - 1], d_off, d_off + bt.count);
    }
  });
  check_launch("matmul");
}

// Times each of the plan's candidate algorithms on the call's operands and keeps the fastest
// in plan.algo; `run(algo, d, epilogue)` issues the call with its output at d (scratch here:
// the call's output, which c may be, is left as it is; so is a bias gradient). Once per plan,
// under its call mutex.
using RunGemm = std::function<cublasStatus_t(const cublasLtMatmulAlgo_t&, char*, const Epilogue&)>;

void autotune(GemmPlan& plan, size_t out_bytes, int64_t bias_length, const Epilogue& epilogue,
              const RunGemm& run) {
  plan.tuned = true;
  if (plan.candidates.size() < 2 || out_bytes > kAutotuneMaxOutputBytes) {
    return;
  }
  Scratch d(out_bytes);
  const bool writes_bias =
      epilogue.kind == CUBLASLT_EPILOGUE_BGRADA || epilogue.kind == CUBLASLT_EPILOGUE_BGRADB;
  Scratch bias_sums(writes_bias ? bias_length * sizeof(double) : 0);
  Epilogue timed = epilogue;
  if (writes_bias) {
    timed.bias = bias_sums.as<void>();
  }
  cudaEvent_t start, stop;
  MLX_CUDA_CHECK(cudaEventCreate(&start));
  MLX_CUDA_CHECK(cudaEventCreate(&stop));
  float best = std::numeric_limits<float>::infinity();
  for (const auto& [algo] : plan.candidates) {
    if (run(algo, d.as<char>(), timed) != CUBLAS_STATUS_SUCCESS) {  // also the warm-up
      continue;
    }
    MLX_CUDA_CHECK(cudaEventRecord(start, stream()));
    constexpr int kRuns = 3;
    for (int i = 0; i < kRuns; ++i) {
      run(algo, d.as<char>(), timed);
    }
    MLX_CUDA_CHECK(cudaEventRecord(stop, stream()));
    MLX_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    MLX_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (ms < best) {
      best = ms;
      plan.algo = algo;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

// out (row-major, holding c when beta != 0) = alpha * a @ b + beta * out, with the epilogue's
// bias work on b (cuBLASLt's A). out has the operands' dtype, or float32 for float16 /
// bfloat16 operands (accumulated in float32 either way). False, with nothing done, when
// cuBLASLt has no algorithm for that epilogue.
bool products(const array& a_in, const array& b_in, array& out, float alpha, float beta,
              Epilogue epilogue = {}) {
  if (!is_floating_point(out.dtype()) && out.dtype() != complex64) {
    int_products(a_in, b_in, out);
    return true;
  }
  int nd = a_in.ndim();
  int64_t M = a_in.shape(-2), N = b_in.shape(-1), K = a_in.shape(-1);
  Batches bt = batch_offsets(a_in, b_in);
  // Operands BLAS cannot read in place, or irregular batches, go through row-major copies.
  auto prepare = [&](const array& x, int64_t rows, int64_t cols, bool* t, int64_t* ld) {
    if (blas_layout(rows, cols, x.strides()[nd - 2], x.strides()[nd - 1], t, ld) && bt.regular) {
      return x;
    }
    array dense(x.shape(), x.dtype(), nullptr, {});
    copy_to_contiguous(x, dense);
    *t = false;
    *ld = std::max<int64_t>(cols, 1);
    return dense;
  };
  bool ta = false, tb = false;
  int64_t lda = 0, ldb = 0;
  array a = prepare(a_in, M, K, &ta, &lda);
  array b = prepare(b_in, K, N, &tb, &ldb);
  bt = batch_offsets(a, b);
  int64_t batch = bt.count;
  // One shared b and rows of a that form one strided dimension: a single product.
  if (batch > 1 && bt.b_stride == 0 && !ta && bt.a_stride == M * lda) {
    M *= batch;
    batch = 1;
  }
  // Row-major C = A B is column-major C^T = B^T A^T: cuBLASLt's A is our b.
  GemmShape g{cuda_type(a.dtype()), tb,          ta,   N, M, K, ldb, lda, N, batch,
              bt.b_stride,          bt.a_stride, M * N};
  g.out_type = cuda_type(out.dtype());
  if (batch == 1) {
    g.sa = g.sb = g.sc = 0;
  }
  const char* pa_data = b.gpu_data<char>();
  const char* pb_data = a.gpu_data<char>();
  char* c = out.gpu_data<char>();
  g.align_a = alignment(pa_data);
  g.align_b = alignment(pb_data);
  g.align_c = alignment(c);
  g.epilogue = epilogue.kind;
  g.align_bias = alignment(epilogue.bias);
  g.align_aux = alignment(epilogue.aux);
  g.aux_ld = epilogue.aux_ld;
  g.bias_type =
      epilogue.kind == CUBLASLT_EPILOGUE_DEFAULT ? g.out_type : cuda_type(epilogue.bias_dtype);
  GemmPlan& plan = gemm_plan(g, epilogue);
  if (!plan.found) {
    return false;
  }
  DeviceContext& dev = device(current_device());
  void* ws = dev.cublaslt_workspace(stream());
  double alpha_d = alpha, beta_d = beta;
  complex_t alpha_c(alpha, 0.0f), beta_c(beta, 0.0f);
  const void* pa = g.type == CUDA_R_64F   ? static_cast<const void*>(&alpha_d)
                   : g.type == CUDA_C_32F ? static_cast<const void*>(&alpha_c)
                                          : static_cast<const void*>(&alpha);
  const void* pb = g.type == CUDA_R_64F   ? static_cast<const void*>(&beta_d)
                   : g.type == CUDA_C_32F ? static_cast<const void*>(&beta_c)
                                          : static_cast<const void*>(&beta);
  // c is read from out and the result written to d.
  auto run = [&](const cublasLtMatmulAlgo_t& algo, char* d, const Epilogue& e) {
    if (e.kind != CUBLASLT_EPILOGUE_DEFAULT) {
      set_epilogue_pointers(plan.desc, e);
    }
    return cublasLtMatmul(dev.cublaslt(), plan.desc, pa, pa_data, plan.a, pb_data, plan.b, pb, c,
                          plan.c, d, plan.c, &algo, ws, DeviceContext::kCublasLtWorkspaceBytes,
                          stream());
  };
  std::unique_lock<std::mutex> lock;
  if (epilogue.kind != CUBLASLT_EPILOGUE_DEFAULT || !plan.candidates.empty()) {
    lock = std::unique_lock<std::mutex>(*plan.call_mutex);
  }
  if (!plan.tuned && !plan.candidates.empty()) {
    autotune(plan, out.nbytes(), g.m, epilogue, run);
  }
  MLX_CUDA_CHECK(run(plan.algo, c, epilogue));
  return true;
}

}  // namespace

namespace cu {

void gemm(const array& a, const array& b, array& out) {
  if (out.size() == 0) {
    return;
  }
  if (a.shape(-1) == 0) {
    MLX_CUDA_CHECK(cudaMemsetAsync(out.gpu_data<char>(), 0, out.nbytes(), stream()));
    return;
  }
  products(a, b, out, 1.0f, 0.0f);
}

}  // namespace cu

void Matmul::eval_gpu(const std::vector<array>& inputs, array& out) {
  cu::allocate(out);
  cu::gemm(inputs[0], inputs[1], out);
}

void AddMM::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& c = inputs[0];
  const bool empty_product = out.size() == 0 || inputs[1].shape(-1) == 0;
  const Strides c_strides = broadcast_strides(c, out.shape());
  if (!empty_product && beta_ == 1 && c.shape() != out.shape() && c.flags().row_contiguous) {
    // A bias row added by cuBLASLt's epilogue: the product is written once, and c is never
    // spread to the output's shape.
    cu::allocate(out);
    if (products(inputs[1], inputs[2], out, alpha_, 0.0f,
                 {CUBLASLT_EPILOGUE_BIAS, const_cast<char*>(c.gpu_data<char>()), c.dtype()})) {
      return;
    }
    cu::copy_strided(c, c_strides, 0, out, out.strides(), 0, out.shape());
  } else if (beta_ != 0 && c.is_donatable() && c.flags().row_contiguous &&
             c.dtype() == out.dtype() && c.shape() == out.shape()) {
    out.copy_shared_buffer(c);
  } else {
    cu::allocate(out);
    if (beta_ != 0) {
      cu::copy_strided(c, c_strides, 0, out, out.strides(), 0, out.shape());
    }
  }
  if (out.size() == 0) {
    return;
  }
  if (inputs[1].shape(-1) == 0) {
    // An empty product: out = beta * c.
    if (beta_ == 0) {
      MLX_CUDA_CHECK(cudaMemsetAsync(out.gpu_data<char>(), 0, out.nbytes(), cu::stream()));
    } else if (beta_ != 1) {
      int64_t n = static_cast<int64_t>(out.size());
      dispatch_inexact<cu::DeviceTypes>(out.dtype(), "addmm", [&]<typename T>() {
        scale_kernel<T>
            <<<cu::blocks_for(n), cu::kThreads, 0, cu::stream()>>>(out.gpu_data<T>(), n, beta_);
      });
      cu::check_launch("addmm");
    }
    return;
  }
  products(inputs[1], inputs[2], out, alpha_, beta_);
}

void MatmulColumnSums::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& l = inputs[0];
  const array& r = inputs[1];
  array& product = outputs[0];
  array& sums = outputs[1];
  cu::allocate(product);
  cu::allocate(sums);
  // Either output may be float32 for 16-bit operands (float32_outputs_): D's type and the bias
  // gradient's are set apart.
  if (product.size() > 0 && r.shape(0) > 0 && is_floating_point(product.dtype()) &&
      products(l, r, product, 1.0f, 0.0f,
               {CUBLASLT_EPILOGUE_BGRADA, sums.gpu_data<char>(), sums.dtype()})) {
    detail::count_path("MatmulColumnSums:epilogue");
    return;  // r is cuBLASLt's A, summed over k: its rows
  }
  detail::count_path("MatmulColumnSums:gemm+reduce");
  cu::gemm(l, r, product);
  Reduce(stream(), Reduce::Sum, {0}).eval_gpu({r}, sums);
}

// Runs a primitive of a fused step's fallback (matmul_epilogue_fallbacks.h).
constexpr auto run_on_gpu = [](UnaryPrimitive& p, const std::vector<array>& in, array& o) {
  p.eval_gpu(in, o);
};

void MatmulGeluApprox::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array &a = inputs[0], &b = inputs[1];
  const bool bias = inputs.size() == 3;
  if (out.size() > 0 && a.shape(1) > 0 && out.dtype() != float64 &&
      (!bias || inputs[2].flags().row_contiguous)) {
    cu::allocate(out);
    Epilogue gelu{bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU,
                  bias ? const_cast<char*>(inputs[2].gpu_data<char>()) : nullptr, out.dtype()};
    if (products(a, b, out, 1.0f, 0.0f, gelu)) {
      detail::count_path("MatmulGeluApprox:epilogue");
      return;
    }
  }
  detail::count_path("MatmulGeluApprox:gemm+gelu");
  matmul_then_gelu_approx(stream(), inputs, out, run_on_gpu);
}

void MatmulGeluApproxVjp::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array &a = inputs[0], &b = inputs[1], &x = inputs[2];
  // DGELU reads x laid out as the product (row-major, N a multiple of 8).
  if (out.size() > 0 && a.shape(1) > 0 && out.dtype() != float64 && x.flags().row_contiguous &&
      b.shape(1) % 8 == 0) {
    cu::allocate(out);
    if (products(a, b, out, 1.0f, 0.0f,
                 {CUBLASLT_EPILOGUE_DGELU, nullptr, out.dtype(), x.gpu_data<char>(), b.shape(1)})) {
      detail::count_path("MatmulGeluApproxVjp:epilogue");
      return;
    }
  }
  detail::count_path("MatmulGeluApproxVjp:gemm+vjp");
  matmul_then_gelu_approx_vjp(stream(), inputs, out, run_on_gpu);
}

}  // namespace mlx::core

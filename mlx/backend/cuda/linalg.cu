// The LAPACK-style linalg primitives (primitives/linalg_lapack.h) through cuSOLVER's 64-bit
// API. cuSOLVER is column-major, so a row-major matrix arrives as its transpose: symmetric
// inputs (Cholesky, Eigh) and inverses ((A^T)^-1 = (A^-1)^T) use that as it is, the SVD of a
// wide matrix swaps its factors, and the rest transpose through copies. Failures come back as
// LAPACK info words, one per matrix: an op waits for its calls once and the first failure
// raises the CPU kernels' message (lapack_common.h). Inputs with a zero dimension take the
// CPU kernel.
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <climits>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <vector>

#include "mlx/backend/common/lapack_common.h"
#include "mlx/backend/cuda/copy.cuh"
#include "mlx/backend/cuda/cuda_check.h"
#include "mlx/backend/cuda/device_types.cuh"
#include "mlx/backend/cuda/host_fallback.h"
#include "mlx/backend/cuda/kernel_utils.cuh"
#include "mlx/primitives/linalg_lapack.h"

namespace mlx::core {

namespace {

using namespace cu;

void check_solver(cusolverStatus_t status, const char* call) {
  if (status != CUSOLVER_STATUS_SUCCESS) {
    throw_cuda_error(call, "cuSOLVER status " + std::to_string(static_cast<int>(status)));
  }
}
#define MLX_CUSOLVER_CHECK(call) check_solver((call), #call)

struct Solver {
  std::mutex mutex;  // one op at a time: it sets the stream, issues its calls, waits for them
  cusolverDnHandle_t handle = nullptr;
  cusolverDnParams_t params = nullptr;
  cublasHandle_t blas = nullptr;  // cuBLAS's batched small-matrix LU
};

Solver& solver(int device) {
  static std::mutex mutex;
  static auto* solvers = new std::vector<std::unique_ptr<Solver>>();  // leaked, as the devices
  std::lock_guard<std::mutex> lock(mutex);
  if (solvers->size() <= static_cast<size_t>(device)) {
    solvers->resize(device + 1);
  }
  auto& s = (*solvers)[device];
  if (!s) {
    auto made = std::make_unique<Solver>();
    use_device(device);
    MLX_CUSOLVER_CHECK(cusolverDnCreate(&made->handle));
    MLX_CUSOLVER_CHECK(cusolverDnCreateParams(&made->params));
    MLX_CUDA_CHECK(cublasCreate(&made->blas));
    s = std::move(made);
  }
  return *s;
}

template <typename T>
constexpr cudaDataType kDataType = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;

// Row-major upper is column-major lower.
cublasFillMode_t fill_of_row_major(bool upper) {
  return upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
}

// One op's use of its device's solver: the handle on the task's stream, workspaces, and two
// info words per matrix, `info` (failures the op reports) and `arg_info` (argument checks of
// follow-up calls, which would overwrite a failure).
class SolverCall {
 public:
  SolverCall(const char* op, int64_t count)
      : op_(op),
        solver_(solver(std::max(current().device, 0))),
        lock_(solver_.mutex),
        count_(count),
        info_(2 * sizeof(int) * std::max<int64_t>(count, 1)) {
    MLX_CUSOLVER_CHECK(cusolverDnSetStream(solver_.handle, stream()));
    MLX_CUDA_CHECK(cublasSetStream(solver_.blas, stream()));
    MLX_CUDA_CHECK(cudaMemsetAsync(info_.as<int>(), 0, 2 * sizeof(int) * count_, stream()));
  }
  cusolverDnHandle_t handle() const { return solver_.handle; }
  cusolverDnParams_t params() const { return solver_.params; }
  cublasHandle_t blas() const { return solver_.blas; }
  int* info(int64_t i) const { return info_.as<int>() + i; }
  int* arg_info(int64_t i) const { return info_.as<int>() + count_ + i; }

  // Device and host workspaces of at least these sizes (the same for every matrix of an op).
  void reserve(size_t device_bytes, size_t host_bytes) {
    if (device_bytes > device_bytes_) {
      device_work_ = std::make_unique<Scratch>(device_bytes);
      device_bytes_ = device_bytes;
    }
    host_work_.resize(std::max(host_work_.size(), host_bytes));
  }
  void* device_work() const { return device_work_ ? device_work_->as<void>() : nullptr; }
  size_t device_bytes() const { return device_bytes_; }
  void* host_work() { return host_work_.empty() ? nullptr : host_work_.data(); }
  size_t host_bytes() const { return host_work_.size(); }

  // Waits for the op's calls and raises the first failure; positive infos count as failures
  // only when `positive_fails` (LU reports a zero pivot but its factors are still valid).
  void finish(bool positive_fails = true) {
    std::vector<int> info(2 * count_);
    MLX_CUDA_CHECK(cudaMemcpyAsync(info.data(), info_.as<int>(), info.size() * sizeof(int),
                                   cudaMemcpyDeviceToHost, stream()));
    MLX_CUDA_CHECK(cudaStreamSynchronize(stream()));
    for (int64_t i = 0; i < 2 * count_; ++i) {
      if (info[i] < 0) {
        throw std::runtime_error(lapack_rejected(op_, info[i]));
      }
      if (info[i] > 0 && positive_fails && i < count_) {
        throw std::invalid_argument(lapack_failure(op_, info[i]));
      }
    }
  }

 private:
  const char* op_;
  Solver& solver_;
  std::lock_guard<std::mutex> lock_;
  int64_t count_;
  Scratch info_;
  std::unique_ptr<Scratch> device_work_;
  size_t device_bytes_ = 0;
  std::vector<char> host_work_;
};

// getrf of `count` column-major m x n matrices, m * n apart from f (leading dimension m); each
// one's min(m, n) pivots go to ipiv, its failure to call.info(i).
template <typename T>
void factor_lu(SolverCall& call, T* f, int64_t m, int64_t n, int64_t count, int64_t* ipiv) {
  const cudaDataType type = kDataType<T>;
  size_t dw = 0, hw = 0;
  MLX_CUSOLVER_CHECK(
      cusolverDnXgetrf_bufferSize(call.handle(), call.params(), m, n, type, f, m, type, &dw, &hw));
  call.reserve(dw, hw);
  for (int64_t i = 0; i < count; ++i) {
    MLX_CUSOLVER_CHECK(cusolverDnXgetrf(call.handle(), call.params(), m, n, type, f + i * m * n, m,
                                        ipiv + i * std::min(m, n), type, call.device_work(),
                                        call.device_bytes(), call.host_work(), call.host_bytes(),
                                        call.info(i)));
  }
}

// op(A_i) X_i = B_i for the n x n factors of factor_lu and column-major n x nrhs right-hand
// sides b (overwritten by X).
template <typename T>
void solve_lu(SolverCall& call, cublasOperation_t op, const T* f, int64_t n, const int64_t* ipiv,
              T* b, int64_t nrhs, int64_t count) {
  const cudaDataType type = kDataType<T>;
  for (int64_t i = 0; i < count; ++i) {
    MLX_CUSOLVER_CHECK(cusolverDnXgetrs(call.handle(), call.params(), op, n, nrhs, type,
                                        f + i * n * n, n, ipiv + i * n, type, b + i * n * nrhs, n,
                                        call.arg_info(i)));
  }
}

// orgqr has no 64-bit form: the typed one.
template <typename T>
struct Orgqr;
template <>
struct Orgqr<float> {
  static constexpr auto buffer_size = cusolverDnSorgqr_bufferSize;
  static constexpr auto run = cusolverDnSorgqr;
};
template <>
struct Orgqr<double> {
  static constexpr auto buffer_size = cusolverDnDorgqr_bufferSize;
  static constexpr auto run = cusolverDnDorgqr;
};

int64_t matrices(const array& a) {
  const int64_t m = a.shape(-2), n = a.shape(-1);
  return m * n == 0 ? 0 : static_cast<int64_t>(a.size()) / (m * n);
}

int as_int(int64_t v, const char* op) {
  if (v > INT_MAX) {
    throw std::invalid_argument(msg("[", op, "] A dimension of ", v, " is too large."));
  }
  return static_cast<int>(v);
}

// Batches of small matrices: one cuBLAS / cuSOLVER call for the whole batch instead of one
// call per matrix (a 64 x 32 x 32 inverse took 4.5 ms through the loop, 12x PyTorch).
constexpr int64_t kBatchedMaxN = 64;
bool batched(int64_t n, int64_t count) { return count > 1 && n <= kBatchedMaxN; }

// ptrs[i] = base + i * stride: the pointer arrays the batched APIs take.
template <typename T>
__global__ void matrix_pointers(T* base, int64_t stride, int64_t count, T** ptrs) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    ptrs[i] = base + i * stride;
  }
}

template <typename T>
struct BatchedBlas;
template <>
struct BatchedBlas<float> {
  static constexpr auto getrf = cublasSgetrfBatched;
  static constexpr auto getrs = cublasSgetrsBatched;
  static constexpr auto potrf = cusolverDnSpotrfBatched;
};
template <>
struct BatchedBlas<double> {
  static constexpr auto getrf = cublasDgetrfBatched;
  static constexpr auto getrs = cublasDgetrsBatched;
  static constexpr auto potrf = cusolverDnDpotrfBatched;
};

// ptrs (count device pointers) = `count` matrices `stride` elements apart from base.
template <typename T>
void point_to(const Scratch& ptrs, T* base, int64_t stride, int64_t count) {
  matrix_pointers<T>
      <<<blocks_for(count), kThreads, 0, cu::stream()>>>(base, stride, count, ptrs.as<T*>());
  check_launch("linalg batched pointers");
}

// factor_lu then solve_lu for n x n matrices (n <= kBatchedMaxN), each step one batched call:
// f is overwritten by the factors, b (column-major n x nrhs each) by the solutions.
template <typename T>
void lu_solve_batched(SolverCall& call, cublasOperation_t op, T* f, int64_t n, T* b, int64_t nrhs,
                      int64_t count, const char* name) {
  const int in = as_int(n, name), batch = as_int(count, name), k = as_int(nrhs, name);
  Scratch ipiv(sizeof(int) * count * n);
  Scratch fs(sizeof(T*) * count), bs(sizeof(T*) * count);
  point_to(fs, f, n * n, count);
  point_to(bs, b, n * nrhs, count);
  MLX_CUDA_CHECK(
      BatchedBlas<T>::getrf(call.blas(), in, fs.as<T*>(), in, ipiv.as<int>(), call.info(0), batch));
  int arg_info = 0;  // getrs checks its arguments on the host
  MLX_CUDA_CHECK(BatchedBlas<T>::getrs(call.blas(), op, in, k, fs.as<T*>(), in, ipiv.as<int>(),
                                       bs.as<T*>(), in, &arg_info, batch));
  if (arg_info < 0) {
    throw std::runtime_error(lapack_rejected(name, arg_info));
  }
}

// op(A_i) X_i = B_i for `count` column-major n x n matrices f (overwritten by their factors)
// and right-hand sides b (n x nrhs each, overwritten by X): batched for small matrices, else
// one getrf / getrs per matrix.
template <typename T>
void lu_solve(SolverCall& call, cublasOperation_t op, T* f, int64_t n, T* b, int64_t nrhs,
              int64_t count, const char* name) {
  if (batched(n, count)) {
    lu_solve_batched(call, op, f, n, b, nrhs, count, name);
    return;
  }
  Scratch ipiv(sizeof(int64_t) * count * n);
  factor_lu(call, f, n, n, count, ipiv.as<int64_t>());
  solve_lu(call, op, f, n, ipiv.as<int64_t>(), b, nrhs, count);
}

array device_array(Shape shape, Dtype dtype) {
  array a(std::move(shape), dtype, nullptr, {});
  allocate(a);
  return a;
}

// A row-contiguous device copy that the factorization may overwrite.
array work_copy(const array& in) {
  array w(in.shape(), in.dtype(), nullptr, {});
  copy_to_contiguous(in, w);
  return w;
}

// dst (allocated, (count, cols, rows)) = every row-major rows x cols matrix of the dense src
// transposed: the column-major layout cuSOLVER reads, or back to row-major.
void transpose_into(const array& src, int64_t rows, int64_t cols, array& dst) {
  const int64_t count = matrices(dst);
  copy_strided(
      src, {rows * cols, 1, cols}, 0, dst, {rows * cols, rows, 1}, 0,
      {static_cast<int32_t>(count), static_cast<int32_t>(cols), static_cast<int32_t>(rows)});
}

array transposed(const array& src, int64_t rows, int64_t cols) {
  array t = device_array(
      {static_cast<int32_t>(matrices(src)), static_cast<int32_t>(cols), static_cast<int32_t>(rows)},
      src.dtype());
  transpose_into(dense_copy(src), rows, cols, t);
  return t;
}

template <typename T>
__global__ void keep_triangle(T* a, int64_t total, int64_t n, bool upper) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / n % n, c = i % n;
    if (upper ? c < r : c > r) {
      a[i] = T(0);
    }
  }
}

template <typename T>
__global__ void fill_identity(T* a, int64_t total, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    a[i] = i / n % n == i % n ? T(1) : T(0);
  }
}

// info[b] = 1 + the first position of a zero on matrix b's diagonal (untouched when none), the
// failure LAPACK's potri reports for a singular Cholesky factor.
template <typename T>
__global__ void first_zero_diagonal(const T* a, int64_t count, int64_t n, int* info) {
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < count;
       b += int64_t(gridDim.x) * blockDim.x) {
    for (int64_t j = 0; j < n; ++j) {
      if (a[(b * n + j) * n + j] == T(0)) {
        info[b] = static_cast<int>(j + 1);
        break;
      }
    }
  }
}

// r (row-major k x n) from the upper triangle of geqrf's column-major m x n factors.
template <typename T>
__global__ void extract_r(const T* f, T* r, int64_t total, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / (k * n), row = i / n % k, col = i % n;
    r[i] = col < row ? T(0) : f[b * m * n + col * m + row];
  }
}

// From getrf's 1-based row interchanges: the 0-based pivots and p with A = (L U)[p]. One
// thread per matrix; `rows` holds m entries per matrix of scratch.
__global__ void lu_permutation(const int64_t* ipiv, uint32_t* piv, uint32_t* p, uint32_t* rows,
                               int64_t count, int64_t m, int64_t k) {
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < count;
       b += int64_t(gridDim.x) * blockDim.x) {
    uint32_t* order = rows + b * m;
    for (int64_t r = 0; r < m; ++r) {
      order[r] = static_cast<uint32_t>(r);
    }
    for (int64_t r = 0; r < k; ++r) {
      const uint32_t q = static_cast<uint32_t>(ipiv[b * k + r] - 1);
      piv[b * k + r] = q;
      const uint32_t t = order[r];
      order[r] = order[q];
      order[q] = t;
    }
    // Row r of L U is row order[r] of A.
    for (int64_t r = 0; r < m; ++r) {
      p[b * m + order[r]] = static_cast<uint32_t>(r);
    }
  }
}

// info[b] = -1 (rejected, as the CPU kernel does) when matrix b holds a NaN or an infinity:
// geev's balancing step is not made for them.
template <typename T>
__global__ void flag_non_finite(const T* a, int64_t total, int64_t per_matrix, int* info) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (!isfinite(a[i])) {
      info[i / per_matrix] = -1;
    }
  }
}

// geev's real output as complex64: eigenvalue j is (wr[j], wi[j]); a conjugate pair (j, j + 1)
// stores its vector's real and imaginary parts in columns j and j + 1 of the column-major vr
// (the second of the pair is the conjugate). v is row-major, one eigenvector per column.
template <typename T>
__global__ void eig_to_complex(const T* w, const T* vr, complex_t* values, complex_t* vectors,
                               int64_t count, int64_t n) {
  const int64_t total = count * n * (vectors ? n : 1);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % n, b = vectors ? i / (n * n) : i / n;
    const T* wr = w + b * 2 * n;
    const T* wi = wr + n;
    if (!vectors) {
      values[i] = complex_t(static_cast<float>(wr[j]), static_cast<float>(wi[j]));
      continue;
    }
    const int64_t row = i / n % n;
    const T* v = vr + b * n * n;
    if (row == 0) {
      values[b * n + j] = complex_t(static_cast<float>(wr[j]), static_cast<float>(wi[j]));
    }
    const bool first = wi[j] > T(0) && j + 1 < n, second = wi[j] != T(0) && !first;
    float re, im;
    if (first) {
      re = v[j * n + row], im = v[(j + 1) * n + row];
    } else if (second) {
      re = v[(j - 1) * n + row], im = -v[j * n + row];
    } else {
      re = v[j * n + row], im = 0.f;
    }
    vectors[i] = complex_t(re, im);
  }
}

template <typename T>
void zero_other_triangle(array& a, bool upper) {
  const int64_t n = a.shape(-1);
  keep_triangle<T>
      <<<blocks_for(a.size()), kThreads, 0, stream()>>>(a.gpu_data<T>(), a.size(), n, upper);
  check_launch("linalg");
}

template <typename T>
void set_identity(array& a) {
  fill_identity<T>
      <<<blocks_for(a.size()), kThreads, 0, stream()>>>(a.gpu_data<T>(), a.size(), a.shape(-1));
  check_launch("linalg");
}

// The CPU kernel, for inputs with a zero dimension.
template <typename P, typename Outs>
bool degenerate_on_host(P& prim, const std::vector<array>& inputs, Outs& outs) {
  for (auto& in : inputs) {
    if (in.size() == 0) {
      inputs_to_host(inputs);
      prim.eval_cpu(inputs, outs);
      return true;
    }
  }
  return false;
}

}  // namespace

void Inverse::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (degenerate_on_host(*this, inputs, out)) {
    return;
  }
  const array& a = inputs[0];
  const int64_t n = a.shape(-1), count = matrices(a);
  dispatch_lapack(a.dtype(), "linalg::inv", [&]<typename T>() {
    SolverCall call("linalg::inv", count);
    const cudaDataType type = kDataType<T>;
    const cublasFillMode_t fill = fill_of_row_major(upper_);
    size_t dw = 0, hw = 0;
    switch (kind_) {
      case Kind::General: {
        // (A^T)^-1 in column-major is A^-1 in row-major: solve A^T X = I with A^T's factors.
        array lu = work_copy(a);
        allocate(out);
        set_identity<T>(out);
        lu_solve(call, CUBLAS_OP_N, lu.gpu_data<T>(), n, out.gpu_data<T>(), n, count,
                 "linalg::inv");
        call.finish();
        break;
      }
      case Kind::Triangular: {
        copy_to_contiguous(a, out);
        zero_other_triangle<T>(out, upper_);
        MLX_CUSOLVER_CHECK(cusolverDnXtrtri_bufferSize(call.handle(), fill, CUBLAS_DIAG_NON_UNIT, n,
                                                       type, out.gpu_data<T>(), n, &dw, &hw));
        call.reserve(dw, hw);
        for (int64_t i = 0; i < count; ++i) {
          MLX_CUSOLVER_CHECK(cusolverDnXtrtri(call.handle(), fill, CUBLAS_DIAG_NON_UNIT, n, type,
                                              out.gpu_data<T>() + i * n * n, n, call.device_work(),
                                              call.device_bytes(), call.host_work(),
                                              call.host_bytes(), call.info(i)));
        }
        call.finish();
        break;
      }
      case Kind::Cholesky: {
        // (L L^T)^-1 by solving against I with the factor; potri's zero-diagonal check first.
        array factor = dense_copy(a);
        first_zero_diagonal<T><<<blocks_for(count), kThreads, 0, cu::stream()>>>(
            factor.gpu_data<T>(), count, n, call.info(0));
        check_launch("linalg::inv");
        allocate(out);
        set_identity<T>(out);
        for (int64_t i = 0; i < count; ++i) {
          MLX_CUSOLVER_CHECK(cusolverDnXpotrs(call.handle(), call.params(), fill, n, n, type,
                                              factor.gpu_data<T>() + i * n * n, n, type,
                                              out.gpu_data<T>() + i * n * n, n, call.arg_info(i)));
        }
        call.finish();
        break;
      }
    }
  });
}

void Cholesky::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (degenerate_on_host(*this, inputs, out)) {
    return;
  }
  const int64_t n = inputs[0].shape(-1), count = matrices(inputs[0]);
  dispatch_lapack(inputs[0].dtype(), "linalg::cholesky", [&]<typename T>() {
    SolverCall call("linalg::cholesky", count);
    copy_to_contiguous(inputs[0], out);
    const cudaDataType type = kDataType<T>;
    const cublasFillMode_t fill = fill_of_row_major(upper_);
    if (batched(n, count)) {
      Scratch ptrs(sizeof(T*) * count);
      point_to(ptrs, out.gpu_data<T>(), n * n, count);
      const int in = as_int(n, "linalg::cholesky");
      MLX_CUSOLVER_CHECK(BatchedBlas<T>::potrf(call.handle(), fill, in, ptrs.as<T*>(), in,
                                               call.info(0), as_int(count, "linalg::cholesky")));
    } else {
      size_t dw = 0, hw = 0;
      MLX_CUSOLVER_CHECK(cusolverDnXpotrf_bufferSize(call.handle(), call.params(), fill, n, type,
                                                     out.gpu_data<T>(), n, type, &dw, &hw));
      call.reserve(dw, hw);
      for (int64_t i = 0; i < count; ++i) {
        MLX_CUSOLVER_CHECK(cusolverDnXpotrf(call.handle(), call.params(), fill, n, type,
                                            out.gpu_data<T>() + i * n * n, n, type,
                                            call.device_work(), call.device_bytes(),
                                            call.host_work(), call.host_bytes(), call.info(i)));
      }
    }
    zero_other_triangle<T>(out, upper_);
    call.finish();
  });
}

void Solve::eval_gpu(const std::vector<array>& inputs, array& out) {
  if (degenerate_on_host(*this, inputs, out)) {
    return;
  }
  const array& a = inputs[0];
  const int64_t n = a.shape(-1), k = out.shape(-1), count = matrices(a);
  dispatch_lapack(a.dtype(), "linalg::solve", [&]<typename T>() {
    SolverCall call("linalg::solve", count);
    // The factors are A^T's (column-major A): A X = B is a transposed solve, with B and X
    // column-major.
    array lu = work_copy(a);
    array x = transposed(inputs[1], n, k);
    lu_solve(call, CUBLAS_OP_T, lu.gpu_data<T>(), n, x.gpu_data<T>(), k, count, "linalg::solve");
    allocate(out);
    transpose_into(x, k, n, out);
    call.finish();
  });
}

void QRF::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (degenerate_on_host(*this, inputs, outputs)) {
    return;
  }
  const array& in = inputs[0];
  const int64_t m = in.shape(-2), n = in.shape(-1), k = std::min(m, n), count = matrices(in);
  dispatch_lapack(in.dtype(), "linalg::qr", [&]<typename T>() {
    SolverCall call("linalg::qr", count);
    const cudaDataType type = kDataType<T>;
    array f = transposed(in, m, n);  // column-major m x n, leading dimension m
    Scratch tau(sizeof(T) * count * k);
    size_t dw = 0, hw = 0;
    MLX_CUSOLVER_CHECK(cusolverDnXgeqrf_bufferSize(call.handle(), call.params(), m, n, type,
                                                   f.gpu_data<T>(), m, type, tau.as<T>(), type, &dw,
                                                   &hw));
    const int mi = as_int(m, "linalg::qr"), ki = as_int(k, "linalg::qr");
    int lwork = 0;
    MLX_CUSOLVER_CHECK(
        Orgqr<T>::buffer_size(call.handle(), mi, ki, ki, f.gpu_data<T>(), mi, tau.as<T>(), &lwork));
    call.reserve(std::max(dw, sizeof(T) * lwork), hw);
    for (int64_t i = 0; i < count; ++i) {
      MLX_CUSOLVER_CHECK(cusolverDnXgeqrf(call.handle(), call.params(), m, n, type,
                                          f.gpu_data<T>() + i * m * n, m, type, tau.as<T>() + i * k,
                                          type, call.device_work(), call.device_bytes(),
                                          call.host_work(), call.host_bytes(), call.info(i)));
    }
    array& q = outputs[0];
    array& r = outputs[1];
    allocate(r);
    extract_r<T><<<blocks_for(r.size()), kThreads, 0, cu::stream()>>>(
        f.gpu_data<T>(), r.gpu_data<T>(), r.size(), m, n, k);
    check_launch("linalg::qr");
    for (int64_t i = 0; i < count; ++i) {
      MLX_CUSOLVER_CHECK(Orgqr<T>::run(call.handle(), mi, ki, ki, f.gpu_data<T>() + i * m * n, mi,
                                       tau.as<T>() + i * k, static_cast<T*>(call.device_work()),
                                       lwork, call.arg_info(i)));
    }
    // Q is the first k columns of the column-major factors.
    allocate(q);
    copy_strided(f, {m * n, 1, m}, 0, q, {m * k, k, 1}, 0,
                 {static_cast<int32_t>(count), static_cast<int32_t>(m), static_cast<int32_t>(k)});
    call.finish();
  });
}

void SVD::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (degenerate_on_host(*this, inputs, outputs)) {
    return;
  }
  const array& in = inputs[0];
  const int64_t m = in.shape(-2), n = in.shape(-1), k = std::min(m, n), count = matrices(in);
  for (auto& o : outputs) {
    allocate(o);
  }
  array& s = outputs[compute_uv_ ? 1 : 0];
  dispatch_lapack(in.dtype(), "linalg::svd", [&]<typename T>() {
    SolverCall call("linalg::svd", count);
    const cudaDataType type = kDataType<T>;
    const signed char job = compute_uv_ ? 'A' : 'N';
    // gesvd takes column-major matrices with at least as many rows as columns. A wide A is
    // given as it is (column-major A^T = U' S V'^T, so U = V' and V^T = U'^T, which are the
    // row-major readings of V'^T and U'); a tall one is transposed, and so are its factors.
    const bool wide = n >= m;
    const int64_t rows = wide ? n : m, cols = wide ? m : n;
    array a = wide ? work_copy(in) : transposed(in, m, n);
    std::optional<array> uc, vc;
    if (compute_uv_ && !wide) {
      uc = device_array(
          {static_cast<int32_t>(count), static_cast<int32_t>(m), static_cast<int32_t>(m)},
          in.dtype());
      vc = device_array(
          {static_cast<int32_t>(count), static_cast<int32_t>(n), static_cast<int32_t>(n)},
          in.dtype());
    }
    // The factor buffers gesvd writes for matrix i (rows x rows and cols x cols).
    auto left = [&](int64_t i) -> T* {
      if (!compute_uv_) {
        return nullptr;
      }
      return wide ? outputs[2].gpu_data<T>() + i * n * n : uc->gpu_data<T>() + i * m * m;
    };
    auto right = [&](int64_t i) -> T* {
      if (!compute_uv_) {
        return nullptr;
      }
      return wide ? outputs[0].gpu_data<T>() + i * m * m : vc->gpu_data<T>() + i * n * n;
    };
    size_t dw = 0, hw = 0;
    MLX_CUSOLVER_CHECK(cusolverDnXgesvd_bufferSize(
        call.handle(), call.params(), job, job, rows, cols, type, a.gpu_data<T>(), rows, type,
        s.gpu_data<T>(), type, left(0), rows, type, right(0), cols, type, &dw, &hw));
    call.reserve(dw, hw);
    for (int64_t i = 0; i < count; ++i) {
      MLX_CUSOLVER_CHECK(
          cusolverDnXgesvd(call.handle(), call.params(), job, job, rows, cols, type,
                           a.gpu_data<T>() + i * m * n, rows, type, s.gpu_data<T>() + i * k, type,
                           left(i), rows, type, right(i), cols, type, call.device_work(),
                           call.device_bytes(), call.host_work(), call.host_bytes(), call.info(i)));
    }
    if (compute_uv_ && !wide) {
      transpose_into(*uc, m, m, outputs[0]);
      transpose_into(*vc, n, n, outputs[2]);
    }
    call.finish();
  });
}

void Eigh::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (degenerate_on_host(*this, inputs, outputs)) {
    return;
  }
  const array& in = inputs[0];
  const int64_t n = in.shape(-1), count = matrices(in);
  array& w = outputs[0];
  allocate(w);
  dispatch_lapack(in.dtype(), "linalg::eigh", [&]<typename T>() {
    SolverCall call("linalg::eigh", count);
    const cudaDataType type = kDataType<T>;
    const cusolverEigMode_t jobz =
        compute_vectors_ ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    const cublasFillMode_t fill = fill_of_row_major(upper_);
    array a = work_copy(in);
    size_t dw = 0, hw = 0;
    MLX_CUSOLVER_CHECK(cusolverDnXsyevd_bufferSize(call.handle(), call.params(), jobz, fill, n,
                                                   type, a.gpu_data<T>(), n, type, w.gpu_data<T>(),
                                                   type, &dw, &hw));
    call.reserve(dw, hw);
    for (int64_t i = 0; i < count; ++i) {
      MLX_CUSOLVER_CHECK(cusolverDnXsyevd(
          call.handle(), call.params(), jobz, fill, n, type, a.gpu_data<T>() + i * n * n, n, type,
          w.gpu_data<T>() + i * n, type, call.device_work(), call.device_bytes(), call.host_work(),
          call.host_bytes(), call.info(i)));
    }
    if (compute_vectors_) {
      // Column-major eigenvectors read row-major are V^T.
      allocate(outputs[1]);
      transpose_into(a, n, n, outputs[1]);
    }
    call.finish();
  });
}

void Eig::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (degenerate_on_host(*this, inputs, outputs)) {
    return;
  }
  const array& in = inputs[0];
  const int64_t n = in.shape(-1), count = matrices(in);
  for (auto& o : outputs) {
    allocate(o);
  }
  dispatch_lapack(in.dtype(), "linalg::eig", [&]<typename T>() {
    SolverCall call("linalg::eig", count);
    const cudaDataType type = kDataType<T>;
    const cusolverEigMode_t jobvr =
        compute_vectors_ ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    array a = transposed(in, n, n);  // column-major A (A^T has other right eigenvectors)
    flag_non_finite<T><<<blocks_for(a.size()), kThreads, 0, cu::stream()>>>(
        a.gpu_data<T>(), a.size(), n * n, call.info(0));
    check_launch("linalg::eig");
    call.finish();                         // raises for non-finite entries before geev sees them
    Scratch w(sizeof(T) * count * 2 * n);  // per matrix: n real parts, then n imaginary parts
    Scratch vr(compute_vectors_ ? sizeof(T) * count * n * n : 0);
    T* vr0 = compute_vectors_ ? vr.as<T>() : nullptr;
    size_t dw = 0, hw = 0;
    MLX_CUSOLVER_CHECK(cusolverDnXgeev_bufferSize(
        call.handle(), call.params(), CUSOLVER_EIG_MODE_NOVECTOR, jobvr, n, type, a.gpu_data<T>(),
        n, type, w.as<T>(), type, nullptr, 1, type, vr0, n, type, &dw, &hw));
    call.reserve(dw, hw);
    for (int64_t i = 0; i < count; ++i) {
      MLX_CUSOLVER_CHECK(cusolverDnXgeev(
          call.handle(), call.params(), CUSOLVER_EIG_MODE_NOVECTOR, jobvr, n, type,
          a.gpu_data<T>() + i * n * n, n, type, w.as<T>() + i * 2 * n, type, nullptr, 1, type,
          compute_vectors_ ? vr0 + i * n * n : nullptr, n, type, call.device_work(),
          call.device_bytes(), call.host_work(), call.host_bytes(), call.info(i)));
    }
    const int64_t total = count * n * (compute_vectors_ ? n : 1);
    eig_to_complex<T><<<blocks_for(total), kThreads, 0, cu::stream()>>>(
        w.as<T>(), vr0, outputs[0].gpu_data<complex_t>(),
        compute_vectors_ ? outputs[1].gpu_data<complex_t>() : nullptr, count, n);
    check_launch("linalg::eig");
    call.finish();
  });
}

void LUF::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (degenerate_on_host(*this, inputs, outputs)) {
    return;
  }
  const array& in = inputs[0];
  const int64_t m = in.shape(-2), n = in.shape(-1), k = std::min(m, n), count = matrices(in);
  dispatch_lapack(in.dtype(), "linalg::lu", [&]<typename T>() {
    SolverCall call("linalg::lu", count);
    array f = transposed(in, m, n);  // column-major m x n
    Scratch ipiv(sizeof(int64_t) * count * k);
    factor_lu(call, f.gpu_data<T>(), m, n, count, ipiv.as<int64_t>());
    for (auto& o : outputs) {
      allocate(o);
    }
    transpose_into(f, n, m, outputs[0]);
    Scratch rows(sizeof(uint32_t) * count * m);
    lu_permutation<<<blocks_for(count), kThreads, 0, cu::stream()>>>(
        ipiv.as<int64_t>(), outputs[1].gpu_data<uint32_t>(), outputs[2].gpu_data<uint32_t>(),
        rows.as<uint32_t>(), count, m, k);
    check_launch("linalg::lu");
    call.finish(false);
  });
}

}  // namespace mlx::core

// cuBLASLt, cuBLAS, cuSOLVER, cuFFT and NVRTC, opened at their first call instead of at load
// time. Loading them costs about 250 MB of resident memory and 70 ms (cuBLASLt's static
// initialisation alone is about 150 MB), which a process that never uses the GPU, or not these
// libraries, should not pay. Each function the backend calls is defined here with the
// toolkit header's prototype (so a mismatch does not compile) and forwards to the library's
// own, found by dlsym on first use. MLX_<NAME>_LIBNAME (e.g. MLX_CUBLASLT_LIBNAME) names a
// library to use instead; otherwise the loader's search path, then this build's toolkit.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#ifdef MLX_CUDA_HAS_CUSOLVER
#include <cusolverDn.h>
#endif
#ifdef MLX_CUDA_HAS_CUFFT
#include <cufft.h>
#endif
#ifdef MLX_CUDA_HAS_NVRTC
#include <nvrtc.h>
#endif

#include <stdexcept>
#include <string>

#include "mlx/backend/common/dynamic_library.h"
#include "mlx/backend/cuda/nvrtc.h"

namespace {

using mlx::core::DynamicLibrary;

// The library `soname` of the toolkit, opened once.
DynamicLibrary& toolkit_library(const char* env, const std::string& soname) {
  return *new DynamicLibrary(env, {soname, std::string(MLX_CUDA_LIBRARY_DIR) + "/" + soname},
                             RTLD_NOW | RTLD_LOCAL);  // leaked: used until the process exits
}

#define MLX_TOOLKIT_LIBRARY(fn, env, soname)                   \
  DynamicLibrary& fn() {                                       \
    static DynamicLibrary& lib = toolkit_library(env, soname); \
    return lib;                                                \
  }
MLX_TOOLKIT_LIBRARY(cublaslt, "MLX_CUBLASLT_LIBNAME",
                    "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR))
MLX_TOOLKIT_LIBRARY(cublas, "MLX_CUBLAS_LIBNAME",
                    "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR))
#ifdef MLX_CUDA_HAS_CUSOLVER
MLX_TOOLKIT_LIBRARY(cusolver, "MLX_CUSOLVER_LIBNAME",
                    "libcusolver.so." + std::to_string(CUSOLVER_VER_MAJOR))
#endif
#ifdef MLX_CUDA_HAS_CUFFT
MLX_TOOLKIT_LIBRARY(cufft, "MLX_CUFFT_LIBNAME", "libcufft.so." + std::to_string(CUFFT_VER_MAJOR))
#endif
#ifdef MLX_CUDA_HAS_NVRTC
// NVRTC's soname carries the CUDA major version.
MLX_TOOLKIT_LIBRARY(nvrtc, "MLX_NVRTC_LIBNAME",
                    "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000))
#endif
#undef MLX_TOOLKIT_LIBRARY

// The library's own `name`, of type F; throws, naming the library and why, when it is missing.
template <typename F>
F lazy_symbol(DynamicLibrary& lib, const char* name) {
  F f = nullptr;
  lib.sym(f, name);
  if (f == nullptr) {
    throw std::runtime_error(
        mlx::core::msg("[cuda] ", name, " is unavailable: ", lib.error,
                       " (the CUDA toolkit's libraries are opened at first use)"));
  }
  return f;
}

}  // namespace

// The body of a forwarding definition: `MLX_LAZY(lib, name)(args);` calls lib's own name.
#define MLX_LAZY(lib, name)                                                   \
  static const auto lazy_##name = lazy_symbol<decltype(&name)>(lib(), #name); \
  return lazy_##name

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  MLX_LAZY(cublaslt, cublasLtCreate)(lightHandle);
}
cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                              const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                              const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                              const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  MLX_LAZY(cublaslt, cublasLtMatmul)
  (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
   workspaceSizeInBytes, stream);
}
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
  MLX_LAZY(cublaslt, cublasLtMatmulAlgoGetHeuristic)
  (lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount,
   heuristicResultsArray, returnAlgoCount);
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
                                        cublasComputeType_t computeType, cudaDataType_t scaleType) {
  MLX_LAZY(cublaslt, cublasLtMatmulDescCreate)(matmulDesc, computeType, scaleType);
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t sizeInBytes) {
  MLX_LAZY(cublaslt, cublasLtMatmulDescSetAttribute)(matmulDesc, attr, buf, sizeInBytes);
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  MLX_LAZY(cublaslt, cublasLtMatmulPreferenceCreate)(pref);
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  MLX_LAZY(cublaslt, cublasLtMatmulPreferenceDestroy)(pref);
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t sizeInBytes) {
  MLX_LAZY(cublaslt, cublasLtMatmulPreferenceSetAttribute)(pref, attr, buf, sizeInBytes);
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  MLX_LAZY(cublaslt, cublasLtMatrixLayoutCreate)(matLayout, type, rows, cols, ld);
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  MLX_LAZY(cublaslt, cublasLtMatrixLayoutSetAttribute)(matLayout, attr, buf, sizeInBytes);
}

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  MLX_LAZY(cublas, cublasCreate_v2)(handle);
}
cublasStatus_t cublasDgetrfBatched(cublasHandle_t handle, int n, double* const A[], int lda, int* P,
                                   int* info, int batchSize) {
  MLX_LAZY(cublas, cublasDgetrfBatched)(handle, n, A, lda, P, info, batchSize);
}
cublasStatus_t cublasDgetrsBatched(cublasHandle_t handle, cublasOperation_t trans, int n, int nrhs,
                                   const double* const Aarray[], int lda, const int* devIpiv,
                                   double* const Barray[], int ldb, int* info, int batchSize) {
  MLX_LAZY(cublas, cublasDgetrsBatched)
  (handle, trans, n, nrhs, Aarray, lda, devIpiv, Barray, ldb, info, batchSize);
}
const char* cublasGetStatusString(cublasStatus_t status) {
  MLX_LAZY(cublas, cublasGetStatusString)(status);
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  MLX_LAZY(cublas, cublasSetStream_v2)(handle, streamId);
}
cublasStatus_t cublasSgetrfBatched(cublasHandle_t handle, int n, float* const A[], int lda, int* P,
                                   int* info, int batchSize) {
  MLX_LAZY(cublas, cublasSgetrfBatched)(handle, n, A, lda, P, info, batchSize);
}
cublasStatus_t cublasSgetrsBatched(cublasHandle_t handle, cublasOperation_t trans, int n, int nrhs,
                                   const float* const Aarray[], int lda, const int* devIpiv,
                                   float* const Barray[], int ldb, int* info, int batchSize) {
  MLX_LAZY(cublas, cublasSgetrsBatched)
  (handle, trans, n, nrhs, Aarray, lda, devIpiv, Barray, ldb, info, batchSize);
}

#ifdef MLX_CUDA_HAS_CUSOLVER
cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t* handle) {
  MLX_LAZY(cusolver, cusolverDnCreate)(handle);
}
cusolverStatus_t cusolverDnCreateParams(cusolverDnParams_t* params) {
  MLX_LAZY(cusolver, cusolverDnCreateParams)(params);
}
cusolverStatus_t cusolverDnDorgqr(cusolverDnHandle_t handle, int m, int n, int k, double* A,
                                  int lda, const double* tau, double* work, int lwork, int* info) {
  MLX_LAZY(cusolver, cusolverDnDorgqr)(handle, m, n, k, A, lda, tau, work, lwork, info);
}
cusolverStatus_t cusolverDnDorgqr_bufferSize(cusolverDnHandle_t handle, int m, int n, int k,
                                             const double* A, int lda, const double* tau,
                                             int* lwork) {
  MLX_LAZY(cusolver, cusolverDnDorgqr_bufferSize)(handle, m, n, k, A, lda, tau, lwork);
}
cusolverStatus_t cusolverDnDpotrfBatched(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n,
                                         double* Aarray[], int lda, int* infoArray, int batchSize) {
  MLX_LAZY(cusolver, cusolverDnDpotrfBatched)(handle, uplo, n, Aarray, lda, infoArray, batchSize);
}
cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t streamId) {
  MLX_LAZY(cusolver, cusolverDnSetStream)(handle, streamId);
}
cusolverStatus_t cusolverDnSorgqr(cusolverDnHandle_t handle, int m, int n, int k, float* A, int lda,
                                  const float* tau, float* work, int lwork, int* info) {
  MLX_LAZY(cusolver, cusolverDnSorgqr)(handle, m, n, k, A, lda, tau, work, lwork, info);
}
cusolverStatus_t cusolverDnSorgqr_bufferSize(cusolverDnHandle_t handle, int m, int n, int k,
                                             const float* A, int lda, const float* tau,
                                             int* lwork) {
  MLX_LAZY(cusolver, cusolverDnSorgqr_bufferSize)(handle, m, n, k, A, lda, tau, lwork);
}
cusolverStatus_t cusolverDnSpotrfBatched(cusolverDnHandle_t handle, cublasFillMode_t uplo, int n,
                                         float* Aarray[], int lda, int* infoArray, int batchSize) {
  MLX_LAZY(cusolver, cusolverDnSpotrfBatched)(handle, uplo, n, Aarray, lda, infoArray, batchSize);
}
cusolverStatus_t cusolverDnXgeev(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                 cusolverEigMode_t jobvl, cusolverEigMode_t jobvr, int64_t n,
                                 cudaDataType dataTypeA, void* A, int64_t lda,
                                 cudaDataType dataTypeW, void* W, cudaDataType dataTypeVL, void* VL,
                                 int64_t ldvl, cudaDataType dataTypeVR, void* VR, int64_t ldvr,
                                 cudaDataType computeType, void* bufferOnDevice,
                                 size_t workspaceInBytesOnDevice, void* bufferOnHost,
                                 size_t workspaceInBytesOnHost, int* info) {
  MLX_LAZY(cusolver, cusolverDnXgeev)
  (handle, params, jobvl, jobvr, n, dataTypeA, A, lda, dataTypeW, W, dataTypeVL, VL, ldvl,
   dataTypeVR, VR, ldvr, computeType, bufferOnDevice, workspaceInBytesOnDevice, bufferOnHost,
   workspaceInBytesOnHost, info);
}
cusolverStatus_t cusolverDnXgeev_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, cusolverEigMode_t jobvl,
    cusolverEigMode_t jobvr, int64_t n, cudaDataType dataTypeA, const void* A, int64_t lda,
    cudaDataType dataTypeW, const void* W, cudaDataType dataTypeVL, const void* VL, int64_t ldvl,
    cudaDataType dataTypeVR, const void* VR, int64_t ldvr, cudaDataType computeType,
    size_t* workspaceInBytesOnDevice, size_t* workspaceInBytesOnHost) {
  MLX_LAZY(cusolver, cusolverDnXgeev_bufferSize)
  (handle, params, jobvl, jobvr, n, dataTypeA, A, lda, dataTypeW, W, dataTypeVL, VL, ldvl,
   dataTypeVR, VR, ldvr, computeType, workspaceInBytesOnDevice, workspaceInBytesOnHost);
}
cusolverStatus_t cusolverDnXgeqrf(cusolverDnHandle_t handle, cusolverDnParams_t params, int64_t m,
                                  int64_t n, cudaDataType dataTypeA, void* A, int64_t lda,
                                  cudaDataType dataTypeTau, void* tau, cudaDataType computeType,
                                  void* bufferOnDevice, size_t workspaceInBytesOnDevice,
                                  void* bufferOnHost, size_t workspaceInBytesOnHost, int* info) {
  MLX_LAZY(cusolver, cusolverDnXgeqrf)
  (handle, params, m, n, dataTypeA, A, lda, dataTypeTau, tau, computeType, bufferOnDevice,
   workspaceInBytesOnDevice, bufferOnHost, workspaceInBytesOnHost, info);
}
cusolverStatus_t cusolverDnXgeqrf_bufferSize(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                             int64_t m, int64_t n, cudaDataType dataTypeA,
                                             const void* A, int64_t lda, cudaDataType dataTypeTau,
                                             const void* tau, cudaDataType computeType,
                                             size_t* workspaceInBytesOnDevice,
                                             size_t* workspaceInBytesOnHost) {
  MLX_LAZY(cusolver, cusolverDnXgeqrf_bufferSize)
  (handle, params, m, n, dataTypeA, A, lda, dataTypeTau, tau, computeType, workspaceInBytesOnDevice,
   workspaceInBytesOnHost);
}
cusolverStatus_t cusolverDnXgesvd(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                  signed char jobu, signed char jobvt, int64_t m, int64_t n,
                                  cudaDataType dataTypeA, void* A, int64_t lda,
                                  cudaDataType dataTypeS, void* S, cudaDataType dataTypeU, void* U,
                                  int64_t ldu, cudaDataType dataTypeVT, void* VT, int64_t ldvt,
                                  cudaDataType computeType, void* bufferOnDevice,
                                  size_t workspaceInBytesOnDevice, void* bufferOnHost,
                                  size_t workspaceInBytesOnHost, int* info) {
  MLX_LAZY(cusolver, cusolverDnXgesvd)
  (handle, params, jobu, jobvt, m, n, dataTypeA, A, lda, dataTypeS, S, dataTypeU, U, ldu,
   dataTypeVT, VT, ldvt, computeType, bufferOnDevice, workspaceInBytesOnDevice, bufferOnHost,
   workspaceInBytesOnHost, info);
}
cusolverStatus_t cusolverDnXgesvd_bufferSize(
    cusolverDnHandle_t handle, cusolverDnParams_t params, signed char jobu, signed char jobvt,
    int64_t m, int64_t n, cudaDataType dataTypeA, const void* A, int64_t lda,
    cudaDataType dataTypeS, const void* S, cudaDataType dataTypeU, const void* U, int64_t ldu,
    cudaDataType dataTypeVT, const void* VT, int64_t ldvt, cudaDataType computeType,
    size_t* workspaceInBytesOnDevice, size_t* workspaceInBytesOnHost) {
  MLX_LAZY(cusolver, cusolverDnXgesvd_bufferSize)
  (handle, params, jobu, jobvt, m, n, dataTypeA, A, lda, dataTypeS, S, dataTypeU, U, ldu,
   dataTypeVT, VT, ldvt, computeType, workspaceInBytesOnDevice, workspaceInBytesOnHost);
}
cusolverStatus_t cusolverDnXgetrf(cusolverDnHandle_t handle, cusolverDnParams_t params, int64_t m,
                                  int64_t n, cudaDataType dataTypeA, void* A, int64_t lda,
                                  int64_t* ipiv, cudaDataType computeType, void* bufferOnDevice,
                                  size_t workspaceInBytesOnDevice, void* bufferOnHost,
                                  size_t workspaceInBytesOnHost, int* info) {
  MLX_LAZY(cusolver, cusolverDnXgetrf)
  (handle, params, m, n, dataTypeA, A, lda, ipiv, computeType, bufferOnDevice,
   workspaceInBytesOnDevice, bufferOnHost, workspaceInBytesOnHost, info);
}
cusolverStatus_t cusolverDnXgetrf_bufferSize(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                             int64_t m, int64_t n, cudaDataType dataTypeA,
                                             const void* A, int64_t lda, cudaDataType computeType,
                                             size_t* workspaceInBytesOnDevice,
                                             size_t* workspaceInBytesOnHost) {
  MLX_LAZY(cusolver, cusolverDnXgetrf_bufferSize)
  (handle, params, m, n, dataTypeA, A, lda, computeType, workspaceInBytesOnDevice,
   workspaceInBytesOnHost);
}
cusolverStatus_t cusolverDnXgetrs(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                  cublasOperation_t trans, int64_t n, int64_t nrhs,
                                  cudaDataType dataTypeA, const void* A, int64_t lda,
                                  const int64_t* ipiv, cudaDataType dataTypeB, void* B, int64_t ldb,
                                  int* info) {
  MLX_LAZY(cusolver, cusolverDnXgetrs)
  (handle, params, trans, n, nrhs, dataTypeA, A, lda, ipiv, dataTypeB, B, ldb, info);
}
cusolverStatus_t cusolverDnXpotrf(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                  cublasFillMode_t uplo, int64_t n, cudaDataType dataTypeA, void* A,
                                  int64_t lda, cudaDataType computeType, void* bufferOnDevice,
                                  size_t workspaceInBytesOnDevice, void* bufferOnHost,
                                  size_t workspaceInBytesOnHost, int* info) {
  MLX_LAZY(cusolver, cusolverDnXpotrf)
  (handle, params, uplo, n, dataTypeA, A, lda, computeType, bufferOnDevice,
   workspaceInBytesOnDevice, bufferOnHost, workspaceInBytesOnHost, info);
}
cusolverStatus_t cusolverDnXpotrf_bufferSize(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                             cublasFillMode_t uplo, int64_t n,
                                             cudaDataType dataTypeA, const void* A, int64_t lda,
                                             cudaDataType computeType,
                                             size_t* workspaceInBytesOnDevice,
                                             size_t* workspaceInBytesOnHost) {
  MLX_LAZY(cusolver, cusolverDnXpotrf_bufferSize)
  (handle, params, uplo, n, dataTypeA, A, lda, computeType, workspaceInBytesOnDevice,
   workspaceInBytesOnHost);
}
cusolverStatus_t cusolverDnXpotrs(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                  cublasFillMode_t uplo, int64_t n, int64_t nrhs,
                                  cudaDataType dataTypeA, const void* A, int64_t lda,
                                  cudaDataType dataTypeB, void* B, int64_t ldb, int* info) {
  MLX_LAZY(cusolver, cusolverDnXpotrs)
  (handle, params, uplo, n, nrhs, dataTypeA, A, lda, dataTypeB, B, ldb, info);
}
cusolverStatus_t cusolverDnXsyevd(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                  cusolverEigMode_t jobz, cublasFillMode_t uplo, int64_t n,
                                  cudaDataType dataTypeA, void* A, int64_t lda,
                                  cudaDataType dataTypeW, void* W, cudaDataType computeType,
                                  void* bufferOnDevice, size_t workspaceInBytesOnDevice,
                                  void* bufferOnHost, size_t workspaceInBytesOnHost, int* info) {
  MLX_LAZY(cusolver, cusolverDnXsyevd)
  (handle, params, jobz, uplo, n, dataTypeA, A, lda, dataTypeW, W, computeType, bufferOnDevice,
   workspaceInBytesOnDevice, bufferOnHost, workspaceInBytesOnHost, info);
}
cusolverStatus_t cusolverDnXsyevd_bufferSize(cusolverDnHandle_t handle, cusolverDnParams_t params,
                                             cusolverEigMode_t jobz, cublasFillMode_t uplo,
                                             int64_t n, cudaDataType dataTypeA, const void* A,
                                             int64_t lda, cudaDataType dataTypeW, const void* W,
                                             cudaDataType computeType,
                                             size_t* workspaceInBytesOnDevice,
                                             size_t* workspaceInBytesOnHost) {
  MLX_LAZY(cusolver, cusolverDnXsyevd_bufferSize)
  (handle, params, jobz, uplo, n, dataTypeA, A, lda, dataTypeW, W, computeType,
   workspaceInBytesOnDevice, workspaceInBytesOnHost);
}
cusolverStatus_t cusolverDnXtrtri(cusolverDnHandle_t handle, cublasFillMode_t uplo,
                                  cublasDiagType_t diag, int64_t n, cudaDataType dataTypeA, void* A,
                                  int64_t lda, void* bufferOnDevice,
                                  size_t workspaceInBytesOnDevice, void* bufferOnHost,
                                  size_t workspaceInBytesOnHost, int* devInfo) {
  MLX_LAZY(cusolver, cusolverDnXtrtri)
  (handle, uplo, diag, n, dataTypeA, A, lda, bufferOnDevice, workspaceInBytesOnDevice, bufferOnHost,
   workspaceInBytesOnHost, devInfo);
}
cusolverStatus_t cusolverDnXtrtri_bufferSize(cusolverDnHandle_t handle, cublasFillMode_t uplo,
                                             cublasDiagType_t diag, int64_t n,
                                             cudaDataType dataTypeA, void* A, int64_t lda,
                                             size_t* workspaceInBytesOnDevice,
                                             size_t* workspaceInBytesOnHost) {
  MLX_LAZY(cusolver, cusolverDnXtrtri_bufferSize)
  (handle, uplo, diag, n, dataTypeA, A, lda, workspaceInBytesOnDevice, workspaceInBytesOnHost);
}
#endif  // MLX_CUDA_HAS_CUSOLVER

#ifdef MLX_CUDA_HAS_CUFFT
cufftResult cufftCreate(cufftHandle* handle) { MLX_LAZY(cufft, cufftCreate)(handle); }
cufftResult cufftDestroy(cufftHandle plan) { MLX_LAZY(cufft, cufftDestroy)(plan); }
cufftResult cufftExecC2C(cufftHandle plan, cufftComplex* idata, cufftComplex* odata,
                         int direction) {
  MLX_LAZY(cufft, cufftExecC2C)(plan, idata, odata, direction);
}
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* idata, cufftReal* odata) {
  MLX_LAZY(cufft, cufftExecC2R)(plan, idata, odata);
}
cufftResult cufftExecR2C(cufftHandle plan, cufftReal* idata, cufftComplex* odata) {
  MLX_LAZY(cufft, cufftExecR2C)(plan, idata, odata);
}
cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long int* n,
                                long long int* inembed, long long int istride, long long int idist,
                                long long int* onembed, long long int ostride, long long int odist,
                                cufftType type, long long int batch, size_t* workSize) {
  MLX_LAZY(cufft, cufftMakePlanMany64)
  (plan, rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, workSize);
}
cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream) {
  MLX_LAZY(cufft, cufftSetStream)(plan, stream);
}
#endif  // MLX_CUDA_HAS_CUFFT

#ifdef MLX_CUDA_HAS_NVRTC
nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char* const name_expression) {
  MLX_LAZY(nvrtc, nvrtcAddNameExpression)(prog, name_expression);
}
nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char* const* options) {
  MLX_LAZY(nvrtc, nvrtcCompileProgram)(prog, numOptions, options);
}
nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name,
                               int numHeaders, const char* const* headers,
                               const char* const* includeNames) {
  MLX_LAZY(nvrtc, nvrtcCreateProgram)(prog, src, name, numHeaders, headers, includeNames);
}
nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) { MLX_LAZY(nvrtc, nvrtcDestroyProgram)(prog); }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  MLX_LAZY(nvrtc, nvrtcGetCUBIN)(prog, cubin);
}
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* cubinSizeRet) {
  MLX_LAZY(nvrtc, nvrtcGetCUBINSize)(prog, cubinSizeRet);
}
const char* nvrtcGetErrorString(nvrtcResult result) {
  MLX_LAZY(nvrtc, nvrtcGetErrorString)(result);
}
nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char* const name_expression,
                                const char** lowered_name) {
  MLX_LAZY(nvrtc, nvrtcGetLoweredName)(prog, name_expression, lowered_name);
}
nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log) {
  MLX_LAZY(nvrtc, nvrtcGetProgramLog)(prog, log);
}
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* logSizeRet) {
  MLX_LAZY(nvrtc, nvrtcGetProgramLogSize)(prog, logSizeRet);
}
nvrtcResult nvrtcVersion(int* major, int* minor) { MLX_LAZY(nvrtc, nvrtcVersion)(major, minor); }
#endif  // MLX_CUDA_HAS_NVRTC

#ifdef MLX_CUDA_HAS_NVRTC
namespace mlx::core::cu {

std::string nvrtc_library_file() {
  Dl_info info;
  void* f = nvrtc().address("nvrtcVersion");
  return f != nullptr && dladdr(f, &info) && info.dli_fname ? info.dli_fname : "";
}

}  // namespace mlx::core::cu
#endif  // MLX_CUDA_HAS_NVRTC

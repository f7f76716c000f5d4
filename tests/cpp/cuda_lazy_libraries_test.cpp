// The toolkit libraries the CUDA backend opens at first call (lazy_libraries.cpp): each one's
// forwarding reaches the real library, through functions that need no GPU. CUDA builds only.
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <string>
#ifdef MLX_CUDA_HAS_CUSOLVER
#include <cusolverDn.h>
#endif
#ifdef MLX_CUDA_HAS_CUFFT
#include <cufft.h>
#endif
#ifdef MLX_CUDA_HAS_NVRTC
#include <nvrtc.h>
#endif

namespace {

TEST(LazyToolkitLibraries, CublasForwards) {
  // cuBLAS's own descriptions ("success", "an unsupported value or parameter ...").
  const std::string ok = cublasGetStatusString(CUBLAS_STATUS_SUCCESS);
  const std::string bad = cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_FALSE(ok.empty());
  EXPECT_NE(ok, bad);
}

#ifdef MLX_CUDA_HAS_CUSOLVER
TEST(LazyToolkitLibraries, CusolverForwards) {
  cusolverDnParams_t params = nullptr;
  EXPECT_EQ(cusolverDnCreateParams(&params), CUSOLVER_STATUS_SUCCESS);  // host-side only
  EXPECT_NE(params, nullptr);
}
#endif

#ifdef MLX_CUDA_HAS_CUFFT
TEST(LazyToolkitLibraries, CufftForwards) {
  // cuFFT answers (a handle with a GPU, an error status without one) instead of the loader
  // throwing.
  cufftHandle plan = 0;
  cufftResult made = CUFFT_SUCCESS;
  ASSERT_NO_THROW(made = cufftCreate(&plan));
  if (made == CUFFT_SUCCESS) {
    EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
  }
}
#endif

#ifdef MLX_CUDA_HAS_NVRTC
TEST(LazyToolkitLibraries, NvrtcForwards) {
  int major = 0, minor = -1;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_GE(major, 12);
  EXPECT_EQ(std::string(nvrtcGetErrorString(NVRTC_ERROR_INVALID_INPUT)),
            "NVRTC_ERROR_INVALID_INPUT");
}
#endif

}  // namespace

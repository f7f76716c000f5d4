// The cuDNN loader and descriptors (backend/cuda/cudnn_api.h) where a cuDNN 9 library loads;
// no GPU needed: descriptors and their output sizes are host computations. Skipped without
// cuDNN (MLX_CUDNN_LIBNAME names one to load).
#include <gtest/gtest.h>

#include <random>

#include "mlx/backend/common/gpu_info.h"
#include "mlx/backend/cuda/cudnn_api.h"
#include "mlx/mlx.h"

namespace mlx::core::test {
namespace {

const cu::CudnnApi* api_or_skip_reason(std::string* why) {
  const cu::CudnnApi* api = cu::cudnn_api(why);
  EXPECT_EQ(api == nullptr, !why->empty());
  return api;
}

// cuDNN's own output sizes agree with every plan's: the forward convolution's y, and for
// backward data the forward convolution of dx giving back dy.
TEST(Cudnn, DescriptorsAgreeWithPlans) {
  std::string why;
  const cu::CudnnApi* api = api_or_skip_reason(&why);
  if (!api) {
    GTEST_SKIP() << "cuDNN unavailable: " << why;
  }
  std::mt19937 gen(5);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  int forward = 0, backward = 0;
  for (int it = 0; it < 4000; ++it) {
    const int nd = uniform(1, 3), groups = uniform(1, 3);
    const bool dilated = uniform(0, 1) == 1;
    ConvParams p;
    p.groups = groups;
    p.flip = uniform(0, 1) == 1;
    Shape in{uniform(1, 3)}, wt{groups * uniform(1, 4)};
    for (int i = 0; i < nd; ++i) {
      in.push_back(uniform(1, 12));
      wt.push_back(uniform(1, 5));
      p.stride.push_back(dilated ? 1 : uniform(1, 3));
      p.kernel_dilation.push_back(uniform(1, 3));
      p.input_dilation.push_back(dilated ? uniform(1, 3) : 1);
      const int k = (wt.back() - 1) * p.kernel_dilation.back();
      p.padding_lo.push_back(uniform(-2, k + 2));
      p.padding_hi.push_back(uniform(-2, k + 2));
    }
    const int Cg = uniform(1, 4);
    in.push_back(groups * Cg);
    wt.push_back(Cg);
    Shape out = conv_output_shape(p, in, wt);
    if (std::find(out.begin(), out.end(), 0) != out.end()) {
      continue;
    }
    for (Dtype dtype : {float32, float16, bfloat16}) {
      CudnnConvPlan plan = plan_cudnn_conv(p, in, wt, out, dtype);
      if (plan.op == CudnnConvPlan::Op::fallback) {
        continue;
      }
      auto math = dtype == float32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
      auto d = cu::make_conv_descriptors(*api, plan, dtype, math);
      EXPECT_TRUE(cu::cudnn_agrees(*api, d, plan))
          << msg("in ", in, " weight ", wt, " stride ", Shape(p.stride), " lo ",
                 Shape(p.padding_lo), " hi ", Shape(p.padding_hi), " kdil ",
                 Shape(p.kernel_dilation), " idil ", Shape(p.input_dilation));
      (plan.op == CudnnConvPlan::Op::forward ? forward : backward)++;
    }
  }
  EXPECT_GT(forward, 1000);
  EXPECT_GT(backward, 500);
}

// Where cuDNN loads and a GPU is present, it makes a handle there (else convolutions would
// quietly run im2col).
TEST(Cudnn, HandleOnTheGpu) {
  std::string why;
  if (!api_or_skip_reason(&why)) {
    GTEST_SKIP() << "cuDNN unavailable: " << why;
  }
  if (!gpu::is_available()) {
    GTEST_SKIP() << "no GPU";
  }
  EXPECT_NE(cu::cudnn_device(0), nullptr);
}

}  // namespace
}  // namespace mlx::core::test

// Every primitive whose evaluation is a backend kernel (the views are evaluated once for all
// backends in backend/common/views.cpp). A backend's list of missing kernels names a subset;
// a build without a GPU backend makes each of these report that there is no GPU.
#pragma once

#include "mlx/distributed/primitives.h"
#include "mlx/primitives/compiled.h"
#include "mlx/primitives/conv.h"
#include "mlx/primitives/creation.h"
#include "mlx/primitives/custom_kernel.h"
#include "mlx/primitives/elementwise.h"
#include "mlx/primitives/fast.h"
#include "mlx/primitives/fft.h"
#include "mlx/primitives/grouped_matmul.h"
#include "mlx/primitives/hadamard.h"
#include "mlx/primitives/indexing.h"
#include "mlx/primitives/linalg.h"
#include "mlx/primitives/linalg_lapack.h"
#include "mlx/primitives/quantized.h"
#include "mlx/primitives/random.h"
#include "mlx/primitives/reduction.h"
#include "mlx/primitives/shape.h"

// clang-format off
#define MLX_PRIMITIVES_WITH_KERNELS(X) \
  X(Full) X(Arange) \
  X(AsType) X(Copy) X(Reshape) X(View) X(Concatenate) X(SliceUpdate) \
  X(Unary) X(Binary) X(DivMod) X(Select) X(Compiled) \
  X(Reduce) X(ArgReduce) X(Scan) X(Softmax) X(LogSumExp) \
  X(Gather) X(GatherAxis) X(Scatter) X(ScatterAxis) X(SortAlongAxis) \
  X(Matmul) X(AddMM) X(MatmulColumnSums) X(MatmulGeluApprox) X(MatmulGeluApproxVjp) \
  X(Inverse) X(Cholesky) X(Solve) X(QRF) X(SVD) X(Eigh) X(Eig) X(LUF) \
  X(RandomBits) \
  X(fast::RMSNorm) X(fast::LayerNorm) X(fast::RoPE) X(fast::ScaledDotProductAttention) \
  X(Convolution) X(ConvWeightGrad) \
  X(FFT) \
  X(QuantizedMatmul) \
  X(GatherMM) X(SegmentedMM) X(Hadamard) X(GatherQMM) \
  X(fast::RMSNormVJP) X(fast::LayerNormVJP) X(fast::ScaledDotProductAttentionVJP) \
  X(fast::CrossEntropy) X(fast::CrossEntropyVJP) X(fast::AdamUpdate) X(fast::SgdUpdate) \
  X(distributed::AllReduce) X(distributed::AllGather) X(distributed::ReduceScatter) \
  X(distributed::Send) X(distributed::Recv) \
  X(fast::CustomKernel)
// clang-format on

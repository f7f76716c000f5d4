// Marks functions that CUDA sources compile for the device as well as the host, so that both
// backends share one definition (random bits, sort keys).
#pragma once

#ifdef __CUDACC__
#define MLX_HOST_DEVICE __host__ __device__
#define MLX_UNROLL_ALL _Pragma("unroll")
#else
#define MLX_HOST_DEVICE
#define MLX_UNROLL_ALL _Pragma("GCC unroll 32")
#endif

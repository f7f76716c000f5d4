// The CUDA C++ type of each dtype, as generated kernel sources spell it (the fused regions of
// backend/cuda/compiled.cu, mx.fast.cuda_kernel's signatures). complex64 is `complex64_t`: each
// generator's prelude says what that is.
#pragma once

#include "mlx/dtype.h"

namespace mlx::core {

inline const char* cuda_type_name(Dtype t) {
  switch (t.val) {
    case Dtype::Val::bool_:
      return "bool";
    case Dtype::Val::uint8:
      return "uint8_t";
    case Dtype::Val::uint16:
      return "uint16_t";
    case Dtype::Val::uint32:
      return "uint32_t";
    case Dtype::Val::uint64:
      return "uint64_t";
    case Dtype::Val::int8:
      return "int8_t";
    case Dtype::Val::int16:
      return "int16_t";
    case Dtype::Val::int32:
      return "int32_t";
    case Dtype::Val::int64:
      return "int64_t";
    case Dtype::Val::float16:
      return "__half";
    case Dtype::Val::bfloat16:
      return "__nv_bfloat16";
    case Dtype::Val::float32:
      return "float";
    case Dtype::Val::float64:
      return "double";
    case Dtype::Val::complex64:
      return "complex64_t";
  }
  return "void";
}

}  // namespace mlx::core

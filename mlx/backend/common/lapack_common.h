// What the LAPACK-style linalg kernels (LAPACK on the CPU, cuSOLVER on the GPU) share: the
// float32 / float64 dispatch and what they say when a matrix fails, one wording per op for both
// backends. `info` is LAPACK's (> 0: the 1-based position of the failure, or a count of what
// did not converge).
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>

#include "mlx/dtype.h"
#include "mlx/utils.h"

namespace mlx::core {

// f.template operator()<float or double>() for the input's dtype.
template <typename F>
void dispatch_lapack(Dtype dt, const char* op, F&& f) {
  if (dt == float32) {
    f.template operator()<float>();
  } else if (dt == float64) {
    f.template operator()<double>();
  } else {
    throw std::invalid_argument(
        msg("[", op, "] Expected float32 or float64 input; got ", dtype_name(dt), "."));
  }
}

inline std::string lapack_failure(const char* op, int info) {
  if (std::strcmp(op, "linalg::inv") == 0) {
    return msg("[linalg::inv] The matrix is singular (zero pivot at position ", info,
               "); it has no inverse.");
  }
  if (std::strcmp(op, "linalg::cholesky") == 0) {
    return msg("[linalg::cholesky] The matrix is not positive definite (leading minor ", info,
               " is not positive).");
  }
  if (std::strcmp(op, "linalg::solve") == 0) {
    return msg("[linalg::solve] The matrix is singular (zero pivot at position ", info,
               "); the system has no unique solution.");
  }
  if (std::strcmp(op, "linalg::svd") == 0) {
    return msg("[linalg::svd] The SVD did not converge (", info,
               " superdiagonals did not reach zero).");
  }
  if (std::strcmp(op, "linalg::eigh") == 0 || std::strcmp(op, "linalg::eig") == 0) {
    return msg("[", op, "] The eigen-decomposition did not converge (info ", info, ").");
  }
  return msg("[", op, "] The factorization failed with info ", info, ".");
}

// info < 0: argument -info was rejected, which for valid shapes means bad values.
inline std::string lapack_rejected(const char* op, int info) {
  return msg("[", op, "] Argument ", -info,
             " of the factorization was invalid (the matrix may hold NaN or infinite values).");
}

}  // namespace mlx::core

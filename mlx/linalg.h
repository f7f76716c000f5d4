// mx.linalg: norms, the cross product, and the LAPACK-backed factorizations and solvers. The
// factorizations run on the CPU (float32 and float64), batched over leading dimensions.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core::linalg {

// Vector norm (one axis) or matrix norm (two axes) with NumPy's `ord` semantics. Without ord,
// the 2-norm (Frobenius for matrices); without axis and ord, the 2-norm of the flattened input.
array norm(const array& a, const double ord,
           const std::optional<std::vector<int>>& axis = std::nullopt, bool keepdims = false,
           StreamOrDevice s = {});
inline array norm(const array& a, const double ord, int axis, bool keepdims = false,
                  StreamOrDevice s = {}) {
  return norm(a, ord, std::vector<int>{axis}, keepdims, s);
}
// ord is "fro" or "nuc" (matrix norms).
array norm(const array& a, const std::string& ord,
           const std::optional<std::vector<int>>& axis = std::nullopt, bool keepdims = false,
           StreamOrDevice s = {});
inline array norm(const array& a, const std::string& ord, int axis, bool keepdims = false,
                  StreamOrDevice s = {}) {
  return norm(a, ord, std::vector<int>{axis}, keepdims, s);
}
array norm(const array& a, const std::optional<std::vector<int>>& axis = std::nullopt,
           bool keepdims = false, StreamOrDevice s = {});
inline array norm(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {}) {
  return norm(a, std::vector<int>{axis}, keepdims, s);
}

// Cross product of 3-vectors along `axis` (inputs broadcast); 2-vectors get a zero third
// component.
array cross(const array& a, const array& b, int axis = -1, StreamOrDevice s = {});

array inv(const array& a, StreamOrDevice s = {});
// Inverse of a triangular matrix (only the `upper` or lower triangle is read).
array tri_inv(const array& a, bool upper = false, StreamOrDevice s = {});
// Cholesky factor: lower L with A = L L^T (upper U with A = U^T U when `upper`).
array cholesky(const array& a, bool upper = false, StreamOrDevice s = {});
// Inverse of A from its Cholesky factor.
array cholesky_inv(const array& a, bool upper = false, StreamOrDevice s = {});
// Moore-Penrose pseudo-inverse (through the SVD).
array pinv(const array& a, StreamOrDevice s = {});

// Solution x of a @ x = b; b is (..., N) or (..., N, K), batch dimensions broadcast.
array solve(const array& a, const array& b, StreamOrDevice s = {});
array solve_triangular(const array& a, const array& b, bool upper = false, StreamOrDevice s = {});

// Reduced QR: Q (..., M, K) with orthonormal columns, R (..., K, N), K = min(M, N).
std::pair<array, array> qr(const array& a, StreamOrDevice s = {});
// {U, S, Vt} with A = U diag(S) Vt (U: M x M, Vt: N x N), or {S} without compute_uv.
std::vector<array> svd(const array& a, bool compute_uv, StreamOrDevice s = {});
inline std::vector<array> svd(const array& a, StreamOrDevice s = {}) { return svd(a, true, s); }

// Eigen-decomposition of symmetric matrices, reading the UPLO ("L" or "U") triangle:
// ascending eigenvalues and the matching eigenvectors (columns).
array eigvalsh(const array& a, std::string UPLO = "L", StreamOrDevice s = {});
std::pair<array, array> eigh(const array& a, std::string UPLO = "L", StreamOrDevice s = {});
// General (non-symmetric) eigen-decomposition; complex64 results.
array eigvals(const array& a, StreamOrDevice s = {});
std::pair<array, array> eig(const array& a, StreamOrDevice s = {});

// {LU, pivots}: LAPACK's packed factors and (0-based, uint32) row interchanges.
std::pair<array, array> lu_factor(const array& a, StreamOrDevice s = {});
// {p, L, U} with A = L[p, :] @ U (p: uint32 row indices).
std::vector<array> lu(const array& a, StreamOrDevice s = {});

// Determinant, and {sign, log|det|}, from the LU factorization.
array det(const array& a, StreamOrDevice s = {});
std::pair<array, array> slogdet(const array& a, StreamOrDevice s = {});

}  // namespace mlx::core::linalg

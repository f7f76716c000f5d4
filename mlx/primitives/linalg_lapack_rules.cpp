// Transform rules of the LAPACK-backed primitives. Batching is natural (they act on the last
// two axes): vmap moves the mapped axis to the front. Derivatives have closed forms for the
// inverses, the solve and the Cholesky factor; the other factorizations say they are not
// supported.
#include "mlx/linalg.h"
#include "mlx/ops.h"
#include "mlx/primitives/linalg_lapack.h"
#include "mlx/transforms/rule_utils.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

array mT(const array& x, StreamOrDevice s) { return swapaxes(x, -1, -2, s); }

[[noreturn]] void unsupported(const char* prim, const char* rule) {
  throw std::invalid_argument(msg("[", prim, "] ", rule, " is not supported."));
}

// The primitive's outputs for a batch-first (row-contiguous) input.
std::vector<array> rebuild(const Primitive& p, const std::shared_ptr<Primitive>& prim,
                           const array& in, const std::vector<Shape>& shapes,
                           const std::vector<Dtype>& dtypes) {
  return array::make_arrays(shapes, dtypes, prim, {contiguous(in, false, p.stream())});
}

}  // namespace

// Inverse: d(A^-1) = -X dA X with X = A^-1.

std::vector<array> Inverse::jvp(const std::vector<array>& primals,
                                const std::vector<array>& tangents, const std::vector<int>&) {
  if (kind_ == Kind::Cholesky) {
    unsupported(name(), "jvp of cholesky_inv");
  }
  StreamOrDevice s = stream();
  array x =
      kind_ == Kind::General ? linalg::inv(primals[0], s) : linalg::tri_inv(primals[0], upper_, s);
  array da = kind_ == Kind::General ? tangents[0]
             : upper_               ? triu(tangents[0], 0, s)
                                    : tril(tangents[0], 0, s);
  return {negative(matmul(matmul(x, da, s), x, s), s)};
}

std::vector<array> Inverse::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                const std::vector<int>&, const std::vector<array>& outputs) {
  if (kind_ == Kind::Cholesky) {
    unsupported(name(), "vjp of cholesky_inv");
  }
  StreamOrDevice s = stream();
  array xt = mT(outputs[0], s);
  array g = negative(matmul(matmul(xt, cotangents[0], s), xt, s), s);
  if (kind_ == Kind::Triangular) {
    g = upper_ ? triu(g, 0, s) : tril(g, 0, s);
  }
  return {g};
}

std::pair<std::vector<array>, std::vector<int>> Inverse::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  array x = detail::batch_first(inputs[0], axes[0]);
  auto prim = std::make_shared<Inverse>(stream(), kind_, upper_);
  return {rebuild(*this, prim, x, {x.shape()}, {x.dtype()}), {0}};
}

// Cholesky (lower L, A = L L^T): A_bar = sym(L^-T Phi(L^T L_bar) L^-1), Phi = lower triangle
// with the diagonal halved.

std::vector<array> Cholesky::jvp(const std::vector<array>&, const std::vector<array>&,
                                 const std::vector<int>&) {
  unsupported(name(), "jvp");
}

std::vector<array> Cholesky::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                 const std::vector<int>&, const std::vector<array>& outputs) {
  StreamOrDevice s = stream();
  array l = upper_ ? mT(outputs[0], s) : outputs[0];
  array lbar = upper_ ? mT(cotangents[0], s) : cotangents[0];
  array p = tril(matmul(mT(l, s), lbar, s), 0, s);
  int n = l.shape(-1);
  array half_diag = subtract(ones({n, n}, l.dtype(), s),
                             multiply(eye(n, n, 0, l.dtype(), s), array(0.5, l.dtype()), s), s);
  p = multiply(p, half_diag, s);
  array linv = linalg::tri_inv(l, false, s);
  array sym = matmul(matmul(mT(linv, s), p, s), linv, s);
  return {multiply(add(sym, mT(sym, s), s), array(0.5, l.dtype()), s)};
}

std::pair<std::vector<array>, std::vector<int>> Cholesky::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  array x = detail::batch_first(inputs[0], axes[0]);
  auto prim = std::make_shared<Cholesky>(stream(), upper_);
  return {rebuild(*this, prim, x, {x.shape()}, {x.dtype()}), {0}};
}

// Solve: x = A^-1 b; dx = A^-1 (db - dA x); b_bar = A^-T g, A_bar = -b_bar x^T.

std::vector<array> Solve::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                              const std::vector<int>& argnums) {
  StreamOrDevice s = stream();
  array x = linalg::solve(primals[0], primals[1], s);
  std::optional<array> rhs;
  for (size_t k = 0; k < argnums.size(); ++k) {
    array term = argnums[k] == 0 ? negative(matmul(tangents[k], x, s), s) : tangents[k];
    rhs = rhs ? add(*rhs, term, s) : term;
  }
  return {linalg::solve(primals[0], *rhs, s)};
}

std::vector<array> Solve::vjp(const std::vector<array>& primals,
                              const std::vector<array>& cotangents, const std::vector<int>& argnums,
                              const std::vector<array>& outputs) {
  StreamOrDevice s = stream();
  array bbar = linalg::solve(mT(primals[0], s), cotangents[0], s);
  std::vector<array> out;
  for (int arg : argnums) {
    out.push_back(arg == 0 ? negative(matmul(bbar, mT(outputs[0], s), s), s) : bbar);
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> Solve::vmap(const std::vector<array>& inputs,
                                                            const std::vector<int>& axes) {
  // Both operands batch-first (an unmapped one broadcasts); b keeps its matrix form.
  array a = detail::batch_first(inputs[0], axes[0]);
  array b = detail::batch_first(inputs[1], axes[1]);
  if (axes[1] < 0) {
    b = expand_dims(b, 0, stream());
  }
  if (axes[0] < 0) {
    a = expand_dims(a, 0, stream());
  }
  return {{linalg::solve(a, b, stream())}, {0}};
}

// Eigh: A_bar = sym(V (diag(w_bar) + F o (V^T V_bar)) V^T), F_ij = 1 / (w_j - w_i) off the
// diagonal (distinct eigenvalues assumed).

std::vector<array> Eigh::jvp(const std::vector<array>&, const std::vector<array>&,
                             const std::vector<int>&) {
  unsupported(name(), "jvp");
}

std::vector<array> Eigh::vjp(const std::vector<array>& primals,
                             const std::vector<array>& cotangents, const std::vector<int>&,
                             const std::vector<array>& outputs) {
  StreamOrDevice s = stream();
  const array& w = outputs[0];
  array v = compute_vectors_ ? outputs[1] : linalg::eigh(primals[0], upper_ ? "U" : "L", s).second;
  Dtype dt = w.dtype();
  int n = w.shape(-1);
  array eye = identity(n, dt, s);
  array inner = multiply(eye, expand_dims(cotangents[0], -2, s), s);
  if (compute_vectors_ && cotangents.size() > 1) {
    array diff = subtract(expand_dims(w, -2, s), expand_dims(w, -1, s), s);
    array is_diag = astype(eye, bool_, s);
    array f = where(is_diag, array(0, dt), reciprocal(where(is_diag, array(1, dt), diff, s), s), s);
    inner = add(inner, multiply(f, matmul(mT(v, s), cotangents[1], s), s), s);
  }
  array g = matmul(matmul(v, inner, s), mT(v, s), s);
  return {multiply(add(g, mT(g, s), s), array(0.5, dt), s)};
}

// Factorizations without derivative rules.

#define MLX_LINALG_NO_DERIVATIVES(P)                                              \
  std::vector<array> P::jvp(const std::vector<array>&, const std::vector<array>&, \
                            const std::vector<int>&) {                            \
    unsupported(name(), "jvp");                                                   \
  }                                                                               \
  std::vector<array> P::vjp(const std::vector<array>&, const std::vector<array>&, \
                            const std::vector<int>&, const std::vector<array>&) { \
    unsupported(name(), "vjp");                                                   \
  }

MLX_LINALG_NO_DERIVATIVES(QRF)
MLX_LINALG_NO_DERIVATIVES(SVD)
MLX_LINALG_NO_DERIVATIVES(Eig)
MLX_LINALG_NO_DERIVATIVES(LUF)
#undef MLX_LINALG_NO_DERIVATIVES

// vmap of the multi-output factorizations: same primitive on the batch-first input. The
// output shapes follow from a's: the batch axis goes in front of each of them.
#define MLX_LINALG_VMAP(P, MAKE)                                                            \
  std::pair<std::vector<array>, std::vector<int>> P::vmap(const std::vector<array>& inputs, \
                                                          const std::vector<int>& axes) {   \
    array x = detail::batch_first(inputs[0], axes[0]);                                      \
    std::vector<array> outs = MAKE;                                                         \
    return {outs, std::vector<int>(outs.size(), 0)};                                        \
  }

MLX_LINALG_VMAP(QRF, ([&] {
                  auto [q, r] = linalg::qr(x, stream());
                  return std::vector<array>{q, r};
                }()))
MLX_LINALG_VMAP(SVD, linalg::svd(x, compute_uv_, stream()))
MLX_LINALG_VMAP(Eigh, ([&] {
                  if (!compute_vectors_) {
                    return std::vector<array>{linalg::eigvalsh(x, upper_ ? "U" : "L", stream())};
                  }
                  auto [w, v] = linalg::eigh(x, upper_ ? "U" : "L", stream());
                  return std::vector<array>{w, v};
                }()))
MLX_LINALG_VMAP(Eig, ([&] {
                  if (!compute_vectors_) {
                    return std::vector<array>{linalg::eigvals(x, stream())};
                  }
                  auto [w, v] = linalg::eig(x, stream());
                  return std::vector<array>{w, v};
                }()))
#undef MLX_LINALG_VMAP

std::pair<std::vector<array>, std::vector<int>> LUF::vmap(const std::vector<array>& inputs,
                                                          const std::vector<int>& axes) {
  array x = detail::batch_first(inputs[0], axes[0]);
  auto prim = std::make_shared<LUF>(stream());
  int m = x.shape(-2), n = x.shape(-1);
  Shape piv = x.shape(), perm = x.shape();
  piv.resize(piv.size() - 1);
  piv.back() = std::min(m, n);
  perm.resize(perm.size() - 1);
  perm.back() = m;
  return {rebuild(*this, prim, x, {x.shape(), piv, perm}, {x.dtype(), uint32, uint32}), {0, 0, 0}};
}

}  // namespace mlx::core

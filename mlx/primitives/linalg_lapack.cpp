// Parameter comparisons of the LAPACK-backed primitives.
#include "mlx/primitives/linalg_lapack.h"

namespace mlx::core {

bool Inverse::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Inverse*>(&other);
  return o && o->kind_ == kind_ && o->upper_ == upper_;
}

bool Cholesky::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Cholesky*>(&other);
  return o && o->upper_ == upper_;
}

bool SVD::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const SVD*>(&other);
  return o && o->compute_uv_ == compute_uv_;
}

bool Eigh::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Eigh*>(&other);
  return o && o->upper_ == upper_ && o->compute_vectors_ == compute_vectors_;
}

bool Eig::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Eig*>(&other);
  return o && o->compute_vectors_ == compute_vectors_;
}

}  // namespace mlx::core

// mx.fast functions composed from ordinary ops: gated_delta_update.
#include <stdexcept>

#include "mlx/fast.h"
#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/indexing.h"
#include "mlx/ops/linalg.h"
#include "mlx/ops/reduction.h"
#include "mlx/ops/shape.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core::fast {

namespace {

void check_rank(const array& a, int ndim, const char* name) {
  if (a.ndim() != ndim) {
    throw std::invalid_argument(msg("[gated_delta_update] ", name, " must have ", ndim,
                                    " dimensions; got shape ", a.shape(), "."));
  }
}

}  // namespace

std::vector<array> gated_delta_update(const array& q, const array& k, const array& v,
                                      const array& gamma, const array& beta,
                                      const std::optional<array>& initial_state,
                                      const std::optional<array>& mask, StreamOrDevice s) {
  check_rank(q, 4, "q");
  check_rank(k, 4, "k");
  check_rank(v, 4, "v");
  check_rank(beta, 3, "beta");
  if (q.shape() != k.shape()) {
    throw std::invalid_argument(msg("[gated_delta_update] q and k must have the same shape; got ",
                                    q.shape(), " and ", k.shape(), "."));
  }
  int B = q.shape(0), T = q.shape(1), Hk = q.shape(2), Dk = q.shape(3);
  int Hv = v.shape(2), Dv = v.shape(3);
  if (v.shape(0) != B || v.shape(1) != T || Hk == 0 || Hv % Hk != 0) {
    throw std::invalid_argument(
        msg("[gated_delta_update] v must be (B, T, Hv, Dv) with Hv a multiple of q's ", Hk,
            " heads; got ", v.shape(), "."));
  }
  Shape gate_shape{B, T, Hv};
  if (beta.shape() != gate_shape) {
    throw std::invalid_argument(
        msg("[gated_delta_update] beta must have shape ", gate_shape, "; got ", beta.shape(), "."));
  }
  bool per_key = gamma.ndim() == 4;
  Shape per_key_shape{B, T, Hv, Dk};
  if (gamma.shape() != gate_shape && gamma.shape() != per_key_shape) {
    throw std::invalid_argument(msg("[gated_delta_update] gamma must have shape ", gate_shape,
                                    " or ", per_key_shape, "; got ", gamma.shape(), "."));
  }
  Shape state_shape{B, Hv, Dv, Dk};
  array state = initial_state ? astype(*initial_state, float32, s) : zeros(state_shape, float32, s);
  if (state.shape() != state_shape) {
    throw std::invalid_argument(msg("[gated_delta_update] initial_state must have shape ",
                                    state_shape, "; got ", state.shape(), "."));
  }
  if (mask && mask->shape() != Shape{B, T}) {
    throw std::invalid_argument(msg("[gated_delta_update] mask must have shape (", B, ", ", T,
                                    "); got ", mask->shape(), "."));
  }
  // Key heads repeated for the value heads that read them: (B, T, Hv, Dk).
  int group = Hv / Hk;
  auto per_value_head = [&](const array& x) {
    array f = astype(x, float32, s);
    return group == 1 ? f : repeat(f, group, 2, s);
  };
  array qf = per_value_head(q);
  array kf = per_value_head(k);
  array vf = astype(v, float32, s);
  array gf = astype(gamma, float32, s);
  array bf = astype(beta, float32, s);
  std::vector<array> ys;
  ys.reserve(T);
  // x[:, t] of a (B, T, ...) array.
  auto step = [&](const array& x, int t) {
    Shape start(x.ndim(), 0);
    Shape stop = x.shape();
    start[1] = t;
    stop[1] = t + 1;
    return squeeze(slice(x, std::move(start), std::move(stop), s), 1, s);
  };
  for (int t = 0; t < T; ++t) {
    array qt = step(qf, t);  // (B, Hv, Dk)
    array kt = step(kf, t);
    array vt = step(vf, t);  // (B, Hv, Dv)
    array gt = step(gf, t);  // (B, Hv) or (B, Hv, Dk)
    array bt = expand_dims(step(bf, t), -1, s);
    array decay = per_key ? expand_dims(gt, 2, s) : expand_dims(gt, {2, 3}, s);
    array decayed = multiply(state, decay, s);
    // S k: (B, Hv, Dv); the correction is an outer product with k.
    array predicted = squeeze(matmul(decayed, expand_dims(kt, -1, s), s), -1, s);
    array delta = multiply(subtract(vt, predicted, s), bt, s);
    array updated = add(decayed, multiply(expand_dims(delta, -1, s), expand_dims(kt, 2, s), s), s);
    array yt = squeeze(matmul(updated, expand_dims(qt, -1, s), s), -1, s);
    if (mask) {
      array keep = reshape(step(*mask, t), {B, 1, 1}, s);
      updated = where(expand_dims(keep, -1, s), updated, state, s);
      yt = where(keep, yt, array(0.0f), s);
    }
    state = updated;
    ys.push_back(yt);
  }
  array y = T > 0 ? stack(ys, 1, s) : zeros({B, 0, Hv, Dv}, float32, s);
  return {astype(y, q.dtype(), s), state};
}

}  // namespace mlx::core::fast

// Transform rules of the grouped products. Both are linear in each matrix operand. GatherMM's
// cotangent for a is a gather_mm with the transposed b, summed back into a's matrices by lhs
// index; the one for b groups the products by rhs index (sorted) and sums each group's
// a^T g with one segmented_mm over the group's rows, so no (batch, K, N) temporary is formed.
// SegmentedMM's cotangents mask the full products by segment membership of each k.
#include <stdexcept>

#include "mlx/ops.h"
#include "mlx/ops/grouped_matmul.h"
#include "mlx/primitives/grouped_matmul.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

array mT(const array& x, StreamOrDevice s) { return swapaxes(x, -1, -2, s); }

void no_vmap(const char* name) {
  throw std::invalid_argument(msg("[", name, "] vmap is not supported."));
}

// The tangent of a product linear in each of its first two inputs:
// product(ta, b) + product(a, tb) over the differentiated ones (zeros when neither is).
template <typename F>
array bilinear_jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                   const std::vector<int>& argnums, const Shape& shape, StreamOrDevice s,
                   F&& product) {
  std::optional<array> out;
  for (size_t k = 0; k < argnums.size(); ++k) {
    if (argnums[k] > 1) {
      continue;
    }
    const array& a = argnums[k] == 0 ? tangents[k] : primals[0];
    const array& b = argnums[k] == 1 ? tangents[k] : primals[1];
    array term = product(a, b);
    out = out ? add(*out, term, s) : term;
  }
  return out ? *out : zeros(shape, primals[0].dtype(), s);
}

}  // namespace

// GatherMM: inputs {a (A, M, K), b (B, K, N), lhs (S), rhs (S)}.

std::vector<array> GatherMM::jvp(const std::vector<array>& primals,
                                 const std::vector<array>& tangents,
                                 const std::vector<int>& argnums) {
  return {bilinear_jvp(primals, tangents, argnums, output_shapes(primals)[0], stream(),
                       [&](const array& a, const array& b) {
                         return gather_mm(a, b, primals[2], primals[3], sorted(), stream());
                       })};
}

std::vector<array> GatherMM::vjp(const std::vector<array>& primals,
                                 const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums, const std::vector<array>&) {
  StreamOrDevice s = stream();
  const array &a = primals[0], &b = primals[1];
  int M = a.shape(1), K = a.shape(2), N = b.shape(2);
  int n = static_cast<int>(primals[2].size());
  array g = reshape(cotangents[0], {n, M, N}, s);
  array lhs = astype(flatten(primals[2], s), int32, s);
  array rhs = astype(flatten(primals[3], s), int32, s);
  std::vector<array> out;
  for (int arg : argnums) {
    if (arg == 0) {
      array per_item = gather_mm(g, mT(b, s), std::nullopt, rhs, false, s);  // (n, M, K)
      out.push_back(scatter_add(zeros_like(a, s), lhs, reshape(per_item, {n, 1, M, K}, s), 0, s));
    } else if (arg == 1) {
      array order = argsort(rhs, s);
      array sorted_rhs = take(rhs, order, s);
      array rows = take(a, take(lhs, order, s), 0, s);                      // (n, M, K)
      array lhs_t = reshape(transpose(rows, {2, 0, 1}, s), {K, n * M}, s);  // (K, n M)
      array g_rows = reshape(take(g, order, 0, s), {n * M, N}, s);          // (n M, N)
      array experts = arange(0, b.shape(0), s);
      array start = searchsorted(sorted_rhs, experts, "left", s);
      array stop = searchsorted(sorted_rhs, experts, "right", s);
      array segments =
          multiply(stack({start, stop}, -1, s), array(static_cast<uint32_t>(M), uint32), s);
      out.push_back(segmented_mm(lhs_t, g_rows, segments, s));
    } else {
      out.push_back(zeros_like(primals[arg], s));
    }
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> GatherMM::vmap(const std::vector<array>&,
                                                               const std::vector<int>&) {
  no_vmap("GatherMM");
  return {};
}

// SegmentedMM: inputs {a (M, K), b (K, N), segments (S..., 2)}.

std::vector<array> SegmentedMM::jvp(const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  return {bilinear_jvp(
      primals, tangents, argnums, output_shapes(primals)[0], stream(),
      [&](const array& a, const array& b) { return segmented_mm(a, b, primals[2], stream()); })};
}

std::vector<array> SegmentedMM::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  StreamOrDevice s = stream();
  const array &a = primals[0], &b = primals[1];
  int M = a.shape(0), K = a.shape(1), N = b.shape(1);
  Dtype dt = a.dtype();
  int n = static_cast<int>(primals[2].size() / 2);
  array g = reshape(cotangents[0], {n, M, N}, s);
  array seg = astype(reshape(primals[2], {n, 2}, s), int32, s);
  array k = arange(0, K, s);
  array starts = slice(seg, {0, 0}, {n, 1}, s), stops = slice(seg, {0, 1}, {n, 2}, s);
  array inside = astype(logical_and(greater_equal(k, starts, s), less(k, stops, s), s), dt, s);
  std::vector<array> out;
  for (int arg : argnums) {
    if (arg == 0) {
      array full = matmul(g, mT(b, s), s);  // (n, M, K)
      out.push_back(sum(multiply(full, expand_dims(inside, 1, s), s), 0, false, s));
    } else if (arg == 1) {
      array full = matmul(mT(a, s), g, s);  // (n, K, N)
      out.push_back(sum(multiply(full, expand_dims(inside, 2, s), s), 0, false, s));
    } else {
      out.push_back(zeros_like(primals[arg], s));
    }
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> SegmentedMM::vmap(const std::vector<array>&,
                                                                  const std::vector<int>&) {
  no_vmap("SegmentedMM");
  return {};
}

}  // namespace mlx::core

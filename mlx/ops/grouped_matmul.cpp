#include "mlx/ops/grouped_matmul.h"

#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/linalg.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/grouped_matmul.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

Dtype product_dtype(const array& a, const array& b, const char* op) {
  Dtype dt = promote_types(a.dtype(), b.dtype());
  if (!is_floating_point(dt)) {
    throw std::invalid_argument(msg("[", op, "] Only real floating point types are supported but ",
                                    a.dtype(), " and ", b.dtype(),
                                    " were provided which results in ", dt,
                                    ", which is not a real floating point type."));
  }
  return dt;
}

void check_integer(const array& x, const char* op, const char* what) {
  if (!issubdtype(x.dtype(), DtypeCategory::integer)) {
    throw std::invalid_argument(msg("[", op, "] Got ", what, " with invalid dtype ", x.dtype(),
                                    ". ", what, " must be integral."));
  }
}

void check_inner(const array& a, const array& b, const char* op) {
  if (a.shape(-1) != b.shape(-2)) {
    throw std::invalid_argument(
        msg("[", op, "] Last dimension of first input with shape ", a.shape(),
            " must match second-to-last dimension of second input with shape ", b.shape(), "."));
  }
}

// Operands of a product with matmul's treatment of 1-D inputs: a (..., M, K), b (..., K, N)
// and the promoted floating dtype.
struct Operands {
  array a, b;
  Dtype dtype;
};

Operands matrices(const array& a_in, const array& b_in, const char* op, StreamOrDevice s) {
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    throw std::invalid_argument(
        msg("[", op, "] Got 0 dimension input. Inputs must have at least one dimension."));
  }
  array a = a_in.ndim() == 1 ? reshape(a_in, {1, a_in.shape(0)}, s) : a_in;
  array b = b_in.ndim() == 1 ? reshape(b_in, {b_in.shape(0), 1}, s) : b_in;
  check_inner(a, b, op);
  Dtype dt = product_dtype(a, b, op);
  return {a, b, dt};
}

// The product without the dimensions that 1-D inputs added.
array drop_vector_dims(array out, const array& a_in, const array& b_in, StreamOrDevice s) {
  if (b_in.ndim() == 1) {
    out = squeeze(out, -1, s);
  }
  if (a_in.ndim() == 1) {
    out = squeeze(out, b_in.ndim() == 1 ? -1 : -2, s);
  }
  return out;
}

// The block mask (..., ceil(rows / bs), ceil(cols / bs)) expanded to (..., rows, cols).
array expand_block_mask(const array& mask, int rows, int cols, int bs, Dtype dt, const char* what,
                        StreamOrDevice s) {
  int rb = (rows + bs - 1) / bs, cb = (cols + bs - 1) / bs;
  if (mask.ndim() < 2 || mask.shape(-2) != rb || mask.shape(-1) != cb) {
    throw std::invalid_argument(msg("[block_masked_mm] ", what, " of shape ", mask.shape(),
                                    " must end in (", rb, ", ", cb, ") for a ", rows, " x ", cols,
                                    " matrix with block size ", bs, "."));
  }
  array m = mask.dtype() == bool_ ? mask : astype(mask, dt, s);
  Shape lead(m.shape().begin(), m.shape().end() - 2);
  Shape split = lead, tiled = lead, full = lead;
  split.insert(split.end(), {rb, 1, cb, 1});
  tiled.insert(tiled.end(), {rb, bs, cb, bs});
  full.insert(full.end(), {rb * bs, cb * bs});
  array e = reshape(broadcast_to(reshape(m, split, s), tiled, s), full, s);
  Shape start(e.ndim(), 0), stop = e.shape();
  stop[e.ndim() - 2] = rows;
  stop[e.ndim() - 1] = cols;
  return slice(e, start, stop, s);
}

array apply_mask(const array& x, const array& mask, StreamOrDevice s) {
  return mask.dtype() == bool_ ? where(mask, x, array(0, x.dtype()), s) : multiply(x, mask, s);
}

}  // namespace

array detail::matrix_stack(const array& x, StreamOrDevice s) {
  Shape batch(x.shape().begin(), x.shape().end() - 2);
  Shape flat{static_cast<int32_t>(shape_size(batch)), x.shape(-2), x.shape(-1)};
  return x.shape() == flat ? x : reshape(x, flat, s);
}

array detail::matrix_numbers(const array& x, StreamOrDevice s) {
  Shape batch(x.shape().begin(), x.shape().end() - 2);
  return reshape(arange(0.0, static_cast<double>(shape_size(batch)), 1.0, uint32, s), batch, s);
}

array gather_mm(const array& a_in, const array& b_in, const std::optional<array>& lhs_indices,
                const std::optional<array>& rhs_indices, bool sorted_indices, StreamOrDevice s) {
  auto [a, b, dt] = matrices(a_in, b_in, "gather_mm", s);
  if (lhs_indices) {
    check_integer(*lhs_indices, "gather_mm", "indices");
  }
  if (rhs_indices) {
    check_integer(*rhs_indices, "gather_mm", "indices");
  }
  array li = lhs_indices ? *lhs_indices : detail::matrix_numbers(a, s);
  array ri = rhs_indices ? *rhs_indices : detail::matrix_numbers(b, s);
  Shape batch = broadcast_shapes(li.shape(), ri.shape(), "gather_mm");
  int M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  Shape shape = batch;
  shape.push_back(M);
  shape.push_back(N);
  array out = K == 0 ? zeros(shape, dt, s)
                     : array(shape, dt, std::make_shared<GatherMM>(to_stream(s), sorted_indices),
                             {astype(detail::matrix_stack(a, s), dt, s),
                              astype(detail::matrix_stack(b, s), dt, s), broadcast_to(li, batch, s),
                              broadcast_to(ri, batch, s)});
  return drop_vector_dims(out, a_in, b_in, s);
}

array segmented_mm(const array& a, const array& b, const array& segments, StreamOrDevice s) {
  if (a.ndim() != 2 || b.ndim() != 2) {
    throw std::invalid_argument(
        msg("[segmented_mm] Batched matmul not supported: a and b must "
            "be 2-D matrices, got shapes ",
            a.shape(), " and ", b.shape(), "."));
  }
  check_inner(a, b, "segmented_mm");
  Dtype dt = product_dtype(a, b, "segmented_mm");
  check_integer(segments, "segmented_mm", "segments");
  if (segments.ndim() < 1 || segments.shape(-1) != 2) {
    throw std::invalid_argument(
        msg("[segmented_mm] The segments must have shape (..., 2) of [start, end) pairs, got ",
            segments.shape(), "."));
  }
  Shape shape(segments.shape().begin(), segments.shape().end() - 1);
  shape.push_back(a.shape(0));
  shape.push_back(b.shape(1));
  if (a.shape(1) == 0) {
    return zeros(shape, dt, s);
  }
  return array(shape, dt, std::make_shared<SegmentedMM>(to_stream(s)),
               {astype(a, dt, s), astype(b, dt, s), segments});
}

array block_masked_mm(const array& a_in, const array& b_in, int block_size,
                      const std::optional<array>& mask_out, const std::optional<array>& mask_lhs,
                      const std::optional<array>& mask_rhs, StreamOrDevice s) {
  if (block_size <= 0) {
    throw std::invalid_argument(
        msg("[block_masked_mm] The block size must be positive (32 or 64), got ", block_size, "."));
  }
  auto ops = matrices(a_in, b_in, "block_masked_mm", s);
  Dtype dt = ops.dtype;
  array a = astype(ops.a, dt, s), b = astype(ops.b, dt, s);
  int M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  if (mask_lhs) {
    a = apply_mask(a, expand_block_mask(*mask_lhs, M, K, block_size, dt, "mask_lhs", s), s);
  }
  if (mask_rhs) {
    b = apply_mask(b, expand_block_mask(*mask_rhs, K, N, block_size, dt, "mask_rhs", s), s);
  }
  array out = matmul(a, b, s);
  if (mask_out) {
    out = apply_mask(out, expand_block_mask(*mask_out, M, N, block_size, dt, "mask_out", s), s);
  }
  return drop_vector_dims(out, a_in, b_in, s);
}

}  // namespace mlx::core

#include "mlx/ops/linalg.h"

#include <algorithm>
#include <numeric>

#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/graph.h"
#include "mlx/ops/reduction.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/linalg.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// Operands of a (batched) matrix product, broadcast to a common batch shape and cast to the
// product dtype.
struct MatmulOperands {
  array a;          // (batch..., M, K)
  array b;          // (batch..., K, N)
  Shape shape;      // (batch..., M, N)
  Shape out_shape;  // shape without the dimensions that 1-D inputs added
};

MatmulOperands matmul_operands(const array& in_a, const array& in_b, Dtype dtype, const char* name,
                               StreamOrDevice s) {
  if (in_a.ndim() == 0 || in_b.ndim() == 0) {
    throw std::invalid_argument(
        msg("[", name, "] Got 0 dimension input. Inputs must have at least one dimension."));
  }
  array a = in_a.ndim() == 1 ? reshape(in_a, {1, in_a.shape(0)}, s) : in_a;
  array b = in_b.ndim() == 1 ? reshape(in_b, {in_b.shape(0), 1}, s) : in_b;
  if (a.shape(-1) != b.shape(-2)) {
    throw std::invalid_argument(
        msg("[", name, "] Last dimension of first input with shape ", a.shape(),
            " must match second-to-last dimension of second input with shape ", b.shape(), "."));
  }
  if (b.ndim() == 2 && a.ndim() > 2 && !detail::in_shapeless_tracing()) {
    // A stack of matrices times one matrix is one matrix product with the stack's rows: one
    // large GEMM, and its gradient for b needs no per-batch temporaries.
    Shape out_shape = a.shape();
    out_shape.back() = b.shape(1);
    if (in_b.ndim() == 1) {
      out_shape.pop_back();
    }
    array rows = reshape(astype(a, dtype, s), {-1, a.shape(-1)}, s);
    Shape shape{rows.shape(0), b.shape(1)};
    return {std::move(rows), astype(b, dtype, s), std::move(shape), std::move(out_shape)};
  }
  Shape batch = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                 Shape(b.shape().begin(), b.shape().end() - 2), name);
  auto with = [&](int32_t rows, int32_t cols) {
    Shape sh = batch;
    sh.push_back(rows);
    sh.push_back(cols);
    return sh;
  };
  int32_t m = a.shape(-2), k = a.shape(-1), n = b.shape(-1);
  Shape shape = with(m, n);
  Shape out_shape = shape;
  if (in_b.ndim() == 1) {
    out_shape.pop_back();
  }
  if (in_a.ndim() == 1) {
    out_shape.erase(out_shape.end() - (in_b.ndim() == 1 ? 1 : 2));
  }
  array ca = astype(a, dtype, s);
  array cb = astype(b, dtype, s);
  if (detail::in_shapeless_tracing() && (ca.shape() != with(m, k) || cb.shape() != with(k, n))) {
    // The batch dimensions broadcast against the other operand's without baking the traced
    // shapes in: each operand is broadcast (dynamically) with a (batch..., 1, 1) stand-in of
    // the other, which follows that operand's shape on replay.
    array stand_in_a = sum(ca, std::vector<int>{-2, -1}, true, s);
    array stand_in_b = sum(cb, std::vector<int>{-2, -1}, true, s);
    return {ca.shape() == with(m, k) ? ca : dynamic_broadcast({ca, stand_in_b}, s),
            cb.shape() == with(k, n) ? cb : dynamic_broadcast({cb, stand_in_a}, s),
            std::move(shape), std::move(out_shape)};
  }
  return {broadcast_to(ca, with(m, k), s), broadcast_to(cb, with(k, n), s), std::move(shape),
          std::move(out_shape)};
}

}  // namespace

array detail::matmul(const array& a, const array& b, bool float32_out, StreamOrDevice s) {
  Dtype dtype = promote_types(a.dtype(), b.dtype());
  float32_out = float32_out && (dtype == float16 || dtype == bfloat16);
  Dtype out_dtype = float32_out ? float32 : dtype;
  auto ops = matmul_operands(a, b, dtype, "matmul", s);
  if (ops.a.shape(-1) == 0) {
    return zeros(ops.out_shape, out_dtype, s);
  }
  array out(ops.shape, out_dtype, std::make_shared<Matmul>(to_stream(s), float32_out),
            {ops.a, ops.b});
  return reshape(out, ops.out_shape, s);
}

array matmul(const array& a, const array& b, StreamOrDevice s) {
  return detail::matmul(a, b, false, s);
}

array addmm(array c, array a, array b, const float& alpha, const float& beta, StreamOrDevice s) {
  Dtype dtype = promote_types(c.dtype(), promote_types(a.dtype(), b.dtype()));
  if (!is_inexact(dtype)) {
    throw std::invalid_argument(msg("[addmm] Only floating point types are supported but ",
                                    c.dtype(), ", ", a.dtype(), " and ", b.dtype(),
                                    " were provided which results in ", dtype,
                                    ", which is not a floating point type."));
  }
  auto ops = matmul_operands(a, b, dtype, "addmm", s);
  // c broadcasts against the product as the user sees it (without the 1-D dimensions).
  c = astype(c, dtype, s);
  array full = broadcast_to(c, ops.out_shape, s);
  if (ops.a.shape(-1) == 0) {
    return multiply(full, array(beta, dtype), s);
  }
  // A row of biases stays a (1, ..., 1, N) row: the kernels broadcast it themselves (cuBLASLt's
  // bias epilogue), and its gradient can be summed within the weight gradient's product.
  const int32_t n = ops.shape.back();
  if (int64_t(c.size()) == n && (c.ndim() == 0 ? n == 1 : c.shape().back() == n)) {
    Shape row(ops.shape.size(), 1);
    row.back() = n;
    c = reshape(c, std::move(row), s);
  } else {
    c = broadcast_to(reshape(full, ops.shape, s), ops.shape, s);
  }
  return reshape(array(ops.shape, dtype, std::make_shared<AddMM>(to_stream(s), alpha, beta),
                       {c, ops.a, ops.b}),
                 ops.out_shape, s);
}

array tensordot(const array& a, const array& b, const std::vector<int>& axes_a,
                const std::vector<int>& axes_b, StreamOrDevice s) {
  if (axes_a.size() != axes_b.size()) {
    throw std::invalid_argument(msg("[tensordot] axes_a and axes_b must have the same size; got ",
                                    axes_a.size(), " and ", axes_b.size(), "."));
  }
  auto ca = normalize_axes(axes_a, a.ndim(), "tensordot");
  auto cb = normalize_axes(axes_b, b.ndim(), "tensordot");
  int64_t csize = 1;
  for (size_t i = 0; i < ca.size(); ++i) {
    if (a.shape(ca[i]) != b.shape(cb[i])) {
      throw std::invalid_argument(msg(
          "[tensordot] Contracted axes must have matching sizes; axis ", ca[i],
          " of the first input with shape ", a.shape(), " has size ", a.shape(ca[i]), " but axis ",
          cb[i], " of the second input with shape ", b.shape(), " has size ", b.shape(cb[i]), "."));
    }
    csize *= a.shape(ca[i]);
  }
  // Free axes keep their order; a's go first in the result, then b's.
  auto free_axes = [](int ndim, const std::vector<int>& contracted) {
    std::vector<int> free;
    for (int i = 0; i < ndim; ++i) {
      if (std::find(contracted.begin(), contracted.end(), i) == contracted.end()) {
        free.push_back(i);
      }
    }
    return free;
  };
  auto fa = free_axes(a.ndim(), ca);
  auto fb = free_axes(b.ndim(), cb);
  Shape out_shape;
  int64_t fa_size = 1, fb_size = 1;
  for (int ax : fa) {
    out_shape.push_back(a.shape(ax));
    fa_size *= a.shape(ax);
  }
  for (int ax : fb) {
    out_shape.push_back(b.shape(ax));
    fb_size *= b.shape(ax);
  }
  std::vector<int> perm_a = fa;
  perm_a.insert(perm_a.end(), ca.begin(), ca.end());
  std::vector<int> perm_b = cb;
  perm_b.insert(perm_b.end(), fb.begin(), fb.end());
  array at = reshape(transpose(a, perm_a, s),
                     {static_cast<int32_t>(fa_size), static_cast<int32_t>(csize)}, s);
  array bt = reshape(transpose(b, perm_b, s),
                     {static_cast<int32_t>(csize), static_cast<int32_t>(fb_size)}, s);
  return reshape(matmul(at, bt, s), out_shape, s);
}

array tensordot(const array& a, const array& b, const int axis, StreamOrDevice s) {
  if (axis < 0) {
    throw std::invalid_argument(
        msg("[tensordot] axis must be greater or equal to 0 but got ", axis, "."));
  }
  if (axis > a.ndim() || axis > b.ndim()) {
    throw std::invalid_argument(msg("[tensordot] axis ", axis,
                                    " must not exceed the dimensions of the inputs with shapes ",
                                    a.shape(), " and ", b.shape(), "."));
  }
  std::vector<int> axes_a(axis), axes_b(axis);
  std::iota(axes_a.begin(), axes_a.end(), a.ndim() - axis);
  std::iota(axes_b.begin(), axes_b.end(), 0);
  return tensordot(a, b, axes_a, axes_b, s);
}

array inner(const array& a, const array& b, StreamOrDevice s) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    return multiply(a, b, s);
  }
  if (a.shape(-1) != b.shape(-1)) {
    throw std::invalid_argument(
        msg("[inner] a and b must have the same last dimension; got shapes ", a.shape(), " and ",
            b.shape(), "."));
  }
  return tensordot(a, b, {-1}, {-1}, s);
}

array outer(const array& a, const array& b, StreamOrDevice s) {
  return multiply(reshape(a, {-1, 1}, s), flatten(b, s), s);
}

}  // namespace mlx::core

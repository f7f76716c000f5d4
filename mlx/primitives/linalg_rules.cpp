// Transform rules of the matrix products: Matmul, AddMM and MatmulColumnSums. Operands arrive
// broadcast to the output's batch shape (the Broadcast rule sums cotangents back over broadcast
// axes); AddMM's bias row is summed by its own rule, together with the weight's gradient when
// both are wanted.
#include <algorithm>
#include <optional>

#include "mlx/ops.h"
#include "mlx/primitives/linalg.h"
#include "mlx/transforms/rule_utils.h"

namespace mlx::core {

namespace {

array mT(const array& x, StreamOrDevice s) { return swapaxes(x, -1, -2, s); }

// Cotangents of the operands of a @ b for the product's cotangent g.
array matmul_cotangent(int arg, const array& a, const array& b, const array& g, StreamOrDevice s) {
  return arg == 0 ? matmul(g, mT(b, s), s) : matmul(mT(a, s), g, s);
}

// The tangent of l @ r (float32 when `float32_out`) for the tangents of the operands argnums.
array product_tangent(const std::vector<array>& primals, const std::vector<array>& tangents,
                      const std::vector<int>& argnums, bool float32_out, StreamOrDevice s) {
  std::optional<array> out;
  for (size_t k = 0; k < argnums.size(); ++k) {
    const array& l = argnums[k] == 0 ? tangents[k] : primals[0];
    const array& r = argnums[k] == 1 ? tangents[k] : primals[1];
    array term = detail::matmul(l, r, float32_out, s);
    out = out ? add(*out, term, s) : term;
  }
  return *out;
}

// The cotangent of a product's float32 output, in its 16-bit operands' dtype: the rules
// multiply in the operands' precision, as for a product that was never widened.
array operand_precision(const array& g, const array& operand, bool float32_out, StreamOrDevice s) {
  return float32_out ? astype(g, operand.dtype(), s) : g;
}

// The column sums of r, in float32 when `float32_out`.
array column_sums(const array& r, bool float32_out, StreamOrDevice s) {
  return sum(float32_out ? astype(r, float32, s) : r, -2, true, s);
}

}  // namespace

// Matmul

std::vector<array> Matmul::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  return {product_tangent(primals, tangents, argnums, float32_out_, stream())};
}

std::vector<array> Matmul::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  array g = operand_precision(cotangents[0], primals[0], float32_out_, stream());
  std::vector<array> out;
  for (int arg : argnums) {
    out.push_back(matmul_cotangent(arg, primals[0], primals[1], g, stream()));
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> Matmul::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  // Batch axes in front; an unmapped operand broadcasts over them.
  array a = detail::batch_first(inputs[0], axes[0]);
  array b = detail::batch_first(inputs[1], axes[1]);
  return {{detail::matmul(a, b, float32_out_, stream())}, {0}};
}

// AddMM: out = alpha * (a @ b) + beta * c with inputs {c, a, b}.

std::vector<array> AddMM::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                              const std::vector<int>& argnums) {
  StreamOrDevice s = stream();
  Dtype dt = primals[0].dtype();
  // Accumulate with addmm: acc * acc_scale + alpha * (l @ r).
  std::optional<array> acc;
  float acc_scale = 1.f;
  for (size_t k = 0; k < argnums.size(); ++k) {
    int arg = argnums[k];
    if (arg == 0) {
      // A bias row's tangent broadcasts to the output.
      acc = broadcast_to(tangents[k], output_shapes(primals)[0], s);
      acc_scale = beta_;
      continue;
    }
    const array& l = arg == 1 ? tangents[k] : primals[1];
    const array& r = arg == 2 ? tangents[k] : primals[2];
    acc = acc ? addmm(*acc, l, r, alpha_, acc_scale, s)
              : multiply(matmul(l, r, s), array(alpha_, dt), s);
    acc_scale = 1.f;
  }
  return {acc_scale == 1.f ? *acc : multiply(*acc, array(acc_scale, dt), s)};
}

std::vector<array> AddMM::vjp(const std::vector<array>& primals,
                              const std::vector<array>& cotangents, const std::vector<int>& argnums,
                              const std::vector<array>&) {
  StreamOrDevice s = stream();
  const array& c = primals[0];
  const array& g = cotangents[0];
  Dtype dt = g.dtype();
  auto wants = [&](int arg) {
    return std::find(argnums.begin(), argnums.end(), arg) != argnums.end();
  };
  // A Linear layer's bias row and weight: both gradients from one pass over g.
  std::optional<array> c_grad, b_grad;
  if (wants(0) && wants(2) && alpha_ == 1.f && beta_ == 1.f && g.ndim() == 2 && c.shape(0) == 1) {
    auto grads = array::make_arrays({{primals[2].shape()}, {c.shape()}}, {dt, dt},
                                    std::make_shared<MatmulColumnSums>(to_stream(s)),
                                    {mT(primals[1], s), g});
    b_grad = grads[0];
    c_grad = grads[1];
  }
  std::optional<array> scaled;  // alpha * g, shared by both operands
  std::vector<array> out;
  for (int arg : argnums) {
    if (arg == 0) {
      if (!c_grad) {
        // Summed over the axes that c broadcasts along.
        c_grad = unbroadcast(beta_ == 1.f ? g : multiply(g, array(beta_, dt), s), c, s);
      }
      out.push_back(*c_grad);
      continue;
    }
    if (arg == 2 && b_grad) {
      out.push_back(*b_grad);
      continue;
    }
    if (!scaled) {
      scaled = alpha_ == 1.f ? g : multiply(g, array(alpha_, dt), s);
    }
    out.push_back(matmul_cotangent(arg - 1, primals[1], primals[2], *scaled, s));
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> AddMM::vmap(const std::vector<array>& inputs,
                                                            const std::vector<int>& axes) {
  StreamOrDevice s = stream();
  array c = detail::batch_first(inputs[0], axes[0]);
  array a = detail::batch_first(inputs[1], axes[1]);
  array b = detail::batch_first(inputs[2], axes[2]);
  if (axes[1] < 0 && axes[2] < 0) {
    // c broadcasts to the product's shape, so the product must carry the batch axis: give a
    // a stride-0 batch axis.
    Shape shape = a.shape();
    shape.insert(shape.begin(), c.shape(0));
    a = broadcast_to(expand_dims(a, 0, s), shape, s);
  }
  return {{addmm(c, a, b, alpha_, beta_, s)}, {0}};
}

// MatmulColumnSums: {l @ r, sum(r, rows)} with inputs {l, r}.

std::vector<array> MatmulColumnSums::jvp(const std::vector<array>& primals,
                                         const std::vector<array>& tangents,
                                         const std::vector<int>& argnums) {
  StreamOrDevice s = stream();
  array product = product_tangent(primals, tangents, argnums, float32_output(0), s);
  auto r = std::find(argnums.begin(), argnums.end(), 1);
  if (r != argnums.end()) {
    return {product, column_sums(tangents[r - argnums.begin()], float32_output(1), s)};
  }
  Dtype sums_dtype = float32_output(1) ? float32 : primals[1].dtype();
  return {product, zeros({1, primals[1].shape(1)}, sums_dtype, s)};
}

std::vector<array> MatmulColumnSums::vjp(const std::vector<array>& primals,
                                         const std::vector<array>& cotangents,
                                         const std::vector<int>& argnums,
                                         const std::vector<array>&) {
  StreamOrDevice s = stream();
  array g = operand_precision(cotangents[0], primals[1], float32_output(0), s);
  std::vector<array> out;
  for (int arg : argnums) {
    array grad = matmul_cotangent(arg, primals[0], primals[1], g, s);
    // Each row of r adds to the sums: their cotangent reaches every row.
    out.push_back(
        arg == 1 ? add(grad, operand_precision(cotangents[1], primals[1], float32_output(1), s), s)
                 : grad);
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> MatmulColumnSums::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  StreamOrDevice s = stream();
  array l = detail::batch_first(inputs[0], axes[0]);
  array r = detail::batch_first(inputs[1], axes[1]);
  array sums = column_sums(r, float32_output(1), s);
  if (axes[1] < 0) {
    // Every output carries the batch axis: the sums of an unmapped r are broadcast.
    sums = broadcast_to(expand_dims(sums, 0, s), {l.shape(0), 1, r.shape(-1)}, s);
  }
  return {{detail::matmul(l, r, float32_output(0), s), sums}, {0, 0}};
}

// FusedMatmul: the rules of the ops the step stands for.

std::vector<array> FusedMatmul::jvp(const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  return detail::jvp_by_expansion([this](const auto& in) { return expand(in); }, primals, tangents,
                                  argnums);
}

std::vector<array> FusedMatmul::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  return detail::vjp_by_expansion([this](const auto& in) { return expand(in); }, primals,
                                  cotangents, argnums);
}

std::pair<std::vector<array>, std::vector<int>> FusedMatmul::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  return detail::vmap_by_expansion([this](const auto& in) { return expand(in); }, inputs, axes);
}

// MatmulGeluApprox: gelu_approx(a @ b [+ bias]) with inputs {a, b [, bias]}.
std::vector<array> MatmulGeluApprox::expand(const std::vector<array>& in) const {
  StreamOrDevice s = stream();
  return {gelu_approx(
      in.size() == 3 ? addmm(in[2], in[0], in[1], 1.0f, 1.0f, s) : matmul(in[0], in[1], s), s)};
}

// MatmulGeluApproxVjp: gelu_approx_vjp(x, reshape(a @ b)) with inputs {a, b, x}.
std::vector<array> MatmulGeluApproxVjp::expand(const std::vector<array>& in) const {
  StreamOrDevice s = stream();
  return {gelu_approx_vjp(in[2], reshape(matmul(in[0], in[1], s), in[2].shape(), s), s)};
}

}  // namespace mlx::core

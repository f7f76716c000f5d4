// Transform rules of the gather and scatter primitives.
//
// vmap of Gather and Scatter: when the indices are not mapped, the source's batch axis becomes
// one more sliced axis, taken whole (start 0, slice size B), so the indices serve every batch
// element unchanged. When the indices are mapped, the batch axis of the source is indexed too,
// by arange(B) along a new leading index axis with slice size 1, so batch element b reads
// (writes) only slice b. Either way one gather (scatter) covers the whole batch.
#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

#include "mlx/ops.h"
#include "mlx/primitives/indexing.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

int batch_size(const std::vector<array>& inputs, const std::vector<int>& axes) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (axes[i] >= 0) {
      return inputs[i].shape(axes[i]);
    }
  }
  throw std::logic_error("[vmap] A rule was called without a mapped input.");
}

bool any_mapped(std::vector<int>::const_iterator first, std::vector<int>::const_iterator last) {
  return std::any_of(first, last, [](int ax) { return ax >= 0; });
}

// `x` with its mapped axis moved to the front; an unmapped x gets a leading axis of size 1, or
// of size `batch` (a broadcast) when batch > 0.
array lead_batch(const array& x, int axis, Stream s, int batch = 0) {
  if (axis >= 0) {
    return axis == 0 ? x : moveaxis(x, axis, 0, s);
  }
  array e = expand_dims(x, 0, s);
  if (batch == 0) {
    return e;
  }
  Shape shape = e.shape();
  shape[0] = batch;
  return broadcast_to(e, shape, s);
}

std::vector<int> shifted(const std::vector<int>& axes) {
  std::vector<int> out;
  for (int a : axes) {
    out.push_back(a + 1);
  }
  return out;
}

// arange(batch) along the first of `ndim` dimensions (the others of size 1): the index of each
// batch element's own slice.
array batch_index(int batch, int ndim, Stream s) {
  Shape shape(ndim, 1);
  shape[0] = batch;
  return reshape(arange(0, batch, s), shape, s);
}

// `value` of `dtype` broadcast to `shape` without materializing it.
array filled(const Shape& shape, double value, Dtype dtype, Stream s) {
  return broadcast_to(array(value, dtype), shape, s);
}

array scatter_op(const array& a, const std::vector<array>& indices, const array& updates,
                 const std::vector<int>& axes, ScatterReduce reduce, Stream s) {
  switch (reduce) {
    case ScatterReduce::None:
      return scatter(a, indices, updates, axes, s);
    case ScatterReduce::Sum:
      return scatter_add(a, indices, updates, axes, s);
    case ScatterReduce::Prod:
      return scatter_prod(a, indices, updates, axes, s);
    case ScatterReduce::Max:
      return scatter_max(a, indices, updates, axes, s);
    case ScatterReduce::Min:
      return scatter_min(a, indices, updates, axes, s);
  }
  throw std::logic_error("[scatter] Unknown reduction.");
}

// ScatterAxis with any reduction; the public ops cover None and Sum.
array scatter_axis_op(const array& a, const array& indices, const array& values, int axis,
                      ScatterReduce reduce, Stream s) {
  if (reduce == ScatterReduce::None) {
    return put_along_axis(a, indices, values, axis, s);
  }
  if (reduce == ScatterReduce::Sum) {
    return scatter_add_axis(a, indices, values, axis, s);
  }
  Shape shape = a.shape();
  shape[axis] = indices.shape(axis);
  array idx = contiguous(broadcast_to(indices, shape, s), false, s);
  array vals = contiguous(broadcast_to(astype(values, a.dtype(), s), shape, s), false, s);
  return array(a.shape(), a.dtype(), std::make_shared<ScatterAxis>(s, reduce, axis),
               {a, std::move(idx), std::move(vals)});
}

// Scatter and ScatterAxis differ only in how updates address the destination, so their
// derivative rules are written once against these two operations.
struct ScatterSite {
  // `dst` with `upd` (shaped like the primitive's updates) combined in at the indices.
  std::function<array(const array& dst, const array& upd, ScatterReduce reduce)> scatter;
  // The elements of `src` (shaped like the destination) that the updates address.
  std::function<array(const array& src)> gather;
};

// Whether each update is the one the output keeps (the last one written at its position).
array last_writers(const ScatterSite& site, const array& a, const array& u, Stream s) {
  Dtype idt = u.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()) ? int64 : int32;
  array ids = reshape(arange(0.0, static_cast<double>(u.size()), 1.0, idt, s), u.shape(), s);
  array kept = site.scatter(filled(a.shape(), -1, idt, s), ids, ScatterReduce::None);
  return equal(site.gather(kept), ids, s);
}

// For a product scatter out = a * (product of the updates at each position): `all` is that
// product (shaped like a) and `others`, per update, the product of the other updates at its
// position. Zeros are counted rather than divided by, so zero updates get exact derivatives.
struct ProductParts {
  array all;
  array others;
};

ProductParts product_parts(const ScatterSite& site, const array& a, const array& u, Stream s) {
  Dtype dt = u.dtype();
  array is_zero = equal(u, array(0, dt), s);
  array zeros_at =
      site.scatter(filled(a.shape(), 0, int32, s), astype(is_zero, int32, s), ScatterReduce::Sum);
  array safe_u = where(is_zero, array(1, dt), u, s);
  array nonzero_product = site.scatter(filled(a.shape(), 1, dt, s), safe_u, ScatterReduce::Prod);
  array all = where(equal(zeros_at, array(0), s), nonzero_product, array(0, dt), s);
  // The others' product is nonzero only when this update is the position's only zero, or
  // when there is no zero at all.
  array only_zero = equal(site.gather(zeros_at), astype(is_zero, int32, s), s);
  array others = where(only_zero, divide(site.gather(nonzero_product), safe_u, s), array(0, dt), s);
  return {all, others};
}

// For a max/min scatter: which of a and the updates attain the output, and at each position
// how many do (at least one; ties share the derivative equally).
struct ExtremumWinners {
  array a_wins;
  array u_wins;
  array count;
};

ExtremumWinners extremum_winners(const ScatterSite& site, const array& a, const array& u,
                                 const array& out, Stream s) {
  array a_wins = astype(equal(a, out, s), a.dtype(), s);
  array u_wins = astype(equal(u, site.gather(out), s), a.dtype(), s);
  return {a_wins, u_wins, site.scatter(a_wins, u_wins, ScatterReduce::Sum)};
}

// Tangent of the output given tangents of a and u (absent: zero).
array scatter_jvp(const ScatterSite& site, ScatterReduce reduce, const array& a, const array& u,
                  const std::optional<array>& ta, const std::optional<array>& tu, Stream s) {
  array ta0 = ta ? *ta : filled(a.shape(), 0, a.dtype(), s);
  array tu0 = tu ? *tu : filled(u.shape(), 0, u.dtype(), s);
  switch (reduce) {
    case ScatterReduce::None:
      return site.scatter(ta0, tu0, ScatterReduce::None);
    case ScatterReduce::Sum:
      return tu ? site.scatter(ta0, *tu, ScatterReduce::Sum) : ta0;
    case ScatterReduce::Prod: {
      auto p = product_parts(site, a, u, s);
      array from_u = site.scatter(filled(a.shape(), 0, a.dtype(), s), multiply(tu0, p.others, s),
                                  ScatterReduce::Sum);
      return add(multiply(ta0, p.all, s), multiply(a, from_u, s), s);
    }
    case ScatterReduce::Max:
    case ScatterReduce::Min: {
      auto w = extremum_winners(site, a, u, site.scatter(a, u, reduce), s);
      array sum =
          site.scatter(multiply(w.a_wins, ta0, s), multiply(w.u_wins, tu0, s), ScatterReduce::Sum);
      return divide(sum, w.count, s);
    }
  }
  throw std::logic_error("[scatter] Unknown reduction.");
}

// Cotangents {of a, of u} given the output's cotangent and the output.
std::pair<array, array> scatter_vjp(const ScatterSite& site, ScatterReduce reduce, const array& a,
                                    const array& u, const array& cot, const array& out, Stream s) {
  switch (reduce) {
    case ScatterReduce::None: {
      array ga = site.scatter(cot, filled(u.shape(), 0, u.dtype(), s), ScatterReduce::None);
      // Duplicates: only the update that was kept reaches the output.
      array gu = where(last_writers(site, a, u, s), site.gather(cot), array(0, u.dtype()), s);
      return {ga, gu};
    }
    case ScatterReduce::Sum:
      return {cot, site.gather(cot)};
    case ScatterReduce::Prod: {
      auto p = product_parts(site, a, u, s);
      return {multiply(cot, p.all, s), multiply(site.gather(multiply(cot, a, s)), p.others, s)};
    }
    case ScatterReduce::Max:
    case ScatterReduce::Min: {
      auto w = extremum_winners(site, a, u, out, s);
      array share = divide(cot, w.count, s);
      return {multiply(w.a_wins, share, s), multiply(w.u_wins, site.gather(share), s)};
    }
  }
  throw std::logic_error("[scatter] Unknown reduction.");
}

// The tangents of a (input 0) and the updates (the last input) among `tangents`.
std::pair<std::optional<array>, std::optional<array>> scatter_tangents(
    const std::vector<array>& tangents, const std::vector<int>& argnums, int updates_index) {
  std::optional<array> ta, tu;
  for (size_t k = 0; k < argnums.size(); ++k) {
    if (argnums[k] == 0) {
      ta = tangents[k];
    } else if (argnums[k] == updates_index) {
      tu = tangents[k];
    }
  }
  return {ta, tu};
}

// Picks the cotangents of the requested inputs (indices never are: they are integers).
std::vector<array> select_cotangents(const std::pair<array, array>& g,
                                     const std::vector<int>& argnums, int updates_index) {
  std::vector<array> out;
  for (int i : argnums) {
    if (i != 0 && i != updates_index) {
      throw std::invalid_argument("[scatter] Indices have no cotangent.");
    }
    out.push_back(i == 0 ? g.first : g.second);
  }
  return out;
}

ScatterSite scatter_site(const std::vector<array>& primals, const std::vector<int>& axes,
                         Stream s) {
  const array& a = primals[0];
  const array& u = primals.back();
  std::vector<array> indices(primals.begin() + 1, primals.end() - 1);
  Shape slice(u.shape().end() - a.ndim(), u.shape().end());
  return {[=](const array& dst, const array& upd, ScatterReduce r) {
            return scatter_op(dst, indices, upd, axes, r, s);
          },
          [=](const array& src) { return gather(src, indices, axes, slice, s); }};
}

ScatterSite scatter_axis_site(const array& indices, int axis, Stream s) {
  return {[=](const array& dst, const array& upd, ScatterReduce r) {
            return scatter_axis_op(dst, indices, upd, axis, r, s);
          },
          [=](const array& src) { return take_along_axis(src, indices, axis, s); }};
}

}  // namespace

// Gather

std::vector<array> Gather::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents, const std::vector<int>&) {
  std::vector<array> indices(primals.begin() + 1, primals.end());
  return {gather(tangents[0], indices, axes_, slice_sizes_, stream())};
}

std::vector<array> Gather::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents, const std::vector<int>&,
                               const std::vector<array>&) {
  const array& a = primals[0];
  std::vector<array> indices(primals.begin() + 1, primals.end());
  return {scatter_add(filled(a.shape(), 0, a.dtype(), stream()), indices, cotangents[0], axes_,
                      stream())};
}

std::pair<std::vector<array>, std::vector<int>> Gather::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  Stream s = stream();
  int batch = batch_size(inputs, axes);
  const array& a = inputs[0];
  if (!any_mapped(axes.begin() + 1, axes.end())) {
    // The batch axis is sliced whole; it lands right after the index dimensions.
    std::vector<array> indices(inputs.begin() + 1, inputs.end());
    Shape sizes = slice_sizes_;
    sizes.insert(sizes.begin(), batch);
    array out = gather(lead_batch(a, axes[0], s), indices, shifted(axes_), sizes, s);
    return {{out}, {indices.empty() ? 0 : indices[0].ndim()}};
  }
  std::vector<array> indices;
  for (size_t i = 1; i < inputs.size(); ++i) {
    indices.push_back(lead_batch(inputs[i], axes[i], s));
  }
  if (axes[0] < 0) {
    return {{gather(a, indices, axes_, slice_sizes_, s)}, {0}};
  }
  int index_ndim = 0;
  for (auto& idx : indices) {
    index_ndim = std::max(index_ndim, idx.ndim());
  }
  indices.insert(indices.begin(), batch_index(batch, index_ndim, s));
  std::vector<int> gather_axes = shifted(axes_);
  gather_axes.insert(gather_axes.begin(), 0);
  Shape sizes = slice_sizes_;
  sizes.insert(sizes.begin(), 1);
  array out = gather(lead_batch(a, axes[0], s), indices, gather_axes, sizes, s);
  return {{squeeze(out, index_ndim, s)}, {0}};
}

// GatherAxis

std::vector<array> GatherAxis::jvp(const std::vector<array>& primals,
                                   const std::vector<array>& tangents, const std::vector<int>&) {
  return {take_along_axis(tangents[0], primals[1], axis_, stream())};
}

std::vector<array> GatherAxis::vjp(const std::vector<array>& primals,
                                   const std::vector<array>& cotangents, const std::vector<int>&,
                                   const std::vector<array>&) {
  const array& a = primals[0];
  return {scatter_add_axis(filled(a.shape(), 0, a.dtype(), stream()), primals[1], cotangents[0],
                           axis_, stream())};
}

std::pair<std::vector<array>, std::vector<int>> GatherAxis::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  // take_along_axis broadcasts the source and the indices outside the axis.
  Stream s = stream();
  array a = lead_batch(inputs[0], axes[0], s);
  array idx = lead_batch(inputs[1], axes[1], s);
  return {{take_along_axis(a, idx, axis_ + 1, s)}, {0}};
}

// Scatter

std::vector<array> Scatter::jvp(const std::vector<array>& primals,
                                const std::vector<array>& tangents,
                                const std::vector<int>& argnums) {
  int last = static_cast<int>(primals.size()) - 1;
  auto [ta, tu] = scatter_tangents(tangents, argnums, last);
  return {scatter_jvp(scatter_site(primals, axes_, stream()), reduce_, primals[0], primals[last],
                      ta, tu, stream())};
}

std::vector<array> Scatter::vjp(const std::vector<array>& primals,
                                const std::vector<array>& cotangents,
                                const std::vector<int>& argnums,
                                const std::vector<array>& outputs) {
  auto g = scatter_vjp(scatter_site(primals, axes_, stream()), reduce_, primals[0], primals.back(),
                       cotangents[0], outputs[0], stream());
  return select_cotangents(g, argnums, static_cast<int>(primals.size()) - 1);
}

std::pair<std::vector<array>, std::vector<int>> Scatter::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  Stream s = stream();
  int batch = batch_size(inputs, axes);
  // Every batch element gets its own copy of a, so an unmapped a is broadcast.
  array a = lead_batch(inputs[0], axes[0], s, batch);
  const array& u = inputs.back();
  int u_axis = axes.back();
  // Updates are (index dims, slice dims); the batch becomes a slice dim right after the index
  // dims, or a leading index dim.
  int index_ndim = u.ndim() - a.ndim() + (u_axis >= 0 ? 0 : 1);
  if (!any_mapped(axes.begin() + 1, axes.end() - 1)) {
    std::vector<array> indices(inputs.begin() + 1, inputs.end() - 1);
    array upd = u_axis >= 0 ? moveaxis(u, u_axis, index_ndim, s) : expand_dims(u, index_ndim, s);
    if (u_axis < 0) {
      Shape shape = upd.shape();
      shape[index_ndim] = batch;
      upd = broadcast_to(upd, shape, s);
    }
    return {{scatter_op(a, indices, upd, shifted(axes_), reduce_, s)}, {0}};
  }
  std::vector<array> indices{batch_index(batch, index_ndim + 1, s)};
  for (size_t i = 1; i + 1 < inputs.size(); ++i) {
    indices.push_back(lead_batch(inputs[i], axes[i], s));
  }
  std::vector<int> scatter_axes = shifted(axes_);
  scatter_axes.insert(scatter_axes.begin(), 0);
  array upd = expand_dims(lead_batch(u, u_axis, s), index_ndim + 1, s);
  return {{scatter_op(a, indices, upd, scatter_axes, reduce_, s)}, {0}};
}

// ScatterAxis

std::vector<array> ScatterAxis::jvp(const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  auto [ta, tu] = scatter_tangents(tangents, argnums, 2);
  return {scatter_jvp(scatter_axis_site(primals[1], axis_, stream()), reduce_, primals[0],
                      primals[2], ta, tu, stream())};
}

std::vector<array> ScatterAxis::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums,
                                    const std::vector<array>& outputs) {
  auto g = scatter_vjp(scatter_axis_site(primals[1], axis_, stream()), reduce_, primals[0],
                       primals[2], cotangents[0], outputs[0], stream());
  return select_cotangents(g, argnums, 2);
}

std::pair<std::vector<array>, std::vector<int>> ScatterAxis::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  // The scatter broadcasts unmapped indices and values outside the axis; a must be full size.
  Stream s = stream();
  int batch = batch_size(inputs, axes);
  array a = lead_batch(inputs[0], axes[0], s, batch);
  array idx = lead_batch(inputs[1], axes[1], s);
  array vals = lead_batch(inputs[2], axes[2], s);
  return {{scatter_axis_op(a, idx, vals, axis_ + 1, reduce_, s)}, {0}};
}

}  // namespace mlx::core

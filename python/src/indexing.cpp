// Indexing of mx.array with NumPy's rules: a[idx], a[idx] = v and a.at[idx].add(v) & co.
//
// Basic indices (ints, slices, None, ...) select one Slice view of the array. Integer arrays
// (and ints, once an array is present) turn into a gather / scatter on that view, with the
// broadcast index dimensions placed where NumPy puts them. Boolean masks work in assignments
// only, as in MLX: they become a where() over the masked region, so that no shape depends on
// the mask's data.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <optional>
#include <string>

#include "mlx/ops.h"
#include "mlx/utils.h"
#include "python/src/bindings.h"
#include "python/src/convert.h"

namespace nb = nanobind;
using namespace mlx::core;
using namespace mlx::core::python;

namespace {

enum class Kind { Int, Slice, NewAxis, Ellipsis, Array, Mask };

// One entry of an index tuple. `axis` is the first axis of the indexed array it consumes.
struct Entry {
  Kind kind;
  int axis = 0;
  int64_t index = 0;                              // Int, as given
  int32_t start = 0, stop = INT32_MAX, step = 1;  // Slice; an Int's normalized index is start
  std::optional<array> arr;                       // Array, Mask
};

// How an update combines with the current values.
enum class Update { Set, Add, Subtract, Multiply, Divide, Maximum, Minimum };

[[noreturn]] void index_error(const std::string& m) { throw nb::index_error(m.c_str()); }

int axes_consumed(const Entry& e) {
  switch (e.kind) {
    case Kind::Int:
    case Kind::Slice:
    case Kind::Array:
      return 1;
    case Kind::Mask:
      return e.arr->ndim();
    default:
      return 0;
  }
}

int32_t clamp32(Py_ssize_t v, int32_t lo) {
  return static_cast<int32_t>(std::clamp<Py_ssize_t>(v, lo, INT32_MAX));
}

Entry array_entry(array x, const char* op) {
  if (x.dtype() == bool_) {
    return {.kind = Kind::Mask, .arr = std::move(x)};
  }
  if (!is_integral(x.dtype())) {
    throw std::invalid_argument(msg("[", op,
                                    "] Arrays used as indices must have an integer or boolean "
                                    "dtype; got ",
                                    x.dtype(), "."));
  }
  return {.kind = Kind::Array, .arr = std::move(x)};
}

Entry classify(nb::handle obj, const char* op) {
  if (obj.is_none()) {
    return {Kind::NewAxis};
  }
  if (obj.ptr() == Py_Ellipsis) {
    return {Kind::Ellipsis};
  }
  if (PySlice_Check(obj.ptr())) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(obj.ptr(), &start, &stop, &step) < 0) {
      if (!PyErr_ExceptionMatches(PyExc_ValueError)) {
        throw nb::python_error();
      }
      PyErr_Clear();  // the only ValueError: a zero step
      throw nb::value_error(msg("[", op, "] Slice step cannot be zero.").c_str());
    }
    // Bounds beyond int32 clip like any out-of-range bound; slice() does the rest.
    return {.kind = Kind::Slice,
            .start = clamp32(start, INT32_MIN),
            .stop = clamp32(stop, INT32_MIN),
            .step = clamp32(step, -INT32_MAX)};
  }
  if (nb::isinstance<nb::bool_>(obj)) {
    return array_entry(array(nb::cast<bool>(obj)), op);
  }
  if (nb::isinstance<array>(obj)) {
    return array_entry(nb::cast<array>(obj), op);
  }
  if (PyIndex_Check(obj.ptr())) {
    // Python and NumPy integers (and 0-d NumPy integer arrays); overflow clips, then fails the
    // bounds check.
    Py_ssize_t i = PyNumber_AsSsize_t(obj.ptr(), nullptr);
    if (!(i == -1 && PyErr_Occurred())) {
      Entry e{Kind::Int};
      e.index = i;
      return e;
    }
    PyErr_Clear();
  }
  bool is_sequence = nb::isinstance<nb::list>(obj) || nb::isinstance<nb::tuple>(obj);
  if (is_sequence || nb::hasattr(obj, "__array__") || nb::hasattr(obj, "__dlpack__")) {
    array x = array_from_python(obj);
    // An empty list converts to float32 but selects nothing, as in NumPy.
    if (is_sequence && x.size() == 0 && x.dtype() == float32) {
      x = astype(x, int32);
    }
    return array_entry(std::move(x), op);
  }
  throw nb::type_error(msg("[", op,
                           "] Only integers, slices (`:`), ellipsis (`...`), None and integer "
                           "or boolean arrays are valid indices; got an object of type ",
                           nb::cast<std::string>(nb::type_name(obj.type())), ".")
                           .c_str());
}

// The entries of `obj` with the ellipsis expanded (a marker entry stays, since it separates
// advanced indices) and trailing full slices added; ints are bounds-checked and normalized.
std::vector<Entry> parse_index(const array& a, nb::handle obj, const char* op) {
  std::vector<Entry> raw;
  if (nb::isinstance<nb::tuple>(obj)) {
    for (nb::handle h : obj) {
      raw.push_back(classify(h, op));
    }
  } else {
    raw.push_back(classify(obj, op));
  }
  int consumed = 0, ellipses = 0;
  for (auto& e : raw) {
    consumed += axes_consumed(e);
    ellipses += e.kind == Kind::Ellipsis;
  }
  if (ellipses > 1) {
    index_error(msg("[", op, "] An index can only have a single ellipsis ('...')."));
  }
  if (consumed > a.ndim()) {
    index_error(msg("[", op, "] Too many indices for an array of shape ", a.shape(), ": ", consumed,
                    " axes indexed."));
  }
  std::vector<Entry> out;
  int axis = 0;
  auto add_full_slice = [&] {
    Entry e{Kind::Slice};
    e.axis = axis++;
    out.push_back(e);
  };
  for (auto& e : raw) {
    e.axis = axis;
    if (e.kind == Kind::Int) {
      int64_t n = a.shape(axis);
      if (e.index < -n || e.index >= n) {
        index_error(msg("[", op, "] Index ", e.index, " is out of bounds for axis ", axis,
                        " with size ", n, "."));
      }
      e.start = static_cast<int32_t>(e.index < 0 ? e.index + n : e.index);
    } else if (e.kind == Kind::Mask) {
      for (int i = 0; i < e.arr->ndim(); ++i) {
        if (e.arr->shape(i) != a.shape(axis + i)) {
          index_error(msg("[", op, "] A boolean mask of shape ", e.arr->shape(),
                          " does not match the indexed axes of the array of shape ", a.shape(),
                          " (axis ", axis + i, " has size ", a.shape(axis + i), ")."));
        }
      }
    }
    axis += axes_consumed(e);
    out.push_back(e);
    if (e.kind == Kind::Ellipsis) {
      for (int k = consumed; k < a.ndim(); ++k) {
        add_full_slice();
      }
    }
  }
  while (axis < a.ndim()) {
    add_full_slice();
  }
  return out;
}

// Where the parts of an index land. The result of a[idx] is `view` (the slices, with ints as
// one-element slices when they are basic) gathered at `adv` along `adv_axes`; its "core" layout
// is [block, rest] (rest: the view's axes that are neither indexed by arrays nor by basic
// ints), which a transpose (block to position block_pos of rest) and the new axes turn into
// out_shape.
struct Plan {
  Shape start, stop, strides;
  std::optional<array> view;
  std::vector<int> int_axes;
  std::vector<int> adv_axes;
  std::vector<array> adv;
  Shape block;
  Shape rest;
  int block_pos = 0;
  std::vector<int> new_axes;
  Shape out_shape;
};

Plan make_plan(const array& a, const std::vector<Entry>& entries, const char* op) {
  Plan p;
  int nd = a.ndim();
  p.start = Shape(nd, 0);
  p.stop = a.shape();
  p.strides = Shape(nd, 1);
  bool any_array = std::any_of(entries.begin(), entries.end(),
                               [](const Entry& e) { return e.kind == Kind::Array; });
  int rest = 0, last_adv = -2;
  bool adjacent = true;
  for (int k = 0; k < static_cast<int>(entries.size()); ++k) {
    const Entry& e = entries[k];
    if (e.kind == Kind::Slice) {
      p.start[e.axis] = e.start;
      p.stop[e.axis] = e.stop;
      p.strides[e.axis] = e.step;
      ++rest;
    } else if (e.kind == Kind::Int && !any_array) {
      p.start[e.axis] = e.start;
      p.stop[e.axis] = e.start + 1;
      p.int_axes.push_back(e.axis);
    } else if (e.kind == Kind::Int || e.kind == Kind::Array) {
      // NumPy: with arrays present, ints are advanced indices too.
      p.adv.push_back(e.kind == Kind::Int ? array(e.start, int32) : *e.arr);
      p.adv_axes.push_back(e.axis);
      if (last_adv < 0) {
        p.block_pos = rest;
      } else if (last_adv != k - 1) {
        adjacent = false;
      }
      last_adv = k;
    }
  }
  if (!adjacent) {
    p.block_pos = 0;
  }
  for (auto& idx : p.adv) {
    Shape s = p.block;
    try {
      p.block = broadcast_shapes(p.block, idx.shape());
    } catch (const std::invalid_argument&) {
      index_error(msg("[", op, "] Index arrays could not be broadcast together; got shapes ", s,
                      " and ", idx.shape(), "."));
    }
  }
  p.view = slice(a, p.start, p.stop, p.strides);
  for (int ax : p.adv_axes) {
    if (p.view->shape(ax) == 0 && shape_size(p.block) > 0) {
      index_error(msg("[", op, "] Cannot index axis ", ax, " of size 0 with ", shape_size(p.block),
                      " indices."));
    }
  }
  // The slices' lengths and the new axes in order, with the block at the first advanced index
  // when the advanced indices are adjacent, else in front.
  bool block_placed = !adjacent;
  if (!adjacent) {
    p.out_shape = p.block;
  }
  for (auto& e : entries) {
    if (e.kind == Kind::Slice) {
      p.rest.push_back(p.view->shape(e.axis));
      p.out_shape.push_back(p.rest.back());
    } else if (e.kind == Kind::NewAxis) {
      p.new_axes.push_back(static_cast<int>(p.out_shape.size()));
      p.out_shape.push_back(1);
    } else if (!block_placed && (e.kind == Kind::Array || (e.kind == Kind::Int && any_array))) {
      block_placed = true;
      p.out_shape.insert(p.out_shape.end(), p.block.begin(), p.block.end());
    }
  }
  return p;
}

// Permutation of [block, rest] that moves the block to position `block_pos` of rest.
std::vector<int> block_perm(int nblock, int nrest, int block_pos) {
  std::vector<int> perm(nblock + nrest);
  std::iota(perm.begin(), perm.begin() + block_pos, nblock);
  std::iota(perm.begin() + block_pos, perm.begin() + block_pos + nblock, 0);
  std::iota(perm.begin() + block_pos + nblock, perm.end(), nblock + block_pos);
  return perm;
}

std::vector<int> inverse_perm(const std::vector<int>& perm) {
  std::vector<int> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    inv[perm[i]] = static_cast<int>(i);
  }
  return inv;
}

// Slice sizes for gather / scatter: the view's shape with 1 along the indexed axes (0 for
// empty axes, which make_plan lets through only with no indices).
Shape slice_sizes(const Plan& p) {
  Shape sizes = p.view->shape();
  for (int ax : p.adv_axes) {
    sizes[ax] = std::min(sizes[ax], 1);
  }
  return sizes;
}

array get_item(const Plan& p) {
  if (p.adv.empty()) {
    // Dropping int axes and adding new ones only changes unit dimensions: still a view.
    return reshape(*p.view, p.out_shape);
  }
  array g = gather(*p.view, p.adv, p.adv_axes, slice_sizes(p));
  Shape core = p.block;
  core.insert(core.end(), p.rest.begin(), p.rest.end());
  g = reshape(g, core);
  int nblock = static_cast<int>(p.block.size());
  g = transpose(g, block_perm(nblock, g.ndim() - nblock, p.block_pos));
  return reshape(g, p.out_shape);
}

// `v` made broadcastable to `shape` with exactly its number of dimensions: NumPy drops
// extra leading unit dimensions of assigned values. Dimension `free_dim` may have any size.
array fit_value(array v, const Shape& shape, const char* op, int free_dim = -1) {
  int nd = static_cast<int>(shape.size());
  Shape vs = v.shape();
  size_t lead = 0;
  while (static_cast<int>(vs.size() - lead) > nd && vs[lead] == 1) {
    ++lead;
  }
  vs.erase(vs.begin(), vs.begin() + lead);
  bool ok = static_cast<int>(vs.size()) <= nd;
  if (ok) {
    vs.insert(vs.begin(), nd - vs.size(), 1);
    for (int i = 0; i < nd; ++i) {
      ok &= vs[i] == shape[i] || vs[i] == 1 || i == free_dim;
    }
  }
  if (!ok) {
    throw std::invalid_argument(msg("[", op, "] Cannot broadcast a value of shape ", v.shape(),
                                    " to the indexed shape ", shape, "."));
  }
  return reshape(v, vs);
}

// A value fitted to out_shape, in the core layout [block, rest] (new axes dropped).
array to_core(const Plan& p, array v) {
  Shape s;
  for (int i = 0; i < v.ndim(); ++i) {
    if (std::find(p.new_axes.begin(), p.new_axes.end(), i) == p.new_axes.end()) {
      s.push_back(v.shape(i));
    }
  }
  v = reshape(v, s);
  int nblock = static_cast<int>(p.block.size());
  return transpose(v, inverse_perm(block_perm(nblock, v.ndim() - nblock, p.block_pos)));
}

array combine(Update u, const array& old, const array& v, Dtype dtype) {
  switch (u) {
    case Update::Set:
      return astype(v, dtype);
    case Update::Add:
      return astype(add(old, v), dtype);
    case Update::Subtract:
      return astype(subtract(old, v), dtype);
    case Update::Multiply:
      return astype(multiply(old, v), dtype);
    case Update::Divide:
      return astype(divide(old, v), dtype);
    case Update::Maximum:
      return astype(maximum(old, v), dtype);
    default:
      return astype(minimum(old, v), dtype);
  }
}

// a with the basic-indexed region replaced by `v` (broadcastable to out_shape).
array set_basic(const array& a, const Plan& p, array v) {
  v = to_core(p, v);
  Shape s;
  int next = 0;
  for (int ax = 0; ax < a.ndim(); ++ax) {
    bool is_int = std::find(p.int_axes.begin(), p.int_axes.end(), ax) != p.int_axes.end();
    s.push_back(is_int ? 1 : v.shape(next++));
  }
  if (p.view->id() == a.id()) {
    // The whole array is replaced: no need to copy it first.
    return astype(broadcast_to(reshape(v, s), a.shape()), a.dtype());
  }
  return slice_update(a, reshape(v, s), p.start, p.stop, p.strides);
}

// The view with updates scattered at the advanced indices (duplicates accumulate, except for
// Set where one of them wins).
array scatter_view(const Plan& p, Update u, array v) {
  const array& view = *p.view;
  v = to_core(p, v);
  int nblock = static_cast<int>(p.block.size());
  Shape s(v.shape().begin(), v.shape().begin() + nblock);
  Shape upd_shape = p.block;
  Shape sizes = slice_sizes(p);
  int next = nblock;
  for (int ax = 0; ax < view.ndim(); ++ax) {
    bool is_adv = std::find(p.adv_axes.begin(), p.adv_axes.end(), ax) != p.adv_axes.end();
    s.push_back(is_adv ? 1 : v.shape(next++));
    upd_shape.push_back(sizes[ax]);
  }
  array upd = broadcast_to(reshape(v, s), upd_shape);
  switch (u) {
    case Update::Set:
      return scatter(view, p.adv, upd, p.adv_axes);
    case Update::Add:
      return scatter_add(view, p.adv, upd, p.adv_axes);
    case Update::Subtract:
      return scatter_add(view, p.adv, negative(upd), p.adv_axes);
    case Update::Multiply:
      return scatter_prod(view, p.adv, upd, p.adv_axes);
    case Update::Maximum:
      return scatter_max(view, p.adv, upd, p.adv_axes);
    case Update::Minimum:
      return scatter_min(view, p.adv, upd, p.adv_axes);
    default: {
      // Divide by the product of the divisors at each position (1 where none lands).
      Dtype t = upd.dtype();
      array divisors = scatter_prod(full(view.shape(), array(1), t), p.adv, upd, p.adv_axes);
      return astype(divide(astype(view, t), divisors), view.dtype());
    }
  }
}

bool has_kind(const std::vector<Entry>& entries, Kind kind) {
  return std::any_of(entries.begin(), entries.end(),
                     [kind](const Entry& e) { return e.kind == kind; });
}

// a[..., mask, ...] = v for one mask among basic indices. The selected positions, in row-major
// order, take the values along the selection axis of v in turn (v needs at least as many as
// there are selected positions, or a single one); the others keep their values.
array mask_update(const array& a, const std::vector<Entry>& entries, Update u, array v,
                  const char* op) {
  int mk = static_cast<int>(std::find_if(entries.begin(), entries.end(),
                                         [](const Entry& e) { return e.kind == Kind::Mask; }) -
                            entries.begin());
  const array& mask = *entries[mk].arr;
  int m = mask.ndim();
  // The region of a with the mask's axes taken in full.
  std::vector<Entry> basic;
  for (int k = 0; k < static_cast<int>(entries.size()); ++k) {
    if (k != mk) {
      basic.push_back(entries[k]);
      continue;
    }
    for (int i = 0; i < m; ++i) {
      Entry e{Kind::Slice};
      e.axis = entries[k].axis + i;
      basic.push_back(e);
    }
  }
  Plan p = make_plan(a, basic, op);
  array region = reshape(*p.view, p.out_shape);
  // The mask's axes start at `pos` in the region. In NumPy's value shape the selection axis
  // is there too, unless ints (advanced indices as well) are apart from the mask: then first.
  int pos = 0, first_adv = -1, last_adv = -1;
  bool adjacent = true;
  for (int k = 0; k < static_cast<int>(entries.size()); ++k) {
    Kind kind = entries[k].kind;
    pos += k < mk && (kind == Kind::Slice || kind == Kind::NewAxis);
    if (kind == Kind::Int || kind == Kind::Mask) {
      adjacent &= first_adv < 0 || last_adv == k - 1;
      first_adv = first_adv < 0 ? k : first_adv;
      last_adv = k;
    }
  }
  int vpos = adjacent ? pos : 0;
  Shape target = region.shape();
  target.erase(target.begin() + pos, target.begin() + pos + m);
  target.insert(target.begin() + vpos, 1);
  v = fit_value(v, target, op, vpos);
  int count = v.shape(vpos);
  if (count == 0) {
    return a;
  }
  array g = v;
  if (count == 1) {
    Shape s = v.shape();
    s.erase(s.begin() + vpos);
    s.insert(s.begin() + pos, m, 1);
    g = reshape(v, s);
  } else {
    // Position i of the mask (row-major) is the k-th selected one, k = cumsum - 1.
    array k = maximum(subtract(cumsum(astype(flatten(mask), int32), 0), array(1)), array(0));
    g = take(v, reshape(k, mask.shape()), vpos);
    if (vpos != pos) {
      g = transpose(g, block_perm(m, g.ndim() - m, pos));
    }
  }
  Shape cond_shape(pos, 1);
  cond_shape.insert(cond_shape.end(), mask.shape().begin(), mask.shape().end());
  cond_shape.resize(region.ndim(), 1);
  array updated = where(reshape(mask, cond_shape), combine(u, region, g, a.dtype()), region);
  return set_basic(a, p, updated);
}

array get_item(const array& a, nb::handle idx) {
  auto entries = parse_index(a, idx, "getitem");
  if (has_kind(entries, Kind::Mask)) {
    throw std::invalid_argument(
        "[getitem] Boolean mask indexing is only supported in assignments (a[mask] = v), as in "
        "MLX; use mx.where to select with a mask.");
  }
  return get_item(make_plan(a, entries, "getitem"));
}

// a with a[idx] updated by `val`, as a new array.
array update_item(const array& a, nb::handle idx, nb::handle val, Update u, const char* op) {
  auto entries = parse_index(a, idx, op);
  // Dividing integers by integer-typed divisors would truncate each divisor's effect.
  Dtype t = u == Update::Divide && !is_inexact(a.dtype()) ? float64 : a.dtype();
  array v = astype(to_operand(val, a.dtype()), t);
  if (has_kind(entries, Kind::Mask)) {
    int masks = static_cast<int>(std::count_if(
        entries.begin(), entries.end(), [](const Entry& e) { return e.kind == Kind::Mask; }));
    if (masks > 1 || has_kind(entries, Kind::Array)) {
      throw std::invalid_argument(msg("[", op,
                                      "] A boolean mask can only be combined with integers, "
                                      "slices, None and an ellipsis; got ",
                                      masks, " masks and ",
                                      has_kind(entries, Kind::Array) ? "" : "no ",
                                      "integer index arrays."));
    }
    return mask_update(a, entries, u, std::move(v), op);
  }
  Plan p = make_plan(a, entries, op);
  v = fit_value(v, p.out_shape, op);
  if (p.adv.empty()) {
    if (u != Update::Set) {
      v = combine(u, get_item(p), v, a.dtype());
    }
    return set_basic(a, p, v);
  }
  array updated = scatter_view(p, u, v);
  if (p.view->id() == a.id()) {
    return updated;
  }
  return slice_update(a, updated, p.start, p.stop, p.strides);
}

// What a.at returns; at[idx] records the index, and the update methods apply it.
struct ArrayAt {
  array a;
  nb::object indices;
};

}  // namespace

void init_indexing(nb::module_& m) {
  auto at_cls = nb::class_<ArrayAt>(m, "ArrayAt",
                                    "The updater returned by array.at: x.at[idx].add(y) etc. "
                                    "return the updated array, with every update applied at "
                                    "repeated indices.");
  at_cls.def(
      "__getitem__",
      [](const ArrayAt& self, nb::object idx) {
        return ArrayAt{self.a, std::move(idx)};
      },
      nb::arg("indices").none());
  const std::pair<const char*, Update> updates[] = {
      {"add", Update::Add},       {"subtract", Update::Subtract}, {"multiply", Update::Multiply},
      {"divide", Update::Divide}, {"maximum", Update::Maximum},   {"minimum", Update::Minimum},
  };
  for (auto [name, u] : updates) {
    at_cls.def(
        name,
        [u, name](const ArrayAt& self, nb::handle value) {
          if (!self.indices.is_valid()) {
            throw std::invalid_argument(
                msg("[at] Give the indices first, as in x.at[idx].", name, "(y)."));
          }
          return update_item(self.a, self.indices, value, u, "at");
        },
        nb::arg("value"));
  }

  nb::object cls = m.attr("array");
  cls.attr("__getitem__") = nb::cpp_function(
      [](const array& a, nb::handle idx) { return get_item(a, idx); }, nb::is_method(),
      nb::scope(cls), nb::name("__getitem__"), nb::arg("indices").none());
  // Arrays are values: assignment rebinds this Python array to the updated result.
  cls.attr("__setitem__") =
      nb::cpp_function([](array& a, nb::handle idx,
                          nb::handle val) { a = update_item(a, idx, val, Update::Set, "setitem"); },
                       nb::is_method(), nb::scope(cls), nb::name("__setitem__"),
                       nb::arg("indices").none(), nb::arg("value"));
  cls.attr("at") = nb::module_::import_("builtins")
                       .attr("property")(nb::cpp_function(
                                             [](const array& a) {
                                               return ArrayAt{a, nb::object()};
                                             },
                                             nb::is_method(), nb::scope(cls), nb::name("at")),
                                         nb::none(), nb::none(),
                                         "Used to apply updates at the given indices: "
                                         "x.at[idx].add(y) adds y at every (even repeated) "
                                         "index.");
}

// Shape and layout ops: reshape, transpose, squeeze, concatenate, split, pad, roll, tile, ...
#include "mlx/utils.h"
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace mlx::core::python {

namespace {

// pad_width as MLX (and NumPy) take it: n, (n,), (before, after), ((before, after),) for every
// axis, or one (before, after) pair per axis.
using PadWidth =
    std::variant<int, std::pair<int, int>, std::vector<int>, std::vector<std::pair<int, int>>>;

std::vector<std::pair<int, int>> pad_pairs(const PadWidth& w, int ndim) {
  auto all = [ndim](std::pair<int, int> p) { return std::vector<std::pair<int, int>>(ndim, p); };
  if (auto* n = std::get_if<int>(&w)) {
    return all({*n, *n});
  }
  if (auto* p = std::get_if<std::pair<int, int>>(&w)) {
    return all(*p);
  }
  if (auto* v = std::get_if<std::vector<int>>(&w)) {
    if (v->size() != 1) {
      throw std::invalid_argument(
          msg("[pad] pad_width must be n, (n,), (before, after) or a (before, after) pair per "
              "axis; got ",
              v->size(), " integers."));
    }
    return all({(*v)[0], (*v)[0]});
  }
  auto& pairs = std::get<std::vector<std::pair<int, int>>>(w);
  return pairs.size() == 1 ? all(pairs[0]) : pairs;
}

// The arrays of a variadic call (*arrays), which MLX takes as arrays only.
std::vector<array> arrays_of(const nb::args& args, const char* op) {
  std::vector<array> out;
  for (nb::handle h : args) {
    out.push_back(cast_arg<array>(h, op, "arrays"));
  }
  return out;
}

using AtLeastFn = std::vector<array> (*)(const std::vector<array>&, StreamOrDevice);

// atleast_{1,2,3}d(*arys): one array for one input, a list otherwise.
void def_atleast(nb::module_& m, const char* name, AtLeastFn fn) {
  m.def(
      name,
      [fn, name](nb::args arys, StreamOrDevice s) -> nb::object {
        auto out = fn(arrays_of(arys, name), s);
        return out.size() == 1 ? nb::cast(out[0]) : nb::cast(out);
      },
      "arys"_a, "stream"_a = nb::none(), docstring(name));
}

// tril / triu: (x, k=0).
using TriangleFn = array (*)(array, int, StreamOrDevice);

void def_triangle(nb::module_& m, const char* name, TriangleFn fn) {
  def_op(
      m, {name, false, "x"}, [fn](const array& x, int k, StreamOrDevice s) { return fn(x, k, s); },
      "k"_a = 0);
}

// concatenate / concat: a list of arrays along `axis`, or flattened when axis is None.
void def_concatenate(nb::module_& m, const char* name) {
  m.def(
      name,
      [](std::vector<array> arrays, std::optional<int> axis, StreamOrDevice s) {
        if (!axis) {
          for (auto& x : arrays) {
            x = flatten(x, s);
          }
        }
        return concatenate(std::move(arrays), axis.value_or(0), s);
      },
      "arrays"_a, "axis"_a.none() = 0, nb::kw_only(), "stream"_a = nb::none(), docstring(name));
}

void init_dynamic_slices(nb::module_& m) {
  // mx.slice / mx.slice_update: start indices held in an array (so they may be computed) for
  // the given axes; a gather / scatter of one slice at those scalar indices.
  auto starts = [](const array& start_indices, const std::vector<int>& axes) {
    std::vector<array> idx;
    for (int i = 0; i < static_cast<int>(axes.size()); ++i) {
      idx.push_back(start_indices.ndim() == 0 ? start_indices : take(flatten(start_indices), i));
    }
    return idx;
  };
  def_op(
      m, {"slice"},
      [starts](const array& a, const array& start_indices, const std::vector<int>& axes,
               const Shape& slice_size, StreamOrDevice s) {
        return gather(a, starts(start_indices, axes), axes, slice_size, s);
      },
      "start_indices"_a, "axes"_a, "slice_size"_a);
  def_op(
      m, {"slice_update"},
      [starts](const array& a, const ScalarOrArray& update, const array& start_indices,
               const std::vector<int>& axes, StreamOrDevice s) {
        array u = astype(update.get(a.dtype()), a.dtype(), s);
        Shape shape = u.shape();
        shape.insert(shape.begin(), a.ndim() - std::min(a.ndim(), u.ndim()), 1);
        return scatter(a, starts(start_indices, axes), reshape(u, std::move(shape), s), axes, s);
      },
      "update"_a, "start_indices"_a, "axes"_a);
}

}  // namespace

void init_ops_shape(nb::module_& m) {
  def_op(
      m, {"reshape"},
      [](const array& a, const IntOrInts& shape, StreamOrDevice s) {
        return reshape(a, to_ints(shape), s);
      },
      "shape"_a);
  def_op(
      m, {"flatten", true},
      [](const array& a, int start_axis, int end_axis, StreamOrDevice s) {
        return flatten(a, start_axis, end_axis, s);
      },
      "start_axis"_a = 0, "end_axis"_a = -1);
  def_op(
      m, {"unflatten", true},
      [](const array& a, int axis, const Shape& shape, StreamOrDevice s) {
        return unflatten(a, axis, shape, s);
      },
      "axis"_a, "shape"_a);
  def_op(
      m, {"squeeze", true},
      [](const array& a, const OptAxes& axis, StreamOrDevice s) {
        return axis ? squeeze(a, to_ints(*axis), s) : squeeze(a, s);
      },
      "axis"_a = nb::none());
  def_op(
      m, {"expand_dims"},
      [](const array& a, const IntOrInts& axis, StreamOrDevice s) {
        return expand_dims(a, to_ints(axis), s);
      },
      "axis"_a);
  for (const char* name : {"transpose", "permute_dims"}) {
    def_op(
        m, {name},
        [](const array& a, const std::optional<std::vector<int>>& axes, StreamOrDevice s) {
          return axes ? transpose(a, *axes, s) : transpose(a, s);
        },
        "axes"_a = nb::none());
  }
  def_op(
      m, {"swapaxes", true},
      [](const array& a, int axis1, int axis2, StreamOrDevice s) {
        return swapaxes(a, axis1, axis2, s);
      },
      "axis1"_a, "axis2"_a);
  def_op(
      m, {"moveaxis", true},
      [](const array& a, int source, int destination, StreamOrDevice s) {
        return moveaxis(a, source, destination, s);
      },
      "source"_a, "destination"_a);
  def_op(
      m, {"broadcast_to"},
      [](const array& a, const IntOrInts& shape, StreamOrDevice s) {
        return broadcast_to(a, to_ints(shape), s);
      },
      "shape"_a);
  m.def(
      "broadcast_arrays",
      [](nb::args arrays, StreamOrDevice s) {
        return to_tuple(broadcast_arrays(arrays_of(arrays, "broadcast_arrays"), s));
      },
      "arrays"_a, "stream"_a = nb::none(), docstring("broadcast_arrays"));
  m.def(
      "broadcast_shapes",
      [](nb::args shapes) {
        std::vector<Shape> in;
        for (nb::handle h : shapes) {
          in.push_back(cast_arg<Shape>(h, "broadcast_shapes", "shapes (sequences of ints)"));
        }
        if (in.empty()) {
          throw std::invalid_argument("[broadcast_shapes] Expected at least one shape.");
        }
        return nb::tuple(nb::cast(broadcast_shapes(in)));
      },
      "shapes"_a, docstring("broadcast_shapes"));
  def_concatenate(m, "concatenate");
  def_concatenate(m, "concat");
  m.def(
      "stack",
      [](const std::vector<array>& arrays, int axis, StreamOrDevice s) {
        return stack(arrays, axis, s);
      },
      "arrays"_a, "axis"_a = 0, nb::kw_only(), "stream"_a = nb::none(), docstring("stack"));
  def_op(
      m, {"unstack", false, "x"},
      [](const array& x, int axis, StreamOrDevice s) { return unstack(x, axis, s); }, "axis"_a = 0);
  def_op(
      m, {"split", true},
      [](const array& a, const IntOrInts& indices_or_sections, int axis, StreamOrDevice s) {
        if (auto* n = std::get_if<int>(&indices_or_sections)) {
          return split(a, *n, axis, s);
        }
        return split(a, std::get<std::vector<int>>(indices_or_sections), axis, s);
      },
      "indices_or_sections"_a, "axis"_a = 0);
  def_op(
      m, {"tile"},
      [](const array& a, const IntOrInts& reps, StreamOrDevice s) {
        return tile(a, to_ints(reps), s);
      },
      "reps"_a);
  def_op(
      m, {"repeat", false, "array"},
      [](const array& a, int repeats, std::optional<int> axis, StreamOrDevice s) {
        return axis ? repeat(a, repeats, *axis, s) : repeat(a, repeats, s);
      },
      "repeats"_a, "axis"_a = nb::none());
  def_op(
      m, {"pad"},
      [](const array& a, const PadWidth& pad_width, const std::string& mode,
         const ScalarOrArray& constant_values, StreamOrDevice s) {
        return pad(a, pad_pairs(pad_width, a.ndim()), constant_values.get(a.dtype()), mode, s);
      },
      "pad_width"_a, "mode"_a = "constant", "constant_values"_a = 0);
  def_op(
      m, {"roll"},
      [](const array& a, const IntOrInts& shift, const OptAxes& axis, StreamOrDevice s) {
        if (!axis) {
          return std::visit([&](const auto& sh) { return roll(a, sh, s); }, shift);
        }
        return std::visit([&](const auto& sh, const auto& ax) { return roll(a, sh, ax, s); }, shift,
                          *axis);
      },
      "shift"_a, "axis"_a = nb::none());
  def_op(
      m, {"flip"},
      [](const array& a, const OptAxes& axis, StreamOrDevice s) {
        return axis ? flip(a, to_ints(*axis), s) : flip(a, s);
      },
      "axis"_a = nb::none());
  def_triangle(m, "tril", &tril);
  def_triangle(m, "triu", &triu);
  def_op(
      m, {"diagonal", true},
      [](const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
        return diagonal(a, offset, axis1, axis2, s);
      },
      "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1);
  def_op(
      m, {"diag", true}, [](const array& a, int k, StreamOrDevice s) { return diag(a, k, s); },
      "k"_a = 0);
  m.def(
      "meshgrid",
      [](nb::args arrays, bool sparse, const std::string& indexing, StreamOrDevice s) {
        return meshgrid(arrays_of(arrays, "meshgrid"), sparse, indexing, s);
      },
      "arrays"_a, "sparse"_a = false, "indexing"_a = "xy", "stream"_a = nb::none(),
      docstring("meshgrid"));
  def_op(
      m, {"view", true},
      [](const array& a, Dtype dtype, StreamOrDevice s) { return view(a, dtype, s); }, "dtype"_a);
  def_op(
      m, {"as_strided"},
      [](const array& a, std::optional<Shape> shape, std::optional<Strides> strides, size_t offset,
         StreamOrDevice s) {
        Shape sh = shape.value_or(a.shape());
        Strides st(sh.size(), 1);
        for (int i = static_cast<int>(sh.size()) - 2; i >= 0; --i) {
          st[i] = st[i + 1] * sh[i + 1];
        }
        return as_strided(a, sh, strides.value_or(st), offset, s);
      },
      "shape"_a = nb::none(), "strides"_a = nb::none(), "offset"_a = 0);
  def_atleast(m, "atleast_1d", &atleast_1d);
  def_atleast(m, "atleast_2d", &atleast_2d);
  def_atleast(m, "atleast_3d", &atleast_3d);
  def_op(
      m, {"diff"},
      [](const array& a, int n, int axis, StreamOrDevice s) { return diff(a, n, axis, s); },
      "n"_a = 1, "axis"_a = -1);
  init_dynamic_slices(m);
  def_op(m, {"matrix_transpose"},
         [](const array& a, StreamOrDevice s) { return matrix_transpose(a, s); });
}

}  // namespace mlx::core::python

// Function transforms over Python functions of trees: eval, grad / value_and_grad, vjp, jvp,
// vmap, checkpoint and custom_function. Each flattens the trees of arrays it is given, runs the
// C++ transform on a function that rebuilds the trees around the traced arrays and calls the
// Python function (with the GIL, which the caller holds), then rebuilds the results' trees.
#include "mlx/transforms/transforms.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <memory>
#include <numeric>

#include "mlx/ops.h"
#include "mlx/primitives/compiled.h"
#include "mlx/runtime/eval.h"
#include "mlx/runtime/kernel_counter.h"
#include "mlx/transforms/fuse.h"
#include "mlx/utils.h"
#include "python/src/bindings.h"
#include "python/src/convert.h"
#include "python/src/transforms.h"
#include "python/src/trees.h"

namespace nb = nanobind;
using namespace mlx::core;
using namespace mlx::core::python;

namespace mlx::core::python {

SharedPy share(nb::handle obj) {
  Py_XINCREF(obj.ptr());
  return SharedPy(obj.ptr(), [](PyObject* o) {
    // Graph nodes holding Python callbacks may be released on any thread, or after the
    // interpreter is gone (then the reference is leaked).
    if (Py_IsInitialized()) {
      nb::gil_scoped_acquire gil;
      Py_XDECREF(o);
    }
  });
}

nb::object call(nb::handle fun, nb::handle args, nb::handle kwargs) {
  PyObject* out = PyObject_Call(fun.ptr(), args.ptr(), kwargs.is_valid() ? kwargs.ptr() : nullptr);
  if (!out) {
    throw nb::python_error();
  }
  return nb::steal(out);
}

}  // namespace mlx::core::python

namespace {

std::string py_type(nb::handle obj) { return nb::cast<std::string>(nb::type_name(obj.type())); }

// A callable made by a transform. `impl` reaches the Python objects it uses (the function, axes
// trees, ...) through `refs`, which the cycle collector sees.
class Function {
 public:
  using Impl =
      std::function<nb::object(const std::vector<nb::object>&, const nb::args&, const nb::kwargs&)>;
  Function(std::vector<nb::object> refs, Impl impl)
      : refs_(std::move(refs)), impl_(std::move(impl)) {}

  nb::object operator()(const nb::args& args, const nb::kwargs& kwargs) const {
    std::vector<nb::object> refs = refs_;
    return impl_(refs, args, kwargs);
  }
  std::vector<nb::handle> py_refs() const { return {refs_.begin(), refs_.end()}; }
  void clear_refs() { refs_.clear(); }

 private:
  std::vector<nb::object> refs_;
  Impl impl_;
};

// An int or a sequence of ints.
std::vector<int> int_list(nb::handle obj, const char* op, const char* what) {
  if (nb::isinstance<nb::int_>(obj)) {
    return {nb::cast<int>(obj)};
  }
  std::vector<int> out;
  if (!nb::try_cast(obj, out)) {
    throw nb::type_error(
        msg("[", op, "] ", what, " must be an int or a sequence of ints; got ", py_type(obj), ".")
            .c_str());
  }
  return out;
}

struct GradSpec {
  std::vector<int> argnums;
  std::vector<std::string> argnames;
};

GradSpec grad_spec(nb::handle argnums, nb::handle argnames, const char* op) {
  GradSpec spec;
  if (nb::isinstance<nb::str>(argnames)) {
    spec.argnames = {nb::cast<std::string>(argnames)};
  } else if (!nb::try_cast(argnames, spec.argnames)) {
    throw nb::type_error(
        msg("[", op, "] argnames must be a str or a sequence of str; got ", py_type(argnames), ".")
            .c_str());
  }
  if (argnums.is_none()) {
    spec.argnums = spec.argnames.empty() ? std::vector<int>{0} : std::vector<int>{};
  } else {
    spec.argnums = int_list(argnums, op, "argnums");
  }
  for (size_t i = 0; i < spec.argnums.size(); ++i) {
    int a = spec.argnums[i];
    if (a < 0) {
      throw std::invalid_argument(
          msg("[", op, "] Can't compute the gradient of negative argument index ", a, "."));
    }
    if (std::find(spec.argnums.begin(), spec.argnums.begin() + i, a) != spec.argnums.begin() + i) {
      throw std::invalid_argument(msg("[", op, "] Duplicate argument index ", a, " in argnums."));
    }
  }
  if (spec.argnums.empty() && spec.argnames.empty()) {
    throw std::invalid_argument(
        msg("[", op, "] argnums and argnames name no argument to differentiate."));
  }
  return spec;
}

// The scalar to differentiate in what fun returned: the array itself, or (value_and_grad only)
// the first entry of a tuple whose other entries are auxiliary.
array loss_of(nb::handle value, bool allow_aux, const char* op) {
  if (nb::isinstance<array>(value)) {
    return nb::cast<array>(value);
  }
  if (allow_aux && (PyTuple_Check(value.ptr()) || PyList_Check(value.ptr())) &&
      nb::len(value) > 0 && nb::isinstance<array>(value[0])) {
    return nb::cast<array>(value[0]);
  }
  throw std::invalid_argument(
      msg("[", op, "] The function to differentiate must return a scalar array",
          allow_aux ? " or a tuple whose first entry is a scalar array" : "", "; got ",
          py_type(value), "."));
}

// value_and_grad of fun at (args, kwargs): the value fun returned, and the gradients with the
// structure of the differentiated arguments (one tree, a tuple of them, a dict by keyword, or
// (positional, keyword) when both kinds are differentiated).
std::pair<nb::object, nb::object> value_and_grad_call(nb::handle fun, const GradSpec& spec,
                                                      const nb::args& args,
                                                      const nb::kwargs& kwargs, bool allow_aux,
                                                      const char* op) {
  std::vector<nb::object> trees;
  for (int a : spec.argnums) {
    if (a >= static_cast<int>(args.size())) {
      throw std::invalid_argument(msg("[", op, "] Can't compute the gradient of argument index ", a,
                                      " because the function is called with only ", args.size(),
                                      " positional arguments."));
    }
    trees.push_back(args[a]);
  }
  for (auto& name : spec.argnames) {
    if (!kwargs.contains(name.c_str())) {
      throw std::invalid_argument(msg("[", op, "] Can't compute the gradient of keyword argument '",
                                      name, "' because the function was not called with it."));
    }
    trees.push_back(kwargs[name.c_str()]);
  }
  std::vector<array> primals;
  for (auto& t : trees) {
    auto leaves = tree_flatten(t, true, op);
    primals.insert(primals.end(), leaves.begin(), leaves.end());
  }

  nb::object value;
  auto apply = [&](const std::vector<array>& x) {
    nb::list a(args);
    nb::dict kw = nb::steal<nb::dict>(PyDict_Copy(kwargs.ptr()));
    size_t index = 0, i = 0;
    for (int argnum : spec.argnums) {
      a[argnum] = tree_unflatten(trees[i++], x, &index);
    }
    for (auto& name : spec.argnames) {
      kw[name.c_str()] = tree_unflatten(trees[i++], x, &index);
    }
    value = call(fun, nb::tuple(a), kw);
    return std::vector<array>{loss_of(value, allow_aux, op)};
  };
  std::vector<array> grads;
  if (primals.empty()) {
    apply(primals);
  } else {
    std::vector<int> all(primals.size());
    std::iota(all.begin(), all.end(), 0);
    grads = value_and_grad(ArrayFn(apply), all)(primals).second;
  }

  size_t index = 0, i = 0;
  nb::object positional;
  if (spec.argnums.size() == 1) {
    positional = tree_unflatten(trees[i++], grads, &index);
  } else {
    nb::list l;
    for (size_t k = 0; k < spec.argnums.size(); ++k) {
      l.append(tree_unflatten(trees[i++], grads, &index));
    }
    positional = nb::tuple(l);
  }
  nb::dict keyword;
  for (auto& name : spec.argnames) {
    keyword[name.c_str()] = tree_unflatten(trees[i++], grads, &index);
  }
  nb::object g = spec.argnames.empty()  ? positional
                 : spec.argnums.empty() ? nb::object(keyword)
                                        : nb::object(nb::make_tuple(positional, keyword));
  return {value, g};
}

Function make_grad(nb::callable fun, nb::handle argnums, nb::handle argnames, bool with_value) {
  const char* op = with_value ? "value_and_grad" : "grad";
  GradSpec spec = grad_spec(argnums, argnames, op);
  return Function({fun}, [spec, with_value, op](auto& refs, auto& args, auto& kwargs) {
    auto [value, grads] = value_and_grad_call(refs[0], spec, args, kwargs, with_value, op);
    return with_value ? nb::object(nb::make_tuple(value, grads)) : grads;
  });
}

// vjp / jvp: fun takes the primals as positional arguments (arrays or trees of them) and returns
// an array or a tree of arrays, given back as a flat list.
template <typename Transform>
nb::tuple forward_or_reverse(nb::callable fun, nb::handle primals, nb::handle vectors,
                             const char* op, Transform transform) {
  nb::tuple prim(primals);
  std::vector<array> x = tree_flatten(prim, true, op);
  std::vector<array> v = tree_flatten(vectors, true, op);
  auto apply = [&](const std::vector<array>& p) {
    nb::object out = call(fun, tree_unflatten(prim, p));
    return tree_flatten(out, true, op);
  };
  auto [outs, products] = transform(ArrayFn(apply), x, v);
  return nb::make_tuple(nb::cast(outs), nb::cast(products));
}

// vmap's axis for one leaf: an int (negative counts from the end of `ndim` dims) or None (-1).
int vmap_axis(nb::handle axis, int ndim, const char* what) {
  if (axis.is_none()) {
    return -1;
  }
  if (!nb::isinstance<nb::int_>(axis)) {
    throw std::invalid_argument(
        msg("[vmap] ", what, " must be ints or None; got ", py_type(axis), "."));
  }
  int ax = nb::cast<int>(axis);
  int norm = ax < 0 ? ax + ndim : ax;
  if (norm < 0 || norm >= ndim) {
    throw std::invalid_argument(msg("[vmap] ", what, " entry ", ax,
                                    " is out of range for an array with ", ndim, " dimensions."));
  }
  return norm;
}

nb::object vmap_call(nb::handle fun, nb::handle in_axes, nb::handle out_axes, const nb::args& args,
                     const nb::kwargs& kwargs) {
  std::vector<int> axes;
  tree_visit_prefix(
      in_axes, args,
      [&](nb::handle axis, nb::handle leaf) {
        if (nb::isinstance<array>(leaf)) {
          axes.push_back(vmap_axis(axis, nb::cast<const array&>(leaf).ndim(), "in_axes"));
        }
      },
      "vmap");
  std::vector<array> inputs = tree_flatten(args, false);
  bool outer_trace =
      std::any_of(inputs.begin(), inputs.end(), [](const array& a) { return a.is_tracer(); });

  nb::object out_tree;
  std::vector<bool> mapped;
  auto apply = [&](const std::vector<array>& x) {
    out_tree = call(fun, tree_unflatten(args, x), kwargs);
    std::vector<array> outs = tree_flatten(out_tree, false);
    mapped.clear();
    for (auto& o : outs) {
      mapped.push_back(o.is_tracer());
    }
    return outs;
  };
  std::vector<array> results = vmap(ArrayFn(apply), axes)(inputs);

  // The C++ transform puts every batch axis first; move it (or drop it for out_axes None).
  size_t i = 0;
  tree_visit_prefix(
      out_axes, out_tree,
      [&](nb::handle axis, nb::handle leaf) {
        if (!nb::isinstance<array>(leaf)) {
          return;
        }
        array& r = results[i];
        if (axis.is_none()) {
          if (mapped[i] && !outer_trace) {
            throw std::invalid_argument(
                msg("[vmap] Output ", i,
                    " depends on the mapped inputs; its out_axes cannot be None."));
          }
          r = take(r, 0, 0);
        } else {
          r = moveaxis(r, 0, vmap_axis(axis, r.ndim(), "out_axes"));
        }
        ++i;
      },
      "vmap");
  return tree_unflatten(out_tree, results);
}

// What custom_function's rules need, shared by the closures a graph node may keep alive.
struct CustomState {
  SharedPy fun, vjp, jvp, vmap;
  SharedPy args, kwargs;
  SharedPy out_tree;
};

// Primals are passed to the rules as the tuple of arguments, or the argument itself when the
// function has one; outputs as fun returned them.
nb::object rule_args(const CustomState& st, const std::vector<array>& values) {
  nb::object a = tree_unflatten(st.args.get(), values);
  return nb::len(a) == 1 ? nb::object(a[0]) : a;
}

// The arrays of `result` at the positions of the arrays of `like` (None stands for zeros).
std::vector<array> arrays_like(nb::handle result, nb::handle like, const char* what) {
  std::vector<array> out;
  tree_visit_prefix(
      result, like,
      [&](nb::handle r, nb::handle leaf) {
        if (!nb::isinstance<array>(leaf)) {
          return;
        }
        if (nb::isinstance<array>(r)) {
          out.push_back(nb::cast<array>(r));
        } else if (r.is_none()) {
          out.push_back(zeros_like(nb::cast<const array&>(leaf)));
        } else {
          throw std::invalid_argument(
              msg("[custom_function] The ", what, " must be arrays; got ", py_type(r), "."));
        }
      },
      "custom_function");
  return out;
}

// A rule's per-argument result, as a tuple over the arguments.
nb::object per_argument(const CustomState& st, nb::object r) {
  nb::handle args = st.args.get();
  bool wrapped = nb::len(args) != 1 || ((PyTuple_Check(r.ptr()) || PyList_Check(r.ptr())) &&
                                        nb::len(r) == 1 && nb::isinstance<array>(args[0]));
  return wrapped ? r : nb::object(nb::make_tuple(r));
}

class CustomFunction {
 public:
  explicit CustomFunction(nb::callable fun) : fun_(std::move(fun)) {}

  nb::object operator()(const nb::args& args, const nb::kwargs& kwargs) const {
    auto st = std::make_shared<CustomState>();
    st->fun = share(fun_);
    st->vjp = share(vjp_);
    st->jvp = share(jvp_);
    st->vmap = share(vmap_);
    st->args = share(args);
    st->kwargs = share(kwargs);
    ArrayFn f = [st](const std::vector<array>& x) {
      nb::object out = call(st->fun.get(), tree_unflatten(st->args.get(), x), st->kwargs.get());
      st->out_tree = share(out);
      return tree_flatten(out, false);
    };
    std::optional<CustomVJPFn> vjp_rule;
    std::optional<CustomJVPFn> jvp_rule;
    std::optional<CustomVmapFn> vmap_rule;
    if (vjp_) {
      vjp_rule = [st](const std::vector<array>& primals, const std::vector<array>& cotangents,
                      const std::vector<array>& outputs) {
        nb::handle out_tree = st->out_tree.get();
        nb::object r =
            nb::handle(st->vjp.get())(rule_args(*st, primals), tree_unflatten(out_tree, cotangents),
                                      tree_unflatten(out_tree, outputs));
        return arrays_like(per_argument(*st, r), st->args.get(), "vjp's results");
      };
    }
    if (jvp_) {
      jvp_rule = [st](const std::vector<array>& primals, const std::vector<array>& tangents,
                      const std::vector<int>& argnums) {
        std::vector<array> full;
        for (auto& p : primals) {
          full.push_back(zeros_like(p));
        }
        for (size_t i = 0; i < argnums.size(); ++i) {
          full[argnums[i]] = tangents[i];
        }
        nb::object r = nb::handle(st->jvp.get())(rule_args(*st, primals), rule_args(*st, full));
        return arrays_like(r, st->out_tree.get(), "jvp's results");
      };
    }
    if (vmap_) {
      vmap_rule = [st](const std::vector<array>& inputs, const std::vector<int>& axes) {
        size_t k = 0;
        nb::object ax = tree_map(st->args.get(), [&](nb::handle leaf) -> nb::object {
          if (!nb::isinstance<array>(leaf)) {
            return nb::none();
          }
          int a = axes[k++];
          return a < 0 ? nb::none() : nb::cast(a);
        });
        nb::object r = nb::handle(st->vmap.get())(rule_args(*st, inputs),
                                                  nb::len(ax) == 1 ? nb::object(ax[0]) : ax);
        if (!(PyTuple_Check(r.ptr()) || PyList_Check(r.ptr())) || nb::len(r) != 2) {
          throw std::invalid_argument(
              "[custom_function] The vmap function must return (outputs, output axes).");
        }
        nb::handle out_tree = st->out_tree.get();
        std::vector<array> outs = arrays_like(r[0], out_tree, "vmap's outputs");
        std::vector<int> out_axes;
        tree_visit_prefix(
            r[1], out_tree,
            [&](nb::handle a, nb::handle leaf) {
              if (nb::isinstance<array>(leaf)) {
                out_axes.push_back(a.is_none() ? -1 : nb::cast<int>(a));
              }
            },
            "custom_function");
        return std::make_pair(outs, out_axes);
      };
    }
    std::vector<array> outs =
        custom_function(f, vjp_rule, jvp_rule, vmap_rule)(tree_flatten(args, false));
    return tree_unflatten(st->out_tree.get(), outs);
  }

  nb::object set_vjp(nb::callable f) { return vjp_ = std::move(f); }
  nb::object set_jvp(nb::callable f) { return jvp_ = std::move(f); }
  nb::object set_vmap(nb::callable f) { return vmap_ = std::move(f); }

  std::vector<nb::handle> py_refs() const { return {fun_, vjp_, jvp_, vmap_}; }
  void clear_refs() {
    fun_.reset();
    vjp_.reset();
    jvp_.reset();
    vmap_.reset();
  }

 private:
  nb::object fun_, vjp_, jvp_, vmap_;
};

nb::object checkpoint_call(nb::handle fun, const nb::args& args, const nb::kwargs& kwargs) {
  struct State {
    SharedPy fun, structure, out_tree;
  };
  auto st = std::make_shared<State>();
  st->fun = share(fun);
  nb::object structure = nb::make_tuple(args, kwargs);
  st->structure = share(structure);
  ArrayFn f = [st](const std::vector<array>& x) {
    nb::object s = tree_unflatten(st->structure.get(), x);
    nb::object out = call(st->fun.get(), s[0], s[1]);
    st->out_tree = share(out);
    return tree_flatten(out, false);
  };
  std::vector<array> outs = checkpoint(f)(tree_flatten(structure, false));
  return tree_unflatten(st->out_tree.get(), outs);
}

void eval_trees(const nb::args& args, bool async) {
  std::vector<array> arrays = tree_flatten(args, false);
  if (!async) {
    eval_releasing_gil(std::move(arrays));
    return;
  }
  nb::gil_scoped_release release;
  async_eval(std::move(arrays));
}

}  // namespace

void init_transforms(nb::module_& m) {
  static PyType_Slot function_slots[] = {
      {Py_tp_traverse, reinterpret_cast<void*>(&traverse_refs<Function>)},
      {Py_tp_clear, reinterpret_cast<void*>(&clear_refs<Function>)},
      {0, nullptr}};
  nb::class_<Function>(m, "_TransformedFunction", nb::type_slots(function_slots))
      .def("__call__", &Function::operator());
  static PyType_Slot custom_slots[] = {
      {Py_tp_traverse, reinterpret_cast<void*>(&traverse_refs<CustomFunction>)},
      {Py_tp_clear, reinterpret_cast<void*>(&clear_refs<CustomFunction>)},
      {0, nullptr}};
  m.def(
      "eval", [](nb::args args) { eval_trees(args, false); },
      "Evaluates the arrays in the given arrays or trees (other leaves are ignored).");
  m.def(
      "async_eval", [](nb::args args) { eval_trees(args, true); },
      "Starts evaluating the arrays in the given arrays or trees and returns at once.");
  m.def(
      "grad",
      [](nb::callable fun, nb::handle argnums, nb::handle argnames) {
        return make_grad(fun, argnums, argnames, false);
      },
      nb::arg("fun"), nb::arg("argnums").none() = nb::none(), nb::arg("argnames") = nb::list(),
      "A function computing the gradient of fun with respect to the given arguments.");
  m.def(
      "value_and_grad",
      [](nb::callable fun, nb::handle argnums, nb::handle argnames) {
        return make_grad(fun, argnums, argnames, true);
      },
      nb::arg("fun"), nb::arg("argnums").none() = nb::none(), nb::arg("argnames") = nb::list(),
      "A function computing (fun's value, its gradient).");
  m.def(
      "vjp",
      [](nb::callable fun, nb::handle primals, nb::handle cotangents) {
        return forward_or_reverse(fun, primals, cotangents, "vjp",
                                  [](const ArrayFn& f, auto& x, auto& v) { return vjp(f, x, v); });
      },
      nb::arg("fun"), nb::arg("primals"), nb::arg("cotangents"),
      "(outputs of fun(*primals), vector-Jacobian products with the cotangents).");
  m.def(
      "jvp",
      [](nb::callable fun, nb::handle primals, nb::handle tangents) {
        return forward_or_reverse(fun, primals, tangents, "jvp",
                                  [](const ArrayFn& f, auto& x, auto& v) { return jvp(f, x, v); });
      },
      nb::arg("fun"), nb::arg("primals"), nb::arg("tangents"),
      "(outputs of fun(*primals), Jacobian-vector products with the tangents).");
  m.def(
      "vmap",
      [](nb::callable fun, nb::object in_axes, nb::object out_axes) {
        return Function({fun, in_axes, out_axes}, [](auto& refs, auto& args, auto& kwargs) {
          return vmap_call(refs[0], refs[1], refs[2], args, kwargs);
        });
      },
      nb::arg("fun"), nb::arg("in_axes").none() = 0, nb::arg("out_axes").none() = 0,
      "A vectorized version of fun; in_axes / out_axes are ints, None, or prefix trees of them.");
  m.def(
      "checkpoint",
      [](nb::callable fun) {
        return Function({fun}, [](auto& refs, auto& args, auto& kwargs) {
          return checkpoint_call(refs[0], args, kwargs);
        });
      },
      nb::arg("fun"), "fun with its intermediates recomputed during the backward pass.");
  nb::class_<CustomFunction>(m, "custom_function",
                             "Decorates a function with custom vjp, jvp and vmap rules.",
                             nb::type_slots(custom_slots))
      .def(nb::init<nb::callable>(), nb::arg("f"))
      .def("__call__", &CustomFunction::operator())
      .def("vjp", &CustomFunction::set_vjp, nb::arg("f"))
      .def("jvp", &CustomFunction::set_jvp, nb::arg("f"))
      .def("vmap", &CustomFunction::set_vmap, nb::arg("f"));
  m.def("disable_compile", &disable_compile, "Makes compiled functions run uncompiled.");
  m.def("enable_compile", &enable_compile, "Undoes disable_compile.");
  m.def(
      "_kernel_counts",
      [](bool enable, bool reset) {
        auto counts = detail::kernel_counts(reset);
        detail::set_kernel_counting(enable);
        nb::dict d;
        for (auto& [name, c] : counts) {
          d[nb::str(name.c_str())] = c.count;
        }
        return d;
      },
      nb::arg("enable") = true, nb::arg("reset") = true,
      "Debugging: the primitives eval ran since the last call, by name (views included), then "
      "keeps counting while enable is true.");
  m.def(
      "_kernel_times",
      [](bool enable, bool reset, bool by_shape) {
        auto counts = detail::kernel_counts(reset);
        detail::set_kernel_counting(enable, true, by_shape);
        nb::dict d;
        for (auto& [name, c] : counts) {
          d[nb::str(name.c_str())] = nb::make_tuple(c.count, c.seconds);
        }
        return d;
      },
      nb::arg("enable") = true, nb::arg("reset") = true, nb::arg("by_shape") = false,
      "Profiling: {name: (count, seconds)} of the primitives eval ran since the last call, then "
      "keeps counting and timing while enable is true; by_shape: names carry the inputs' shapes "
      "and layouts (r: row-contiguous, c: column-contiguous, s: other strides). Each GPU primitive "
      "is timed to the end of "
      "its device work (the stream is synchronized after it), so the total is slower than an "
      "untimed run and shows where the time goes, not how work overlaps.");
  m.def(
      "_fused_kernel_stats",
      [](bool wait) {
        if (wait) {
          nb::gil_scoped_release release;
          detail::wait_for_fused_kernels();
        }
        auto s = detail::fused_kernel_stats();
        nb::dict d;
        d["built"] = s.built;
        d["from_disk"] = s.from_disk;
        d["memory_hits"] = s.memory_hits;
        d["interpreted"] = s.interpreted;
        d["failed"] = s.failed;
        return d;
      },
      nb::arg("wait") = false,
      "Debugging and benchmarks: the generated fused kernels of the CPU and the GPU together "
      "(built, loaded from the disk cache, evaluations that ran one or the other way, "
      "failures); wait=True first waits for the kernels being built.");
  m.def("_set_fused_kernel_generation", &detail::set_fused_kernel_generation, nb::arg("enabled"),
        "Debugging and benchmarks: whether fused regions run through generated "
        "kernels (else the interpreter on the CPU, op by op on the GPU).");
  m.def("_set_fusion", &detail::set_fusion_enabled, nb::arg("enabled"),
        "Debugging and benchmarks: whether compile fuses elementwise regions (traces made "
        "afterwards).");
  init_compile(m);
}

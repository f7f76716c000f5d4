#include "python/src/trees.h"

#include <nanobind/stl/string.h>

#include <stdexcept>
#include <string>

#include "mlx/utils.h"
#include "python/src/convert.h"

namespace nb = nanobind;

namespace mlx::core::python {

namespace {

bool is_sequence(nb::handle obj) { return PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()); }
bool is_dict(nb::handle obj) { return PyDict_Check(obj.ptr()); }

std::string py_type(nb::handle obj) { return nb::cast<std::string>(nb::type_name(obj.type())); }

// The (key, value) pairs of a dict, copied so that the dict may be written while they are used.
std::vector<std::pair<nb::object, nb::object>> items(nb::handle d) {
  std::vector<std::pair<nb::object, nb::object>> out;
  for (auto [k, v] : nb::borrow<nb::dict>(d)) {
    out.emplace_back(nb::borrow(k), nb::borrow(v));
  }
  return out;
}

void replace(nb::handle tree, const std::vector<array>& values, size_t& index) {
  auto next = [&]() -> nb::object {
    if (index >= values.size()) {
      throw std::invalid_argument(
          msg("[tree_replace] The tree has more arrays than the ", values.size(), " given."));
    }
    return nb::cast(values[index++]);
  };
  if (PyList_Check(tree.ptr())) {
    nb::list l = nb::borrow<nb::list>(tree);
    for (size_t i = 0; i < nb::len(l); ++i) {
      nb::object child = l[i];
      if (is_array(child)) {
        l[i] = next();
      } else {
        replace(child, values, index);
      }
    }
  } else if (PyTuple_Check(tree.ptr())) {
    for (nb::handle child : tree) {
      if (is_array(child)) {
        throw std::invalid_argument(
            "[tree_replace] Cannot update an array held directly by a tuple; use a list or a "
            "dict.");
      }
      replace(child, values, index);
    }
  } else if (is_dict(tree)) {
    for (auto& [k, v] : items(tree)) {
      if (is_array(v)) {
        tree[k] = next();
      } else {
        replace(v, values, index);
      }
    }
  }
}

void add_key(nb::handle tree, bool shapeless, nb::list& tokens) {
  if (is_sequence(tree)) {
    tokens.append(PyList_Check(tree.ptr()) ? "[" : "(");
    tokens.append(nb::len(tree));
    for (nb::handle child : tree) {
      add_key(child, shapeless, tokens);
    }
  } else if (is_dict(tree)) {
    tokens.append("{");
    tokens.append(nb::len(tree));
    for (auto& [k, v] : items(tree)) {
      tokens.append(k);
      add_key(v, shapeless, tokens);
    }
  } else if (is_array(tree)) {
    const array& a = nb::cast<const array&>(tree);
    nb::object shape;
    if (shapeless) {
      shape = nb::cast(a.ndim());
    } else {
      nb::list dims;
      for (int d : a.shape()) {
        dims.append(d);
      }
      shape = nb::tuple(dims);
    }
    tokens.append(nb::make_tuple("array", static_cast<int>(a.dtype().val), shape));
  } else if (PyObject_Hash(tree.ptr()) == -1) {
    PyErr_Clear();
    tokens.append(nb::make_tuple(tree.type(), "id", reinterpret_cast<uintptr_t>(tree.ptr())));
  } else {
    // The type tells 1, 1.0 and True apart, which compare equal.
    tokens.append(nb::make_tuple(tree.type(), tree));
  }
}

}  // namespace

bool is_tree_node(nb::handle obj) { return is_sequence(obj) || is_dict(obj); }

void tree_visit(nb::handle tree, const std::function<void(nb::handle)>& visit) {
  if (is_sequence(tree)) {
    for (nb::handle child : tree) {
      tree_visit(child, visit);
    }
  } else if (is_dict(tree)) {
    for (auto& [k, v] : items(tree)) {
      tree_visit(v, visit);
    }
  } else {
    visit(tree);
  }
}

void tree_visit_prefix(nb::handle prefix, nb::handle tree,
                       const std::function<void(nb::handle, nb::handle)>& visit, const char* op) {
  if (is_sequence(prefix)) {
    if (!is_sequence(tree) || nb::len(tree) != nb::len(prefix)) {
      throw std::invalid_argument(msg("[", op, "] The axes tree ", nb::len(prefix),
                                      "-long sequence does not match the structure of the ",
                                      py_type(tree), " it is applied to."));
    }
    size_t i = 0;
    for (nb::handle child : tree) {
      tree_visit_prefix(prefix[i++], child, visit, op);
    }
  } else if (is_dict(prefix)) {
    if (!is_dict(tree) || nb::len(tree) != nb::len(prefix)) {
      throw std::invalid_argument(msg("[", op,
                                      "] The axes dict does not match the structure of the ",
                                      py_type(tree), " it is applied to."));
    }
    nb::dict p = nb::borrow<nb::dict>(prefix);
    for (auto& [k, v] : items(tree)) {
      if (!p.contains(k)) {
        throw std::invalid_argument(msg("[", op, "] The axes dict has no entry for the key '",
                                        nb::cast<std::string>(nb::str(k)), "'."));
      }
      tree_visit_prefix(p[k], v, visit, op);
    }
  } else {
    tree_visit(tree, [&](nb::handle leaf) { visit(prefix, leaf); });
  }
}

nb::object tree_map(nb::handle tree, const std::function<nb::object(nb::handle)>& fn) {
  if (is_sequence(tree)) {
    nb::list out;
    for (nb::handle child : tree) {
      out.append(tree_map(child, fn));
    }
    return PyTuple_Check(tree.ptr()) ? nb::object(nb::tuple(out)) : nb::object(out);
  }
  if (is_dict(tree)) {
    // A dict subclass (an nn.Module, say) is rebuilt as a shallow copy of itself, so that a
    // function given a model still gets a model.
    nb::object out = PyDict_CheckExact(tree.ptr())
                         ? nb::object(nb::dict())
                         : nb::module_::import_("copy").attr("copy")(tree);
    for (auto& [k, v] : items(tree)) {
      out[k] = tree_map(v, fn);
    }
    return out;
  }
  return fn(tree);
}

std::vector<array> tree_flatten(nb::handle tree, bool strict, const char* op) {
  std::vector<array> out;
  tree_visit(tree, [&](nb::handle leaf) {
    if (is_array(leaf)) {
      out.push_back(nb::cast<array>(leaf));
    } else if (strict) {
      throw std::invalid_argument(
          msg("[", op, "] The argument should contain only arrays; got a ", py_type(leaf), "."));
    }
  });
  return out;
}

nb::object tree_unflatten(nb::handle tree, const std::vector<array>& values, size_t* index) {
  return tree_map(tree, [&](nb::handle leaf) -> nb::object {
    if (!is_array(leaf)) {
      return nb::borrow(leaf);
    }
    if (*index >= values.size()) {
      throw std::invalid_argument(
          msg("[tree_unflatten] The tree has more arrays than the ", values.size(), " given."));
    }
    return nb::cast(values[(*index)++]);
  });
}

nb::object tree_unflatten(nb::handle tree, const std::vector<array>& values) {
  size_t index = 0;
  return tree_unflatten(tree, values, &index);
}

void tree_replace(nb::handle tree, const std::vector<array>& values) {
  size_t index = 0;
  replace(tree, values, index);
  if (index != values.size()) {
    throw std::invalid_argument(
        msg("[tree_replace] The tree has ", index, " arrays; expected ", values.size(), "."));
  }
}

nb::object tree_key(nb::handle tree, bool shapeless) {
  nb::list tokens;
  add_key(tree, shapeless, tokens);
  return nb::tuple(tokens);
}

}  // namespace mlx::core::python

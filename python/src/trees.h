// Python trees: lists, tuples and dicts (subclasses included) nested to any depth. Arrays are
// the leaves the transforms see; any other leaf is a constant that travels along unchanged.
#pragma once

#include <nanobind/nanobind.h>

#include <functional>
#include <vector>

#include "mlx/array.h"

namespace mlx::core::python {

// True for the containers a tree is made of (list, tuple, dict and their subclasses).
bool is_tree_node(nanobind::handle obj);

// Calls visit(leaf) for every leaf, depth first, dicts in insertion order.
void tree_visit(nanobind::handle tree, const std::function<void(nanobind::handle)>& visit);

// Walks `tree` under `prefix`, a tree whose structure is a prefix of it: visit(p, leaf) for
// each leaf, with p the leaf of `prefix` that covers it. Lists and tuples match each other
// (same length), dicts match dicts with the same keys; mismatches are ValueErrors naming `op`.
void tree_visit_prefix(nanobind::handle prefix, nanobind::handle tree,
                       const std::function<void(nanobind::handle, nanobind::handle)>& visit,
                       const char* op);

// A new tree (plain list / tuple / dict) with every leaf replaced by fn(leaf).
nanobind::object tree_map(nanobind::handle tree,
                          const std::function<nanobind::object(nanobind::handle)>& fn);

// The arrays of the tree in visiting order. With `strict`, a leaf that is not an array is a
// ValueError naming `op`; otherwise such leaves are skipped.
std::vector<array> tree_flatten(nanobind::handle tree, bool strict = true,
                                const char* op = "tree_flatten");

// A copy of the tree whose array leaves are values[*index], values[*index + 1], ... in order
// (index advances past the values used).
nanobind::object tree_unflatten(nanobind::handle tree, const std::vector<array>& values,
                                size_t* index);
nanobind::object tree_unflatten(nanobind::handle tree, const std::vector<array>& values);

// Writes values over the array leaves of the tree, in place and in order (the arrays must sit in
// lists or dicts; an array directly inside a tuple cannot be replaced: ValueError).
void tree_replace(nanobind::handle tree, const std::vector<array>& values);

// A hashable description of the tree: container kinds and dict keys, each array's dtype and
// shape (rank only with `shapeless`) and each other leaf's type and value (or identity, when
// unhashable). Equal keys mean the same structure and the same constants.
nanobind::object tree_key(nanobind::handle tree, bool shapeless);

}  // namespace mlx::core::python

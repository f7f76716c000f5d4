"""mlx.utils: flattening, rebuilding, mapping, reducing and merging Python trees."""
from collections import OrderedDict, namedtuple

import pytest

import mlx.core as mx
from mlx.utils import (
    tree_flatten,
    tree_map,
    tree_map_with_path,
    tree_merge,
    tree_reduce,
    tree_unflatten,
)


def test_flatten_keys_and_prefix():
    assert tree_flatten([[[0]]]) == [("0.0.0", 0)]
    assert tree_flatten([[[0]]], prefix=".hello") == [("hello.0.0.0", 0)]
    tree = {"a": {"b": 1, "c": (2, [3])}, "d": 4}
    assert tree_flatten(tree) == [("a.b", 1), ("a.c.0", 2), ("a.c.1.0", 3), ("d", 4)]
    assert tree_flatten({"a": {"b": 1}}, destination={}) == {"a.b": 1}
    dest = [("x", 0)]
    assert tree_flatten({"y": 1}, destination=dest) is dest
    assert dest == [("x", 0), ("y", 1)]
    # A bare leaf has the empty key; empty containers contribute nothing.
    assert tree_flatten(5) == [("", 5)]
    assert tree_flatten({"a": [], "b": {}, "c": 1}) == [("c", 1)]


def test_flatten_is_leaf_and_subclasses():
    tree = {"a": [1, 2], "b": OrderedDict(c=3)}
    assert tree_flatten(tree, is_leaf=lambda x: isinstance(x, list)) == [
        ("a", [1, 2]),
        ("b.c", 3),
    ]
    x = mx.array([1.0])
    flat = tree_flatten({"w": x})
    assert flat[0][0] == "w" and flat[0][1] is x


def test_unflatten_round_trip_and_lists():
    tree = {"a": {"b": 1, "c": [2, {"d": 3}]}, "e": [4, 5]}
    assert tree_unflatten(tree_flatten(tree)) == tree
    assert tree_unflatten(tree_flatten(tree, destination={})) == tree
    assert tree_unflatten([("hello.world", 42)]) == {"hello": {"world": 42}}
    assert tree_unflatten({"hello.world": 42}) == {"hello": {"world": 42}}
    # Integer keys make lists, in index order; gaps hold empty dicts.
    assert tree_unflatten([("1", "b"), ("0", "a")]) == ["a", "b"]
    assert tree_unflatten([("layers.2.w", 1), ("layers.0.w", 0)]) == {
        "layers": [{"w": 0}, {}, {"w": 1}]
    }
    assert tree_unflatten([("", 7)]) == 7
    assert tree_unflatten([("10", "x")])[10] == "x"


def test_map_structure_and_rest():
    tree = {"a": [1, 2], "b": (3, {"c": 4})}
    assert tree_map(lambda x: x * 10, tree) == {"a": [10, 20], "b": (30, {"c": 40})}
    other = {"a": [5, 6], "b": (7, {"c": 8, "extra": 0}), "more": 1}
    assert tree_map(lambda x, y: x + y, tree, other) == {"a": [6, 8], "b": (10, {"c": 12})}
    assert tree_map(len, {"a": [1, 2]}, is_leaf=lambda x: isinstance(x, list)) == {"a": 2}
    # Subclasses come back as the plain containers.
    Point = namedtuple("Point", "x y")
    out = tree_map(lambda v: v + 1, OrderedDict(p=Point(1, 2)))
    assert type(out) is dict and type(out["p"]) is tuple and out["p"] == (2, 3)


def test_map_with_path():
    tree = {"model": [{"w": 0, "b": 1}, {"w": 0, "b": 1}]}
    paths = []
    out = tree_map_with_path(lambda path, leaf: paths.append(path) or path, tree)
    assert paths == ["model.0.w", "model.0.b", "model.1.w", "model.1.b"]
    assert out["model"][1]["b"] == "model.1.b"
    assert tree_map_with_path(lambda p, x: p, [1], path="root") == ["root.0"]
    assert tree_map_with_path(lambda p, x, y: (p, x + y), {"a": 1}, {"a": 2}) == {
        "a": ("a", 3)
    }


def test_reduce():
    tree = {"a": [1, 2, 3], "b": [4, 5]}
    assert tree_reduce(lambda acc, x: acc + x, tree, 0) == 15
    assert tree_reduce(lambda acc, x: acc + x, tree) == 15
    assert tree_reduce(lambda acc, x: acc * x, tree, 1) == 120
    assert tree_reduce(lambda acc, x: acc + [x], {"a": [1, 2]}, []) == [1, 2]
    assert tree_reduce(lambda acc, x: acc + len(x), {"a": [1, 2], "b": [3]}, 0,
                       is_leaf=lambda x: isinstance(x, list)) == 3
    assert tree_reduce(lambda acc, x: acc + x, {}) is None


def test_merge():
    a = {"x": 1, "sub": {"y": 2}, "l": [1, None]}
    b = {"z": 3, "sub": {"w": 4}, "l": [None, 2]}
    assert tree_merge(a, b) == {"x": 1, "sub": {"y": 2, "w": 4}, "l": [1, 2], "z": 3}
    assert tree_merge(None, {"a": 1}) == {"a": 1}
    assert tree_merge({}, [1]) == [1]
    assert tree_merge([1, 2], []) == [1, 2]
    assert tree_merge((1,), (None, 2)) == (1, 2)
    assert tree_merge({"a": 1}, {"a": 2}, merge_fn=lambda p, q: p + q) == {"a": 3}
    with pytest.raises(ValueError):
        tree_merge({"a": 1}, {"a": 2})
    with pytest.raises(ValueError):
        tree_merge({"a": [1]}, {"a": {"b": 1}})

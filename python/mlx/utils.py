"""Utilities for Python trees: lists, tuples and dicts nested to any depth, with any leaves.

Trees returned by these functions are built from plain ``list``, ``tuple`` and ``dict``; any
subclass of those is accepted as input. Flat keys join the path of a leaf with dots:
``{"a": [x, y]}`` flattens to ``[("a.0", x), ("a.1", y)]``.
"""

from collections import defaultdict
from itertools import zip_longest
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__all__ = [
    "tree_flatten",
    "tree_unflatten",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_merge",
]


def _is_leaf(node: Any, is_leaf: Optional[Callable]) -> bool:
    if is_leaf is not None and is_leaf(node):
        return True
    return not isinstance(node, (list, tuple, dict))


def _children(node: Any):
    """(key, child) pairs of a list, tuple or dict."""
    return node.items() if isinstance(node, dict) else enumerate(node)


def _rebuild(node: Any, values) -> Any:
    """A plain container of the same kind as ``node`` from (key, value) pairs."""
    if isinstance(node, dict):
        return dict(values)
    items = [v for _, v in values]
    return tuple(items) if isinstance(node, tuple) else items


def tree_map(
    fn: Callable, tree: Any, *rest: Any, is_leaf: Optional[Callable] = None
) -> Any:
    """Applies ``fn`` to the leaves of ``tree`` and returns a tree of the results.

    Each tree of ``rest`` must contain ``tree``'s structure; its nodes at the leaves of ``tree``
    are passed to ``fn`` as extra arguments.

    Args:
        fn (callable): Called on each leaf (and the matching nodes of ``rest``).
        tree (Any): The tree to map.
        rest (tuple[Any]): Trees iterated together with ``tree``.
        is_leaf (callable, optional): Returns ``True`` for nodes to treat as leaves.

    Returns:
        A tree with the structure of ``tree`` holding the values returned by ``fn``.
    """
    if is_leaf is None:
        return _map_plain(fn, tree, rest)
    return _map(fn, tree, rest, is_leaf, None, False)


def _map_plain(fn, tree, rest):
    # tree_map's walk without is_leaf or paths (an optimizer update's, twice per step): one
    # comprehension per container.
    if isinstance(tree, dict):
        if not rest:
            return {k: _map_plain(fn, c, rest) for k, c in tree.items()}
        return {k: _map_plain(fn, c, [r[k] for r in rest]) for k, c in tree.items()}
    if isinstance(tree, (list, tuple)):
        if not rest:
            out = [_map_plain(fn, c, rest) for c in tree]
        else:
            out = [_map_plain(fn, c, [r[i] for r in rest]) for i, c in enumerate(tree)]
        return tuple(out) if isinstance(tree, tuple) else out
    return fn(tree, *rest)


def tree_map_with_path(
    fn: Callable,
    tree: Any,
    *rest: Any,
    is_leaf: Optional[Callable] = None,
    path: Optional[Any] = None,
) -> Any:
    """Like :func:`tree_map`, with the dotted path of each leaf as ``fn``'s first argument.

    Args:
        fn (callable): Called as ``fn(path, leaf, *rest_nodes)``.
        tree (Any): The tree to map.
        rest (tuple[Any]): Trees iterated together with ``tree``.
        is_leaf (callable, optional): Returns ``True`` for nodes to treat as leaves.
        path (Any, optional): A prefix for the paths.

    Returns:
        A tree with the structure of ``tree`` holding the values returned by ``fn``.

    Example:
        >>> tree_map_with_path(lambda path, _: path, {"model": [{"w": 0}]})
        {'model': [{'w': 'model.0.w'}]}
    """
    return _map(fn, tree, rest, is_leaf, path, True)


def _map(fn, tree, rest, is_leaf, path, with_paths):
    # tree_map's and tree_map_with_path's walk; paths are only built when fn takes them (the
    # string per node was most of an optimizer update's Python time).
    if _is_leaf(tree, is_leaf):
        return fn(path, tree, *rest) if with_paths else fn(tree, *rest)
    mapped = []
    for key, child in _children(tree):
        child_path = None
        if with_paths:
            child_path = f"{path}.{key}" if path is not None else str(key)
        others = [r[key] for r in rest]
        mapped.append((key, _map(fn, child, others, is_leaf, child_path, with_paths)))
    return _rebuild(tree, mapped)


def tree_flatten(
    tree: Any,
    prefix: str = "",
    is_leaf: Optional[Callable] = None,
    destination: Optional[Union[List[Tuple[str, Any]], Dict[str, Any]]] = None,
) -> Union[List[Tuple[str, Any]], Dict[str, Any]]:
    """Flattens a tree to ``(key, leaf)`` pairs with dotted keys.

    Args:
        tree (Any): The tree to flatten.
        prefix (str): A prefix for the keys; its first character is discarded.
        is_leaf (callable, optional): Returns ``True`` for nodes to treat as leaves.
        destination (list or dict, optional): Where to put the pairs (appended to a list,
            stored in a dict). Default: a new list.

    Returns:
        ``destination``.

    Example:
        >>> tree_flatten([[[0]]], prefix=".hello")
        [('hello.0.0.0', 0)]
    """
    if destination is None:
        destination = []

    def visit(node: Any, key: str):
        if _is_leaf(node, is_leaf):
            if isinstance(destination, dict):
                destination[key[1:]] = node
            else:
                destination.append((key[1:], node))
            return
        for k, child in _children(node):
            visit(child, f"{key}.{k}")

    visit(tree, prefix)
    return destination


def tree_unflatten(tree: Union[List[Tuple[str, Any]], Dict[str, Any]]) -> Any:
    """Rebuilds a tree from its flat ``(key, leaf)`` pairs (a list of pairs or a dict).

    Levels whose keys are all integers become lists (missing positions hold empty dicts);
    other levels become dicts.

    Example:
        >>> tree_unflatten([("hello.world", 42)])
        {'hello': {'world': 42}}
    """
    items = list(tree.items()) if isinstance(tree, dict) else list(tree)
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]

    children = defaultdict(list)
    for key, value in items:
        head, _, tail = key.partition(".")
        children[head].append((tail, value))

    def build(entries):
        # A leaf has an empty remaining key; deeper entries form a subtree.
        deeper = [(k, v) for k, v in entries if k != ""]
        return tree_unflatten(deeper) if deeper else entries[-1][1]

    if children and all(k.isdigit() for k in children):
        out = []
        for index in sorted(children, key=int):
            out.extend({} for _ in range(int(index) - len(out)))
            out.append(build(children[index]))
        return out
    return {k: build(v) for k, v in children.items()}


_NO_INITIALIZER = object()


def tree_reduce(
    fn: Callable,
    tree: Any,
    initializer: Any = None,
    is_leaf: Optional[Callable] = None,
) -> Any:
    """Reduces the leaves of a tree with ``fn(accumulator, leaf)``.

    Args:
        fn (callable): Takes the accumulator and a leaf, returns the new accumulator.
        tree (Any): The tree to reduce.
        initializer (Any, optional): The initial accumulator. Default: the first leaf.
        is_leaf (callable, optional): Returns ``True`` for nodes to treat as leaves.

    Returns:
        The accumulated value.

    Example:
        >>> tree_reduce(lambda acc, x: acc + x, {"a": [1, 2, 3], "b": [4, 5]}, 0)
        15
    """
    acc = _NO_INITIALIZER if initializer is None else initializer
    for _, leaf in tree_flatten(tree, is_leaf=is_leaf):
        acc = leaf if acc is _NO_INITIALIZER else fn(acc, leaf)
    return None if acc is _NO_INITIALIZER else acc


def _is_empty(tree: Any) -> bool:
    return tree is None or (isinstance(tree, (list, tuple, dict)) and len(tree) == 0)


def tree_merge(tree_a: Any, tree_b: Any, merge_fn: Optional[Callable] = None) -> Any:
    """Merges two trees into one holding the values of both, like a deep ``dict.update``.

    A missing or empty node takes the other tree's node; lists and tuples merge position by
    position and dicts key by key; two leaves at the same place are combined with
    ``merge_fn(a, b)`` (a ``ValueError`` without one).

    Args:
        tree_a (Any): The first tree.
        tree_b (Any): The second tree.
        merge_fn (callable, optional): Merges two leaves found at the same place.

    Returns:
        The merged tree.
    """
    if _is_empty(tree_a):
        return tree_b if not _is_empty(tree_b) or tree_a is None else tree_a
    if _is_empty(tree_b):
        return tree_a
    if isinstance(tree_a, (list, tuple)) and isinstance(tree_b, (list, tuple)):
        merged = [tree_merge(a, b, merge_fn) for a, b in zip_longest(tree_a, tree_b)]
        return tuple(merged) if isinstance(tree_a, tuple) else merged
    if isinstance(tree_a, dict) and isinstance(tree_b, dict):
        keys = list(tree_a) + [k for k in tree_b if k not in tree_a]
        return {k: tree_merge(tree_a.get(k), tree_b.get(k), merge_fn) for k in keys}
    if isinstance(tree_a, (list, tuple, dict)) or isinstance(tree_b, (list, tuple, dict)):
        raise ValueError(
            f"Cannot merge a {type(tree_a).__name__} with a {type(tree_b).__name__}."
        )
    if merge_fn is None:
        raise ValueError(
            "Trees contain leaves at the same location but no merge_fn was given."
        )
    return merge_fn(tree_a, tree_b)

"""One rank of a multi-process test (test_distributed.py starts it under mlx.launch or by
hand). Every rank builds every rank's input from the same seeds, so each checks its results
against NumPy on its own. Prints "rank R ok" at the end; any failure is an exception (a
non-zero exit).

    python distributed_worker.py collectives | point_to_point | transforms | split
    python distributed_worker.py die <victim> | stall <victim>    (timeout tests)
    python distributed_worker.py mismatch 0|1|2                   (ranks that disagree)
"""

import os
import signal
import sys
import time

import numpy as np

import mlx.core as mx

DTYPES = [
    mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16, mx.int32,
    mx.int64, mx.float16, mx.bfloat16, mx.float32, mx.float64, mx.complex64,
]
EXPECTED_FAILURE = 3  # the exit code of a rank that saw its peer fail, as it should
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (5, 1, 3), (100_003,)]


def inputs(shape, dtype, n, seed):
    """Every rank's input: small integers, so that sums are exact in every dtype."""
    out = []
    for r in range(n):
        rng = np.random.default_rng(seed * 1000 + r)
        v = rng.integers(0, 4, size=shape)
        if dtype == mx.bool_:
            v = v > 1
        elif dtype == mx.complex64:
            v = v + 1j * rng.integers(0, 4, size=shape)
        out.append(v)
    return out


def as_mx(v, dtype):
    return mx.array(v).astype(dtype)


def np_of(a):
    if a.dtype == mx.bfloat16:
        a = a.astype(mx.float32)
    return np.array(a)


def check(got, want, what):
    got = np_of(got)
    want = np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want.astype(got.dtype)):
        raise AssertionError(f"{what}: got {got.shape} {got.ravel()[:8]}, want "
                             f"{want.shape} {want.ravel()[:8]}")


def collectives(g):
    n, r = g.size(), g.rank()
    seed = 0
    for dtype in DTYPES:
        for shape in SHAPES:
            seed += 1
            vs = inputs(shape, dtype, n, seed)
            x = as_mx(vs[r], dtype)
            name = f"{dtype} {shape}"
            if dtype == mx.bool_:
                check(mx.distributed.all_sum(x, group=g), np.logical_or.reduce(vs), "sum " + name)
            else:
                check(mx.distributed.all_sum(x, group=g), np.sum(vs, axis=0), "sum " + name)
            if dtype != mx.complex64:
                check(mx.distributed.all_max(x, group=g), np.max(vs, axis=0), "max " + name)
                check(mx.distributed.all_min(x, group=g), np.min(vs, axis=0), "min " + name)
            gathered = np.concatenate([np.reshape(v, (1,) if v.ndim == 0 else v.shape)
                                       for v in vs])
            check(mx.distributed.all_gather(x, group=g), gathered, "gather " + name)
            # sum_scatter needs a first axis that splits over the ranks.
            big = inputs((n * (shape[0] if shape else 1),) + shape[1:], dtype, n, seed)
            if dtype != mx.bool_:
                total = np.sum(big, axis=0)
                part = len(total) // n
                got = mx.distributed.sum_scatter(as_mx(big[r], dtype), group=g)
                check(got, total[r * part:(r + 1) * part], "sum_scatter " + name)
    # A non-contiguous (transposed) input, and a stream given explicitly.
    vs = inputs((4, 6), mx.float32, n, 999)
    x = as_mx(vs[r], mx.float32).T
    check(mx.distributed.all_sum(x, group=g, stream=mx.cpu), np.sum(vs, 0).T, "transposed")
    check(mx.distributed.all_gather(x, group=g), np.concatenate([v.T for v in vs]), "gather T")
    try:
        mx.distributed.sum_scatter(mx.ones((n + 1,)), group=g)
        raise AssertionError("sum_scatter accepted a first axis that does not split")
    except ValueError as e:
        assert "sum_scatter" in str(e)


def point_to_point(g):
    n, r = g.size(), g.rank()
    for dtype in (mx.float32, mx.int8, mx.bfloat16, mx.complex64):
        for shape in [(0,), (1,), (3, 5), (300_001,)]:
            vs = inputs(shape, dtype, n, 7)
            right, left = (r + 1) % n, (r - 1) % n
            # Even ranks send first, odd ones receive first: large messages would otherwise
            # fill the sockets both ways.
            if r % 2 == 0:
                mx.eval(mx.distributed.send(as_mx(vs[r], dtype), right, group=g))
                got = mx.distributed.recv(shape, dtype, left, group=g)
                mx.eval(got)
            else:
                got = mx.distributed.recv_like(as_mx(vs[r], dtype), left, group=g)
                mx.eval(got)
                mx.eval(mx.distributed.send(as_mx(vs[r], dtype), right, group=g))
            check(got, vs[left], f"recv {dtype} {shape}")
    for bad in (r, n, -1):
        try:
            mx.distributed.send(mx.ones((1,)), bad, group=g)
            raise AssertionError(f"send to {bad} was accepted")
        except ValueError as e:
            assert "send" in str(e)


def compiled_point_to_point(g):
    """Sends and receives in compiled functions run at every call: an input-free recv and a
    send of a constant are not folded into constants at trace time."""
    n, r = g.size(), g.rank()
    right, left = (r + 1) % n, (r - 1) % n
    send = mx.compile(lambda x: mx.distributed.send(x, right, group=g))
    send_constant = mx.compile(lambda: mx.distributed.send(mx.full((3,), -1.0), right, group=g))
    recv = mx.compile(lambda: mx.distributed.recv((3,), mx.float32, left, group=g))
    for step in range(3):
        x = mx.full((3,), float(10 * step + r))
        sends = [lambda: send(x), send_constant]
        for k, do_send in enumerate(sends):
            if r % 2 == 0:
                mx.eval(do_send())
                got = recv()
                mx.eval(got)
            else:
                got = recv()
                mx.eval(got)
                mx.eval(do_send())
            want = 10 * step + left if k == 0 else -1
            check(got, np.full(3, want, np.float32), f"compiled recv, step {step}, send {k}")


def transforms(g):
    n, r = g.size(), g.rank()
    x = mx.arange(6, dtype=mx.float32).reshape(2, 3) + r
    # all_sum: the cotangent passes through; all_gather: this rank's rows of it.
    grad = mx.grad(lambda y: (mx.distributed.all_sum(y, group=g) ** 2).sum())(x)
    total = sum(np.arange(6, dtype=np.float32).reshape(2, 3) + k for k in range(n))
    check(grad, 2 * total, "vjp all_sum")
    w = mx.arange(2 * n * 3, dtype=mx.float32).reshape(2 * n, 3)
    grad = mx.grad(lambda y: (mx.distributed.all_gather(y, group=g) * w).sum())(x)
    check(grad, np.array(w)[2 * r:2 * r + 2], "vjp all_gather")
    grad = mx.grad(lambda y: mx.distributed.sum_scatter(y, group=g).sum())(mx.ones((n, 2)))
    check(grad, np.ones((n, 2)), "vjp sum_scatter")
    grad = mx.grad(lambda y: mx.distributed.all_max(y, group=g).sum())(x)
    check(grad, (r == n - 1) * np.ones((2, 3)), "vjp all_max")
    # vmap over a leading axis equals the loop over it.
    xs = mx.stack([x, 2 * x, 3 * x])
    out = mx.vmap(lambda y: mx.distributed.all_gather(y, group=g))(xs)
    loop = mx.stack([mx.distributed.all_gather(xs[i], group=g) for i in range(3)])
    check(out, np_of(loop), "vmap all_gather")
    out = mx.vmap(lambda y: mx.distributed.all_sum(y, group=g), in_axes=1)(xs)
    check(out, np_of(mx.distributed.all_sum(xs, group=g)).transpose(1, 0, 2), "vmap all_sum")
    xs = mx.ones((3, 2 * n))
    out = mx.vmap(lambda y: mx.distributed.sum_scatter(y, group=g))(xs)
    check(out, n * np.ones((3, 2)), "vmap sum_scatter")
    out = mx.vmap(lambda y: mx.distributed.all_gather(y, group=g))(mx.arange(3) + r)
    check(out, np.stack([np.arange(n) + i for i in range(3)]), "vmap all_gather scalars")
    # jvp of all_sum is all_sum of the tangent.
    _, t = mx.jvp(lambda y: mx.distributed.all_sum(y, group=g), [x], [mx.ones_like(x)])
    check(t[0], n * np.ones((2, 3)), "jvp all_sum")


def split(g):
    n, r = g.size(), g.rank()
    sub = g.split(r % 2)
    members = [k for k in range(n) if k % 2 == r % 2]
    assert sub.size() == len(members) and sub.rank() == members.index(r), (sub.rank(), sub.size())
    check(mx.distributed.all_sum(mx.array([r]), group=sub), [sum(members)], "split sum")
    rev = g.split(0, key=n - r)  # reversed order
    assert rev.rank() == n - 1 - r
    check(mx.distributed.all_gather(mx.array([r]), group=rev), list(range(n))[::-1], "key order")


def close(got, want, what, tol=1e-5):
    got, want = np_of(got), np_of(want)
    if got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol):
        raise AssertionError(f"{what}: max diff {np.max(np.abs(got - want))}")


def nn_parallel(g):
    """Sharded layers and models equal their unsharded selves (values and gradients);
    bucketed gradient averaging and the sharded optimizer equal their plain versions."""
    import mlx.distributed as dist
    import mlx.nn as nn
    import mlx.optimizers as optim
    from mlx.utils import tree_flatten, tree_map

    n, r = g.size(), g.rank()
    mx.random.seed(1)  # the same weights and inputs on every rank
    x = mx.random.normal((3, 5, 8 * n))

    def mlp():
        return nn.Sequential(nn.Linear(8 * n, 4 * n), nn.ReLU(), nn.Linear(4 * n, 2 * n))

    def loss(model, x):
        return (model(x) ** 2).sum()

    # shard_model, both axes: same outputs, and the weight gradients are the shards of the
    # full gradients.
    for axis in (0, 1):
        full = mlp()
        mx.eval(full.parameters())
        sharded = dist.shard_model(_copy(full, mlp), axis=axis, group=g)
        close(sharded(x), full(x), f"shard_model axis={axis} outputs", 1e-4)
        gx_full = mx.grad(lambda y: loss(full, y))(x)
        gx_sharded = mx.grad(lambda y: loss(sharded, y))(x)
        close(gx_sharded, gx_full, f"shard_model axis={axis} input gradient", 1e-4)
        gw_full = nn.value_and_grad(full, loss)(full, x)[1]
        gw_sharded = nn.value_and_grad(sharded, loss)(sharded, x)[1]
        w_full = gw_full["layers"][0]["weight"]
        w_shard = gw_sharded["layers"][0]["layer"]["weight"]
        k = w_shard.shape[axis]
        want = w_full[r * k:(r + 1) * k] if axis == 0 else w_full[:, r * k:(r + 1) * k]
        close(w_shard, want, f"shard_model axis={axis} weight gradient", 1e-4)

    # The sharded linears composed as in a tensor-parallel MLP; and their quantized forms.
    lin1, lin2 = nn.Linear(8 * n, 4 * n), nn.Linear(4 * n, 2 * n)
    mx.eval(lin1.parameters(), lin2.parameters())
    a = nn.AllToShardedLinear.from_linear(lin1, group=g)
    b = nn.ShardedToAllLinear.from_linear(lin2, group=g)
    close(b(nn.relu(a(x))), lin2(nn.relu(lin1(x))), "AllToSharded -> ShardedToAll", 1e-4)
    q1, q2 = nn.QuantizedLinear.from_linear(nn.Linear(64 * n, 64 * n)), nn.QuantizedLinear.from_linear(nn.Linear(64 * n, 32))
    xq = mx.random.normal((2, 64 * n))
    qa = nn.QuantizedAllToShardedLinear.from_quantized_linear(q1, group=g)
    qb = nn.QuantizedShardedToAllLinear.from_quantized_linear(q2, group=g)
    close(qb(qa(xq)), q2(q1(xq)), "quantized sharded linears", 1e-3)

    # fully_shard: same outputs and, after gathering, the same gradients.
    full = mlp()
    mx.eval(full.parameters())
    fs = nn.fully_shard(_copy(full, mlp), group=g)
    close(fs(x), full(x), "fully_shard outputs", 1e-4)

    # average_gradients: bucketed (several arrays per all-reduce) == one per array == mean.
    grads = {"a": mx.random.normal((3, 4)) + r, "b": [mx.arange(5, dtype=mx.float32) * r,
             mx.ones((0,))], "c": mx.ones((7,), mx.float16) * r}
    mean_r = (n - 1) / 2
    want = {"a": grads["a"] - r + mean_r, "b": [mx.arange(5, dtype=mx.float32) * mean_r,
            mx.ones((0,))], "c": mx.ones((7,), mx.float16) * mean_r}
    for size in (0, 16, 1 << 20):
        got = nn.average_gradients(grads, group=g, all_reduce_size=size,
                                   communication_stream=mx.new_stream(mx.cpu))
        for (k, v), (_, w) in zip(tree_flatten(got), tree_flatten(want)):
            close(v, w, f"average_gradients {k} size={size}", 1e-3)

    # ShardedOptimizer (stages 1, 2) == AdamW on the averaged gradients; state is 1/n.
    for stage in (1, 2):
        params = {"w": mx.random.normal((5, 3)), "v": mx.random.normal((7,))}
        mx.eval(params)
        plain, zero = dict(params), dict(params)
        opt = optim.AdamW(learning_rate=0.1)
        zopt = optim.ShardedOptimizer(optim.AdamW(learning_rate=0.1), group=g, stage=stage)
        for step in range(3):
            local = tree_map(lambda p: p * (r + 1 + step), params)
            avg = tree_map(lambda p: p * (sum(range(1, n + 1)) / n + step), params)
            plain = opt.apply_gradients(avg, plain)
            zero = zopt.apply_gradients(local, zero)
            mx.eval(plain, zero)
        for k in params:
            close(zero[k], plain[k], f"ShardedOptimizer stage {stage} {k}", 1e-5)
        m = zopt.state["w"]["m"]
        assert m.size == -(-15 // n), m.shape


def _copy(model, make):
    out = make()
    out.update(model.parameters())
    return out


def die(g, victim):
    """The victim dies without a word; the others must fail with a clear error, in time."""
    if g.rank() == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    _expect_failure(g)


def stall(g, victim):
    """The victim stops answering (stopped, sockets open); the others must time out."""
    if g.rank() == victim:
        os.kill(os.getpid(), signal.SIGSTOP)
    _expect_failure(g)


def mismatch(g, kind):
    """Ranks that disagree on a call: the ring names it instead of mixing their bytes."""
    r = g.rank()
    try:
        if kind == 0:  # all_sum of different sizes
            mx.eval(mx.distributed.all_sum(mx.ones((5 + 2 * r,)), group=g))
        elif kind == 1:  # different collectives, in different orders
            first, second = (mx.distributed.all_sum, mx.distributed.all_gather)[::1 - 2 * (r % 2)]
            mx.eval(first(mx.ones((3,)), group=g))
            mx.eval(second(mx.ones((3,)), group=g))
        else:  # a recv of another size than the send
            if r == 1:
                mx.eval(mx.distributed.recv((5,), mx.float32, 0, group=g))
            else:  # the sender cannot tell; its send is buffered
                if r == 0:
                    mx.eval(mx.distributed.send(mx.ones((4,)), 1, group=g))
                sys.exit(EXPECTED_FAILURE)
    except RuntimeError as e:
        print(f"rank {r} failed after 0 s: {e}", flush=True)
        sys.exit(EXPECTED_FAILURE)
    raise AssertionError("the mismatch went unnoticed")


def _expect_failure(g):
    time.sleep(0.2)
    t0 = time.monotonic()
    try:
        for _ in range(100):
            mx.eval(mx.distributed.all_sum(mx.ones((1000,)), group=g))
    except RuntimeError as e:
        print(f"rank {g.rank()} failed after {time.monotonic() - t0:.3f} s: {e}", flush=True)
        sys.exit(EXPECTED_FAILURE)
    raise AssertionError("the collectives succeeded with a peer gone")


def main():
    mode = sys.argv[1]
    g = mx.distributed.init(strict=True)
    if mode in ("die", "stall", "mismatch"):
        globals()[mode](g, int(sys.argv[2]))
    else:
        for m in mode.split(","):
            globals()[m](g)
    print(f"rank {g.rank()} ok", flush=True)


if __name__ == "__main__":
    main()

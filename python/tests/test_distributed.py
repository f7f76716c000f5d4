"""mx.distributed across processes: every collective, dtype and shape on 2 and 4 local ranks
over the ring and MPI (distributed_worker.py checks each rank against NumPy), a dead or silent
peer failing the others within the timeout, and mlx.launch itself. Every process started
here runs under a hard timeout, so a bug fails a test instead of hanging CI."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

import mlx.core as mx

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "distributed_worker.py")
PYTHONPATH = os.path.dirname(HERE)
HARD_TIMEOUT = 120
EXPECTED_FAILURE = 3  # distributed_worker.py's exit code after seeing its peer fail

has_mpi = shutil.which("mpirun") is not None and mx.distributed.is_available("mpi")
BACKENDS = ["ring", pytest.param("mpi", marks=pytest.mark.skipif(
    not has_mpi, reason="OpenMPI (mpirun, libmpi) is not installed"))]


def env(**extra):
    e = dict(os.environ)
    e["PYTHONPATH"] = PYTHONPATH + os.pathsep + e.get("PYTHONPATH", "")
    for k in ("MLX_HOSTFILE", "MLX_RANK", "MLX_DISTRIBUTED_BACKEND"):
        e.pop(k, None)
    e.update(extra)
    return e


def launch(*args, timeout=HARD_TIMEOUT, **extra_env):
    return subprocess.run(
        [sys.executable, "-m", "mlx.launch", *args],
        env=env(**extra_env), capture_output=True, text=True, timeout=timeout, cwd=HERE,
    )


def rank_lines(out, rank):
    return [line[len(f"[{rank}] "):] for line in out.splitlines()
            if line.startswith(f"[{rank}] ")]


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_collective_dtype_and_shape(backend, n):
    r = launch("--backend", backend, "-n", str(n), WORKER,
               "collectives,point_to_point,compiled_point_to_point,transforms,split,nn_parallel")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for rank in range(n):
        assert f"rank {rank} ok" in rank_lines(r.stdout, rank), r.stdout[-2000:]


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def run_ring_by_hand(tmp_path, n, args, timeout_s, skip=None):
    """The ranks started without the launcher (which would stop the survivors itself), so
    that each one's own error and timing are seen; rank `skip` (killed or stopped by the
    test) is not waited for. Returns {rank: (returncode, out)}."""
    hostfile = tmp_path / "hosts.json"
    hostfile.write_text(json.dumps([[f"127.0.0.1:{p}"] for p in free_ports(n)]))
    procs = [subprocess.Popen(
        [sys.executable, WORKER, *args],
        env=env(MLX_HOSTFILE=str(hostfile), MLX_RANK=str(r),
                MLX_DISTRIBUTED_TIMEOUT=str(timeout_s)),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for r in range(n)]
    results = {}
    try:
        for r, p in enumerate(procs):
            if r == skip:
                continue
            out, _ = p.communicate(timeout=HARD_TIMEOUT)
            results[r] = (p.returncode, out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()  # the stopped victim (SIGKILL reaches a stopped process)
            p.wait()
    return results


def failure_seconds(out):
    m = re.search(r"failed after ([0-9.]+) s: (.*)", out)
    assert m, out
    return float(m.group(1)), m.group(2)


@pytest.mark.parametrize("n", [2, 4])
def test_ring_dead_peer_fails_every_survivor_at_once(tmp_path, n):
    # The timeout is long: a dead peer closes its sockets, so no one should need it.
    results = run_ring_by_hand(tmp_path, n, ["die", "1"], timeout_s=60, skip=1)
    assert sorted(results) == [r for r in range(n) if r != 1]
    for rank, (code, out) in results.items():
        assert code == EXPECTED_FAILURE, out
        seconds, message = failure_seconds(out)
        assert "[distributed] ring" in message and "rank" in message
        assert seconds < 30, f"rank {rank} needed {seconds} s to see its peer die"


@pytest.mark.parametrize("n", [2, 4])
def test_ring_silent_peer_times_out(tmp_path, n):
    results = run_ring_by_hand(tmp_path, n, ["stall", str(n - 1)], timeout_s=2, skip=n - 1)
    for rank, (code, out) in results.items():
        assert code == EXPECTED_FAILURE, out
        seconds, message = failure_seconds(out)
        assert "MLX_DISTRIBUTED_TIMEOUT" in message or "closed the connection" in message
        assert seconds < 2 + 20


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_ring_ranks_that_disagree_get_a_clear_error(tmp_path, kind):
    # Sizes, collectives or send / recv that do not match: an error naming the call, at once
    # (the timeout is long, so only the check can end the run in time).
    results = run_ring_by_hand(tmp_path, 2, ["mismatch", str(kind)], timeout_s=600)
    assert all(code == EXPECTED_FAILURE for code, _ in results.values()), results
    outs = [out for _, out in results.values()]
    assert any("got a message of another call" in out for out in outs), outs


@pytest.mark.skipif(not has_mpi, reason="OpenMPI is not installed")
def test_mpi_silent_peer_times_out_and_the_job_stops():
    t0 = time.monotonic()
    r = launch("--backend", "mpi", "-n", "3", "--env", "MLX_DISTRIBUTED_TIMEOUT=2", WORKER,
               "stall", "1")
    assert r.returncode != 0
    assert "timed out after 2 s (MLX_DISTRIBUTED_TIMEOUT)" in r.stdout, r.stdout + r.stderr
    assert time.monotonic() - t0 < HARD_TIMEOUT


@pytest.mark.parametrize("backend", BACKENDS)
def test_launcher_stops_the_others_when_a_rank_fails(backend, tmp_path):
    # Rank 1 fails once every rank has started (each leaves a file), the others sleep.
    script = tmp_path / "fail.py"
    script.write_text(
        "import os, sys, time\n"
        "rank = int(os.environ.get('MLX_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', -1)))\n"
        "print('started', rank, flush=True)\n"
        f"open(os.path.join({str(tmp_path)!r}, f'started{{rank}}'), 'w').close()\n"
        "if rank == 1:\n"
        f"    while len([f for f in os.listdir({str(tmp_path)!r}) if f.startswith('started')]) < 3:\n"
        "        time.sleep(0.05)\n"
        "    sys.exit(7)\n"
        "time.sleep(600)\n"
    )
    t0 = time.monotonic()
    r = launch("--backend", backend, "-n", "3", str(script), timeout=90)
    assert r.returncode != 0
    assert time.monotonic() - t0 < 60
    if backend == "ring":
        assert r.returncode == 7
        assert "rank 1 failed (exit code 7)" in r.stderr
    for rank in range(3):
        assert f"started {rank}" in rank_lines(r.stdout, rank), r.stdout


def test_launcher_env_cwd_and_prefixes(tmp_path):
    script = tmp_path / "show.py"
    script.write_text(
        "import os\n"
        "print(os.environ['MLX_RANK'], os.environ['GREETING'], os.getcwd(), flush=True)\n"
    )
    r = launch("-n", "2", "--env", "GREETING=hi", "--cwd", str(tmp_path), str(script))
    assert r.returncode == 0, r.stderr
    for rank in range(2):
        assert rank_lines(r.stdout, rank) == [f"{rank} hi {tmp_path}"]


@pytest.mark.parametrize("form", ["list", "object"])
def test_launcher_hostfile_forms(tmp_path, form):
    hosts = [{"ssh": "localhost", "ips": ["127.0.0.1"]}, {"ssh": "localhost", "ips": []}]
    data = hosts if form == "list" else {
        "backend": "ring", "envs": ["GREETING=from-file"], "hosts": hosts}
    hostfile = tmp_path / "hosts.json"
    hostfile.write_text(json.dumps(data))
    script = tmp_path / "sum.py"
    script.write_text(
        "import os\nimport mlx.core as mx\n"
        "g = mx.distributed.init(strict=True)\n"
        "print(g.size(), mx.distributed.all_sum(mx.array(g.rank() + 1)).item(),"
        " os.environ.get('GREETING'), flush=True)\n"
    )
    r = launch("--hostfile", str(hostfile), str(script))
    assert r.returncode == 0, r.stderr
    greeting = "from-file" if form == "object" else "None"
    for rank in range(2):
        assert rank_lines(r.stdout, rank) == [f"2 3 {greeting}"]


def test_launcher_rejects_bad_arguments(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = launch("--hostfile", str(bad), "x.py")
    assert r.returncode == 2 and "cannot read the hostfile" in r.stderr
    r = launch("-n", "2", "--env", "NOEQUALS", "x.py")
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr
    r = launch("-n", "0", "x.py")
    assert r.returncode == 2


def test_ring_rejects_a_bad_hostfile(tmp_path):
    hostfile = tmp_path / "hosts.json"
    for text, why in [("{}", "hostfile"), ('[["127.0.0.1:1"], []]', "no address"),
                      ('["nonsense"]', "ip:port")]:
        hostfile.write_text(text)
        r = subprocess.run(
            [sys.executable, "-c", "import mlx.core as mx; mx.distributed.init()"],
            env=env(MLX_HOSTFILE=str(hostfile), MLX_RANK="0"), capture_output=True, text=True,
            timeout=HARD_TIMEOUT)
        assert r.returncode != 0 and why in r.stderr, r.stderr


def init_alone(tmp_path, **extra_env):
    """init() in a process of a 2-rank hostfile whose other rank never starts."""
    hostfile = tmp_path / "hosts.json"
    hostfile.write_text(json.dumps([[f"127.0.0.1:{p}"] for p in free_ports(2)]))
    return subprocess.run(
        [sys.executable, "-c", "import mlx.core as mx; mx.distributed.init()"],
        env=env(MLX_HOSTFILE=str(hostfile), MLX_RANK="0", **extra_env),
        capture_output=True, text=True, timeout=HARD_TIMEOUT)


def test_ring_init_times_out_when_a_rank_never_comes(tmp_path):
    r = init_alone(tmp_path, MLX_DISTRIBUTED_TIMEOUT="1")
    assert r.returncode != 0 and "did not all connect" in r.stderr, r.stderr


def test_bad_timeout_setting_is_a_clear_error(tmp_path):
    r = init_alone(tmp_path, MLX_DISTRIBUTED_TIMEOUT="soon")
    assert r.returncode != 0 and "MLX_DISTRIBUTED_TIMEOUT" in r.stderr


TRAIN_LM = os.path.join(os.path.dirname(PYTHONPATH), "examples", "train_lm.py")
TINY_LM = ["--dims", "32", "--layers", "1", "--heads", "2", "--context", "32", "--batch", "8",
           "--warmup", "2", "--sample", "0", "--cpu", "--steps", "6", "--eval-every", "6",
           "--json"]


def lm_results(stdout):
    out = {}
    for line in stdout.splitlines():
        body = line.split("] ", 1)[-1]
        if body.startswith("{"):
            r = json.loads(body)
            out[r["rank"]] = r
    return out


@pytest.mark.parametrize("n,extra", [(2, []), (2, ["--zero"]), (2, ["--zero", "--zero-stage", "1"]),
                                     (4, ["--zero"])])
def test_multi_rank_training_matches_one_rank_on_the_same_global_batch(n, extra):
    one = subprocess.run([sys.executable, TRAIN_LM, *TINY_LM], env=env(), capture_output=True,
                         text=True, timeout=HARD_TIMEOUT)
    assert one.returncode == 0, one.stderr[-2000:]
    many = launch("-n", str(n), TRAIN_LM, *TINY_LM, *extra)
    assert many.returncode == 0, many.stderr[-2000:]
    want = lm_results(one.stdout)[0]["losses"]
    got = lm_results(many.stdout)
    assert sorted(got) == list(range(n))
    # Half batches sum their float32 products in another order (on the GPU cuBLAS also picks
    # other splits), which drifts ~1e-4 over a few Adam steps; a rank's batch counted wrong
    # moves the loss by far more.
    for rank in range(n):
        assert got[rank]["losses"] == pytest.approx(want, rel=1e-3, abs=1e-3)
    assert want[-1] < want[0]  # it learned something


def test_time_limit_stops_every_rank_at_the_same_step():
    # Every rank is past the limit here: the stop and the collective validation after it run
    # on all ranks (disagreeing clocks are settled by an all_sum, not exercised here).
    r = launch("-n", "2", TRAIN_LM, *TINY_LM, "--time-limit", "0")
    assert r.returncode == 0, r.stderr[-2000:]
    got = lm_results(r.stdout)
    assert sorted(got) == [0, 1] and all(len(got[k]["losses"]) == 1 for k in got), r.stdout


def run_python(code, **extra_env):
    return subprocess.run([sys.executable, "-c", code], env=env(**extra_env),
                          capture_output=True, text=True, timeout=HARD_TIMEOUT)


NCCL_CHECK = """
import mlx.core as mx
available = mx.distributed.is_available("nccl")
g = mx.distributed.init(backend="nccl")
print(available, g.size())
try:
    mx.distributed.init(strict=True, backend="nccl")
except RuntimeError as e:
    print("strict:", e)
"""


def test_nccl_single_process_paths():
    # Without NCCL (or a GPU) here: not available, a group of one, a clear strict error.
    r = run_python(NCCL_CHECK)
    assert r.returncode == 0, r.stderr
    first, *rest = r.stdout.splitlines()
    if first.startswith("True"):
        pytest.skip("NCCL is installed: the multi-GPU run covers it")
    assert first == "False 1"
    assert "NCCL backend is not available" in rest[0]
    # A library that is not NCCL: the missing piece is named.
    r = run_python(NCCL_CHECK, MLX_NCCL_LIBNAME="libm.so.6")
    assert r.returncode == 0 and "not available" in r.stdout, r.stdout + r.stderr


NCCL_ONE_RANK = """
import numpy as np
import mlx.core as mx
g = mx.distributed.init(strict=True, backend="nccl")
assert g.size() == 1 and g.rank() == 0, g
rng = np.random.default_rng(0)
for dt in (mx.float32, mx.bfloat16, mx.int32, mx.bool_, mx.complex64):
    for shape in ((0, 3), (1,), (7, 5)):
        x = mx.array(rng.standard_normal(shape) * 10).astype(dt)
        for f in (mx.distributed.all_sum, mx.distributed.all_gather,
                  mx.distributed.sum_scatter, mx.distributed.all_max):
            y = f(x, stream=mx.gpu)
            assert y.dtype == x.dtype and y.shape == x.shape, (f, dt, shape)
            assert mx.array_equal(y, x).item(), (f, dt, shape)
try:
    mx.distributed.send(mx.ones(3), 0, stream=mx.gpu)
except ValueError as e:
    assert "not a peer" in str(e), e
else:
    raise AssertionError("a send to oneself should be refused")
print("nccl one rank ok")
"""


def test_nccl_collectives_of_one_gpu_rank(tmp_path):
    # One rank on one GPU: NCCL initializes and a group of one's collectives are identities,
    # as MLX documents (NCCL refuses two ranks on one GPU, so the data path across ranks is
    # the multi-GPU run's, issue 18).
    probe = run_python("import mlx.core as mx\n"
                       "print(mx.cuda.is_available() and mx.distributed.is_available('nccl'))")
    if probe.stdout.strip() != "True":
        pytest.skip("needs a GPU and NCCL")
    script = tmp_path / "nccl_one_rank.py"
    script.write_text(NCCL_ONE_RANK)
    r = launch("--backend", "nccl", "-n", "1", str(script))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "nccl one rank ok" in rank_lines(r.stdout, 0), r.stdout[-2000:]


def test_mpi_library_name_is_honoured():
    r = run_python("import mlx.core as mx\nprint(mx.distributed.is_available('mpi'))\n"
                   "mx.distributed.init(strict=True, backend='mpi')",
                   MLX_MPI_LIBNAME="libdoes-not-exist.so")
    assert r.stdout.strip() == "False"
    assert r.returncode != 0 and "libdoes-not-exist.so" in r.stderr, r.stderr


def test_launcher_hosts_and_verbose(tmp_path):
    # Two local names are two hosts here (no ssh): -n 2 per host gives four ranks.
    script = tmp_path / "size.py"
    script.write_text("import mlx.core as mx\nprint(mx.distributed.init(strict=True).size())\n")
    r = launch("--hosts", "localhost,127.0.0.1", "-n", "2", "--verbose", str(script))
    assert r.returncode == 0, r.stderr
    assert all(rank_lines(r.stdout, k) == ["4"] for k in range(4)), r.stdout
    assert "mlx.launch: rank 3 on 127.0.0.1" in r.stderr


def test_ranks_die_with_a_killed_launcher(tmp_path):
    # Even SIGKILL (no chance to clean up) must not leave ranks behind.
    script = tmp_path / "sleep.py"
    script.write_text("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-m", "mlx.launch", "-n", "2", str(script)],
                         env=env(), stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p.stdout.readline().split()[-1]) for _ in range(2)]
    finally:
        p.kill()
        p.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{q}") for q in pids):
        time.sleep(0.1)
    alive = [q for q in pids if os.path.exists(f"/proc/{q}")]
    for q in alive:
        os.kill(q, signal.SIGKILL)
    assert not alive

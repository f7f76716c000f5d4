"""``mlx.launch`` / ``python -m mlx.launch``: start a program on several processes or hosts,
with MLX's options.

    mlx.launch -n 4 train.py --epochs 1            # four local ranks over the TCP ring
    mlx.launch --backend mpi -n 2 train.py         # the same through mpirun
    mlx.launch --hostfile hosts.json train.py      # one rank per host over ssh

Each rank's output lines are prefixed with ``[rank]``. When a rank fails (exits non-zero or
is killed) the others are stopped and the launcher exits with that rank's code.

Hostfiles (JSON), either MLX form: a list of hosts ``[{"ssh": "host1", "ips": ["10.0.0.1"]},
...]``, or an object ``{"backend": "ring", "envs": ["K=V", ...], "hosts": [...]}``.
"""

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import List

_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", socket.gethostname()}
_GRACE_SECONDS = 5.0


@dataclass
class Host:
    ssh: str
    ips: List[str] = field(default_factory=list)

    @property
    def local(self) -> bool:
        return self.ssh in _LOCAL_NAMES

    @property
    def address(self) -> str:
        return self.ips[0] if self.ips else ("127.0.0.1" if self.local else self.ssh)


def _fail(message: str):
    print(f"mlx.launch: {message}", file=sys.stderr)
    sys.exit(2)


def parse_hostfile(path: str):
    """(hosts, backend or None, envs) from either JSON form."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        _fail(f"cannot read the hostfile {path!r}: {e}")
    backend, envs = None, []
    if isinstance(data, dict):
        backend = data.get("backend")
        envs = list(data.get("envs", []))
        data = data.get("hosts", [])
    if not isinstance(data, list) or not data:
        _fail(f"the hostfile {path!r} must list at least one host")
    hosts = []
    for i, h in enumerate(data):
        if isinstance(h, str):
            hosts.append(Host(h))
        elif isinstance(h, dict) and isinstance(h.get("ssh"), str):
            ips = h.get("ips", [])
            if not isinstance(ips, list) or not all(isinstance(ip, str) for ip in ips):
                _fail(f"host {i} of {path!r}: 'ips' must be a list of strings")
            hosts.append(Host(h["ssh"], ips))
        else:
            _fail(f"host {i} of {path!r} must be a string or an object with 'ssh'")
    return hosts, backend, envs


def _free_ports(n: int) -> List[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _env_pairs(items) -> dict:
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _fail(f"--env expects KEY=VALUE; got {item!r}")
        env[key] = value
    return env


def _program(args) -> List[str]:
    if not args.command:
        _fail("no program given")
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if cmd[0].endswith(".py"):
        cmd = [args.python] + cmd
    return cmd


class _Output:
    """Copies a rank's stream to ours, line by line, with the rank in front."""

    lock = threading.Lock()

    def __init__(self, stream, out, prefix: str):
        self.thread = threading.Thread(target=self._pump, args=(stream, out, prefix), daemon=True)
        self.thread.start()

    @classmethod
    def _pump(cls, stream, out, prefix):
        for raw in iter(stream.readline, b""):
            line = prefix + raw.decode(errors="replace")
            with cls.lock:
                out.write(line)
                out.flush()


def _supervise(procs, verbose: bool) -> int:
    """Waits for every process; when one fails, stops the others. Returns the exit code."""
    try:
        while procs:
            for rank, p in list(procs.items()):
                rc = p.poll()
                if rc is None:
                    continue
                del procs[rank]
                if verbose:
                    print(f"mlx.launch: rank {rank} exited with code {rc}", file=sys.stderr)
                if rc != 0:
                    if procs:
                        print(
                            f"mlx.launch: rank {rank} failed (exit code {rc}); stopping the "
                            f"other {len(procs)} rank(s)",
                            file=sys.stderr,
                        )
                    _stop(procs)
                    return rc if rc > 0 else 128 - rc
            time.sleep(0.05)
    except KeyboardInterrupt:
        _stop(procs)
        return 130
    return 0


def _terminated(signum, frame):
    # Stopping the launcher stops the job: unwind through _supervise / _rank_output.
    raise KeyboardInterrupt


def _stop(procs):
    for p in procs.values():
        _signal(p, signal.SIGTERM)
        _signal(p, signal.SIGCONT)  # a stopped rank only sees SIGTERM once it runs
    deadline = time.monotonic() + _GRACE_SECONDS
    for p in procs.values():
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(p, signal.SIGKILL)
    for p in procs.values():
        p.wait()
    procs.clear()


def _signal(p, sig):
    try:
        os.killpg(p.pid, sig)  # the rank and anything it started (its own session)
    except (ProcessLookupError, PermissionError):
        pass


# Ranks get SIGKILL when the launcher dies, even by SIGKILL, so that no rank outlives the
# process that supervises it: util-linux's setpriv sets the parent-death signal, then execs
# the rank (in place, so its parent is still the launcher). Without setpriv, only the
# launcher's own handlers stop the ranks.
_PDEATHSIG = ["setpriv", "--pdeathsig", "KILL"] if shutil.which("setpriv") else []


def _spawn(cmd, env, prefix):
    p = subprocess.Popen(
        _PDEATHSIG + cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    outs = [
        _Output(p.stdout, sys.stdout, prefix),
        _Output(p.stderr, sys.stderr, prefix),
    ]
    return p, outs


def launch_ring(args, hosts, envs, backend) -> int:
    """One process per (host, slot); each is told its rank and the hostfile of addresses."""
    slots = [(h, i) for h in hosts for i in range(args.nproc)]
    n = len(slots)
    if all(h.local for h in hosts):
        ports = _free_ports(n)
    else:
        ports = [args.starting_port + i for i in range(n)]
    addresses = [[f"{h.address}:{port}"] for (h, _), port in zip(slots, ports)]
    hostfile_text = json.dumps(addresses)
    cmd = _program(args)
    tmp = tempfile.NamedTemporaryFile("w", suffix=".json", prefix="mlx_hosts_", delete=False)
    tmp.write(hostfile_text)
    tmp.close()
    procs, outputs = {}, []
    try:
        for rank, (host, _) in enumerate(slots):
            rank_env = {
                "MLX_RANK": str(rank),
                "MLX_WORLD_SIZE": str(n),
                "MLX_HOSTFILE": tmp.name,
                "MLX_DISTRIBUTED_BACKEND": backend,
                "PYTHONUNBUFFERED": "1",
                **envs,
            }
            if args.verbose:
                print(f"mlx.launch: rank {rank} on {host.ssh} at {addresses[rank][0]}: "
                      f"{shlex.join(cmd)}", file=sys.stderr)
            if host.local:
                env = {**os.environ, **rank_env}
                full = cmd
                if args.cwd:
                    full = ["env", "-C", args.cwd] + cmd
                p, outs = _spawn(full, env, f"[{rank}] ")
            else:
                remote_file = f"/tmp/{os.path.basename(tmp.name)}"
                script = (
                    f"printf %s {shlex.quote(hostfile_text)} > {remote_file} && "
                    + (f"cd {shlex.quote(args.cwd)} && " if args.cwd else "")
                    + "env "
                    + " ".join(
                        shlex.quote(f"{k}={v}")
                        for k, v in {**rank_env, "MLX_HOSTFILE": remote_file}.items()
                    )
                    + " "
                    + shlex.join(cmd)
                )
                p, outs = _spawn(["ssh", host.ssh, script], os.environ.copy(), f"[{rank}] ")
            procs[rank] = p
            outputs += outs
        code = _supervise(procs, args.verbose)
    finally:
        _stop(procs)
        for o in outputs:
            o.thread.join(timeout=1.0)
        os.unlink(tmp.name)
    return code


def _rank_output(cmd) -> int:
    """Runs ``cmd`` (one MPI rank) with its lines prefixed by its rank, in whole lines, so that
    mpirun's forwarding cannot interleave ranks inside a line. Termination is passed on."""
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "?"))
    p, outs = _spawn(cmd, os.environ.copy(), f"[{rank}] ")
    try:
        rc = p.wait()
    except KeyboardInterrupt:
        _stop({0: p})
        rc = p.returncode
    for o in outs:
        o.thread.join(timeout=1.0)
    return rc if rc >= 0 else 128 - rc


def launch_mpi(args, hosts, envs) -> int:
    """mpirun with one process per slot, each under ``--rank-output``."""
    n = len(hosts) * args.nproc
    cmd = ["mpirun", "-np", str(n)]
    if all(h.local for h in hosts):
        cmd += ["--oversubscribe"]
    else:
        cmd += ["--host", ",".join(f"{h.address}:{args.nproc}" for h in hosts)]
    if os.geteuid() == 0:
        cmd += ["--allow-run-as-root"]
    if args.cwd:
        cmd += ["--wdir", args.cwd]
    for k, v in {"MLX_DISTRIBUTED_BACKEND": "mpi", "PYTHONUNBUFFERED": "1", **envs}.items():
        cmd += ["-x", f"{k}={v}"]
    for a in args.mpi_arg:
        cmd += shlex.split(a)
    cmd += [args.python, "-m", "mlx.launch", "--rank-output"] + _program(args)
    if args.verbose:
        print(f"mlx.launch: {shlex.join(cmd)}", file=sys.stderr)
    try:
        p, outs = _spawn(cmd, os.environ.copy(), "")
    except FileNotFoundError:
        _fail("mpirun was not found (install openmpi-bin)")
    procs = {0: p}
    try:
        code = _supervise(procs, args.verbose)
    finally:
        _stop(procs)
        for o in outs:
            o.thread.join(timeout=1.0)
    return code


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGTERM, _terminated)
    if argv[:1] == ["--rank-output"]:
        return _rank_output(argv[1:])
    parser = argparse.ArgumentParser(
        prog="mlx.launch", description="Launch an MLX program on several processes or hosts."
    )
    parser.add_argument("--hostfile", help="JSON hostfile (either MLX form)")
    parser.add_argument("--hosts", help="comma-separated hosts (default: this machine)")
    parser.add_argument("-n", "--nproc", type=int, default=1,
                        help="processes per host (default 1)")
    parser.add_argument("--backend", default=None, choices=["ring", "mpi", "nccl", "any"],
                        help="communication backend (default: the hostfile's, else ring)")
    parser.add_argument("--env", action="append", default=[],
                        help="KEY=VALUE to set in every rank's environment (repeatable)")
    parser.add_argument("--mpi-arg", action="append", default=[],
                        help="extra argument(s) for mpirun (repeatable)")
    parser.add_argument("--cwd", help="working directory of every rank")
    parser.add_argument("--starting-port", type=int, default=32323,
                        help="first port of the ring's ranks on remote hosts")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter for .py programs")
    parser.add_argument("--verbose", action="store_true", help="print what is started")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program and its args")
    args = parser.parse_args(argv)
    if args.nproc < 1:
        _fail(f"-n must be at least 1; got {args.nproc}")
    backend, envs = None, []
    if args.hostfile and args.hosts:
        _fail("give --hostfile or --hosts, not both")
    if args.hostfile:
        hosts, backend, envs = parse_hostfile(args.hostfile)
    elif args.hosts:
        hosts = [Host(h.strip()) for h in args.hosts.split(",") if h.strip()]
    else:
        hosts = [Host("localhost")]
    backend = args.backend or backend or "ring"
    env = _env_pairs(envs + args.env)
    if backend == "mpi":
        return launch_mpi(args, hosts, env)
    return launch_ring(args, hosts, env, "ring" if backend == "any" else backend)


if __name__ == "__main__":
    sys.exit(main())

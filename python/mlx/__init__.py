"""MLX for Linux: lazy arrays (mlx.core), neural networks (mlx.nn) and optimizers."""

import importlib.util as _importlib_util
import os as _os


def _nvidia_wheels():
    """NCCL and cuDNN load at run time. Where PyTorch's nvidia-* wheels are installed, the
    NCCL backend loads nvidia-nccl's libnccl unless MLX_NCCL_LIBNAME is set, and the GPU
    convolutions try nvidia-cudnn-cu13's libcudnn (MLX_CUDNN_WHEEL_LIBNAME) after the system's
    libcudnn.so.9 (MLX_CUDNN_LIBNAME, when set, is the only one tried)."""
    try:
        spec = _importlib_util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    libraries = [("MLX_NCCL_LIBNAME", ("nccl", "lib", "libnccl.so.2")),
                 ("MLX_CUDNN_WHEEL_LIBNAME", ("cudnn", "lib", "libcudnn.so.9"))]
    for root in (spec.submodule_search_locations or []) if spec else []:
        for var, parts in libraries:
            lib = _os.path.join(root, *parts)
            if not _os.environ.get(var) and _os.path.exists(lib):
                _os.environ[var] = lib


def _openblas_core(cpuinfo):
    """OpenBLAS picks its kernels from the CPU model, read once when mlx.core loads it. A
    virtual Intel CPU that reports a generic model ("Intel(R) Xeon(R) Processor") gets its
    fallback kernels, 6x slower (32 against 204 GFLOP/s for a 1024^3 matmul on such a machine).
    The core to name for an Intel CPU, from its instruction sets (a real Intel model is
    detected as the same core); None elsewhere."""
    if "GenuineIntel" not in cpuinfo:
        return None
    flags = set(next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines()
                      if line.startswith("flags")), []))
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


def _openblas_core_from_flags():
    if "OPENBLAS_CORETYPE" in _os.environ:
        return
    try:
        with open("/proc/cpuinfo") as f:
            core = _openblas_core(f.read(1 << 16))
    except OSError:
        return
    if core:
        _os.environ["OPENBLAS_CORETYPE"] = core


_nvidia_wheels()
_openblas_core_from_flags()

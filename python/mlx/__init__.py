"""MLX for Linux: lazy arrays (mlx.core), neural networks (mlx.nn) and optimizers."""

import importlib.util as _importlib_util
import os as _os


def _nccl_from_wheel():
    """The NCCL backend loads libnccl at run time: where the nvidia-nccl wheel is installed
    (as PyTorch installs it) and MLX_NCCL_LIBNAME is unset, it names the wheel's library."""
    if _os.environ.get("MLX_NCCL_LIBNAME"):
        return
    try:
        spec = _importlib_util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    for root in (spec.submodule_search_locations or []) if spec else []:
        lib = _os.path.join(root, "nccl", "lib", "libnccl.so.2")
        if _os.path.exists(lib):
            _os.environ["MLX_NCCL_LIBNAME"] = lib
            return


_nccl_from_wheel()

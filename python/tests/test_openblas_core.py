"""import mlx names OpenBLAS's core on Intel CPUs from their flags (python/mlx/__init__.py)."""
import os
import subprocess
import sys

import mlx

INTEL = "vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: {}\n"
AVX512 = "fpu sse2 avx avx2 fma avx512f avx512dq avx512bw avx512vl"


def test_the_core_follows_the_instruction_sets():
    assert mlx._openblas_core(INTEL.format(AVX512)) == "SkylakeX"
    assert mlx._openblas_core(INTEL.format("fpu sse2 avx avx2 fma")) == "Haswell"
    assert mlx._openblas_core(INTEL.format("fpu sse2 avx")) is None
    amd = INTEL.format(AVX512).replace("GenuineIntel", "AuthenticAMD")
    assert mlx._openblas_core(amd) is None  # OpenBLAS detects AMD's cores itself
    assert mlx._openblas_core("") is None


def test_a_core_the_user_names_is_kept():
    env = dict(os.environ, OPENBLAS_CORETYPE="Sandybridge")
    out = subprocess.run([sys.executable, "-c", "import mlx, os; print(os.environ['OPENBLAS_CORETYPE'])"],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "Sandybridge"

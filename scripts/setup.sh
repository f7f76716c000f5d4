#!/usr/bin/env bash
# Finds or installs what the build needs and records the Python to use in .mlx-python:
# - Debian packages (OpenBLAS, LAPACKE, GoogleTest, ...) through apt-get when missing and a
#   package registry is reachable; tools already on PATH (cmake, ninja, ccache) count as present.
# - Python: the venv .venv with the pinned tools of requirements-dev.txt when PyPI is reachable;
#   on a machine without registries (the GPU machine), a python3 that already has numpy,
#   nanobind and pytest.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/include/x86_64-linux-gnu/$1" ] ||
  ls /usr/include/*/"$1" >/dev/null 2>&1; }

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v ccache >/dev/null || missing+=(ccache)
command -v g++ >/dev/null || missing+=(build-essential)
# OpenBLAS itself, not only a cblas.h: with the reference BLAS that libblas-dev brings, a
# 1024^3 matmul takes 50 times longer.
ls /usr/lib/*/libopenblas*.so* /usr/lib/libopenblas*.so* >/dev/null 2>&1 || missing+=(libopenblas-dev)
have_header lapacke.h || missing+=(liblapacke-dev)
have_header gtest/gtest.h || missing+=(libgtest-dev)
have_header benchmark/benchmark.h || missing+=(libbenchmark-dev)
have_header zlib.h || missing+=(zlib1g-dev)
# mpirun and libmpi for the MPI backend's tests (the library loads libmpi at run time only).
command -v mpirun >/dev/null || missing+=(openmpi-bin)
python3 -c "import venv, ensurepip" 2>/dev/null || missing+=(python3-venv)
python3 -c "import sysconfig, os, sys; sys.exit(not os.path.exists(sysconfig.get_paths()['include'] + '/Python.h'))" || missing+=(python3-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  # Bounded: where no registry answers (the GPU machine), give up quickly and build with what
  # is there (ccache, for one, is optional).
  if ! { timeout 120 $SUDO apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive timeout 900 $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
    echo "apt-get could not install ${missing[*]}; continuing with what is present" >&2
  fi
fi

system_python_ok() {
  python3 -c "import numpy, nanobind, pytest" 2>/dev/null
}

stamp=.venv/.requirements-dev.txt
if [ -x .venv/bin/python ] && cmp -s requirements-dev.txt "$stamp"; then
  echo "$PWD/.venv/bin/python" > .mlx-python
  exit 0
fi
pip_flags=(-q --retries 0 --timeout 10)
if { [ -x .venv/bin/python ] || python3 -m venv .venv; } &&
   .venv/bin/pip install "${pip_flags[@]}" --upgrade pip 2>/dev/null &&
   .venv/bin/pip install "${pip_flags[@]}" -r requirements-dev.txt; then
  cp requirements-dev.txt "$stamp"
  echo "$PWD/.venv/bin/python" > .mlx-python
elif system_python_ok; then
  echo "PyPI is not reachable; using $(command -v python3), which has numpy, nanobind and pytest" >&2
  command -v python3 > .mlx-python
else
  echo "No Python with numpy, nanobind and pytest, and PyPI is not reachable." >&2
  exit 1
fi

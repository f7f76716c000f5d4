#!/usr/bin/env bash
# Installs what the build needs (Debian packages) when it is missing. Idempotent.
set -euo pipefail

packages=(build-essential cmake ninja-build ccache libopenblas-dev liblapacke-dev libgtest-dev
          libbenchmark-dev python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

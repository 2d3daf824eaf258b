#!/usr/bin/env bash
# Install the Debian 12 packages dpasync needs to build, test and run.
# Idempotent and non-interactive: only missing packages are installed, and
# the package lists are refreshed only when something is missing.
set -euo pipefail

PKGS=(
  build-essential meson ninja-build pkg-config
  libopenblas-dev liblapacke-dev libssl-dev openssl libuv1-dev
  libprotobuf-c-dev protobuf-c-compiler libcmocka-dev zlib1g-dev
  libjson-c-dev libinih-dev libcsv-dev
  python3-numpy
  gnuplot-nox fonts-dejavu-core prometheus
)
# Only the test suite needs these (deployment checks, netns cluster, and
# clang for the fuzz targets: libFuzzer is in libclang-rt-14-dev, which
# clang-14 only recommends); the
# Dockerfile's build stage sets DP_NO_TEST_PKGS=1 to leave them out.
TEST_PKGS=(docker-compose systemd shellcheck strace python3-yaml iproute2 curl
  clang libclang-rt-14-dev)
[ -z "${DP_NO_TEST_PKGS:-}" ] && PKGS+=("${TEST_PKGS[@]}")
[ "${DP_EXTRA_PKGS:-}" ] && PKGS+=(${DP_EXTRA_PKGS})

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

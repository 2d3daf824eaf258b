#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the Debian 12 packages dpasync needs to build, test and run.
# Idempotent and non-interactive: only missing packages are installed, and
# the package lists are refreshed only when something is missing.
set -euo pipefail

# What compiling the three binaries needs (the Dockerfile's build stage sets
# DP_BUILD_ONLY=1 and gets these, with DP_DEB's below: no unit tests).
BUILD_PKGS=(
  gcc libc6-dev meson ninja-build pkg-config
  libopenblas-dev liblapacke-dev libssl-dev openssl libuv1-dev
  libprotobuf-c-dev protobuf-c-compiler zlib1g-dev
  libjson-c-dev libinih-dev libcsv-dev scdoc
)
# What scripts/deb.sh needs besides BUILD_PKGS to build the Debian package
# (debian/control's Build-Depends and dpkg-buildpackage's build-essential)
# and check it: DP_DEB=1 adds them to any selection below; DP_NO_LINTIAN=1
# leaves lintian out (as it tells deb.sh not to run it).
DEB_PKGS=(build-essential debhelper dpkg-dev fakeroot python3)
[ -z "${DP_NO_LINTIAN:-}" ] && DEB_PKGS+=(lintian)
PKGS=(
  "${BUILD_PKGS[@]}" build-essential libcmocka-dev
  python3-numpy
  gnuplot-nox fonts-dejavu-core prometheus
)
# Only the test suite needs these (deployment checks, netns cluster,
# clang for the fuzz targets: libFuzzer is in libclang-rt-14-dev, which
# clang-14 only recommends; gcovr for scripts/coverage.sh); the
# Dockerfile's build stage sets DP_NO_TEST_PKGS=1 to leave them out.
TEST_PKGS=(docker-compose systemd shellcheck strace python3-yaml iproute2 curl
  clang libclang-rt-14-dev debootstrap gcovr)
# The deploy suite (tests/deploy) runs a Docker engine: Debian's docker.io,
# unless a dockerd is installed already (docker-ce conflicts with it).  The
# Kubernetes schema check in deploy_static needs node and npm (npm is part
# of nodejs where that comes from nodesource, which conflicts with Debian's
# npm).  DP_DEFER_K8S_SCHEMA=1 leaves node, npm and the validator out, for
# a second run in the background (scripts/test.sh: npm brings ~300 packages).
command -v dockerd >/dev/null || TEST_PKGS+=(docker.io)
if [ -z "${DP_DEFER_K8S_SCHEMA:-}" ]; then
  command -v npm >/dev/null || TEST_PKGS+=(nodejs npm)
fi
[ -z "${DP_NO_TEST_PKGS:-}" ] && PKGS+=("${TEST_PKGS[@]}")
[ -n "${DP_BUILD_ONLY:-}" ] && PKGS=("${BUILD_PKGS[@]}")
[ -n "${DP_DEB:-}" ] && PKGS+=("${DEB_PKGS[@]}")
[ "${DP_EXTRA_PKGS:-}" ] && PKGS+=(${DP_EXTRA_PKGS})

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Kubernetes schema validator of deploy_static (tests/integration/deploy/
# k8s_schema.mjs): the npm package kubernetes-models, pinned, installed once
# into a cache directory (DP_K8S_SCHEMA_DIR) outside the tree.
if [ -z "${DP_NO_TEST_PKGS:-}" ] && [ -z "${DP_BUILD_ONLY:-}" ] && [ -z "${DP_DEFER_K8S_SCHEMA:-}" ]; then
  k8s=${DP_K8S_SCHEMA_DIR:-/var/cache/dpasync/k8s-schema}
  if [ ! -f "$k8s/node_modules/kubernetes-models/package.json" ]; then
    echo "installing: kubernetes-models@5.1.0 (npm) into $k8s" >&2
    $SUDO mkdir -p "$k8s"
    $SUDO npm install --prefix "$k8s" --no-audit --no-fund --loglevel=error kubernetes-models@5.1.0 >/dev/null
  fi
fi

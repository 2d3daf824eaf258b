#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build dpasync's images from deploy/Dockerfile with one docker client, one
# target after the other, so that they share one layer cache and the build
# stage compiles once (docs/deploy.md §5 "Images").
#
#   deploy/build-images.sh [--tag-template T] [TARGET...] [-- DOCKER-BUILD-FLAGS...]
#
# TARGETs: runtime, tools, systemd, prometheus (default: all four, runtime
# first).  Tags: dpasync:latest, dpasync-tools:latest, dpasync-systemd:latest
# and dpasync-prometheus:latest, the names compose and docs/deploy.md use;
# --tag-template names them instead, '{}' replaced by the target (e.g.
# 'dpasync-test:{}').  Flags after -- go to every `docker build` (e.g.
# --network host, --progress plain with BuildKit).
#
# Why one client: the layer cache matches a COPY by the build context the
# client sends, and clients send it differently.  docker-compose 1.29's own
# builder (docker-py) and a docker CLI miss each other's cache and compile
# again; one CLI, or compose with COMPOSE_DOCKER_CLI_BUILD=1 (deploy/.env
# sets it) and the same `docker`, hit it.  DOCKER chooses the client
# (default: docker on PATH); DOCKER_BUILDKIT is left as set: unset, the
# client's default builder, which shares the cache as well (Debian 12's
# docker.io 20.10 client: the classic builder, or BuildKit with
# DOCKER_BUILDKIT=1; a client >= 23 without the buildx plugin falls back to
# the classic builder, and fails with DOCKER_BUILDKIT=1).
# Exit: 0 built, 1 a build failed, 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'; }
TEMPLATE='' TARGETS=() EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in
    --tag-template) [ $# -ge 2 ] || { echo "build-images.sh: --tag-template needs a value" >&2; exit 2; }
                    TEMPLATE=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    runtime|tools|systemd|prometheus) TARGETS+=("$1"); shift ;;
    *) echo "build-images.sh: unknown target or option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(runtime tools systemd prometheus)
DOCKER=${DOCKER:-docker}
command -v "$DOCKER" >/dev/null || { echo "build-images.sh: no docker client '$DOCKER'" >&2; exit 2; }

tag_of() {
  if [ -n "$TEMPLATE" ]; then echo "${TEMPLATE//\{\}/$1}"; return; fi
  case $1 in runtime) echo dpasync:latest ;; *) echo "dpasync-$1:latest" ;; esac
}

for t in "${TARGETS[@]}"; do
  start=$(date +%s)
  echo "== build-images: $t as $(tag_of "$t")"
  if ! "$DOCKER" build --target "$t" -f deploy/Dockerfile -t "$(tag_of "$t")" "${EXTRA[@]}" .; then
    echo "build-images: target $t failed" >&2
    exit 1
  fi
  echo "== build-images: $t done in $(( $(date +%s) - start )) s"
done

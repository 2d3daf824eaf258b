#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# compose service `learner`: learnerd configured from the environment.
# Always --resume: a restart continues the job in the learner-out volume
# (a finished job prints its done line again and exits 0).
#
# Environment: DP_OWNER_NAMES (a,b,c; required), DP_LEARNER_NAME (learner:
# the certificate to use), DP_T (0: planned, docs/planner.md), DP_MODEL
# (linear), DP_MODE (request | broadcast | sync1 | sync2), DP_BIAS (true), DP_LISTEN (0.0.0.0:7800),
# DP_METRICS_PORT (9464), DP_LEARNER_ARGS (more learnerd flags, e.g.
# "--eta 0.1 --max-inflight 2" or "--public /path/public.json"),
# DP_ROOT (/var/lib/dpasync; tests only).
set -euo pipefail
R=${DP_ROOT:-/var/lib/dpasync}
c=$R/certs
name=${DP_LEARNER_NAME:-learner}
bias=()
[ "${DP_BIAS:-true}" = true ] && bias=(--bias)
# shellcheck disable=SC2086
exec learnerd --listen "${DP_LISTEN:-0.0.0.0:7800}" \
  --ca "$c/ca.crt" --cert "$c/$name.crt" --key "$c/$name.key" \
  --owners "${DP_OWNER_NAMES:?DP_OWNER_NAMES is not set}" \
  --T "${DP_T:-0}" --model "${DP_MODEL:-linear}" --mode "${DP_MODE:-request}" "${bias[@]}" \
  --metrics-listen "${DP_METRICS_LISTEN:-0.0.0.0}:${DP_METRICS_PORT:-9464}" \
  --out "$R/out" --resume ${DP_LEARNER_ARGS:-}

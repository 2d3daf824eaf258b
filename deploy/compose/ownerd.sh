#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# compose services `owner-*`: one ownerd configured from the environment.
# Registers its metrics endpoint for Prometheus (a file_sd entry in the
# shared `targets` volume), then becomes ownerd.  The owner's ledger and
# final model are in its own state volume; its rows in its own data volume.
#
# Environment: DP_OWNER (its identity = certificate name = compose service
# name; required), DP_EPSILON (1), DP_RATE (1, clock ticks per second),
# DP_LEARNER (learner:7800), DP_SERVER_NAME (learner: the name in the
# learner's certificate), DP_BIAS (true), DP_METRICS_PORT (9465),
# DP_SCRAPE_HOST (DP_OWNER: the name Prometheus reaches it by),
# DP_OWNER_ARGS (more ownerd flags, e.g. "--target price --answers-cap 200"),
# DP_ROOT (/var/lib/dpasync; tests only).  DP_PEER=true: an ownerd --peer
# agent instead (docs/peer-agents.md), with the graph and address book that
# certs.sh wrote into the certs volume, DP_WAKEUPS (20) and DP_MODEL
# (logistic); it listens on DP_PEER_LISTEN (0.0.0.0:7900) and reads the
# address book DP_PEERS (the certs volume's peers.csv).
set -euo pipefail
R=${DP_ROOT:-/var/lib/dpasync}
c=$R/certs
name=${DP_OWNER:?DP_OWNER is not set}
port=${DP_METRICS_PORT:-9465}

# The compose stack runs one job (its learner service ends with it), so
# ownerd runs with --once and exits 0 after Done.  Done already received
# in this state volume: nothing to do.  A new job needs new state volumes
# (docker compose down -v); a long-lived owner serving successive jobs is
# the systemd unit's way (docs/ownerd.md "Serving successive jobs").
if [ "${DP_PEER:-}" != true ] && [ -f "$R/state/model.json" ]; then
  echo "ownerd.sh: $name already finished this job (model at $R/state/model.json);" \
       "remove the volumes for a new job" >&2
  exit 0
fi

if [ -d "$R/targets" ] && [ -w "$R/targets" ]; then
  t=$R/targets/$name.json
  printf '[{"targets": ["%s:%s"], "labels": {"owner": "%s"}}]\n' \
    "${DP_SCRAPE_HOST:-$name}" "$port" "$name" >"$t.tmp"
  chmod 0644 "$t.tmp"
  mv "$t.tmp" "$t"
fi

bias=()
[ "${DP_BIAS:-true}" = true ] && bias=(--bias)
if [ "${DP_PEER:-}" = true ]; then
  # A restarted agent resumes from its ledger (and one that is done only
  # serves its final model, for at most --linger).
  # DP_SERVE=refit: a served model too (docs/peer-agents.md "Served
  # models"), from DP_RELEASE (models | grad0: one release, no wake-ups)
  # pooled over DP_PRIOR (graph | all).
  serve=(--wakeups "${DP_WAKEUPS:-20}")
  if [ "${DP_SERVE:-none}" != none ]; then
    serve=(--serve "$DP_SERVE" --release "${DP_RELEASE:-models}" --prior "${DP_PRIOR:-graph}")
    [ "${DP_RELEASE:-models}" = grad0 ] || serve+=(--wakeups "${DP_WAKEUPS:-20}")
  fi
  # shellcheck disable=SC2086
  exec ownerd --peer --graph "$c/graph.csv" --peers "${DP_PEERS:-$c/peers.csv}" \
    --listen "${DP_PEER_LISTEN:-0.0.0.0:7900}" \
    --ca "$c/ca.crt" --cert "$c/$name.crt" --key "$c/$name.key" \
    --data "$R/data/data.csv" "${bias[@]}" --model "${DP_MODEL:-logistic}" \
    --epsilon "${DP_EPSILON:-1}" --rate "${DP_RATE:-1}" "${serve[@]}" \
    --ledger "$R/state/ledger" \
    --metrics-listen "${DP_METRICS_LISTEN:-0.0.0.0}:$port" ${DP_OWNER_ARGS:-}
fi
# shellcheck disable=SC2086
exec ownerd --learner "${DP_LEARNER:-learner:7800}" --server-name "${DP_SERVER_NAME:-learner}" \
  --ca "$c/ca.crt" --cert "$c/$name.crt" --key "$c/$name.key" \
  --data "$R/data/data.csv" "${bias[@]}" \
  --epsilon "${DP_EPSILON:-1}" --rate "${DP_RATE:-1}" \
  --ledger "$R/state/ledger" --model-out "$R/state/model.json" --once \
  --metrics-listen "${DP_METRICS_LISTEN:-0.0.0.0}:$port" ${DP_OWNER_ARGS:-}

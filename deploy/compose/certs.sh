#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# compose one-shot `certs`: the deployment CA and the certificates of the
# learner and every owner, into the `certs` volume; the CA key goes to the
# separate `ca` volume, which no daemon mounts.  Idempotent: an existing CA
# is kept and only missing certificates are issued with it (this is how an
# owner added to DP_OWNER_NAMES gets its certificate).
#
# Environment: DP_OWNER_NAMES (a,b,c; required), DP_LEARNER_NAME (learner),
# DP_CERT_DAYS (365), DP_ROOT (/var/lib/dpasync; tests only).  DP_PEER=true:
# the owners are ownerd --peer agents: their certificates get serverAuth
# too (dpasync certs --peer), and a ring graph over them (graph.csv) and
# their address book (peers.csv, service name:7900) are written beside the
# certificates when missing (docs/peer-agents.md).
set -euo pipefail
R=${DP_ROOT:-/var/lib/dpasync}
out=$R/certs cadir=$R/ca
names=${DP_OWNER_NAMES:?DP_OWNER_NAMES is not set}
learner=${DP_LEARNER_NAME:-learner}
days=${DP_CERT_DAYS:-365}
umask 077
peer=()
[ "${DP_PEER:-}" = true ] && peer=(--peer)

if [ "${DP_PEER:-}" = true ]; then
  IFS=, read -r -a ring <<<"$names"
  if [ ! -f "$out/graph.csv" ]; then
    { echo a,b,w
      n=${#ring[@]}
      for i in $(seq 0 $((n - 1))); do
        j=$(((i + 1) % n))
        { [ "$n" -gt 2 ] || [ "$j" -gt "$i" ]; } && echo "${ring[i]},${ring[j]},1"
      done
    } >"$out/graph.csv.tmp"
    chmod 0644 "$out/graph.csv.tmp"; mv "$out/graph.csv.tmp" "$out/graph.csv"
  fi
  if [ ! -f "$out/peers.csv" ]; then
    { echo id,addr; for n in "${ring[@]}"; do echo "$n,$n:7900"; done; } >"$out/peers.csv.tmp"
    chmod 0644 "$out/peers.csv.tmp"; mv "$out/peers.csv.tmp" "$out/peers.csv"
  fi
fi

if [ ! -f "$out/ca.crt" ]; then
  dpasync certs --out "$out" --names "$names" --learner-name "$learner" --days "$days" \
    "${peer[@]}" >/dev/null
  mv "$out/ca.key" "$cadir/ca.key"
  echo "certs: new CA; learner '$learner' and owners $names issued (valid $days days)"
  exit 0
fi

missing=()
IFS=, read -r -a all <<<"$names"
for n in "${all[@]}"; do
  [ -f "$out/$n.crt" ] || missing+=("$n")
done
args=()
[ -f "$out/$learner.crt" ] || args+=(--learner-name "$learner")
[ ${#missing[@]} -gt 0 ] && args+=(--names "$(IFS=,; echo "${missing[*]}")")
if [ ${#args[@]} -eq 0 ]; then
  echo "certs: all certificates present"
  exit 0
fi
if [ ! -f "$cadir/ca.key" ]; then
  echo "certs: missing certificates (${missing[*]:-} ${args[*]}) but no CA key in the ca volume:" \
       "issue them with the CA (dpasync certs --ca-cert --ca-key) and copy them in" >&2
  exit 2
fi
dpasync certs --out "$out" --ca-cert "$out/ca.crt" --ca-key "$cadir/ca.key" --days "$days" \
  "${args[@]}" "${peer[@]}" >/dev/null
echo "certs: issued with the existing CA: ${args[*]}"

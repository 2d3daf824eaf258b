#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A multi-host dpasync cluster on one machine: learnerd and every ownerd in
# network namespaces of their own, joined through a bridge by links with
# per-owner one-way delay, jitter and loss; runs one job, collects the trace,
# metrics and logs, prints per-owner shares and round trips, and always
# removes every namespace and process it created (docs/netns.md).
#
#   deploy/netns-cluster.sh [--owners N] [--delays MS,...] [--jitter MS,...]
#       [--loss PCT,...] [--T T] [--rate R[,...]] [--epsilon E] [--rows R[,...]]
#       [--features D] [--mode request|broadcast|sync1|sync2] [--link auto|netem|user]
#       [--bindir DIR] [--out DIR] [--id ID] [--timeout S] [--seed S]
#       [--learner-args 'FLAGS'] [--bounce I:AT:DOWN [--bounce-from owners|training]]
#       [--peer ring|GRAPH.csv [--serve refit [--release models|grad0]
#        [--prior graph|all]]]
#
# --learner-args: more learnerd flags (e.g. '--max-inflight 4').  --bounce:
# kill owner I (SIGKILL) AT seconds after the owners start (--bounce-from
# training: after learnerd's first query) and start it again, with its
# ledger, DOWN seconds after the kill.  --peer: no learner; the
# owners are ownerd --peer agents (docs/peer-agents.md) over a ring or the
# graph file given (ids owner-1..N), each waking --T times; a pair's one-way
# delay is the sum of its two links' (report: DIR/report.md, ledgers checked).
# --serve refit: each agent also fits its served model (docs/peer-agents.md
# "Served models"), checked present in its ledger directory; --release grad0
# makes one release per agent instead of --T wake-ups.
# Per-owner lists are cycled (owner i takes entry (i-1) mod length).
# Defaults: 5 owners, delays 1,20,80,200,20 ms, jitter 0, loss 0,0,0,0,2 %,
# T 300, clock rate 10/s, epsilon 1, 2000 rows x 5 features per owner.
# Needs root (ip netns). Exit: 0 job done; 1 job failed; 2 bad usage;
# 77 network namespaces cannot be created here (not root, no ip, no netns).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

OWNERS=5 DELAYS=1,20,80,200,20 JITTER=0 LOSS=0,0,0,0,2 T=300 RATE=10 EPS=1
ROWS=2000 FEATURES=5 MODE=request LINK=auto BINDIR='' OUT='' ID=dpa-$$ TIMEOUT=600 SEED=1
LARGS='' BOUNCE='' BOUNCE_FROM=owners PEER='' SERVE='' RELEASE=models PRIOR=graph
usage() { sed -n '3,31p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "netns-cluster: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || case $1 in -h|--help) ;; *) die "option '$1' needs a value" ;; esac
  case $1 in
    --owners) OWNERS=$2; shift 2 ;;
    --delays) DELAYS=$2; shift 2 ;;
    --jitter) JITTER=$2; shift 2 ;;
    --loss) LOSS=$2; shift 2 ;;
    --T) T=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --epsilon) EPS=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --features) FEATURES=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --link) LINK=$2; shift 2 ;;
    --bindir) BINDIR=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --id) ID=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --learner-args) LARGS=$2; shift 2 ;;
    --bounce) BOUNCE=$2; shift 2 ;;
    --bounce-from) BOUNCE_FROM=$2; shift 2 ;;
    --peer) PEER=$2; shift 2 ;;
    --serve) SERVE=$2; shift 2 ;;
    --release) RELEASE=$2; shift 2 ;;
    --prior) PRIOR=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (try --help)" ;;
  esac
done

# ---- validate the settings (before touching anything) ----
isnum() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; }
if ! [[ $OWNERS =~ ^[0-9]+$ ]] || [ "$OWNERS" -lt 1 ] || [ "$OWNERS" -gt 200 ]; then
  die "--owners must be 1..200, not '$OWNERS'"
fi
if ! [[ $T =~ ^[0-9]+$ ]] || [ "$T" -lt 1 ]; then die "--T must be a positive integer, not '$T'"; fi
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout must be whole seconds, not '$TIMEOUT'"
[[ $ID =~ ^[a-zA-Z0-9][a-zA-Z0-9_-]{0,30}$ ]] || die "--id must be 1-31 letters, digits, - or _"
case $MODE in request|broadcast|sync1|sync2) ;; *) die "--mode must be request, broadcast, sync1 or sync2" ;; esac
if [ -n "$BOUNCE" ]; then
  [[ $BOUNCE =~ ^([0-9]+):([0-9]+([.][0-9]+)?):([0-9]+([.][0-9]+)?)$ ]] ||
    die "--bounce must be I:AT:DOWN (owner, seconds, seconds), not '$BOUNCE'"
  B_I=${BASH_REMATCH[1]} B_AT=${BASH_REMATCH[2]} B_DOWN=${BASH_REMATCH[4]}
  { [ "$B_I" -ge 1 ] && [ "$B_I" -le "$OWNERS" ]; } || die "--bounce: no owner $B_I"
fi
case $LINK in auto|netem|user) ;; *) die "--link must be auto, netem or user" ;; esac
if [ -n "$PEER" ] && [ "$PEER" != ring ]; then
  [ -r "$PEER" ] || die "--peer: '$PEER' is neither 'ring' nor a readable graph file"
  PEER=$(cd "$(dirname "$PEER")" && pwd)/$(basename "$PEER")
fi
if [ -n "$PEER" ] && [ -n "$BOUNCE" ]; then die "--bounce is for learner jobs, not with --peer"; fi
case $SERVE in ''|none|refit) ;; *) die "--serve must be refit or none" ;; esac
case $RELEASE in models|grad0) ;; *) die "--release must be models or grad0" ;; esac
case $PRIOR in graph|all) ;; *) die "--prior must be graph or all" ;; esac
[ "$SERVE" = none ] && SERVE=''
if [ -n "$SERVE" ] && [ -z "$PEER" ]; then die "--serve is for --peer agents"; fi
case $BOUNCE_FROM in owners|training) ;; *) die "--bounce-from must be owners or training" ;; esac
IFS=, read -r -a DL <<<"$DELAYS"; IFS=, read -r -a JL <<<"$JITTER"
IFS=, read -r -a LL <<<"$LOSS"; IFS=, read -r -a RL <<<"$RATE"
IFS=, read -r -a NL <<<"$ROWS"
for v in "${DL[@]}" "${JL[@]}" "${LL[@]}" "${RL[@]}"; do
  isnum "$v" || die "delays, jitter, loss and rates must be non-negative numbers, not '$v'"
done
for v in "${NL[@]}"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || die "--rows must be positive integers, not '$v'"
done
D=() J=() L=() R=() N=()
for i in $(seq 0 $((OWNERS - 1))); do
  D+=("${DL[i % ${#DL[@]}]}"); J+=("${JL[i % ${#JL[@]}]}")
  L+=("${LL[i % ${#LL[@]}]}"); R+=("${RL[i % ${#RL[@]}]}"); N+=("${NL[i % ${#NL[@]}]}")
  awk -v d="${D[i]}" -v j="${J[i]}" -v l="${L[i]}" -v r="${R[i]}" \
    'BEGIN { exit !(j <= d && l < 100 && r > 0) }' ||
    die "owner $((i + 1)): need jitter <= delay, loss < 100 and rate > 0"
done

# ---- can we create namespaces at all? ----
if [ "$(id -u)" -ne 0 ]; then
  echo "netns-cluster: root is required to create network namespaces; not running (exit 77)"; exit 77
fi

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || die "python3 is needed"

# ---- binaries ----
if [ -z "$BINDIR" ]; then
  DP_EXTRA_PKGS="iproute2 ${DP_EXTRA_PKGS:-}" scripts/deps.sh
  BINDIR=$ROOT/build-release
  [ -f "$BINDIR/build.ninja" ] || meson setup "$BINDIR" -Dbuildtype=release >/dev/null
  ninja -C "$BINDIR" >/dev/null
fi
BINDIR=$(cd "$BINDIR" && pwd)
DP=$BINDIR/tools/dpasync LEARNERD=$BINDIR/learner/learnerd OWNERD=$BINDIR/owner/ownerd
for b in "$DP" "$LEARNERD" "$OWNERD"; do [ -x "$b" ] || die "$b not built"; done
if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "netns-cluster: ip and tc (iproute2) are required; not running (exit 77)"; exit 77
fi

OUT=${OUT:-$ROOT/out/netns-cluster}
if [ -d "$OUT" ] && [ -n "$(ls -A "$OUT")" ]; then
  [ -f "$OUT/.netns-cluster" ] || die "$OUT is not empty and not a previous run's output"
  rm -rf "$OUT"
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
touch "$OUT/.netns-cluster"


SW=$ID-sw NSL=$ID-learner
NSO=(); for i in $(seq "$OWNERS"); do NSO+=("$ID-o$i"); done
CREATED=() PIDS=() OPIDS=() CLEANED=0

cleanup() {
  [ "$CLEANED" = 1 ] && return; CLEANED=1
  set +e
  # Our processes first (SIGTERM, then SIGKILL after 3 s), then anything
  # still inside our namespaces, then the namespaces themselves.
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for _ in $(seq 30); do
    alive=0; for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 0.1
  done
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for ns in "${CREATED[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  done
  wait 2>/dev/null
  for ns in "${CREATED[@]}"; do ip netns del "$ns" 2>/dev/null; done
  left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -c "^$ID-" || true)
  [ "$left" -gt 0 ] && echo "netns-cluster: WARNING: $left namespaces $ID-* could not be removed" >&2
}
trap cleanup EXIT
trap 'echo "netns-cluster: interrupted, tearing down" >&2; exit 130' INT
trap 'echo "netns-cluster: terminated, tearing down" >&2; exit 143' TERM
trap 'exit 129' HUP

addns() {
  local err
  if ! err=$(ip netns add "$1" 2>&1); then
    echo "netns-cluster: cannot create network namespace $1 ($err); not running (exit 77)"
    exit 77
  fi
  CREATED+=("$1")
  ip -n "$1" link set lo up
  # No IPv6 on the emulated links: only our IPv4 traffic crosses them.
  ip netns exec "$1" sh -c '[ -d /proc/sys/net/ipv6 ] || exit 0
    echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6
    echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6'
}

for ns in "$SW" "$NSL" "${NSO[@]}"; do addns "$ns"; done

# ---- the switch and the learner's link (no delay) ----
NET=10.213.0 LEARNER_IP=10.213.0.1 PORT=7800
ip -n "$SW" link add br0 type bridge
ip -n "$SW" link set br0 up
ip link add eth0 netns "$NSL" type veth peer name l0 netns "$SW"
ip -n "$SW" link set l0 master br0 up
ip -n "$NSL" addr add "$LEARNER_IP/24" dev eth0
ip -n "$NSL" link set eth0 up

# ---- the owners' links ----
if [ "$LINK" != user ]; then
  if err=$(tc -n "$SW" qdisc add dev lo root netem delay 1ms 2>&1); then
    tc -n "$SW" qdisc del dev lo root; LINK=netem
  elif [ "$LINK" = netem ]; then
    die "tc netem is not available here ($err); try --link user"
  else
    echo "netns-cluster: tc netem not available in this kernel ($err);" \
         "emulating the links in user space (TAP pairs, same delay/jitter/loss model)"
    LINK=user
  fi
fi

# The user-space link: two TAP devices, one on the bridge and one inside the
# owner's namespace; each frame is forwarded after delay + U(-jitter, jitter)
# (never before an earlier frame of the same direction) or dropped with
# probability loss, in each direction independently.
cat >"$OUT/linkemu.py" <<'PYEOF'
import collections, fcntl, os, random, select, signal, struct, sys, time
a, b, delay, jitter, loss, seed, ready = sys.argv[1:8]
delay, jitter, loss = float(delay) / 1e3, float(jitter) / 1e3, float(loss) / 100

def tap(name):
    fd = os.open('/dev/net/tun', os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, 0x400454ca, struct.pack('16sH', name.encode(), 0x0002 | 0x1000))
    return fd

fa, fb = tap(a), tap(b)
rng = random.Random(seed)
peer = {fa: fb, fb: fa}
q = {fa: collections.deque(), fb: collections.deque()}   # by destination
last = {fa: 0.0, fb: 0.0}
stats = {'fwd': 0, 'drop': 0}

def bye(*_):
    sys.stderr.write('linkemu %s<->%s: forwarded %d frames, dropped %d\n'
                     % (a, b, stats['fwd'], stats['drop']))
    sys.exit(0)

signal.signal(signal.SIGTERM, bye)
signal.signal(signal.SIGINT, bye)
open(ready, 'w').write('ready\n')
while True:
    now = time.monotonic()
    due = [d[0][0] for d in q.values() if d]
    timeout = max(0.0, min(due) - now) if due else None
    r, _, _ = select.select([fa, fb], [], [], timeout)
    for src in r:
        for _ in range(256):
            try:
                frame = os.read(src, 65536)
            except BlockingIOError:
                break
            # stamped after the read: a frame is never forwarded early
            now = time.monotonic()
            if loss > 0 and rng.random() < loss:
                stats['drop'] += 1
                continue
            dst = peer[src]
            t = max(now + delay + (rng.uniform(-jitter, jitter) if jitter else 0.0), last[dst])
            last[dst] = t
            q[dst].append((t, frame))
    now = time.monotonic()
    for dst, d in q.items():
        while d and d[0][0] <= now:
            try:
                os.write(dst, d.popleft()[1])
                stats['fwd'] += 1
            except OSError:
                stats['drop'] += 1
PYEOF

netem_args() {   # delay jitter loss -> netem parameters
  local a="delay ${1}ms"
  awk -v j="$2" 'BEGIN { exit !(j > 0) }' && a="$a ${2}ms"
  awk -v l="$3" 'BEGIN { exit !(l > 0) }' && a="$a loss ${3}%"
  echo "$a"
}

{
  echo "link emulation: $LINK (delay, jitter and loss applied in each direction)"
  printf "%-9s %-13s %-16s %8s %8s %7s %6s\n" owner ip namespace delay_ms jitter_ms loss_pct rate
} >"$OUT/links.txt"
for i in $(seq "$OWNERS"); do
  ns=${NSO[i-1]} ip=$NET.$((10 + i)) d=${D[i-1]} j=${J[i-1]} l=${L[i-1]}
  if [ "$LINK" = netem ]; then
    ip link add eth0 netns "$ns" type veth peer name "o$i" netns "$SW"
    # owner -> learner on the owner's end, learner -> owner on the bridge's end
    # shellcheck disable=SC2046
    tc -n "$ns" qdisc add dev eth0 root netem $(netem_args "$d" "$j" "$l")
    # shellcheck disable=SC2046
    tc -n "$SW" qdisc add dev "o$i" root netem $(netem_args "$d" "$j" "$l")
  else
    rm -f "$OUT/link-$i.ready"
    ip netns exec "$SW" "$PY" "$OUT/linkemu.py" "o$i" "x$i" "$d" "$j" "$l" "$SEED-$i" \
      "$OUT/link-$i.ready" 2>"$OUT/link-$i.log" &
    PIDS+=("$!")
    for _ in $(seq 100); do [ -s "$OUT/link-$i.ready" ] && break; sleep 0.05; done
    [ -s "$OUT/link-$i.ready" ] || { echo "netns-cluster: link $i did not start:"; cat "$OUT/link-$i.log"; exit 1; }
    ip -n "$SW" link set "x$i" netns "$ns" name eth0
  fi
  ip -n "$SW" link set "o$i" master br0 up
  ip -n "$ns" addr add "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
  printf "owner-%-3s %-13s %-16s %8s %8s %7s %6s\n" "$i" "$ip" "$ns" "$d" "$j" "$l" "${R[i-1]}" >>"$OUT/links.txt"
done

# ---- data, certificates ----
rows=$(IFS=,; echo "${N[*]}")
names=$(printf "owner-%s," $(seq "$OWNERS")); names=${names%,}
export OPENBLAS_NUM_THREADS=1

# ---- peer mode: agents in the owners' namespaces, no learner ----
if [ -n "$PEER" ]; then
  "$DP" gen --rows "$rows" --features "$FEATURES" --seed "$SEED" --task classification \
    --out "$OUT/data" >/dev/null
  "$DP" certs --out "$OUT/certs" --names "$names" --peer >/dev/null
  C=$OUT/certs
  if [ "$PEER" = ring ]; then
    { echo a,b,w
      if [ "$OWNERS" -gt 1 ]; then echo "owner-1,owner-2,1"; fi
      for i in $(seq 2 $((OWNERS - 1))); do echo "owner-$i,owner-$((i + 1)),1"; done
      if [ "$OWNERS" -gt 2 ]; then echo "owner-$OWNERS,owner-1,1"; fi
    } >"$OUT/graph.csv"
  else
    cp "$PEER" "$OUT/graph.csv"
  fi
  { echo id,addr; for i in $(seq "$OWNERS"); do echo "owner-$i,$NET.$((10 + i)):7900"; done; } \
    >"$OUT/peers.csv"
  maxrows=$(printf '%s\n' "${N[@]}" | sort -n | tail -1)
  SARGS=(--wakeups "$T") CHARGES=$T
  if [ -n "$SERVE" ]; then
    SARGS=(--serve "$SERVE" --release "$RELEASE" --prior "$PRIOR")
    if [ "$RELEASE" = grad0 ]; then CHARGES=1; else SARGS+=(--wakeups "$T"); fi
  fi
  for i in $(seq "$OWNERS"); do
    mkdir -p "$OUT/agents/owner-$i"
    conf=$(awk -v a="${N[i-1]}" -v b="$maxrows" 'BEGIN { printf "%.17g", a / b }')
    ip netns exec "${NSO[i-1]}" "$OWNERD" --peer --graph "$OUT/graph.csv" --peers "$OUT/peers.csv" \
      --listen "$NET.$((10 + i)):7900" --ca "$C/ca.crt" --cert "$C/owner-$i.crt" \
      --key "$C/owner-$i.key" --data "$OUT/data/owner-$i.csv" --bias --model logistic \
      --confidence "$conf" --epsilon "$EPS" "${SARGS[@]}" --rate "${R[i-1]}" \
      --ledger "$OUT/agents/owner-$i/ledger" --metrics-listen 127.0.0.1:9465 --linger 60 \
      >/dev/null 2>>"$OUT/agents/owner-$i/ownerd.log" &
    PIDS+=("$!") OPIDS[i-1]=$!
  done
  echo "netns-cluster $ID: $OWNERS peer agents ($(basename "$PEER")), $CHARGES charges each," \
       "${SERVE:+served models ($RELEASE, prior $PRIOR), }links: $LINK; output in $OUT"
  sed 1d "$OUT/links.txt"
  start=$(date +%s.%N) rc=0
  for i in $(seq "$OWNERS"); do
    left=$(awk -v a="$start" -v b="$(date +%s.%N)" -v t="$TIMEOUT" 'BEGIN { printf "%d", t - (b - a) + 1 }')
    if [ "$left" -le 0 ]; then rc=1; break; fi
    for _ in $(seq $((left * 10))); do kill -0 "${OPIDS[i-1]}" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "${OPIDS[i-1]}" 2>/dev/null; then rc=1; break; fi
    wait "${OPIDS[i-1]}" || { echo "netns-cluster: agent owner-$i failed:"; tail -3 "$OUT/agents/owner-$i/ownerd.log"; rc=1; }
  done
  end=$(date +%s.%N)
  [ $rc = 0 ] || { echo "netns-cluster: the agents did not all finish within $TIMEOUT s"; exit 1; }
  "$DP" ledger "$OUT"/agents/owner-*/ledger >"$OUT/ledgers.jsonl"
  "$DP" report "$OUT/agents" >/dev/null
  "$PY" - "$OUT" "$start" "$end" "$CHARGES" "$EPS" "$SERVE" <<'PY'
import glob, json, os, sys
out, start, end, T, eps = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
serve = sys.argv[6]
# Each agent's ledger directory holds one job, "peer" (docs/ledger.md §8).
led = [json.loads(l) for l in open(os.path.join(out, 'ledgers.jsonl'))]
bad = [l for l in led if l['jobs_count'] != 1 or l['jobs'][0]['job'] != 'peer' or
       l['jobs'][0]['answers'] != T or l['jobs'][0]['epsilon_spent'] > eps + 1e-12]
print('%d agents done in %.1f s; ledgers within budget: %s' % (
    len(open(os.path.join(out, 'ledgers.jsonl')).readlines()), end - start, 'yes' if not bad else bad))
if serve:
    # The served models (not private; never sent): one per agent, and how
    # many of the releases its prior pools arrived.
    sv = [json.load(open(f))['fitted_from']
          for f in sorted(glob.glob(os.path.join(out, 'agents', '*', 'ledger', 'served.json')))]
    print('served models: %d, releases pooled %s' % (len(sv), ' '.join(
        '%d/%d' % (f['releases_pooled'], f['releases_expected']) for f in sv)))
    bad = bad or len(sv) != len(led)
sys.exit(1 if bad else 0)
PY
  sed -n '3,$p' "$OUT/agents/report.md"
  echo "report: $OUT/agents/report.md   logs: $OUT/agents/owner-*/ownerd.log"
  exit 0
fi

"$DP" gen --rows "$rows" --features "$FEATURES" --seed "$SEED" --out "$OUT/data" >/dev/null
"$DP" certs --out "$OUT/certs" --owners "$OWNERS" >/dev/null
C=$OUT/certs

# ---- learnerd ----
# shellcheck disable=SC2086   # LARGS is a list of flags
ip netns exec "$NSL" "$LEARNERD" --listen "$LEARNER_IP:$PORT" --port-file "$OUT/learner.ports" \
  --ca "$C/ca.crt" --cert "$C/learner.crt" --key "$C/learner.key" \
  --owners "$names" --T "$T" --mode "$MODE" --bias --out "$OUT/learner" \
  --metrics-listen 127.0.0.1:9464 --idle-timeout 120 $LARGS \
  >"$OUT/learnerd.out" 2>"$OUT/learnerd.log" &
LPID=$!
PIDS+=("$LPID")
for _ in $(seq 100); do [ -s "$OUT/learner.ports" ] && break; sleep 0.1; done
[ -s "$OUT/learner.ports" ] || { echo "netns-cluster: learnerd did not start:"; tail -5 "$OUT/learnerd.log"; exit 1; }

# ---- ownerd, one per namespace; the learner's certificate is checked
# against the name "learner" (its SAN), not the IP we connect to ----
start_owner() {   # i: start ownerd i (again: same ledger, log appended)
  local i=$1
  mkdir -p "$OUT/owner-$i"
  ip netns exec "${NSO[i-1]}" "$OWNERD" --learner "$LEARNER_IP:$PORT" --server-name learner \
    --ca "$C/ca.crt" --cert "$C/owner-$i.crt" --key "$C/owner-$i.key" \
    --data "$OUT/data/owner-$i.csv" --bias --epsilon "$EPS" --rate "${R[i-1]}" \
    --ledger "$OUT/owner-$i/ledger" --model-out "$OUT/owner-$i/model.json" --once \
    --metrics-listen 127.0.0.1:9465 >/dev/null 2>>"$OUT/owner-$i/ownerd.log" &
  PIDS+=("$!") OPIDS[i-1]=$!
}
for i in $(seq "$OWNERS"); do start_owner "$i"; done

echo "netns-cluster $ID: learnerd at $LEARNER_IP:$PORT ($NSL), $OWNERS owners, T=$T," \
     "mode $MODE, links: $LINK; output in $OUT"
sed 1d "$OUT/links.txt"

# ---- wait for the job, scraping /metrics inside the namespaces (and
# bouncing an owner when asked) ----
scrape() {   # namespace port file: keep the last successful scrape
  if ip netns exec "$1" "$PY" -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=2).read().decode())' \
     "$2" >"$3.tmp" 2>/dev/null; then mv "$3.tmp" "$3"; else rm -f "$3.tmp"; fi
}
mkdir -p "$OUT/metrics"
# The bounce is checked before every scrape and every 0.2 s, and the restart
# counts DOWN s from the actual kill: a scrape can take seconds on a loaded
# machine, and the owner must still be away for DOWN s.
bounce_step() {
  [ -n "$BOUNCE" ] || return 0
  local now; now=$(date +%s.%N)
  if [ -z "$bounce_t0" ]; then
    # --bounce-from training: AT counts from learnerd's first query.
    grep -q ' queries start ' "$OUT/learnerd.log" 2>/dev/null || return 0
    bounce_t0=$now
  fi
  if [ $bounced = 0 ] && awk -v a="$bounce_t0" -v b="$now" -v t="$B_AT" 'BEGIN { exit !(b - a >= t) }'; then
    kill -9 "${OPIDS[B_I-1]}" 2>/dev/null || true
    echo "$now killed" >"$OUT/bounce.txt"; bounced=1 killed_at=$now
  elif [ $bounced = 1 ] &&
       awk -v a="$killed_at" -v b="$now" -v d="$B_DOWN" 'BEGIN { exit !(b - a >= d) }'; then
    start_owner "$B_I"
    echo "$now restarted" >>"$OUT/bounce.txt"; bounced=2
  fi
}
start=$(date +%s.%N) tick=0 bounced=0 killed_at=0 bounce_t0=''
[ "$BOUNCE_FROM" = owners ] && bounce_t0=$start
while kill -0 "$LPID" 2>/dev/null; do
  now=$(date +%s.%N)
  if awk -v a="$start" -v b="$now" -v t="$TIMEOUT" 'BEGIN { exit !(b - a > t) }'; then
    echo "netns-cluster: job not done after $TIMEOUT s; learnerd log tail:"; tail -5 "$OUT/learnerd.log"
    exit 1
  fi
  bounce_step
  scrape "$NSL" 9464 "$OUT/metrics/learner.prom"
  if [ $((tick % 5)) = 0 ]; then
    for i in $(seq "$OWNERS"); do
      kill -0 "$LPID" 2>/dev/null || break   # the job is over: stop waiting on scrapes
      bounce_step
      scrape "${NSO[i-1]}" 9465 "$OUT/metrics/owner-$i.prom"
    done
  fi
  tick=$((tick + 1))
  for _ in 1 2 3 4 5; do bounce_step; sleep 0.2; done
done
end=$(date +%s.%N)
rc=0; wait "$LPID" || rc=$?
# Sync modes are done after T - 1 rounds.
case $MODE in sync*) KDONE=$((T - 1)) ;; *) KDONE=$T ;; esac
if [ $rc -ne 0 ] || ! grep -q "^done k=$KDONE " "$OUT/learnerd.out"; then
  echo "netns-cluster: learnerd failed (exit $rc); last lines of its log:"; tail -5 "$OUT/learnerd.log"
  exit 1
fi
# Owners exit on Done; give them a moment to write their models.
for _ in $(seq 50); do
  alive=0; for p in "${OPIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive = 0 ] && break; sleep 0.1
done

files=$(for i in $(seq "$OWNERS"); do printf "%s " "$OUT/data/owner-$i.csv"; done)
# shellcheck disable=SC2086
"$DP" eval "$OUT/learner/model.json" $files >"$OUT/eval.json"
"$PY" - "$OUT" "$start" "$end" "$LINK" <<'PY'
import json, os, statistics, sys
out, start, end, link = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
cfg = [l.split() for l in open(os.path.join(out, 'links.txt')).read().splitlines()[2:]]
rows = [l.split(',') for l in open(os.path.join(out, 'learner', 'trace.csv')).read().splitlines()[1:]]
T = len(rows)
ev = json.load(open(os.path.join(out, 'eval.json')))
# it/s as dpasync report and local-cluster.sh count it (docs/plots.md
# "Throughput"): trace rows over the time from the first query (the earliest
# time_unix - rtt_s) to the last update.
first = min(float(r[1]) - float(r[4]) for r in rows) if T else 0.0
secs = float(rows[-1][1]) - first if T else 0.0
res = {'T': T, 'link': link, 'seconds': end - start, 'psi': ev['psi'], 'owners': []}
print('%-9s %8s %7s %6s %5s %6s %6s %9s %9s %9s %9s' % (
    'owner', 'delay_ms', 'jit_ms', 'loss%', 'rate', 'iters', 'share', 'rtt_p50ms',
    'rtt_p90ms', 'rtt_maxms', 'wait_p50ms'))
for c in cfg:
    name = c[0]
    mine = [r for r in rows if r[2] == name]
    rtt = sorted(float(r[4]) * 1e3 for r in mine)
    wait = [float(r[3]) * 1e3 for r in mine]
    o = {'owner': name, 'delay_ms': float(c[3]), 'jitter_ms': float(c[4]), 'loss_pct': float(c[5]),
         'rate': float(c[6]), 'iterations': len(mine), 'share': len(mine) / T,
         'rtt_median_ms': statistics.median(rtt) if rtt else None,
         'rtt_p90_ms': rtt[int(0.9 * (len(rtt) - 1))] if rtt else None,
         'rtt_max_ms': rtt[-1] if rtt else None,
         'wait_median_ms': statistics.median(wait) if wait else None}
    res['owners'].append(o)
    f = lambda v: '%9.1f' % v if v is not None else '%9s' % '-'
    print('%-9s %8g %7g %6g %5g %6d %6.3f %s %s %s %s' % (
        name, o['delay_ms'], o['jitter_ms'], o['loss_pct'], o['rate'], len(mine), o['share'],
        f(o['rtt_median_ms']), f(o['rtt_p90_ms']), f(o['rtt_max_ms']), f(o['wait_median_ms'])))
print('%d iterations in %.1f s (%.2f it/s from the first query); psi = f/f* - 1 = %.4g'
      % (T, secs, T / secs if secs > 0 else 0.0, ev['psi']))
json.dump(res, open(os.path.join(out, 'summary.json'), 'w'), indent=1)
PY
echo "trace:   $OUT/learner/trace.csv    model: $OUT/learner/model.json"
echo "metrics: $OUT/metrics/    logs: $OUT/learnerd.log $OUT/owner-*/ownerd.log"

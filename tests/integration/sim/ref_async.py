#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Independent reference of docs/design.md §4 (async Algorithm 1) without noise.

Written from the formulas alone, in numpy, sharing no code with dpasync:

    bar     = (theta_L + theta_i) / 2
    Q_i     = (1/n_i) sum clip(grad l(bar; x, y)),  clip(v) = v min(1, Xi/|v|_1)
    theta_i = P[bar - (N rho/(T^2 sigma)) ((1/(2N)) grad g(bar) + (n_i/n) Q_i)]
    theta_L = P[bar - ((N-1) rho/(N T^2 sigma)) grad g(bar)]

with g = lambda |theta|^2, sigma = 2 lambda, P the clamp to [-M, M].
With --max-inflight M > 1 it runs learnerd's pipeline (docs/learnerd.md,
staleness): queries are sent in schedule order while fewer than M are out
and the next owner has none out, each from the models of send time, and
the oldest is applied next, from the bar it was sent with.

It does not quantise (dpasync sums on a 2^-k lattice, k = 40 at these sizes,
so the two differ by far less than the 1e-9 the parity test allows).

usage: ref_async.py --model M --rho R --lambda L --theta-max M --clip X
                    --T T [--bias] [--max-inflight M] --schedule FILE --out theta.json CSV...
Prints the number of clipped per-example gradients (to prove clipping was
active) and writes theta_L as JSON.
"""
import argparse, json, os, sys
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import load_xy

ap = argparse.ArgumentParser()
ap.add_argument('--model', required=True)
ap.add_argument('--rho', type=float, required=True)
ap.add_argument('--lambda', dest='lam', type=float, required=True)
ap.add_argument('--theta-max', type=float, required=True)
ap.add_argument('--clip', type=float, required=True)
ap.add_argument('--T', type=int, required=True)
ap.add_argument('--bias', action='store_true')
ap.add_argument('--schedule', required=True)
ap.add_argument('--max-inflight', type=int, default=1)
ap.add_argument('--target', default='y')
ap.add_argument('--out', required=True)
ap.add_argument('files', nargs='+')
a = ap.parse_args()

owners = []
for path in a.files:
    owners.append(load_xy(path, a.target, a.bias))

N = len(owners)
n = sum(X.shape[0] for X, _ in owners)
p = owners[0][0].shape[1]
sigma = 2 * a.lam
eta_i = N * a.rho / (a.T ** 2 * sigma)
eta_L = (N - 1) * a.rho / (N * a.T ** 2 * sigma)
schedule = [int(l) - 1 for l in open(a.schedule).read().split()]
assert len(schedule) == a.T

def coef(score, y):
    if a.model == 'linear':
        return 2 * (score - y)
    if a.model == 'logistic':
        return -y / (1 + np.exp(y * score))
    if a.model == 'svm':
        return np.where(y * score < 1, -y, 0.0)
    raise SystemExit('unknown model')

clipped = 0
def query(i, theta):
    global clipped
    X, y = owners[i]
    G = coef(X @ theta, y)[:, None] * X          # per-example gradients, one row each
    l1 = np.abs(G).sum(axis=1)
    scale = np.ones_like(l1)
    over = l1 > a.clip
    scale[over] = a.clip / l1[over]
    clipped += int(over.sum())
    return (G * scale[:, None]).mean(axis=0)

clamp = lambda v: np.clip(v, -a.theta_max, a.theta_max)
theta_L = np.zeros(p)
copies = np.zeros((N, p))
M = min(a.max_inflight, N)
out = []                     # (owner, bar, Q_i, updates applied when sent), oldest first
stale = []
nxt = done = 0
while done < a.T:
    while len(out) < M and nxt < a.T and schedule[nxt] not in [o[0] for o in out]:
        i = schedule[nxt]
        bar = (theta_L + copies[i]) / 2
        out.append((i, bar, query(i, bar), done))
        nxt += 1
    i, bar, q, built = out.pop(0)
    grad_g = 2 * a.lam * bar
    w = owners[i][0].shape[0] / n
    copies[i] = clamp(bar - eta_i * (grad_g / (2 * N) + w * q))
    theta_L = clamp(bar - eta_L * grad_g)
    stale.append(done - built)
    done += 1

json.dump({'theta': theta_L.tolist(), 'clipped': clipped, 'staleness_mean': float(np.mean(stale))},
          open(a.out, 'w'))
print('clipped', clipped)

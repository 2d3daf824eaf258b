#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Independent reference of the peer mode (docs/design.md §6) without noise.

Written from the formulas alone, in numpy, sharing no code with dpasync:

    c_i      = m_i / max_j m_j,     lambda_i = 1 / m_i
    L_i      = 2 x2max + 2 lambda_i (linear),  x2max / 4 + 2 lambda_i (logistic)
    alpha_i  = 1 / (1 + mu c_i L_i)
    g_i      = (1/m_i) sum clip(grad l(theta_i; x, y)),  clip(v) = v min(1, Xi/|v|_1)
               (|v|_2 with --norm l2, the Gaussian mechanism's clip)
    theta_i <- (1 - alpha_i) theta_i
               + alpha_i (sum_j W_ij theta_j / D_ii - mu c_i (g_i + 2 lambda_i theta_i))

(an agent without neighbours smooths with its own model), one agent per
step of the schedule.  It does not quantise: dpasync sums on a 2^-k
lattice (k = 40 at these sizes), far below the tolerance of the test.

usage: ref_p2p.py --model M --mu MU --clip X --x2max B [--bias] [--norm l1|l2]
                  --graph FILE --schedule FILE --out theta.json CSV...
Prints the number of clipped per-row gradients (to prove clipping was
active) and writes {agent id: theta} as JSON.
"""
import argparse, csv, json, os, sys
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import load_xy

ap = argparse.ArgumentParser()
ap.add_argument('--model', required=True)
ap.add_argument('--mu', type=float, required=True)
ap.add_argument('--clip', type=float, required=True)
ap.add_argument('--x2max', type=float, required=True)
ap.add_argument('--norm', choices=['l1', 'l2'], default='l1')
ap.add_argument('--bias', action='store_true')
ap.add_argument('--graph', required=True)
ap.add_argument('--schedule', required=True)
ap.add_argument('--target', default='y')
ap.add_argument('--out', required=True)
ap.add_argument('files', nargs='+')
a = ap.parse_args()

data = {}
for path in a.files:
    data[os.path.basename(path)[:-4]] = load_xy(path, a.target, a.bias)

nb = {i: [] for i in data}
with open(a.graph, newline='') as f:
    for r in list(csv.reader(f))[1:]:
        nb[r[0]].append((r[1], float(r[2])))
        nb[r[1]].append((r[0], float(r[2])))
with open(a.schedule, newline='') as f:
    order = [r[1] for r in list(csv.reader(f))[1:]]

mmax = max(X.shape[0] for X, _ in data.values())
p = next(iter(data.values()))[0].shape[1]
theta = {i: np.zeros(p) for i in data}
clipped = 0

def coef(score, y):
    if a.model == 'linear':
        return 2 * (score - y)
    return -y / (1 + np.exp(y * score))

for i in order:
    X, y = data[i]
    m = X.shape[0]
    c = m / mmax
    lam = 1.0 / m
    L = (2 * a.x2max if a.model == 'linear' else a.x2max / 4) + 2 * lam
    alpha = 1 / (1 + a.mu * c * L)
    G = coef(X @ theta[i], y)[:, None] * X
    nrm = np.abs(G).sum(axis=1) if a.norm == 'l1' else np.sqrt((G * G).sum(axis=1))
    scale = np.minimum(1.0, a.clip / np.maximum(nrm, 1e-300))
    clipped += int((nrm > a.clip).sum())
    g = (G * scale[:, None]).sum(axis=0) / m
    D = sum(w for _, w in nb[i])
    smooth = sum(w * theta[j] for j, w in nb[i]) / D if D > 0 else theta[i]
    theta[i] = (1 - alpha) * theta[i] + alpha * (smooth - a.mu * c * (g + 2 * lam * theta[i]))

with open(a.out, 'w') as f:
    json.dump({i: list(v) for i, v in theta.items()}, f)
print('clipped', clipped)

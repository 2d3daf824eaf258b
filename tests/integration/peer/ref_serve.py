#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Independent reference of the served models (docs/p2p.md §7) without noise.

Written from the formulas alone, in numpy, sharing no code with dpasync.
For agent i with rows (X, y), m rows, lambda = 1/m:

  release   grad0: g_j = (1/m_j) sum clip(grad l(0; x, y)), L1 clip
            models: the agents' final models (a sim's agents/ID.json)
  pool      graph: the agent (weight 1) and its neighbours (W_ij); all:
            every agent (1); gradients weighted by m_j too
  prior     grad0: -(H + 2 lam' I)^-1 gbar, H = l''(0) C^T C / |C| with C
            the agent's rows (lam' = lambda) or the --curvature rows
            (lam' = lambda m / sum of the pool's weights); models: the pool
  scale     (--scale) prior * max(0, s), (s, b) minimising
            (1/n) sum l(s prior.x + b x_bias) + lambda (s^2 |prior|^2 + b^2)
            on the fit's rows (b only with --bias)
  fit       argmin (1/n) sum l + lambda |theta|^2 + (tau/n) |theta - prior|^2,
            the bias coordinate not pulled with --bias
  tau       the lowest summed held-out loss over folds r mod K (first on
            ties), then the fit on all rows

usage: ref_serve.py --model M --release grad0|models [--agents DIR] --prior graph|all
                    [--scale] [--bias] [--curvature FILE] --clip X --taus T,.. --folds K
                    --graph FILE --out served.json CSV...
"""
import argparse, csv, json, os, sys
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import load_xy

ap = argparse.ArgumentParser()
for k in ('--model', '--release', '--prior', '--graph', '--out', '--taus'):
    ap.add_argument(k, required=True)
ap.add_argument('--agents')
ap.add_argument('--curvature')
ap.add_argument('--scale', action='store_true')
ap.add_argument('--bias', action='store_true')
ap.add_argument('--clip', type=float, default=1.0)
ap.add_argument('--folds', type=int, default=5)
ap.add_argument('files', nargs='+')
a = ap.parse_args()
logistic = a.model == 'logistic'
taus = [float(t) for t in a.taus.split(',')]

data = {os.path.basename(f)[:-4]: load_xy(f, 'y', a.bias) for f in a.files}
ids = list(data)
nb = {i: [] for i in ids}
with open(a.graph, newline='') as f:
    for r in list(csv.reader(f))[1:]:
        nb[r[0]].append((r[1], float(r[2])))
        nb[r[1]].append((r[0], float(r[2])))


def loss(t, y):
    return np.logaddexp(0, -y * t) if logistic else (y - t) ** 2


def fit(X, y, lam, tau, prior, pulled):
    """The refit (Newton for logistic, from 0)."""
    n, p = X.shape
    P = np.diag(pulled.astype(float)) * tau
    if not logistic:
        return np.linalg.solve(X.T @ X + n * lam * np.eye(p) + P, X.T @ y + P @ prior)
    th = np.zeros(p)
    for _ in range(100):
        t = X @ th
        sg = 1 / (1 + np.exp(y * t))
        g = -(X * (y * sg)[:, None]).sum(0) + 2 * n * lam * th + 2 * P @ (th - prior)
        H = (X * (sg * (1 - sg))[:, None]).T @ X + 2 * n * lam * np.eye(p) + 2 * P
        step = np.linalg.solve(H, g)
        th = th - step
        if np.abs(step).max() < 1e-15:
            break
    return th


def scaled(X, y, lam, prior, pulled):
    Pn = float(prior[pulled] @ prior[pulled])
    if not a.scale:
        return prior
    if Pn == 0:
        return 0 * prior
    z = X[:, pulled] @ prior[pulled] / np.sqrt(Pn)
    cols = [z] + ([X[:, -1]] if not pulled[-1] else [])
    L = np.stack(cols, 1)
    c = fit(L, y, lam, 0.0, np.zeros(L.shape[1]), np.zeros(L.shape[1], bool))
    return prior * max(0.0, c[0] / np.sqrt(Pn))


def pool(i):
    return [(i, 1.0)] + nb[i] if a.prior == 'graph' else [(j, 1.0) for j in ids]


rel = {}
for j in ids:
    X, y = data[j]
    if a.release == 'grad0':
        G = (-2 * y if not logistic else -y / 2)[:, None] * X
        nrm = np.abs(G).sum(1)
        rel[j] = (G * np.minimum(1, a.clip / np.maximum(nrm, 1e-300))[:, None]).mean(0)
    else:
        with open(os.path.join(a.agents, j + '.json')) as f:
            rel[j] = np.array(json.load(f)['theta'])
curv = load_xy(a.curvature, 'y', a.bias)[0] if a.curvature else None

out = {}
for i in ids:
    X, y = data[i]
    m, p = X.shape
    lam = 1.0 / m
    pulled = np.ones(p, bool)
    if a.bias:
        pulled[-1] = False
    w = [(j, wt * data[j][0].shape[0]) if a.release == 'grad0' else (j, wt) for j, wt in pool(i)]
    tot = sum(wt for _, wt in w)
    gbar = sum(wt * rel[j] for j, wt in w) / tot
    if a.release == 'grad0':
        C = curv if curv is not None else X
        lp = lam * m / tot if curv is not None else lam
        c2 = 0.25 if logistic else 2.0
        prior = -np.linalg.solve(c2 * C.T @ C / C.shape[0] + 2 * lp * np.eye(p), gbar)
    else:
        prior = gbar
    K = min(a.folds, m)
    score = np.zeros(len(taus))
    rows = np.arange(m)
    for k in range(K if len(taus) > 1 and K >= 2 else 0):
        tr, ho = rows % K != k, rows % K == k
        pr = scaled(X[tr], y[tr], lam, prior, pulled)
        for t, tau in enumerate(taus):
            th = fit(X[tr], y[tr], lam, tau, pr, pulled)
            score[t] += loss(X[ho] @ th, y[ho]).sum()
    best = 0
    for t in range(1, len(taus)):
        if score[t] < score[best]:
            best = t
    th = fit(X, y, lam, taus[best], scaled(X, y, lam, prior, pulled), pulled)
    out[i] = {'theta': list(th), 'tau': taus[best], 'prior': list(prior)}
with open(a.out, 'w') as f:
    json.dump(out, f)

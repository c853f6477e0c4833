"""Labels that know the opponent's hand against uniform ones, on the same positions; a student
fitted on each (issue 28: "label with the strongest search available").

    PYTHONPATH=. python docs/experiments/dmcA/labels.py label '{"games": 12000, "K": 64, "out": "runs/post"}'
    PYTHONPATH=. python docs/experiments/dmcA/labels.py fit '{"out": "runs/post", "mode": "true"}'
    PYTHONPATH=. python docs/experiments/dmcA/labels.py fit '{"out": "runs/post", "mode": "uniform"}'
    PYTHONPATH=. python docs/experiments/dmcA/labels.py label \
        '{"games": 36000, "K": 32, "out": "runs/post36", "seed": 6, "modes": ["uniform"]}'
    PYTHONPATH=. python docs/experiments/dmcA/labels.py fit \
        '{"out": "runs/post", "extra": ["runs/post36"], "mode": "uniform", "epochs": 8}'
    (the same with "hidden": [384, 384], "epochs": 12, "name": "384_" for the wider one; with
    "max_game": N the first N games of a set only: the curve against labelled decisions)

``label``: greedy plays greedy on the compiled engine, the decisions with a choice of one seat
(drawn per game) recorded, then every candidate of every recorded decision is
valued by ``K`` greedy playouts (agents.search.label_rows): ``true`` keeps the opponent's hand
and draws the stock again (the "told the hand" ceiling's values: a label that peeks, the student
never reads it), ``uniform`` draws the opponent's hidden cards again too (pimc's values without
its inference).  ``fit``: the scorer (cross-entropy on softmax(q / 0.05), cosine learning rate,
held-out games id % 5 == 0), its regret under both label sets, and its score against greedy by
the compiled check.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import torch

from agents.scorer import CANDIDATE_SIZE, GREEDY_SLOT
from agents.search import label_rows
from agents.selfplay_kernels import GREEDY, GREEDY_LEARNER, play_games
from conquian_train.scorer_fit import regret, scorer_from_network, scorer_network

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import check, deals, predict, soft_fit  # noqa: E402

torch.set_num_threads(2)
sys.stdout.reconfigure(line_buffering=True)
cfg = dict(games=12000, K=32, seed=5, out="runs/post", hidden=(256, 256), epochs=10, T=0.05, name="")
cfg.update(json.loads(sys.argv[2]) if len(sys.argv) > 2 else {})
os.makedirs(cfg["out"], exist_ok=True)
if sys.argv[1] == "label":
    n = cfg["games"]
    rng = np.random.default_rng(cfg["seed"])
    t = time.time()
    _, g, rows, _ = play_games(deals(n, cfg["seed"]), rng.integers(0, 2, n), rng.integers(0, 2, n),
                               np.full(n, GREEDY), 0, GREEDY_LEARNER)  # fmt: skip
    print("decisions", len(g), round(time.time() - t, 1), flush=True)
    for mode in cfg.get("modes", ("true", "uniform")):
        t = time.time()
        X, A, Q, N = label_rows(rows, cfg["K"], knows_hand=(mode == "true"), seed=cfg["seed"] * 7919)
        print(mode, "labelled", round(time.time() - t, 1), flush=True)
        np.savez(f"{cfg['out']}/{mode}.npz", X=X.astype(np.float16), A=A, Q=Q, N=N, game=g)
else:
    mode = cfg["mode"]
    sets = [np.load(f"{o}/{mode}.npz") for o in [*cfg.get("extra", []), cfg["out"]]]
    d = {k: np.concatenate([s[k] for s in sets]) for k in ("X", "A", "Q")}
    g = np.concatenate([s["game"] + 1_000_000 * j for j, s in enumerate(sets)])
    twin = f"{cfg['out']}/{'uniform' if mode == 'true' else 'true'}.npz"
    other = d["Q"] if cfg.get("extra") or not os.path.exists(twin) else np.load(twin)["Q"]
    if "max_game" in cfg:  # the first games only (a point of the curve against labelled decisions)
        first = (g % 1_000_000) < cfg["max_game"]
        d, g, other = {k: v[first] for k, v in d.items()}, g[first], other[first]
    X, valid, Q = torch.from_numpy(d["X"].astype(np.float32)), d["A"] >= 0, d["Q"]
    keep, held = valid.sum(1) > 1, g % 5 == 0
    print("decisions", len(g), "games", len(np.unique(g)))
    tr, te = np.flatnonzero(keep & ~held), np.flatnonzero(keep & held)
    net = scorer_network((CANDIDATE_SIZE, *cfg["hidden"], 1), 0)

    def forward(idx):
        return net(X[idx]).squeeze(-1)

    def report(epoch):
        s_te, part = predict(forward, te), tr[:20000]
        own, by_other = regret(s_te, valid[te], Q[te]), regret(s_te, valid[te], other[te])
        train = regret(predict(forward, part), valid[part], Q[part])
        print(epoch, "held-out regret own", round(own, 5), "other", round(by_other, 5), "train", round(train, 5))

    greedy = np.where(valid, d["X"][:, :, GREEDY_SLOT].astype(np.float32), -9)
    print("greedy's held-out regret (own labels, other labels)", round(regret(greedy[te], valid[te], Q[te]), 5),
          round(regret(greedy[te], valid[te], other[te]), 5))  # fmt: skip
    soft_fit(net, forward, valid, Q, tr, cfg["epochs"], cfg["T"], report)
    student = scorer_from_network(net)
    student.save(f"{cfg['out']}/{mode}_{cfg['name']}scorer.npz")
    print(mode, "vs greedy", check(student), flush=True)

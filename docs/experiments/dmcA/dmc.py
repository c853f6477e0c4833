"""Deep Monte-Carlo from the shipped scorer (issue 28's "then self-play"): the scorer plays the
pool (greedy, itself) on the compiled engine with eps-greedy exploration, and its network
regresses each of its decisions' Monte-Carlo return (win 1, draw 1/2, loss 0).

    PYTHONPATH=. python docs/experiments/dmcA/dmc.py '{"rounds": 30}'              # a: plain
    PYTHONPATH=. python docs/experiments/dmcA/dmc.py '{"rounds": 25, "lr": 3e-5, "value_head": true}'  # b

The shipped scorer's outputs are softmax logits (targets softmax(q / 0.05)), so its last layer is
scaled by 0.05 to start as values; with ``value_head`` a separate small network of the position's
inputs absorbs the value of the position (the logits' per-position offset is arbitrary) and is
fitted alone for ``warm`` rounds before the scorer moves.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch

from agents.scorer import CANDIDATE_SIZE, DEFAULT_SCORER, POSITION_SLOT, load_scorer
from agents.scorer_kernels import pack
from agents.selfplay_kernels import GREEDY, SCORER, play_games
from conquian_train.scorer_fit import scorer_from_network, scorer_network

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import check, deals  # noqa: E402

torch.set_num_threads(2)
cfg = dict(eps=0.05, lr=1e-4, games=20000, rounds=30, self_frac=0.4, batch=1024, scale=0.05, eval_every=5,
           hidden=(128, 128), seed=11, value_head=False, warm=3)  # fmt: skip
cfg.update(json.loads(sys.argv[1]) if len(sys.argv) > 1 else {})
print(cfg, flush=True)
rng = np.random.default_rng(cfg["seed"])
net = scorer_network((CANDIDATE_SIZE, *cfg["hidden"], 1), cfg["seed"])
lins = [m for m in net if isinstance(m, torch.nn.Linear)]
with torch.no_grad():
    for lin, (w, b) in zip(lins, load_scorer(DEFAULT_SCORER).layers, strict=True):
        lin.weight.copy_(torch.from_numpy(w.T.copy()))
        lin.bias.copy_(torch.from_numpy(b))
    lins[-1].weight.mul_(cfg["scale"])
    lins[-1].bias.mul_(cfg["scale"])
    if not cfg["value_head"]:
        lins[-1].bias.add_(0.5)
vnet = torch.nn.Sequential(torch.nn.Linear(CANDIDATE_SIZE - POSITION_SLOT, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
with torch.no_grad():
    vnet[-1].bias.fill_(0.5)
vopt = torch.optim.Adam(vnet.parameters(), lr=1e-3)
opt = torch.optim.Adam(net.parameters(), lr=cfg["lr"])
print("start", check(scorer_from_network(net)), flush=True)
t0, seen = time.time(), 0
for rnd in range(cfg["rounds"]):
    cur = pack(scorer_from_network(net))
    n = cfg["games"]
    d = deals(n, int(rng.integers(1 << 40)))
    kinds = np.where(rng.random(n) < cfg["self_frac"], SCORER, GREEDY)
    seats, firsts = rng.integers(0, 2, n), rng.integers(0, 2, n)
    x, g, _, res = play_games(d, firsts, seats, kinds, 0, cur, cur, eps=cfg["eps"], seed=int(rng.integers(1 << 30)))
    points = np.where(res == seats, 1.0, np.where(res < 0, 0.5, 0.0)).astype(np.float32)
    X, Y = torch.from_numpy(x), torch.from_numpy(points[g])
    order = torch.from_numpy(rng.permutation(len(g)))
    total, batches = 0.0, 0
    for i in range(0, len(order), cfg["batch"]):
        b = order[i : i + cfg["batch"]]
        xb = X[b]
        q = net(xb).squeeze(-1)
        if cfg["value_head"]:
            q = q + vnet(xb[:, POSITION_SLOT:]).squeeze(-1)
        loss = ((q - Y[b]) ** 2).mean()
        opt.zero_grad()
        vopt.zero_grad()
        loss.backward()
        if cfg["value_head"]:
            vopt.step()
        if not cfg["value_head"] or rnd >= cfg["warm"]:
            opt.step()
        total, batches = total + float(loss.detach()), batches + 1
    seen += len(g)
    line = f"round {rnd} decisions {seen} loss {total / batches:.4f} score-vs-pool {points.mean():.3f}"
    line += f" t {time.time() - t0:.0f}s"
    if (rnd + 1) % cfg["eval_every"] == 0:
        line += f" vs greedy {check(scorer_from_network(net))}"
    print(line, flush=True)

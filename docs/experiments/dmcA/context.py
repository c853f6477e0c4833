"""Is the per-candidate input the student's limit?  The scorer scores each candidate from its own
inputs (the card, its run neighbours, its rank, the position's 60 inputs); two students that see
more, fitted on the same 48,000 games of uniform labels as the plain one (`labels.py`):

* ``ctx``: every candidate also sees the others (deep sets: each candidate's embedding, then the
  mean and the max of all the position's candidates' embeddings joined to it);
* ``table``: every candidate also sees the whole table (all 18 channels of all 40 cards, 720
  inputs) through a position encoder (720 -> 256 -> 128), once per position.

    PYTHONPATH=. python docs/experiments/dmcA/context.py '{"model": "ctx"}'   # and table, base
    (add "save": "runs/ctx.pt" to keep the weights for ``ctx_play.py``)

Reads the label sets of ``labels.py`` (``runs/post``, ``runs/post36``) and replays their games
(the same seeds: the very rows) for the table.  Prints held-out regret by the labels, as a share
of greedy's (the plain student: 0.75).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch
from numba import njit

from agents.greedy_kernels import NUM_FEATURES, encode_features
from agents.scorer import CARD_BLOCKS, CHANNELS, FEATURE_AT, GREEDY_SLOT
from agents.selfplay_kernels import GREEDY, GREEDY_LEARNER, play_games
from conquian_env.kernels import PLAYER
from conquian_train.scorer_fit import regret

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import CandidateNet, deals, predict, soft_fit  # noqa: E402

torch.set_num_threads(2)
sys.stdout.reconfigure(line_buffering=True)
cfg = dict(model="base", sets=[["runs/post36", 36000, 6], ["runs/post", 12000, 5]], epochs=8, T=0.05, width=256)
cfg["save"] = ""
cfg.update(json.loads(sys.argv[1]) if len(sys.argv) > 1 else {})
_LIVE = FEATURE_AT["live"]


@njit(cache=True)
def tables(rows, out):
    S = np.zeros((1, rows.shape[1]), np.int64)
    F = np.zeros(NUM_FEATURES, np.float32)
    for i in range(rows.shape[0]):
        S[0, :] = rows[i]
        encode_features(S, 0, rows[i, PLAYER], F)
        for ch in range(CHANNELS):
            base = ch * 40 if ch < CARD_BLOCKS else _LIVE + (ch - CARD_BLOCKS) * 40
            for c in range(40):
                out[i, ch * 40 + c] = F[base + c]


Xs, As, Qs, Gs, games = [], [], [], [], []
for j, (out, n, seed) in enumerate(cfg["sets"]):
    d = np.load(f"{out}/uniform.npz")
    Xs.append(d["X"])
    As.append(d["A"])
    Qs.append(d["Q"])
    games.append(d["game"] + 1_000_000 * j)
    if cfg["model"] == "table":
        rng = np.random.default_rng(seed)
        _, g, rows, _ = play_games(deals(n, seed), rng.integers(0, 2, n), rng.integers(0, 2, n), np.full(n, GREEDY),
                                   0, GREEDY_LEARNER)  # fmt: skip
        # the sets were saved block by block (an earlier play_games); the replay is game by game
        saved = np.argsort(d["game"], kind="stable")
        assert np.array_equal(g, d["game"][saved]), "the replayed games are not the labelled ones"
        t = np.zeros((len(rows), CHANNELS * 40), np.float32)
        tables(rows, t)
        placed = np.zeros_like(t)
        placed[saved] = t
        Gs.append(placed.astype(np.float16))
X = torch.from_numpy(np.concatenate(Xs).astype(np.float32))
A, Q, g = np.concatenate(As), np.concatenate(Qs), np.concatenate(games)
G = torch.from_numpy(np.concatenate(Gs).astype(np.float32)) if Gs else None
valid = A >= 0
keep, held = valid.sum(1) > 1, g % 5 == 0
tr, te = np.flatnonzero(keep & ~held), np.flatnonzero(keep & held)
V = torch.from_numpy(valid)
W = cfg["width"]


torch.manual_seed(0)
net = CandidateNet(cfg["model"], W)


def forward(idx):
    return net(X[idx], V[idx], None if G is None else G[idx])


greedy = np.where(valid, X[:, :, GREEDY_SLOT].numpy(), -9)
g_te = regret(greedy[te], valid[te], Q[te])
print(cfg, "positions", len(tr), len(te), "greedy's held-out regret", round(g_te, 5))
t0 = time.time()


def report(epoch):
    global t0
    held, part = regret(predict(forward, te), valid[te], Q[te]), tr[:20000]
    train = regret(predict(forward, part), valid[part], Q[part])
    print(epoch, "held-out", round(held, 5), "share", round(held / g_te, 3), "train", round(train, 5),
          f"{time.time() - t0:.0f}s")  # fmt: skip
    t0 = time.time()


soft_fit(net, forward, valid, Q, tr, cfg["epochs"], cfg["T"], report)
if cfg["save"]:  # the weights only (read back with torch.load(..., weights_only=True): no pickled code)
    torch.save(net.state_dict(), cfg["save"])

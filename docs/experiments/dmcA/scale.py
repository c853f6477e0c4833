"""The deep-sets student (``ctx`` of ``context.py``) on six times the labels: does the share of
greedy's regret it keeps keep falling, and does the score follow?

    bash docs/experiments/dmcA/scale_labels.sh          # runs/s7 .. runs/s10: 4 x 75,000 greedy games, K = 32
    PYTHONPATH=. python docs/experiments/dmcA/scale.py '{"out": "runs/scale"}'

Reads the uniform label sets of ``labels.py label`` named in ``sets``, keeps the inputs as float16
(2M decisions: 8.6 GB) and turns a batch to float32 only when it is used; held out: the games of
the first set with id % 5 == 0.  Each epoch ends with the weights and the optimizer's state written
to ``out`` (atomically: a temporary file, then a rename), and a rerun resumes after the last epoch
written.  Prints held-out regret by the labels as a share of greedy's, as ``context.py`` does.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import torch

from agents.scorer import GREEDY_SLOT
from conquian_train.scorer_fit import regret

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import CandidateNet, predict  # noqa: E402

torch.set_num_threads(2)
sys.stdout.reconfigure(line_buffering=True)
cfg = dict(sets=["runs/s7", "runs/s8", "runs/s9", "runs/s10"], epochs=6, T=0.05, width=256, out="runs/scale")
cfg.update(json.loads(sys.argv[1]) if len(sys.argv) > 1 else {})
os.makedirs(cfg["out"], exist_ok=True)

Xs, As, Qs, games = [], [], [], []
for j, path in enumerate(cfg["sets"]):
    d = np.load(f"{path}/uniform.npz")
    Xs.append(d["X"])
    As.append(d["A"])
    Qs.append(d["Q"])
    games.append(d["game"] + 1_000_000 * j)
    print(path, len(d["game"]), "decisions", flush=True)
X = torch.from_numpy(np.concatenate(Xs))  # float16
del Xs
A, Q, g = np.concatenate(As), np.concatenate(Qs), np.concatenate(games)
valid = A >= 0
keep, held = valid.sum(1) > 1, (g < 1_000_000) & (g % 5 == 0)
tr, te = np.flatnonzero(keep & ~held), np.flatnonzero(keep & held)
V, QT = torch.from_numpy(valid), torch.from_numpy(Q)  # noqa: N806

torch.manual_seed(0)
net = CandidateNet("ctx", cfg["width"])
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
steps = cfg["epochs"] * (len(tr) // 256 + 1)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
state_path = f"{cfg['out']}/state.pt"
start = 0
if os.path.exists(state_path):
    state = torch.load(state_path, weights_only=True)
    net.load_state_dict(state["net"])
    opt.load_state_dict(state["opt"])
    sched.load_state_dict(state["sched"])
    start = int(state["epoch"]) + 1
    print("resumed after epoch", start - 1)


def forward(idx):
    return net(X[idx].float(), V[idx])


greedy = np.where(valid[te], X[te, :, GREEDY_SLOT].float().numpy(), -9)
g_te = regret(greedy, valid[te], Q[te])
print(cfg, "positions", len(tr), len(te), "greedy's held-out regret", round(g_te, 5))
for epoch in range(start, cfg["epochs"]):
    t0 = time.time()
    order = np.random.default_rng(epoch).permutation(tr)
    for i in range(0, len(order), 256):
        b = torch.from_numpy(order[i : i + 256])
        v = V[b]
        logits = forward(b).masked_fill(~v, -1e9)
        target = torch.softmax((QT[b] / cfg["T"]).masked_fill(~v, -1e9), 1)
        loss = -(target * torch.log_softmax(logits, 1)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    held_r, part = regret(predict(forward, te), valid[te], Q[te]), tr[:20000]
    train_r = regret(predict(forward, part), valid[part], Q[part])
    print(epoch, "held-out", round(held_r, 5), "share", round(held_r / g_te, 3), "train", round(train_r, 5),
          f"{time.time() - t0:.0f}s")  # fmt: skip
    torch.save({"net": net.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "epoch": epoch},
               state_path + ".tmp")  # fmt: skip
    os.replace(state_path + ".tmp", state_path)
torch.save(net.state_dict(), f"{cfg['out']}/ctx.pt")

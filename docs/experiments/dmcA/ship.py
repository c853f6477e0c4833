"""The deep-sets student of ``scale.py`` as a deep-sets action scorer file (agents.scorer,
``pool_after=0``), checked against its torch network and measured by the compiled check.

    PYTHONPATH=. python docs/experiments/dmcA/ship.py runs/scale/ctx.pt runs/scale/ctx_scorer.npz [SEED]
    (the fit's numbers in the file's meta are read from runs/scale.log, scale.py's output, when it is there)
    (runs/scale/state.pt: the last epoch written of a run under way)

``CandidateNet("ctx")`` is ``embed`` (176 -> W, ReLU), the mean and max of the embeddings over the
position's candidates, and ``head`` (3W -> W -> 1): the layers of an ``ActionScorer`` pooled after
its first layer.  The scores of the file and of the torch network are compared on 2,000 positions
of greedy's games, then the file plays greedy on 10,000 duplicate deals (20,000 games) at the check
seed (or SEED).
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from agents.scorer import ActionScorer, load_scorer
from agents.scorer_kernels import pack
from agents.selfplay_kernels import GREEDY, GREEDY_LEARNER, duplicate_score, play_games

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import CHECK_SEED, CandidateNet, deals  # noqa: E402

torch.set_num_threads(2)
src, dst = sys.argv[1], sys.argv[2]
seed = int(sys.argv[3]) if len(sys.argv) > 3 else CHECK_SEED
state = torch.load(src, weights_only=True)
state = state.get("net", state)  # scale.py's state.pt (a run under way) or its ctx.pt
width = state["embed.0.weight"].shape[0]
net = CandidateNet("ctx", width)
net.load_state_dict(state)
layers = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy())
          for m in (net.embed[0], net.head[0], net.head[2])]  # fmt: skip
meta = {"source": "docs/experiments/dmcA (scale_labels.sh, scale.py, ship.py)", "temperature": 0.05}
try:  # the fit's numbers travel with the file: greedy's held-out regret, the last epoch's
    lines = open("runs/scale.log").read().splitlines()
    head = next(line for line in lines if "greedy's held-out regret" in line)
    meta["greedy_held_out_regret"] = float(head.split()[-1])
    meta["positions"] = int(head.split("positions")[1].split()[0])
    meta["held_out_regret"] = float([line for line in lines if " held-out " in line][-1].split()[2])
except (OSError, StopIteration, IndexError, ValueError):
    pass
scorer = ActionScorer(layers, meta, pool_after=0)
scorer.save(dst)
back = load_scorer(dst)

# the same scores as the torch network on the candidates of greedy's own decisions
rng = np.random.default_rng(1)
X, game, _, _ = play_games(deals(300, 99), rng.integers(0, 2, 300), rng.integers(0, 2, 300), np.full(300, GREEDY), 0,
                           GREEDY_LEARNER)  # fmt: skip
print("positions", len(X))
# rebuild each decision's candidate set from the rows is the kernels' job; here a random subset of
# recorded candidates grouped in fours stands in as sets (the same computation either way)
x = torch.from_numpy(X[: len(X) // 4 * 4].reshape(-1, 4, X.shape[1]))
v = torch.ones(x.shape[:2], dtype=torch.bool)
with torch.no_grad():
    ref = net(x, v).numpy()
err = np.abs(back(x.numpy()) - ref).max()
print("max |file - torch| over", ref.size, "scores:", f"{err:.2e}")
assert err < 1e-3
score, half = duplicate_score(pack(back), deals(10000, seed))
print(f"vs greedy, 10,000 duplicate deals at seed {seed}: {score:.4f} +- {half:.4f}")

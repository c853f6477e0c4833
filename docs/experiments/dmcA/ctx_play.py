"""The deep-sets student of ``context.py`` (saved with ``"save"``) playing greedy in the arena, on
the first ``N`` deals of the compiled check (both seats, the first player alternating), beside the
plain scorer ``PLAIN`` by the compiled check on the same deals (the same games the arena plays).

    PYTHONPATH=. python docs/experiments/dmcA/ctx_play.py runs/ctx.pt runs/post/uniform_48k_scorer.npz 2500 [SEED]

(``SEED``: other deals than the check's, e.g. the fresh seed 77031 of the page's recheck.)
"""

from __future__ import annotations

import sys
from multiprocessing import Pool

import numpy as np
import torch

from agents.greedy import GreedyAgent
from agents.scorer import ScorerAgent, candidate_features, load_scorer
from agents.scorer_kernels import pack
from agents.selfplay_kernels import duplicate_score
from conquian_arena.match import play_game
from conquian_env.vector import deal_cards

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import CHECK_SEED, CandidateNet, deals  # noqa: E402


class TorchScorer:
    """``candidate_scores`` of a :class:`CandidateNet` (what :class:`ScorerAgent` asks of a scorer)."""

    def __init__(self, path: str):
        self.net = CandidateNet("ctx")
        self.net.load_state_dict(torch.load(path, weights_only=True))
        self.net.eval()

    def candidate_scores(self, features, mask):
        x, valid, actions = candidate_features(features[None], np.asarray(mask, bool)[None])
        with torch.no_grad():
            s = self.net(torch.from_numpy(x), torch.from_numpy(valid))[0].numpy()
        return actions[0][valid[0]], s[valid[0]]


def play(args):
    path, rows = args
    torch.set_num_threads(1)
    bot, greedy = ScorerAgent.from_scorer(TorchScorer(path), "ctx"), GreedyAgent()
    points = []
    for k, d in rows:
        hands, stock = deal_cards(d)
        pair = []
        for seat in (0, 1):
            players = [bot, greedy] if seat == 0 else [greedy, bot]
            rec = play_game(players, hands=hands, stock=stock, first=k % 2)
            pair.append(0.5 if rec.winner is None else float(rec.winner == seat))
        points.append(sum(pair) / 2)
    return points


if __name__ == "__main__":
    path, plain, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    d = deals(n, int(sys.argv[4]) if len(sys.argv) > 4 else CHECK_SEED)
    chunks = [(path, [(k, d[k]) for k in range(j, n, 2)]) for j in (0, 1)]
    with Pool(2) as pool:
        paired = np.concatenate(pool.map(play, chunks))
    half = 1.96 * paired.std(ddof=1) / np.sqrt(n)
    print(f"ctx student vs greedy: {paired.mean():.4f} +- {half:.4f} ({2 * n} games)")
    score, h = duplicate_score(pack(load_scorer(plain)), d)
    print(f"plain scorer {plain} on the same deals: {score:.4f} +- {h:.4f}")

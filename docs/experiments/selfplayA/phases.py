"""Which phase of a self-play network's play costs the most against greedy: the network plays every
decision but those of the named phases, which greedy's own choice takes, on 1000 duplicate deals.

    python docs/experiments/selfplayA/phases.py agents/data/conquian_selfplay.npz [SEED]
"""

import sys

import numpy as np

from agents.greedy.batched import BatchGreedy
from agents.networks.batched import BatchPolicy
from agents.networks.selfplay import read_selfplay
from conquian_env import kernels as K
from conquian_env.rules import Rules
from conquian_train.recipes.selfplay import duplicate_score


class Hybrid:
    """The network, except in ``phases``, where greedy chooses."""

    name = "hybrid"

    def __init__(self, policy, phases):
        self.policy, self.greedy, self.phases = policy, BatchGreedy(), phases

    def act_batch(self, games, rows):
        out = self.policy.act_batch(games, rows)
        mine = np.isin(games.state[rows, K.PHASE], self.phases)
        if mine.any():
            out[mine] = self.greedy.act_batch(games, rows[mine])
        return out


def main() -> None:
    network, _ = read_selfplay(sys.argv[1])
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 555
    names = {K.OFFER: "offer", K.MELD: "meld", K.DISCARD: "discard"}
    for phases in ([], [K.OFFER], [K.MELD], [K.DISCARD]):
        r = duplicate_score(Hybrid(BatchPolicy(network), phases), BatchGreedy(), 2000, seed, Rules())
        print(
            f"greedy decides {[names[p] for p in phases] or 'nothing'}: {r['score']:.3f} "
            f"[{r['low']:.3f}, {r['high']:.3f}]",
            flush=True,
        )


if __name__ == "__main__":
    main()

"""The searches and what they search with: the compiled determinized search
(:mod:`agents.search.pimc`, the ``pimc``, ``search`` and ``belief`` kinds, over its kernels),
the tree search in Python (:mod:`agents.search.ismcts`), the rollout bot
(:mod:`agents.search.rollout`), the belief model of the opponent's hand
(:mod:`agents.search.belief`, its compiled features :mod:`agents.search.belief_kernels`), the
frame they share (:mod:`agents.search.frame`) and a player's view as a row of the batched engine
(:mod:`agents.search.rows`).

>>> from agents.search import PIMCAgent

The names below are imported from their module on first use, so that importing the tree
search or the belief model does not compile the search's kernels."""

from __future__ import annotations

from ..lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "pimc": ["PIMCAgent", "BeliefSearchAgent"],
        "ismcts": ["ISMCTSAgent"],
        "rollout": ["RolloutAgent"],
        "frame": ["SearchBot"],
        "belief": ["BeliefModel", "load_belief"],
    },
)

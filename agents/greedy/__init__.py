"""The greedy bot's family: the bot in Python (:mod:`agents.greedy.greedy`), its compiled twin
(:mod:`agents.greedy.greedy_kernels`, numba), its JAX twin (:mod:`agents.greedy.greedy_jax`),
its batched forms on the compiled twin (:mod:`agents.greedy.batched`: the bot and the ``"meld"``
features for many games at once) and the weights all three read (:mod:`agents.greedy.greedy_weights`).

>>> from agents.greedy import GreedyAgent

The names below are imported from their module on first use, so that importing one twin
imports neither of the others."""

from __future__ import annotations

from ..lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__, {"greedy": ["GreedyAgent"], "batched": ["BatchGreedy", "MELD_FEATURES", "MeldFeatures"]}
)

"""Every bot object a worker process may be handed pickles: the evaluator of every recipe, a
tournament and ``play_pair`` give their bots to a spawn pool (``conquian_arena.worker``).

The kinds come from the bot registry (a new bot joins with no edit here); the live scorer of a
fit (an :class:`~agents.scorer.scorer.ActionScorer` made from weights, no file) is played with two
workers as ``make train``'s first evaluation plays it."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from agents.registry import KNOWN_BOTS, make_agent
from agents.scorer.scorer import ActionScorer, ScorerAgent
from conquian_env.layout import MELD_FEATURES, OBSERVATION

#: kinds that need something outside the package to be built (a user's class, Ray's RLlib; an exec bot gets a
#: program written here)
NEEDS_MORE = {"python", "rllib"}


def _kinds() -> list[str]:
    return [kind for kind in KNOWN_BOTS if kind not in NEEDS_MORE]


def _spec(kind: str, tmp_path) -> str:
    """The kind's spec: its own name, or, for a kind that must be given a file to run (``exec``), a
    program that plays the first legal action, or for one that plays another bot (``noisy``), greedy."""
    if kind == "noisy":
        return "noisy:0.2:greedy"
    if kind != "exec":
        return kind
    import sys

    path = tmp_path / "bot.py"
    path.write_text(f"#!{sys.executable}\nimport json, sys\nfor line in sys.stdin:\n    msg = json.loads(line)\n"
                    "    if msg['type'] == 'act':\n        print(msg['legal'][0], flush=True)\n")  # fmt: skip
    path.chmod(0o755)
    return f"exec:{path}"


@pytest.mark.parametrize("kind", _kinds())
def test_every_registered_bot_pickles(kind, tmp_path):
    agent = make_agent(_spec(kind, tmp_path), seed=3)
    copy = pickle.loads(pickle.dumps(agent))
    assert type(copy) is type(agent)


@pytest.mark.parametrize("layout", [OBSERVATION, MELD_FEATURES], ids=lambda lay: lay.name)
def test_a_layout_pickles_to_an_equal_layout(layout):
    copy = pickle.loads(pickle.dumps(layout))
    assert copy == layout and copy.hash == layout.hash and dict(copy.offsets) == dict(layout.offsets)


def _live_scorer() -> ActionScorer:
    """An untrained scorer made from weights, as ``distill fit`` evaluates one at step 0."""
    shipped = make_agent("scorer").scorer
    rng = np.random.default_rng(0)
    layers = [(rng.normal(0, 0.1, w.shape).astype(np.float32), np.zeros_like(b)) for w, b in shipped.layers]
    return ActionScorer(layers, pool_after=shipped.pool_after)


def test_a_live_scorer_plays_with_two_workers():
    from conquian_train.evaluation import ScorerModel, evaluate_agent

    agent = ScorerModel(_live_scorer()).agent()
    assert isinstance(agent, ScorerAgent)
    row = evaluate_agent(agent, "greedy", games=4, seed=5, jobs=2)
    assert row["wins"] + row["draws"] + row["losses"] == 4
    one = evaluate_agent(agent, "greedy", games=4, seed=5, jobs=1)
    assert (one["wins"], one["draws"], one["losses"]) == (row["wins"], row["draws"], row["losses"])

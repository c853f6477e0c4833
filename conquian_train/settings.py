"""What every training recipe shares: the run folder, the seed, the rules, the evaluation, the processes.

:class:`RunSettings` is the base of each recipe's knobs (``ppo``'s
:class:`~conquian_train.recipes.ppo.TrainConfig`, ``exit``'s :class:`~conquian_train.recipes.exit.ExItConfig`,
``distill fit``'s :class:`~conquian_train.recipes.distill.FitConfig`): a recipe inherits these
fields and may give one its own default by declaring it again (the field keeps its place).  Its
first three fields, :class:`FolderSettings` (the folder, the seed, the rules), are the whole base
of a step that evaluates nothing (the ``generate`` steps of ``distill`` and ``belief``).  The
command line of every field comes from :mod:`conquian_arena.knobs`; docs/training.md ("Shared
settings") lists the defaults of each recipe.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from agents.registry import make_agent
from conquian_arena import knobs
from conquian_arena.knobs import knob
from conquian_env.rules import STANDARD, Rules


@dataclass
class FolderSettings:
    """The run folder, the seed and the rules: what every recipe and every step of one has."""

    out: str = knob("runs/default", "run folder (config, logs, checkpoints, models)")
    seed: int = knob(0, "seed of everything in the run (deals, bots, searches, network init)", low=0)
    rules: Rules = knob(
        STANDARD, "the rules the run trains and evaluates on (a flag per field of conquian_env.rules.Rules)", rules=True
    )

    def standard_rules_only(self, why: str) -> None:
        """Raise ``ValueError`` unless ``rules`` is the standard game (``why``: what knows no variant)."""
        if self.rules != STANDARD:
            on = sorted(k for k, v in self.rules.to_dict().items() if v)
            raise ValueError(f"rules {on}: {why} play the standard game only; leave the rule flags off")


@dataclass
class RunSettings(FolderSettings):
    """The run folder, seed, rules, evaluation and process knobs that every recipe has."""

    eval_games: int = knob(600, "games per evaluation opponent (duplicate deals, seats swapped)", low=1)
    eval_opponents: tuple[str, ...] = knob(("random", "greedy"), "bot specs evaluated against", spec=True)
    eval_seed: int = knob(1_000_003, "deal seed of the evaluations (never used in training)", low=0)
    best_by: str = knob("greedy", "evaluation opponent whose score picks the best model (best.zip or best.npz)")
    torch_threads: int = knob(1, "torch threads in this process (worker processes use numpy only)", low=1)
    workers: int = knob(0, "processes for the recipe's games and evaluations (0: all cores)", low=0)

    @property
    def processes(self) -> int:
        """``workers``, or all cores."""
        return self.workers or os.cpu_count() or 1

    def validate_run(self) -> None:
        """Raise ``ValueError`` naming a shared knob that is wrong (the types and ranges are
        :func:`conquian_arena.knobs.check`'s, which the recipe's ``validate`` calls first)."""
        if self.best_by not in self.eval_opponents:
            raise ValueError(f"best_by {self.best_by!r} must be one of eval_opponents {list(self.eval_opponents)}")
        for spec in self.eval_opponents:
            make_agent(spec, 0)  # a bad spec fails now, not after an hour


def recipe_knobs(config: Any, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """The knobs of ``config`` as data, less ``leave_out``, with the fields of its ``rules`` in place of
    ``rules``, each by its own name: the form a run's recipe hash and its shards' settings have named
    the rules in since before the rules object, so a run started then resumes."""
    data = knobs.to_dict(config)
    rules = data.pop("rules")
    return {**{k: v for k, v in data.items() if k not in leave_out}, **rules}

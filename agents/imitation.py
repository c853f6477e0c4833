"""Moved: imitation learning (the data set, the recording bot and the loss) is training's, in
:mod:`conquian_train.imitation`.  An import from here names the new home (the bots import
nothing of the training package)."""

from __future__ import annotations

from typing import Any

#: the names this module held, all now in :mod:`conquian_train.imitation`
MOVED = ("COLUMNS", "DECISION_PHASES", "ImitationData", "ImitationSettings", "RecordingAgent", "VALUE_LOSSES",
         "fit_imitation")  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in MOVED:
        raise ImportError(f"agents.imitation.{name} moved to conquian_train.imitation: "
                          f"from conquian_train.imitation import {name}")  # fmt: skip
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

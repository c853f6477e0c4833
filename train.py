"""Train a Conquian agent: ``python train.py RECIPE ...`` is ``conquian-train RECIPE ...`` (:mod:`conquian_train.cli`).

Usage::

    python train.py exit --out runs/exit         # expert iteration on the compiled search (make train)
    python train.py ppo --out runs/ppo           # warm start + MaskablePPO self-play (make train-ppo)
    python train.py RECIPE --help                # every knob of a recipe
    python train.py --help                       # the ppo recipe's knobs, as before recipes had names

The older spellings still work: without a recipe it runs ``ppo`` (``python train.py --out X``,
``--resume X``, ``--export MODEL DEST``).  The recipes, their knobs and run folders are in
docs/training.md.
"""

from __future__ import annotations

import sys

from conquian_train.cli import main as cli_main
from conquian_train.ppo import TrainConfig, build_parser, config_from_args, train_ppo

__all__ = ["TrainConfig", "build_parser", "config_from_args", "main", "train"]

#: the PPO recipe's run (:func:`conquian_train.ppo.train_ppo`), under the name it had here
train = train_ppo


def main(argv: list[str] | None = None) -> int:
    """``conquian-train``'s command under the name ``train.py`` (with its older spellings)."""
    return cli_main(sys.argv[1:] if argv is None else argv, prog="train.py", legacy=True)


if __name__ == "__main__":
    sys.exit(main())

"""Train a Conquian agent: ``python train.py RECIPE ...`` is ``conquian-train RECIPE ...`` (:mod:`conquian_train.cli`).

Usage::

    python train.py distill generate --out runs/distill/labels   # the shipped scorer's recipe (make train)
    python train.py exit --out runs/exit         # expert iteration on the compiled search (make train-exit)
    python train.py ppo --out runs/ppo           # warm start + MaskablePPO self-play (make train-ppo)
    python train.py RECIPE --help                # every knob of a recipe
    python train.py --help                       # the recipes

The recipes, their knobs and run folders are in docs/training.md.
"""

from __future__ import annotations

import sys

from conquian_train.cli import main as cli_main

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``conquian-train``'s command under the name ``train.py``."""
    return cli_main(sys.argv[1:] if argv is None else argv, prog="train.py")


if __name__ == "__main__":
    sys.exit(main())

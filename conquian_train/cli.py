"""``conquian-train RECIPE ...``: the one training command (``python train.py RECIPE ...`` is the same).

::

    conquian-train ppo --out runs/ppo               # warm start + MaskablePPO self-play (conquian_train.recipes.ppo)
    conquian-train exit --out runs/exit             # expert iteration on the search (conquian_train.recipes.exit)
    conquian-train belief generate --out runs/belief/train   # the belief model's games, then ``belief fit``
    conquian-train RECIPE --help                    # every knob of a recipe
    conquian-train --help                           # the recipes

The recipes are the modules of :mod:`conquian_train.recipes`, each declaring ``RECIPE``.
The recipe comes first: a command line that starts with a flag (``train.py --out X``, the spelling
of the PPO recipe before recipes had names) is refused in one line naming ``RECIPE``.
"""

from __future__ import annotations

import sys

from conquian_env.extras import MissingExtraError, for_command

from . import recipes


def usage(prog: str) -> str:
    """The command's help: how to call it and every recipe with its line."""
    lines = [f"usage: {prog} RECIPE [options]   ({prog} RECIPE --help: every knob of RECIPE)", "", "recipes:"]
    lines += [f"  {r.name:<8} {r.summary}" if isinstance(r, recipes.Recipe) else f"  {r}" for r in recipes.every()]
    return "\n".join(lines)


def main(argv: list[str] | None = None, *, prog: str = "conquian-train") -> int:
    """Run the recipe named by ``argv[0]`` with the rest of ``argv``; an exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    first = argv[0] if argv else ""
    if first in ("", "-h", "--help"):
        print(usage(prog), file=sys.stdout if first else sys.stderr)
        return 0 if first else 2
    if first.startswith("-"):  # the PPO recipe's spelling before recipes had names: never run as something else
        names = ", ".join(recipes.names())
        print(f"error: {prog} takes the recipe first, {prog} RECIPE {first} ... (recipes: {names}; "
              f"the PPO run is {prog} ppo {first} ...)", file=sys.stderr)  # fmt: skip
        return 2
    try:
        recipe = recipes.find(first)
    except ValueError as err:
        print(f"error: {err}\n\n{usage(prog)}", file=sys.stderr)
        return 2
    except ImportError as err:
        return missing_extra(err, f"{prog} {first}")
    try:
        return recipe.main(argv[1:], f"{prog} {recipe.name}")
    except ImportError as err:
        return missing_extra(err, f"{prog} {recipe.name}")


def missing_extra(err: ImportError, command: str) -> int:
    """A missing extra as one ``error:`` line naming what asked for it and its install line (status 2);
    any other ``ImportError`` (a broken install, a bug) is raised again, with its traceback."""
    told = for_command(err, command)
    if not isinstance(told, MissingExtraError):
        raise err
    print(f"error: {told}", file=sys.stderr)
    return 2


def cli() -> None:
    """The ``conquian-train`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    cli()

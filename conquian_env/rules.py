"""The rules a game is played by: one frozen object, the one place a rule variant lives.

A :class:`Rules` is handed to the game once and travels with it: :class:`~conquian_env.game.GameState`
keeps it (``state.rules``), the batched engine keeps its :attr:`Rules.flags` word in one
kernel-row column, the JAX engine takes it as a static argument, game records and tournament
folders store :meth:`Rules.to_dict`, and the OpenSpiel game's parameters are its fields.
::

    from conquian_env.rules import FORCING, STANDARD, Rules

    env(rules=FORCING)                      # the forcing variant (RULES.md section 7)
    env(forcing=True)                       # the same: any field works as a keyword shortcut
    Rules.from_dict({"forcing": True}) == FORCING

Every field is a bool that is off in the standard game (:data:`STANDARD`); its metadata holds
its help text, which is also its command-line flag's (:func:`add_arguments`).  How to add a
variant, and which files it touches: docs/development.md.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "FLAG_BITS",
    "FORCING",
    "STANDARD",
    "Rules",
    "add_arguments",
    "from_arguments",
    "resolve",
    "rules_of_record",
]


def _variant(help: str) -> Any:  # noqa: A002 - the field's help text
    return field(default=False, metadata={"help": help})


@dataclass(frozen=True)
class Rules:
    """The rule variant of a game (all off: the standard game of RULES.md sections 1-6).

    Frozen and hashable (a JAX static argument, a dict key); compares by its fields.
    """

    forcing: bool = _variant("play the forcing variant (RULES.md section 7)")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{f.name} must be True or False, got {value!r}")
            object.__setattr__(self, f.name, bool(value))  # a numpy bool becomes a plain bool

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @property
    def name(self) -> str:
        """``"standard"``, or the variants that are on joined by ``+`` (``"forcing"``)."""
        on = [n for n in self.field_names() if getattr(self, n)]
        return "+".join(on) if on else "standard"

    def __str__(self) -> str:
        return self.name

    @property
    def flags(self) -> int:
        """The fields as one int, bit :data:`FLAG_BITS` ``[name]`` set when that variant is on
        (the batched engine's ``rules`` column)."""
        return sum(bit for n, bit in FLAG_BITS.items() if getattr(self, n))

    @classmethod
    def from_flags(cls, flags: int) -> Rules:
        """The rules of a :attr:`flags` word; refuses bits no variant uses."""
        if isinstance(flags, (bool, np.bool_)) or not isinstance(flags, (int, np.integer)):
            raise ValueError(f"rules flags must be an integer, got {flags!r}")
        known = sum(FLAG_BITS.values())
        if flags < 0 or flags & ~known:
            raise ValueError(f"rules flags {flags!r} set bits no variant uses (known: {dict(FLAG_BITS)})")
        return cls(**{n: bool(flags & bit) for n, bit in FLAG_BITS.items()})

    def to_dict(self) -> dict[str, bool]:
        return {n: getattr(self, n) for n in self.field_names()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "rules") -> Rules:
        """The rules of a mapping such as :meth:`to_dict` wrote; fields left out are off.
        Unknown keys and values that are not true/false are refused, by name."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where} must be an object of rule fields, got {data!r}")
        unknown = sorted(map(str, set(data) - set(cls.field_names())))
        if unknown:
            raise ValueError(f"{where}: unknown rule(s) {', '.join(unknown)}; known: {', '.join(cls.field_names())}")
        for key, value in data.items():
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{where}: {key} must be true or false, got {value!r}")
        return cls(**data)

    def replace(self, **changes: Any) -> Rules:
        """These rules with some fields changed (each checked as the constructor does)."""
        return dataclasses.replace(self, **changes)


#: the bit of each variant in :attr:`Rules.flags`, in field order
FLAG_BITS: dict[str, int] = {name: 1 << k for k, name in enumerate(Rules.field_names())}
#: the standard game: no variant
STANDARD = Rules()
#: the forcing variant (RULES.md section 7)
FORCING = Rules(forcing=True)


def resolve(rules: Rules | Mapping[str, Any] | None = None, /, **fields: Any) -> Rules:
    """The rules an API was given: ``rules`` (a :class:`Rules`, a mapping of its fields, or
    None for :data:`STANDARD`) or its fields as keywords, the shortcut that ``env(forcing=True)``,
    ``new_game(..., forcing=True)`` and the other public entry points take.  Both at once must
    agree (``rules=FORCING, forcing=False`` is refused: say one thing once); a keyword that is
    not a field is refused by name."""
    given = rules is not None
    if rules is None:
        rules = STANDARD
    elif isinstance(rules, Mapping):
        rules = Rules.from_dict(rules)
    elif not isinstance(rules, Rules):
        raise ValueError(f"rules must be a conquian_env.rules.Rules (or a mapping of its fields), got {rules!r}")
    if not fields:
        return rules
    unknown = sorted(set(fields) - set(Rules.field_names()))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)} (rule fields: {Rules.field_names()})")
    asked = dataclasses.replace(rules, **fields)  # checks the keywords' values
    if given and asked != rules:
        clash = ", ".join(f"{n}={v!r}" for n, v in fields.items() if getattr(rules, n) != v)
        raise ValueError(f"rules={rules!r} and {clash} disagree: give the rules once (rules= or its fields)")
    return asked


def rules_of_record(data: Mapping[str, Any], where: str = "record") -> Rules:
    """The rules a record or tournament config was played by: its ``rules`` object."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where} must be a JSON object, got {type(data).__name__}")
    if "rules" not in data:
        raise ValueError(f"{where}: missing field 'rules'")
    return Rules.from_dict(data["rules"], f"{where}: 'rules'")


class _RuleFlag(argparse.Action):
    """``--FIELD`` (and ``--no-FIELD``) folded into one :class:`Rules` at ``dest``."""

    def __init__(self, option_strings: list[str], dest: str, field_name: str, **kw: Any):
        super().__init__(option_strings, dest, nargs=0, **kw)
        self.field_name = field_name

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: str | None = None):
        on = not (option_string or "").startswith("--no-")
        current = getattr(namespace, self.dest, None) or STANDARD
        setattr(namespace, self.dest, current.replace(**{self.field_name: on}))  # the last flag of a field wins


def add_arguments(
    parser: argparse.ArgumentParser | Any, boolean_optional: bool = False, dest: str | None = None, default: Any = None
) -> None:
    """One flag per rule field (``--forcing``), its help the field's.  ``boolean_optional``
    adds the ``--no-`` form too (the tournament's knobs have it).  With ``dest`` the flags
    gather into one :class:`Rules` there (``default`` when none is given, :data:`STANDARD`
    unless said; ``argparse.SUPPRESS``: absent); without it each field has its own
    (:func:`from_arguments` gathers them)."""
    for f in dataclasses.fields(Rules):
        flags = ["--" + f.name.replace("_", "-")]
        if boolean_optional:
            flags.append("--no-" + f.name.replace("_", "-"))
        if dest is not None:
            parser.add_argument(
                *flags,
                dest=dest,
                action=_RuleFlag,
                field_name=f.name,
                default=STANDARD if default is None else default,
                help=f.metadata["help"],
            )
        elif boolean_optional:
            parser.add_argument(flags[0], dest=f.name, action=argparse.BooleanOptionalAction, help=f.metadata["help"])
        else:
            parser.add_argument(flags[0], dest=f.name, action="store_true", help=f.metadata["help"])


def from_arguments(args: argparse.Namespace) -> Rules:
    """The rules :func:`add_arguments`' flags asked for."""
    return Rules(**{n: bool(getattr(args, n)) for n in Rules.field_names()})

"""Vector layouts, declared once: ordered ``(name, size)`` pieces, every offset derived.

A :class:`Layout` is an ordered list of named pieces that tile a flat vector, as
OpenSpiel's Python games declare their observation tensors.  Everything else is derived
from the pieces: each piece's offset and slice, the vector's size, and a stable
:attr:`Layout.hash` of the names and sizes (not of the descriptions) that model files
carry (:class:`conquian_env.model_layouts.FeatureSet`).  The layouts of the project are declared here:

* :data:`OBSERVATION`: the agent's observation (:mod:`conquian_env.observation` encodes it,
  the batched engine's kernels too);
* :data:`STATE`: the full-information ``state()`` vector (never an agent's input);
* :data:`MELD_FEATURES`: the observation followed by the ``"meld"`` features
  (:mod:`agents.scorer.features` encodes them, and its compiled twin);
* :data:`POTENTIAL`: the observation followed by the meld-potential planes
  (:mod:`conquian_env.potential` encodes them, from a player's view and on the batched engine);
* :data:`KERNEL_ROW`: the columns of a batched-engine row (:mod:`conquian_env.vector`),
  from the fields of :data:`conquian_env.game.FIELDS` in order with the legal-move cache
  before the stock.

Adding an observation feature is a piece here plus one encoder per engine.  numba
compiles module globals into its on-disk cache as constants and invalidates that cache
only when the kernel's own file changes, so the compiled kernels do not read these
layouts at import: :func:`kernel_constants` lists the constants they need, and
``python -m conquian_env.layout --write`` writes them into a generated block of
``conquian_env/kernels.py`` (changing that file, which throws the stale compiled code
away).  ``python -m conquian_env.layout --check`` (and ``tests/test_layout.py``, and
``kernels.py`` itself at import) checks that the block matches this declaration.

Which layout a model file was trained on is :mod:`conquian_env.model_layouts`'s.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .actions import NUM_ACTIONS
from .cards import NUM_CARDS
from .game import FIELD_WIDTH, FIELDS, STOCK, STOCK_SIZE
from .rules import FLAG_BITS, Rules

_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


@dataclass(frozen=True)
class Piece:
    """One named part of a vector: ``size`` consecutive slots; ``doc`` says what they hold."""

    name: str
    size: int
    doc: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"a layout piece's name is a lower-case identifier (a-z, 0-9, _), got {self.name!r}")
        if isinstance(self.size, bool) or not isinstance(self.size, Integral) or self.size < 1:
            raise ValueError(f"layout piece {self.name!r}: size must be a positive int, got {self.size!r}")
        object.__setattr__(self, "size", int(self.size))  # a numpy integer becomes a plain int
        if not isinstance(self.doc, str):
            raise ValueError(f"layout piece {self.name!r}: doc must be a str, got {type(self.doc).__name__}")


class Layout:
    """An ordered list of :class:`Piece` tiling a flat vector, with no gap or overlap.

    ``Layout("observation", [("own_hand", 40, "own hand"), ...])``: pieces as ``Piece`` or
    ``(name, size)`` / ``(name, size, doc)`` tuples, names unique.  Read it with
    :attr:`size`, :meth:`offset`, :meth:`slice`, :attr:`offsets`, :meth:`rows`; it is
    immutable and compares (and hashes) by its pieces' names and sizes.
    """

    def __init__(self, name: str, pieces: Iterable[Piece | Sequence[Any]]):
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"a layout's name is a lower-case identifier, got {name!r}")
        built = tuple(p if isinstance(p, Piece) else Piece(*p) for p in pieces)
        if not built:
            raise ValueError(f"layout {name!r} needs at least one piece")
        seen: set[str] = set()
        offsets: dict[str, int] = {}
        at = 0
        for piece in built:
            if piece.name in seen:
                raise ValueError(f"layout {name!r} names the piece {piece.name!r} twice")
            seen.add(piece.name)
            offsets[piece.name] = at
            at += piece.size
        self._name = name
        self._pieces = built
        self._offsets = MappingProxyType(offsets)
        self._by_name = MappingProxyType({p.name: p for p in built})
        self._size = at
        text = ";".join(f"{p.name}:{p.size}" for p in built)
        self._hash = hashlib.sha256(text.encode("ascii")).hexdigest()[:16]

    @property
    def name(self) -> str:
        """What the vector is (``"observation"``, ``"meld"``, ...); not part of :attr:`hash`."""
        return self._name

    @property
    def pieces(self) -> tuple[Piece, ...]:
        return self._pieces

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self._pieces)

    @property
    def size(self) -> int:
        """Length of the vector: the sum of the pieces' sizes."""
        return self._size

    @property
    def offsets(self) -> Mapping[str, int]:
        """First slot of each piece, by name (read-only)."""
        return self._offsets

    @property
    def hash(self) -> str:
        """16 hex digits of SHA-256 over the pieces' names and sizes in order: it changes when
        a piece is added, removed, renamed, resized or moved, and not when a ``doc`` is reworded."""
        return self._hash

    def piece(self, name: str) -> Piece:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"layout {self._name!r} has no piece {name!r}; it has {', '.join(self.names)}") from None

    def offset(self, name: str) -> int:
        """First slot of the piece ``name``."""
        self.piece(name)
        return self._offsets[name]

    def slice(self, name: str) -> slice:
        """``vector[layout.slice(name)]`` is the piece ``name``."""
        start = self.offset(name)
        return slice(start, start + self._by_name[name].size)

    def rows(self) -> tuple[tuple[str, int, int, str], ...]:
        """``(name, start, size, doc)`` of each piece, in order (a table for docs and tests)."""
        return tuple((p.name, self._offsets[p.name], p.size, p.doc) for p in self._pieces)

    def extend(self, name: str, pieces: Iterable[Piece | Sequence[Any]]) -> Layout:
        """A new layout ``name``: this one's pieces followed by ``pieces``."""
        return Layout(name, (*self._pieces, *pieces))

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its pieces: the read-only mappings it keeps cannot be pickled, and a bot
        # that holds a layout is handed to worker processes (spawn) by pickle
        return (Layout, (self._name, self._pieces))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return [(p.name, p.size) for p in self._pieces] == [(p.name, p.size) for p in other._pieces]

    def __hash__(self) -> int:
        return hash(self._hash)

    def __repr__(self) -> str:
        return f"Layout({self._name!r}, {len(self._pieces)} pieces, size {self._size}, hash {self._hash})"


# ---------------------------------------------------------------- the layouts
def rule_pieces() -> list[Piece]:
    """One 1-wide piece per field of :class:`~conquian_env.rules.Rules`, named after the field,
    in field order (1 when that variant is on; its doc the field's help text).  The observation
    and the state vector hold them together, so a new variant adds its piece with no edit here
    (and moves the pieces after them: the state's ``winner``)."""
    return [Piece(f.name, 1, f"1 when the variant is on: {f.metadata['help']}") for f in dataclasses.fields(Rules)]


#: the agent's observation (conquian_env.observation; the kernels' encoder)
OBSERVATION = Layout(
    "observation",
    [
        ("own_hand", NUM_CARDS, "own hand (cards still held, including those being laid in a meld)"),
        ("own_meld", NUM_CARDS, "own meld on the table"),
        ("opponent_meld", NUM_CARDS, "opponent's meld on the table"),
        ("face_up", NUM_CARDS, "the face-up card (all zero when there is none)"),
        ("dead", NUM_CARDS, "the dead pile (refused cards, public)"),
        ("pending_meld", NUM_CARDS, "cards laid so far in the meld being made (by whoever is melding)"),
        ("opponent_discards", NUM_CARDS, "cards the opponent discarded (this game)"),
        ("opponent_refusals", NUM_CARDS, "cards the opponent refused (this game)"),
        ("own_discards", NUM_CARDS, "cards the observing player discarded"),
        ("own_refusals", NUM_CARDS, "cards the observing player refused"),
        ("stock_size", STOCK_SIZE, "stock size, thermometer"),
        ("own_hand_size", 11, "own hand size, one-hot 0..10"),
        ("opponent_hand_size", 11, "opponent's hand size, one-hot 0..10"),
        ("phase", 6, "my offer / my meld / my discard / my force / opponent to move / over"),
        ("source", 5, "none / turned by me / turned by opp / discarded by me / discarded by opp"),
        ("passed", 1, "turned card already refused by its turner"),
        ("forced", 1, "the meld being made is a forced take"),
        *rule_pieces(),
    ],
)

#: the full-information state vector of ``env.state()`` (both hands, the stock order)
STATE = Layout(
    "state",
    [
        ("hand_0", NUM_CARDS),
        ("hand_1", NUM_CARDS),
        ("meld_0", NUM_CARDS),
        ("meld_1", NUM_CARDS),
        ("face_up", NUM_CARDS),
        ("dead", NUM_CARDS),
        ("pending_meld", NUM_CARDS),
        ("discards_0", NUM_CARDS),
        ("discards_1", NUM_CARDS),
        ("refusals_0", NUM_CARDS),
        ("refusals_1", NUM_CARDS),
        ("stock_position", NUM_CARDS, "1 = top of the stock ... 20; 0 = not in the stock"),
        ("player_to_move", 2),
        ("phase", 5, "offer, meld, discard, force, over"),
        ("source", 3, "none, turned, discarded"),
        ("owner", 2),
        ("passed", 1),
        ("forced", 1),
        *rule_pieces(),
        ("winner", 2),
    ],
)

#: the observation followed by the "meld" features (agents.scorer.features; float32)
MELD_FEATURES = OBSERVATION.extend(
    "meld",
    [
        ("live", NUM_CARDS, "live cards: not seen by the player (opponent's hidden hand or stock)"),
        ("fits_own_meld", NUM_CARDS, "cards that fit the player's own meld with no hand card"),
        ("fits_opponent_meld", NUM_CARDS, "cards that fit the opponent's meld with no hand card"),
        ("hand_quality", NUM_CARDS, "quality of each hand card (the greedy evaluation)"),
        ("combines_with_hand", NUM_CARDS, "cards not held that make a 3-card set or run with hand cards"),
        ("winning_cards", NUM_CARDS, "live cards that would let hand + meld split into melds"),
        ("discard_value", NUM_CARDS, "discard phase: each hand card's greedy value, relative to the best"),
        ("lay_plan", NUM_CARDS, "meld phase: the hand cards of the greedy lay-down plan still to lay"),
        ("greedy_action", NUM_ACTIONS, "the greedy bot's choice, one-hot"),
        ("scalars", 4, "take margin, take possible, hand evaluation, winning cards"),
    ],
)


#: the observation followed by the meld-potential planes (conquian_env.potential; int8 0/1): facts of the
#: player's own view about which cards make or extend melds, never a bot's evaluation or choice
POTENTIAL = OBSERVATION.extend(
    "potential",
    [
        ("live", NUM_CARDS, "cards the player has not seen: the opponent's hidden hand or the stock"),
        ("fits_own_meld", NUM_CARDS, "cards not held that extend the player's own meld on their own"),
        ("fits_opponent_meld", NUM_CARDS, "cards not in the opponent's meld that extend it on their own"),
        ("hand_complete", NUM_CARDS, "hand cards in a 3-card set or run with held cards, or extending the own meld"),
        ("hand_partial", NUM_CARDS, "other hand cards with one partner of a 3-card set or run held and the other live"),
        ("combines_complete", NUM_CARDS, "cards not held that make a 3-card set or run with two hand cards"),
        ("combines_partial", NUM_CARDS, "other cards not held with one partner in the hand and the other live"),
        ("winning_cards", NUM_CARDS, "live cards with which hand and meld would split into melds"),
        ("opponent_could_meld", NUM_CARDS, "cards with both partners of a 3-card set or run live"),
        ("discard_leaves_outs", NUM_CARDS, "hand cards whose discard leaves at least one winning card"),
        ("discard_leaves_outs3", NUM_CARDS, "hand cards whose discard leaves at least three winning cards"),
        ("discard_leaves_outs2", NUM_CARDS, "hand cards whose discard leaves at least two winning cards"),
        ("discard_leaves_outs5", NUM_CARDS, "hand cards whose discard leaves at least five winning cards"),
        ("discard_keeps_complete", NUM_CARDS, "hand cards whose discard leaves every other complete card complete"),
        (
            "discard_keeps_combinations",
            NUM_CARDS,
            "hand cards whose discard leaves every other complete or partial card complete or partial",
        ),
        (
            "discard_keeps_combines",
            NUM_CARDS,
            "hand cards whose discard leaves every card that completes a combination",
        ),
        ("discard_keeps_near", NUM_CARDS, "hand cards whose discard leaves every card that nearly completes one"),
    ],
)


def _kernel_row() -> Layout:
    pieces = []
    for field in FIELDS:
        if field.kind == STOCK:
            pieces.append(("legal_cards", 1, "legal meld ids or discard cards"))
            pieces.append(("legal_other", 1, "bit k: action 80 + k"))
        pieces.append((field.name, FIELD_WIDTH[field.kind]))
    return Layout("kernel_row", pieces)


#: the columns of one game's row in the batched engine (conquian_env.vector.VectorGame.state)
KERNEL_ROW = _kernel_row()


# ---------------------------------------------------------------- the kernels' constants
def kernel_constants() -> dict[str, int]:
    """The layout constants the compiled kernels (``conquian_env/kernels.py``) need, in order:
    the row's columns (``H0`` ... ``STOCK0``, ``NUM_COLUMNS``), the bits of the ``RULES`` column
    (``RULE_FORCING`` ..., :data:`conquian_env.rules.FLAG_BITS`) and the observation's offsets
    (``OBS_SIZE``, ``O_OWN_MELD`` ...; the rule pieces as one run: ``O_RULES``, ``N_RULES``)."""
    row, obs = KERNEL_ROW.offsets, OBSERVATION.offsets
    rules = Rules.field_names()
    # the encoder sets slot O_RULES + k from bit k of the RULES column: field k's piece and flag
    if not all(obs[name] == obs[rules[0]] + k and FLAG_BITS[name] == 1 << k for k, name in enumerate(rules)):
        raise ValueError("the observation's rule pieces must lie together in field order, field k's flag bit k")
    return {
        "H0": row["hands"],
        "H1": row["hands"] + 1,
        "M0": row["melds"],
        "M1": row["melds"] + 1,
        "DI0": row["discards"],
        "DI1": row["discards"] + 1,
        "RF0": row["refusals"],
        "RF1": row["refusals"] + 1,
        "DEAD": row["dead"],
        "CHOSEN": row["chosen"],
        "FACE": row["face_up"],
        "SOURCE": row["source"],
        "OWNER": row["owner"],
        "PASSED": row["passed"],
        "PLAYER": row["player"],
        "PHASE": row["phase"],
        "WINNER": row["winner"],
        "FORCED": row["forced"],
        "RULES": row["rules"],
        **{"RULE_" + name.upper(): bit for name, bit in FLAG_BITS.items()},  # the bits of RULES
        "MOVES": row["move_count"],
        "SPOS": row["stock_pos"],
        "LCARDS": row["legal_cards"],
        "LMISC": row["legal_other"],
        "STOCK0": row["stock"],
        "NUM_COLUMNS": KERNEL_ROW.size,
        "OBS_SIZE": OBSERVATION.size,
        "O_OWN_HAND": obs["own_hand"],
        "O_OWN_MELD": obs["own_meld"],
        "O_OPP_MELD": obs["opponent_meld"],
        "O_FACE": obs["face_up"],
        "O_DEAD": obs["dead"],
        "O_PENDING": obs["pending_meld"],
        "O_OPP_DISC": obs["opponent_discards"],
        "O_OPP_REF": obs["opponent_refusals"],
        "O_OWN_DISC": obs["own_discards"],
        "O_OWN_REF": obs["own_refusals"],
        "O_STOCK": obs["stock_size"],
        "O_OWN_SIZE": obs["own_hand_size"],
        "O_OPP_SIZE": obs["opponent_hand_size"],
        "O_PHASE": obs["phase"],
        "O_SOURCE": obs["source"],
        "O_PASSED": obs["passed"],
        "O_FORCED": obs["forced"],
        "O_RULES": obs[rules[0]],
        "N_RULES": len(rules),
    }


#: the lines that open and close the generated block in conquian_env/kernels.py
GENERATED_BEGIN = "# ---- generated by `python -m conquian_env.layout --write` from conquian_env/layout.py: do not edit"
GENERATED_END = "# ---- end of the generated layout constants"
#: the kernels' source file that holds the generated block
KERNELS_FILE = Path(__file__).with_name("kernels.py")


def generated_block() -> str:
    """The text of the generated block (its opening and closing lines included)."""
    lines = [GENERATED_BEGIN, f"# layouts: kernel_row {KERNEL_ROW.hash}, observation {OBSERVATION.hash}"]
    lines += [f"{name} = {value}" for name, value in kernel_constants().items()]
    lines.append(GENERATED_END)
    return "\n".join(lines) + "\n"


def _split(text: str, path: Path) -> tuple[str, str, str]:
    begin, end = text.find(GENERATED_BEGIN), text.find(GENERATED_END)
    if begin < 0 or end < begin:
        raise ValueError(f"{path} has no generated layout block (the lines {GENERATED_BEGIN!r} ... {GENERATED_END!r})")
    stop = text.index("\n", end) + 1
    return text[:begin], text[begin:stop], text[stop:]


def check_generated(path: Path = KERNELS_FILE) -> bool:
    """Whether ``path``'s generated block is :func:`generated_block`."""
    return _split(path.read_text(encoding="utf-8"), path)[1] == generated_block()


def write_generated(path: Path = KERNELS_FILE) -> bool:
    """Rewrite ``path``'s generated block from the layouts; True when it changed."""
    text = path.read_text(encoding="utf-8")
    head, block, tail = _split(text, path)
    if block == generated_block():
        return False
    path.write_text(head + generated_block() + tail, encoding="utf-8")
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conquian_env.layout",
        description="Check or rewrite the layout constants generated into conquian_env/kernels.py.",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the block (default: only check it)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the block is out of date (the default)")
    args = parser.parse_args(argv)
    if args.write:
        changed = write_generated()
        print(f"{KERNELS_FILE}: {'rewritten' if changed else 'already up to date'}")
        return 0
    if check_generated():
        print(f"{KERNELS_FILE}: the generated layout constants match conquian_env/layout.py")
        return 0
    print(f"{KERNELS_FILE}: out of date: run python -m conquian_env.layout --write", file=sys.stderr)
    return 1


__all__ = [
    "KERNEL_ROW",
    "MELD_FEATURES",
    "OBSERVATION",
    "POTENTIAL",
    "STATE",
    "Layout",
    "Piece",
    "check_generated",
    "generated_block",
    "kernel_constants",
    "write_generated",
]

if __name__ == "__main__":
    raise SystemExit(main())

"""Fuzzing the resume of a tournament: random fields of random lines of a real games.jsonl are
changed, and no changed line may be kept (:func:`conquian_arena.game_lines.load_games`).

Every mutation changes what a line says; those of the timings (``think_time``,
``max_think``) are impossible values only, since measured seconds can be checked for
their range but not replayed.  Each round asserts that the resume does not raise, that
every kept line is byte for byte the original line of its game, that every game whose
line was left alone is kept, and that every changed line is in ``games.rejected.txt``
with its line number.  The default test runs a few seconds; the ``slow`` one is bigger.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.base import Agent
from conquian_arena import game_lines, runfiles, schedule, tournament
from conquian_arena.game_lines import ResumeWarning
from conquian_arena.record import RecordedGame, replay_states
from conquian_arena.tournament import run_tournament
from tests.test_evaluate import signed_as_the_run

HERE = "python:tests.test_resume_fuzz"
QUICK = {"bootstrap": 20, "plot": False, "progress": False, "html": False}


class FirstBot(Agent):
    name = "first"

    def act(self, observation, action_mask, view):
        return int(np.flatnonzero(action_mask)[0])


class CrashLaterBot(Agent):
    """Plays its lowest legal move, and crashes on its fifth decision: failure lines with moves."""

    name = "crash-later"

    def reset(self, player, seed=None):
        self.turns = 0

    def act(self, observation, action_mask, view):
        self.turns += 1
        if self.turns == 5:
            raise RuntimeError("fifth decision")
        return int(np.flatnonzero(action_mask)[0])


class IllegalBot(Agent):
    name = "illegal"

    def act(self, observation, action_mask, view):
        return int(np.flatnonzero(action_mask == 0)[0])


SPECS = ["random", f"{HERE}:FirstBot", f"{HERE}:CrashLaterBot", f"{HERE}:IllegalBot"]

# --------------------------------------------------------------------------- mutations

JUNK: list[Any] = [None, True, False, 0, 1, -1, 1.5, 2**70, "", "x", [], {}, [0], [0, 0], [None, None], {"a": 1}]
BAD_SECONDS: list[Any] = [math.nan, math.inf, -math.inf, -1.0, -5, 1e300, 86401.0, "0.1", True, None, [0.1]]
TIMING = ("think_time", "max_think")


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _forged_forfeit(obj: dict[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """``obj`` cut to a random number of moves and made a forfeit, consistent in every field the
    rules alone can check: the issue's forged crash."""
    if len(obj["actions"]) < 2:
        return None
    cut = rng.randrange(0, len(obj["actions"]))
    out = json.loads(json.dumps(obj))
    out["actions"] = out["actions"][:cut]
    states, _ = replay_states(RecordedGame(0, 0, out))
    if states[-1].is_terminal():
        return None
    seat = rng.randrange(2)
    movers = [s.player for s in states[:-1]]
    out["failure"] = {
        "seat": seat,
        "kind": rng.choice(["crash", "illegal", "quit"]),
        "message": rng.choice(["RuntimeError: boom", "resigned", (obj["failure"] or {}).get("message", "x")]),
    }
    out["winner"], out["winner_label"], out["moves"] = 1 - seat, out["seats"][1 - seat], cut
    out["decisions"] = [movers.count(s) + (s == seat) for s in (0, 1)]
    out["think_time"] = [0.001 * d for d in out["decisions"]]
    out["max_think"] = [0.001 if d else 0.0 for d in out["decisions"]]
    return out


def _mutate_value(value: Any, rng: random.Random) -> Any:
    """Another value for a field: junk, a near miss of the same type, or an edited list."""
    choice = rng.random()
    if choice < 0.3:
        return rng.choice(JUNK)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, float(value), str(value), value == 1, -value - 1])
    if isinstance(value, float):
        return rng.choice([int(value) if value.is_integer() else value * 2 + 1, str(value)])
    if isinstance(value, str):
        if not value:
            return "x"
        i = rng.randrange(len(value))
        flipped = value[:i] + chr(ord(value[i]) ^ 1) + value[i + 1 :]
        cased = value.upper() if value != value.upper() else value.lower() + "x"
        return rng.choice([cased, value[:i], value + " ", value[:i] + "\x1b" + value[i:], flipped])
    if isinstance(value, list):
        if not value:
            return [0]
        edited = list(value)
        i, j = rng.randrange(len(edited)), rng.randrange(len(edited))
        op = rng.randrange(6)
        if op == 0:
            del edited[i]
        elif op == 1:
            edited.insert(i, edited[j])
        elif op == 2:
            edited[i], edited[j] = edited[j], edited[i]
        elif op == 3:
            edited[i] = _mutate_value(edited[i], rng)
        elif op == 4:
            edited = edited[: rng.randrange(len(edited))]
        else:
            edited.append(rng.choice(["take", "refuse", "discard KS", 0, "x"]))
        return edited
    if isinstance(value, dict):
        edited = dict(value)
        key = rng.choice(sorted(edited)) if edited else "seat"
        if rng.random() < 0.3:
            edited.pop(key, None)
        else:
            edited[key] = _mutate_value(edited.get(key), rng)
        return edited
    return rng.choice(JUNK)


def _bad_timing(obj: dict[str, Any], key: str, rng: random.Random) -> Any:
    """An impossible ``think_time`` or ``max_think``: a bad number, a bad shape, or one that
    contradicts the other timing or the decision count."""
    value = list(obj[key])
    seat = rng.randrange(2)
    op = rng.randrange(3)
    if op == 0:
        value[seat] = rng.choice(BAD_SECONDS)
    elif op == 1:
        value = rng.choice([value[:1], value + [0.0], "x", None, {"0": 1.0}])
    elif key == "max_think":
        value[seat] = obj["think_time"][seat] * 2 + 1.0  # longer than the whole
    else:
        value[seat] = obj["max_think"][seat] * obj["decisions"][seat] + 1.0  # more than decisions x longest
    return value


def mutate_line(line: str, rng: random.Random) -> tuple[str, str]:
    """A changed version of ``line`` and what was done (for the failure message)."""
    obj = json.loads(line)
    for _ in range(100):
        op = rng.random()
        if op < 0.05:
            cut = rng.randrange(1, len(line))
            return line[:cut], f"cut at byte {cut}"
        if op < 0.08:
            key = rng.choice(sorted(obj))
            return line[:-1] + f", {json.dumps(key)}: {json.dumps(obj[key])}}}", f"repeated key {key}"
        if op < 0.10:
            return "[" * 3000 + "]" * 3000, "deep nesting"
        if op < 0.18:
            forged = _forged_forfeit(obj, rng)
            if forged is None:
                continue
            what = f"forged {forged['failure']['kind']} after {forged['moves']} moves"
        elif op < 0.22:
            forged = dict(obj, **{rng.choice(["comment", "extra", "Index"]): rng.choice(JUNK)})
            what = "unknown field"
        elif op < 0.26:
            key = rng.choice(sorted(obj))
            forged = {k: v for k, v in obj.items() if k != key}
            what = f"deleted {key}"
        else:
            key = rng.choice(sorted(obj))
            forged = dict(obj)
            forged[key] = _bad_timing(obj, key, rng) if key in TIMING else _mutate_value(obj[key], rng)
            what = f"{key}: {_canon(obj[key])[:60]} -> {_canon(forged[key])[:60]}"
        if _canon(forged) != _canon(obj):
            return json.dumps(forged), what
    raise AssertionError("no mutation found")


# --------------------------------------------------------------------------- the fuzz


def _played(folder: Path, games: int, seed: int) -> tuple[list[str], dict[str, Any]]:
    run_tournament(SPECS, games=games, seed=seed, out=folder, jobs=1, **QUICK)
    config = tournament.config_from_data(json.loads((folder / "config.json").read_text()))
    lines = (folder / "games.jsonl").read_text().splitlines()
    assert any(json.loads(x)["failure"] for x in lines) and any(not json.loads(x)["failure"] for x in lines)
    assert any(json.loads(x)["failure"] and json.loads(x)["moves"] > 4 for x in lines)  # failures mid-game too
    return lines, config


def fuzz(tmp_path: Path, rounds: int, games: int, seed: int) -> int:
    """``rounds`` resumes of a copy of a played tournament, each with 1 to 3 changed lines."""
    original, config = _played(tmp_path / "played", games, seed)
    by_index = {json.loads(x)["index"]: x for x in original}
    names = schedule.bot_names(config)
    rng = random.Random(seed)
    changed_total = 0
    for round_no in range(rounds):
        folder = tmp_path / f"round{round_no}"
        folder.mkdir()
        for name in ("config.json", runfiles.KEY_FILE):
            shutil.copy(tmp_path / "played" / name, folder / name)
        lines = list(original)
        rng.shuffle(lines)  # games are written as they end, in any order
        changed: dict[int, str] = {}
        for i in rng.sample(range(len(lines)), rng.randint(1, 3)):
            lines[i], changed[i] = mutate_line(lines[i], rng)
            # signed with the run's key (an editor who holds it), so the checks behind the key are what is fuzzed
            lines[i] = signed_as_the_run(folder, lines[i])
        (folder / "games.jsonl").write_text("".join(x + "\n" for x in lines))
        where = f"round {round_no} (seed {seed}): " + "; ".join(f"line {i + 1}: {w}" for i, w in changed.items())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResumeWarning)
            good = game_lines.load_games(folder / "games.jsonl", config, names)
        kept = (folder / "games.jsonl").read_text().splitlines()
        # nothing changed is kept: every kept line is its game's original, byte for byte
        assert all(by_index[json.loads(x)["index"]] == x for x in kept), where
        assert all(lines[i] not in kept for i in changed if lines[i] not in original), where
        assert sorted(g["index"] for g in good.values()) == sorted(json.loads(x)["index"] for x in kept), where
        # no genuine game is lost: every line left alone is kept (a changed line that is a
        # byte-identical copy of an original stands for that game)
        untouched = {json.loads(lines[i])["index"] for i in range(len(lines)) if i not in changed}
        assert untouched <= {json.loads(x)["index"] for x in kept}, where
        # every changed line is set aside with its line number and a reason, once
        rejected = (folder / "games.rejected.txt").read_text().splitlines()
        for i in changed:
            if lines[i] not in original:
                assert any(r.startswith(f"line {i + 1}\t") and r.endswith("\t" + lines[i]) for r in rejected), where
        assert len(rejected) == len(caught) == len(lines) - len(kept), where
        changed_total += len(changed)
    return changed_total


def test_resume_fuzz_keeps_no_changed_line(tmp_path):
    assert fuzz(tmp_path, rounds=40, games=4, seed=1) >= 40


@pytest.mark.slow
def test_resume_fuzz_keeps_no_changed_line_bigger(tmp_path):
    assert fuzz(tmp_path, rounds=600, games=10, seed=2) >= 600


def test_the_fuzzed_resume_plays_the_set_aside_games_again(tmp_path):
    """A whole resume after changed lines: the summary and the games are the uninterrupted ones."""
    reference = run_tournament(SPECS, games=4, seed=3, out=tmp_path / "ref", jobs=1, **QUICK)
    out = tmp_path / "cut"
    shutil.copytree(tmp_path / "ref", out)
    rng = random.Random(3)
    path = out / "games.jsonl"
    lines = path.read_text().splitlines()
    for i in rng.sample(range(len(lines)), 5):
        lines[i], _ = mutate_line(lines[i], rng)
    path.write_text("".join(x + "\n" for x in lines))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResumeWarning)
        resumed = run_tournament(SPECS, games=4, seed=3, out=out, jobs=1, **QUICK)

    def games(folder):
        rows = [json.loads(x) for x in (folder / "games.jsonl").read_text().splitlines()]
        # the check signs the timings too, which a game played again does not repeat
        return sorted(
            ({k: v for k, v in g.items() if k not in TIMING and k != runfiles.CHECK_FIELD} for g in rows),
            key=lambda g: g["index"],
        )

    assert games(out) == games(tmp_path / "ref")
    drop = ("timing", "out_dir")
    assert {k: v for k, v in resumed.items() if k not in drop} == {k: v for k, v in reference.items() if k not in drop}

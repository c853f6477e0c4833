"""The rules object (:mod:`conquian_env.rules`): one frozen value that says which rule variant a
game is played by, and the files written before it (a ``forcing`` flag) that must still load."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import conquian_env
from conquian_arena import runfiles
from conquian_arena.game_lines import ResumeWarning
from conquian_arena.match import deal_for_seed, play_game
from conquian_arena.record import GameRecord, check_record, load_records, replay_states
from conquian_arena.tournament import TournamentConfig, run_tournament
from conquian_env.game import new_game
from conquian_env.rules import (
    FLAG_BITS,
    FORCING,
    STANDARD,
    Rules,
    add_arguments,
    from_arguments,
    resolve,
    rules_of_record,
)
from conquian_env.wrappers import SingleAgentEnv

QUICK = {"bootstrap": 20, "plot": False, "progress": False}
#: every Rules there is (each field on or off)
EVERY = [
    Rules(**dict(zip(Rules.field_names(), on, strict=True)))
    for on in itertools.product((False, True), repeat=len(Rules.field_names()))
]


# --------------------------------------------------------------------------- the value


def test_rules_are_frozen_hashable_and_compare_by_their_fields():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FORCING.forcing = False  # type: ignore[misc]
    assert Rules() == STANDARD and Rules(forcing=True) == FORCING and STANDARD != FORCING
    assert len({Rules(), STANDARD, Rules(forcing=True), FORCING}) == 2  # a dict key, a JAX static argument
    assert hash(Rules(forcing=True)) == hash(FORCING)
    assert (STANDARD.name, FORCING.name, str(FORCING)) == ("standard", "forcing", "forcing")
    numpy_bool = Rules(forcing=np.bool_(True))
    assert numpy_bool == FORCING and type(numpy_bool.forcing) is bool  # a numpy bool becomes a plain one
    assert FORCING.replace(forcing=False) == STANDARD and FORCING.forcing  # replace makes a new one


@pytest.mark.parametrize("bad", [1, 0, "yes", "false", None, 1.0, [True]])
def test_a_rule_field_that_is_not_a_bool_is_refused_by_name(bad):
    # bool("false") is True: a string taken as a flag would turn the variant on
    with pytest.raises(ValueError, match=r"forcing must be True or False, got"):
        Rules(forcing=bad)
    with pytest.raises(ValueError, match=r"rules: forcing must be true or false"):
        Rules.from_dict({"forcing": bad})
    with pytest.raises(ValueError, match="forcing"):
        FORCING.replace(forcing=bad)


def test_to_dict_and_from_dict_round_trip_every_rules():
    for rules in EVERY:
        data = rules.to_dict()
        assert list(data) == list(Rules.field_names()) and all(type(v) is bool for v in data.values())
        assert Rules.from_dict(data) == rules
        assert Rules.from_dict(json.loads(json.dumps(data))) == rules  # as a file holds it
    assert Rules.from_dict({}) == STANDARD  # a field left out is off


def test_from_dict_refuses_unknown_keys_and_non_objects_by_name():
    with pytest.raises(ValueError, match=r"where: unknown rule\(s\) jokers; known: forcing"):
        Rules.from_dict({"forcing": True, "jokers": True}, "where")
    for bad in (True, ["forcing"], "forcing", None, 1):
        with pytest.raises(ValueError, match="rules must be an object of rule fields"):
            Rules.from_dict(bad)  # type: ignore[arg-type]


def test_flags_round_trip_and_unknown_bits_are_refused():
    bits = list(FLAG_BITS.values())
    assert list(FLAG_BITS) == list(Rules.field_names())
    assert all(b > 0 and b & (b - 1) == 0 for b in bits) and len(set(bits)) == len(bits)  # one bit each
    for rules in EVERY:
        assert Rules.from_flags(rules.flags) == rules
        assert Rules.from_flags(np.int64(rules.flags)) == rules  # as a kernel row holds it
    assert (STANDARD.flags, FORCING.flags) == (0, 1)
    for bad in (1 << len(bits), -1, sum(bits) + (1 << 10)):
        with pytest.raises(ValueError, match="set bits no variant uses"):
            Rules.from_flags(bad)
    for bad in (True, 1.0, "1", None):
        with pytest.raises(ValueError, match="rules flags must be an integer"):
            Rules.from_flags(bad)  # type: ignore[arg-type]


def test_the_kernel_row_reads_the_same_flag_bits():
    pytest.importorskip("numba")
    from conquian_env import kernels as K

    assert K.RULE_FORCING == FLAG_BITS["forcing"]


# --------------------------------------------------------------------------- resolve: rules= or its fields


def test_resolve_takes_rules_a_mapping_or_the_field_keywords():
    assert resolve() == resolve(None) == STANDARD
    assert resolve(FORCING) is FORCING
    assert resolve({"forcing": True}) == resolve(forcing=True) == resolve(forcing=np.bool_(True)) == FORCING
    assert resolve(FORCING, forcing=True) == FORCING  # both, agreeing
    assert resolve(None, forcing=False) == STANDARD


def test_resolve_refuses_rules_and_a_keyword_that_disagree():
    with pytest.raises(ValueError, match=r"forcing=False disagree: give the rules once"):
        resolve(FORCING, forcing=False)
    with pytest.raises(ValueError, match=r"forcing=True disagree"):
        resolve({"forcing": False}, forcing=True)
    # through the public entry points
    with pytest.raises(ValueError, match="disagree"):
        conquian_env.env(rules=STANDARD, forcing=True)
    with pytest.raises(ValueError, match="disagree"):
        new_game(0, rules=FORCING, forcing=False)
    with pytest.raises(ValueError, match="disagree"):
        SingleAgentEnv(rules=FORCING, forcing=False)


def test_resolve_refuses_unknown_keywords_bad_values_and_non_rules():
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) forcin "):
        resolve(forcin=True)
    with pytest.raises(TypeError, match="forcin"):
        conquian_env.env(forcin=True)
    with pytest.raises(ValueError, match="forcing must be True or False, got 'no'"):
        resolve(forcing="no")
    for bad in (True, "forcing", 1):
        with pytest.raises(ValueError, match="rules must be a conquian_env.rules.Rules"):
            resolve(bad)  # type: ignore[arg-type]


def test_the_forcing_keyword_is_a_shortcut_for_the_rules_object():
    env = conquian_env.env(forcing=True)
    assert env.unwrapped.rules == FORCING and env.unwrapped.rules.forcing is True
    env.reset(seed=1)
    assert env.unwrapped.game.rules == FORCING and env.unwrapped.game.rules.forcing is True
    with pytest.raises(AttributeError):
        env.unwrapped.rules.forcing = False  # read-only: the rules are set once, at construction
    assert new_game(3, forcing=True).to_dict() == new_game(3, rules=FORCING).to_dict()


def test_add_arguments_makes_one_flag_per_field():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert from_arguments(parser.parse_args([])) == STANDARD
    assert from_arguments(parser.parse_args(["--forcing"])) == FORCING
    both = argparse.ArgumentParser()
    add_arguments(both, boolean_optional=True, dest="rules")
    assert both.parse_args([]).rules == STANDARD
    assert both.parse_args(["--forcing"]).rules == FORCING
    assert both.parse_args(["--forcing", "--no-forcing"]).rules == STANDARD  # the last flag wins
    assert "play the forcing variant" in both.format_help()


# --------------------------------------------------------------------------- records and folders


def _a_record(forcing: bool, seed: int = 4) -> GameRecord:
    hands, stock = deal_for_seed(seed)
    from agents.registry import make_agent

    bots = [make_agent("greedy", 1), make_agent("random", 2)]
    return play_game(bots, hands=hands, stock=stock, rules=Rules(forcing=forcing))


def test_a_record_reads_its_rules_object_and_nothing_else():
    assert rules_of_record({"rules": {"forcing": True}}) == FORCING and rules_of_record({"rules": {}}) == STANDARD
    with pytest.raises(ValueError, match="record: missing field 'rules'"):
        rules_of_record({"first": 0, "forcing": True})  # a bare flag is not the rules
    with pytest.raises(ValueError, match="forcing must be true or false"):
        rules_of_record({"rules": {"forcing": "yes"}})


def test_a_record_without_rules_or_with_bad_ones_is_reported_not_guessed(tmp_path):
    data = _a_record(True).to_dict()
    flag = {("forcing" if k == "rules" else k): (True if k == "rules" else v) for k, v in data.items()}
    assert "missing field(s) rules" in check_record(flag)
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['rules'\]"):
        GameRecord.from_dict(flag)
    assert "forcing must be true or false" in check_record({**data, "rules": {"forcing": 1}})
    assert "unknown rule(s) jokers" in check_record({**data, "rules": {"jokers": True}})
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps(flag) + "\n" + json.dumps(data) + "\n")
    games, problems = load_records(path)
    assert len(games) == 1 and "corrupt, skipped" in problems[0] and "rules" in problems[0]
    states, _ = replay_states(games[0])
    assert states[-1].rules == FORCING


def _games(out: Path) -> list[dict]:
    """A folder's games by index, without timings, their rules as the rules object reads them."""
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    timing = ("think_time", "max_think", "check")
    read = [{k: v for k, v in g.items() if k not in timing} | {"rules": Rules.from_dict(g["rules"])} for g in games]
    return sorted(read, key=lambda g: g["index"])


def _without_field(out: Path, name: str, keep: int, extra: dict | None = None) -> None:
    """Rewrite the tournament folder ``out`` as a version without the rule field ``name`` wrote
    it: ``name`` left out of the rules of config.json and of every games.jsonl line (the lines
    signed with the folder's key), ``extra`` fields put in, its first ``keep`` games kept."""

    def rules_of(rules: dict) -> dict:
        return {**{k: v for k, v in rules.items() if k != name}, **(extra or {})}

    config = json.loads((out / "config.json").read_text())
    config["rules"] = rules_of(config["rules"])
    config["options"]["rules"] = rules_of(config["options"]["rules"])
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    key = runfiles.read_key(out)
    lines = []
    for text in (out / "games.jsonl").read_text().splitlines()[:keep]:
        obj = json.loads(text)
        del obj[runfiles.CHECK_FIELD]
        obj["rules"] = rules_of(obj["rules"])
        lines.append(runfiles.sign_line(json.dumps(obj), key))
    (out / "games.jsonl").write_text("".join(line + "\n" for line in lines))


@pytest.mark.parametrize("field", Rules.field_names())
def test_a_folder_written_before_a_rule_field_resumes_with_the_field_off(tmp_path, field):
    """A new variant's field is absent from the folders older versions wrote: it reads as off."""
    specs = ["greedy", "random"]
    whole, old = tmp_path / "whole", tmp_path / "old"
    run_tournament(TournamentConfig(specs=specs, games=6, seed=3, out=whole, jobs=1, **QUICK))
    run_tournament(TournamentConfig(specs=specs, games=6, seed=3, out=old, jobs=1, **QUICK))
    _without_field(old, field, keep=4)
    assert all(field not in json.loads(line)["rules"] for line in (old / "games.jsonl").read_text().splitlines())
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResumeWarning)  # no line is taken for a bad one
        run_tournament(specs, games=6, seed=3, out=old, jobs=1, **QUICK)
    assert not (old / "games.rejected.txt").exists()
    lines = (old / "games.jsonl").read_text().splitlines()
    assert len(lines) == 6 and sum(f'"{field}"' not in line for line in lines) == 4  # old lines kept as written
    assert _games(old) == _games(whole)
    assert json.loads((old / "config.json").read_text())["rules"] == STANDARD.to_dict()  # rewritten in full

    # the field on in the run asked for: the folder (field off) holds a different tournament
    with pytest.raises(
        ValueError, match=rf"different tournament \(rules: folder has .*this run asks .*'{field}': True"
    ):
        run_tournament(specs, games=6, seed=3, rules=Rules(**{field: True}), out=old, jobs=1, **QUICK)


def test_a_folder_with_a_rule_field_set_otherwise_or_unknown_is_refused(tmp_path):
    specs = ["greedy", "random"]
    out = tmp_path / "t"
    run_tournament(TournamentConfig(specs=specs, games=4, seed=3, rules=FORCING, out=out, jobs=1, **QUICK))
    _without_field(out, "forcing", keep=4)  # forcing left out: off, not the folder's FORCING
    with pytest.raises(
        ValueError, match=r"different tournament \(rules: folder has \{[^}]*\}, this run asks \{'forcing': True"
    ):
        run_tournament(specs, games=4, seed=3, rules=FORCING, out=out, jobs=1, **QUICK)
    # a field this version does not know (a folder of a newer version): refused by name
    _without_field(out, "forcing", keep=4, extra={"jokers": True})
    with pytest.raises(ValueError, match=r"config.json: 'rules': unknown rule\(s\) jokers; known: "):
        run_tournament(specs, games=4, seed=3, out=out, jobs=1, **QUICK)


def test_a_game_line_with_other_or_unknown_rules_is_set_aside(tmp_path):
    """The lines' rules are read as config.json's are: a left-out field is off; a line whose rules
    differ from the tournament's, or name a field this version does not know, is played again."""
    specs = ["greedy", "random"]
    ref, out = tmp_path / "ref", tmp_path / "t"
    run_tournament(TournamentConfig(specs=specs, games=4, seed=3, out=ref, jobs=1, **QUICK))
    run_tournament(TournamentConfig(specs=specs, games=4, seed=3, out=out, jobs=1, **QUICK))
    key = runfiles.read_key(out)
    objs = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    for obj in objs:
        del obj[runfiles.CHECK_FIELD]
    objs[0]["rules"] = {}  # every field left out: the standard game, kept
    objs[1]["rules"] = {name: True for name in Rules.field_names()}  # not this tournament's rules
    objs[2]["rules"] = {"jokers": False}  # a field this version does not know
    (out / "games.jsonl").write_text("".join(runfiles.sign_line(json.dumps(o), key) + "\n" for o in objs))
    with pytest.warns(ResumeWarning) as record:
        run_tournament(specs, games=4, seed=3, out=out, jobs=1, **QUICK)
    messages = sorted(str(w.message) for w in record)
    assert len(messages) == 2
    assert "line 2 is a 'rules' that differs from the schedule" in messages[0]
    assert "line 3 is rules this version does not read (its 'rules': unknown rule(s) jokers" in messages[1]
    assert _games(out) == _games(ref)


def test_openspiel_takes_the_forcing_parameter_as_before():
    pyspiel = pytest.importorskip("pyspiel")
    from conquian_env.integrations.openspiel import GAME_NAME, load_game

    for game in (
        pyspiel.load_game(GAME_NAME, {"forcing": True}),
        pyspiel.load_game(f"{GAME_NAME}(forcing=true)"),
        load_game(forcing=True),
        load_game(FORCING),
    ):
        assert game.rules == FORCING and game.rules.forcing is True and game.get_parameters() == {"forcing": True}
    assert pyspiel.load_game(GAME_NAME).rules == STANDARD
    with pytest.raises(pyspiel.SpielError, match="jokers"):
        pyspiel.load_game(GAME_NAME, {"jokers": True})


def _arena_signatures():
    """(qualified name, signature) of every function and method that conquian_arena's modules define."""
    import importlib
    import inspect
    import pkgutil

    import conquian_arena

    for info in pkgutil.walk_packages(conquian_arena.__path__, "conquian_arena."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module.__name__:
                continue  # imported from elsewhere
            if inspect.isclass(obj):
                members = [(f"{name}.{m}", f) for m, f in vars(obj).items() if inspect.isfunction(f)]
            elif inspect.isfunction(obj):
                members = [(name, obj)]
            else:
                continue
            for qualified, function in members:
                yield f"{module.__name__}.{qualified}", inspect.signature(function)


def test_no_arena_signature_takes_rule_fields_as_keywords():
    """The arena takes the rules object (parsed once, at the command line or the front door); the
    rule-field shortcuts (``forcing=True``) belong to conquian_env's public entry points only."""
    seen, offenders = 0, []
    for name, signature in _arena_signatures():
        seen += 1
        for parameter in signature.parameters.values():
            if parameter.name in Rules.field_names() or "rule_field" in parameter.name:
                offenders.append(f"{name}({parameter})")
    assert seen > 100, seen  # the walk found the package's functions
    assert not offenders, offenders
    from agents.registry import make_agent

    hands, stock = deal_for_seed(4)
    with pytest.raises(TypeError, match="forcing"):
        play_game([make_agent("random", 1), make_agent("random", 2)], hands=hands, stock=stock, forcing=True)
    with pytest.raises(TypeError, match="forcing"):
        run_tournament(["greedy", "random"], games=2, forcing=True, **QUICK)

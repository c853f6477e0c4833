"""The one dataclass-to-CLI builder (:mod:`conquian_arena.knobs`): the tournament's command line
parses as it always did, and the builder's parts (positional fields, flag aliases, metavar, type,
nargs/const, the rules expansion, defaults in the namespace or absent) work on a small dataclass;
the checker (``knobs.check``) holds the tournament's knobs to their declared ranges."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from conquian_arena import knobs
from conquian_arena.tournament import TournamentConfig, build_parser
from conquian_env.rules import STANDARD, Rules


def parsed(argv: list[str]) -> TournamentConfig:
    return TournamentConfig(**vars(build_parser().parse_args(argv)))


FORCING = STANDARD.replace(forcing=True)

# the configs these command lines gave before the tournament used the shared builder (pinned)
PINNED = [
    (
        ["greedy", "random", "--games", "10", "-j", "1", "--forcing", "--no-html", "--seed", "3", "--out", "x"],
        TournamentConfig(specs=["greedy", "random"], games=10, jobs=1, rules=FORCING, html=False, seed=3, out="x"),
    ),
    (
        ["--gauntlet", "greedy", "random", "pimc"],
        TournamentConfig(specs=["random", "pimc"], gauntlet="greedy"),
    ),
    (["greedy", "random", "--ray", "local"], TournamentConfig(specs=["greedy", "random"], ray="local")),
    (
        ["a", "b", "c", "--jobs", "4", "--no-duplicate", "--confidence", "0.9", "--bootstrap", "7", "--bt-prior", "0"],
        TournamentConfig(specs=["a", "b", "c"], jobs=4, duplicate=False, confidence=0.9, bootstrap=7, bt_prior=0.0),
    ),
    (
        ["a", "b", "--anchor", "a", "--progress", "--no-plot", "--verify", "--forcing", "--no-forcing"],
        TournamentConfig(specs=["a", "b"], anchor="a", progress=True, plot=False, verify=True, rules=STANDARD),
    ),
    (["a", "b", "--no-progress"], TournamentConfig(specs=["a", "b"], progress=False)),
]


@pytest.mark.parametrize(("argv", "expected"), PINNED, ids=[" ".join(a) for a, _ in PINNED])
def test_tournament_command_lines_parse_as_before(argv, expected):
    config = parsed(argv)
    assert config == expected
    assert type(config.bt_prior) is float and type(config.games) is int and isinstance(config.rules, Rules)


def test_tournament_parser_puts_every_default_in_the_namespace():
    args = vars(build_parser().parse_args(["a", "b"]))
    assert args == {
        f.name: getattr(TournamentConfig(specs=["a", "b"]), f.name) for f in dataclasses.fields(TournamentConfig)
    }


@pytest.mark.parametrize("argv", [[], ["a", "--games", "x"], ["a", "b", "-j", "two"], ["a", "b", "--bogus"]])
def test_tournament_bad_command_lines_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as err:
        build_parser().parse_args(argv)
    assert err.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_tournament_help_names_every_flag_and_its_default():
    text = build_parser().format_help()
    for piece in ("-j JOBS, --jobs JOBS", "--gauntlet SPEC", "--anchor BOT", "--ray ADDRESS", "--forcing, --no-forcing",
                  "--html, --no-html", "(default: 1000)", "(default: 0.95)", "specs [specs ...]"):  # fmt: skip
        assert piece in " ".join(text.split()) or piece in text, piece
    assert "(default: None)" not in text and "(default: True)" not in text  # said only where it tells something


# --------------------------------------------------------------------------- the builder on its own


@dataclasses.dataclass
class Toy:
    names: list[str] = knobs.knob([], "names", positional=True)
    count: int = knobs.knob(3, "how many", flags=("-c", "--count"), metavar="N")
    level: int | None = knobs.knob(None, "a level", type=int, nargs="?", const=5)
    label: str | None = knobs.knob(None, "a label (default: none)", type=str)
    loud: bool = knobs.knob(False, "be loud")
    rules: Rules = knobs.knob(STANDARD, "the rules", rules=True)
    sizes: tuple[int, ...] = knobs.knob((1, 2), "sizes")


def toy_parser(in_namespace: bool) -> argparse.ArgumentParser:
    return knobs.add_flags(argparse.ArgumentParser(prog="toy"), Toy, defaults_in_namespace=in_namespace)


def test_builder_takes_positional_aliases_type_nargs_const_and_rules():
    argv = ["x", "y", "-c", "7", "--level", "--forcing", "--sizes", "4", "5", "--loud"]
    args = vars(toy_parser(True).parse_args(argv))
    assert args.pop("sizes") == [4, 5]  # a tuple knob comes as a list (knobs.check makes it a tuple)
    assert Toy(**args) == Toy(names=["x", "y"], count=7, level=5, loud=True, rules=FORCING)
    assert vars(toy_parser(True).parse_args(["x", "--level", "2", "--no-loud"]))["level"] == 2
    assert Toy(**vars(toy_parser(True).parse_args(["x"]))) == Toy(names=["x"])


def test_builder_leaves_unset_flags_out_unless_asked():
    assert vars(toy_parser(False).parse_args(["x", "--count", "2"])) == {"names": ["x"], "count": 2}
    assert vars(toy_parser(False).parse_args(["x", "--forcing"])) == {"names": ["x"], "rules": FORCING}
    assert set(vars(toy_parser(True).parse_args(["x"]))) == {f.name for f in dataclasses.fields(Toy)}


def test_builder_help_says_each_default_in_its_mode():
    absent = " ".join(toy_parser(False).format_help().split())
    assert "-c N, --count N how many (default: 3)" in absent and "be loud (default: False)" in absent
    shown = " ".join(toy_parser(True).format_help().split())
    assert "-c N, --count N how many (default: 3)" in shown and "a level (default" not in shown
    assert "a label (default: none)" in shown and "(default: none) (default" not in shown


# --------------------------------------------------------------------------- the checker (knobs.check)


def test_check_holds_lists_paths_unions_rules_and_open_ranges():
    @dataclasses.dataclass
    class Held:
        names: list[str] = knobs.knob([], "names", spec=True)
        where: str | Path | None = knobs.knob(None, "a folder", type=str)
        rules: Rules = knobs.knob(STANDARD, "the rules", rules=True)
        level: float = knobs.knob(0.5, "a level", above=0, below=1)
        share: float = knobs.knob(0.5, "a share", low=0, below=1)

    held = Held(names=("a", "b"), where=Path("x"), level=np.float32(0.25))
    knobs.check(held)
    assert held == Held(names=["a", "b"], where=Path("x"), level=0.25) and type(held.level) is float
    assert type(held.names) is list  # a list field stays a list (a tuple field becomes a tuple)
    for field, value, message in (
        ("names", "a b", "names must be a list of bot specs, got 'a b'"),
        ("names", ["a", 3], "names must be a list of bot specs, got ['a', 3]"),
        ("where", 5, "where must be a text or a path, or null, got 5"),
        ("rules", {"forcing": True}, "rules must be a conquian_env.rules.Rules, got {'forcing': True}"),
        ("level", 1, "level must be a number in (0, 1), got 1"),
        ("level", 0.0, "level must be a number in (0, 1), got 0.0"),
        ("share", 1.0, "share must be a number in [0, 1), got 1.0"),
    ):
        with pytest.raises(ValueError) as err:
            knobs.check(Held(**{field: value}))
        assert str(err.value) == message


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("specs", "greedy random", "specs must be a list of bot specs, got 'greedy random'"),
        ("games", 0, "games must be a positive integer, got 0"),
        ("games", 2.0, "games must be a positive integer, got 2.0"),
        ("seed", -1, "seed must be a non-negative integer, got -1"),
        ("jobs", 0, "jobs must be a positive integer, or null, got 0"),
        ("confidence", 1, "confidence must be a number in (0, 1), got 1"),
        ("bootstrap", 0, "bootstrap must be a positive integer, got 0"),
        ("bt_prior", -0.5, "bt_prior must be a number >= 0, got -0.5"),
        ("rules", None, "rules must be a conquian_env.rules.Rules, got None"),
        ("out", 5, "out must be a text or a path, or null, got 5"),
        ("gauntlet", 3, "gauntlet must be a bot spec, or null, got 3"),
        ("plot", 1, "plot must be true or false, got 1"),
        ("progress", "yes", "progress must be true, false or null, got 'yes'"),
    ],
)
def test_tournament_config_is_held_to_its_declared_ranges(field, value, message):
    """TournamentConfig.validate() checks its fields with the shared checker (each range declared on
    its field) and only what the fields ask of each other by hand."""
    with pytest.raises(ValueError) as err:
        TournamentConfig(**{"specs": ["greedy", "random"], field: value}).validate()
    assert str(err.value) == message


def test_tournament_config_validate_keeps_the_cross_field_check_and_makes_numpy_values_python():
    with pytest.raises(ValueError, match=r"a round robin needs at least two bots, got \['greedy'\]; or use --gauntlet"):
        TournamentConfig(specs=["greedy"]).validate()
    TournamentConfig(specs=["greedy"], gauntlet="random").validate()  # a gauntlet: one listed bot is enough
    config = TournamentConfig(specs=("a", "b"), games=np.int64(4), jobs=np.int32(2), confidence=np.float64(0.9))
    config.validate()
    assert config == TournamentConfig(specs=["a", "b"], games=4, jobs=2, confidence=0.9)
    assert (type(config.games), type(config.jobs), type(config.specs)) == (int, int, list)


@pytest.mark.parametrize(
    "module, config, knobs_given, message",
    [
        ("belief", "GenerateConfig", {"games": 0}, "games must be a positive integer, got 0"),
        ("belief", "GenerateConfig", {"seed": -1}, "seed must be a non-negative integer, got -1"),
        ("belief", "FitConfig", {"lr": 0.0}, "lr must be a number > 0, got 0.0"),
        ("belief", "FitConfig", {"hidden": True}, "hidden must be a positive integer, got True"),
        ("belief", "FitConfig", {"seed": -3}, "seed must be a non-negative integer, got -3"),
        ("distill", "GenerateConfig", {"chunk": 2.5}, "chunk must be a positive integer, got 2.5"),
        ("distill", "FitConfig", {"lr": 0.0}, "lr must be a number > 0, got 0.0"),
        ("distill", "FitConfig", {"seed": -1}, "seed must be a non-negative integer, got -1"),
    ],
)
def test_the_recipes_with_shards_are_held_by_the_shared_checker(module, config, knobs_given, message):
    """Before: hand-written checks that let a negative fit seed through (numpy refused it later)."""
    import importlib

    cls = getattr(importlib.import_module(f"conquian_train.recipes.{module}"), config)
    with pytest.raises(ValueError, match=re.escape(message)):
        cls(**knobs_given).validate()

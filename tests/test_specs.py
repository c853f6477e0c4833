"""Bot specs and run configs read safely: every number of a spec bounded when the bot is built
(:mod:`agents.params`), a ``python:`` class's failures named as spec errors, and the
specs of a run folder's ``config.json`` never importing code on ``--resume`` unless
``--trust-code`` is given; config values type-checked (:mod:`conquian_arena.knobs`)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import re
import sys

import numpy as np
import pytest

import evaluate
from agents import make_agent
from agents import registry as registry_module
from agents.base import Agent
from agents.catalog import discover
from agents.params import Flag, Integer, ParamError, Real, bounded, bounds_of
from agents.registry import KNOWN_BOTS, SpecError, check_spec, module_in_folder, refuse_code, runs_code

HERE = "python:tests.test_specs"


class RaisingBot(Agent):
    """A ``python:`` bot whose constructor fails with the given error."""

    def __init__(self, kind: str = "type", seed: int | None = None):
        raise {"type": TypeError, "runtime": RuntimeError, "key": KeyError, "zero": ZeroDivisionError}[kind]("boom")


class DeclaredBot(Agent):
    """A ``python:`` bot declaring its parameters' bounds the way the shipped bots do."""

    @bounded(width=Integer(1, 8), share=Real(0, 1), loud=Flag())
    def __init__(self, width: int = 2, share: float = 0.5, loud: bool = False, seed: int | None = None):
        self.width, self.share, self.loud = width, share, loud


# --------------------------------------------------------------------------- every number of a spec bounded


@pytest.mark.parametrize(
    "spec, name, allowed",
    [
        # each of these built before, then crashed (or was cut short) in every game
        ("pimc:time=inf", "time", "a number in [1e-06, 3600]"),  # OverflowError in the game
        ("pimc:iterations=10000000000000000000000", "iterations", "an integer in [1, 1000000000]"),  # numba
        ("pimc:tries=9223372036854775808", "tries", "an integer in [1, 1000000]"),  # OverflowError
        ("pimc:z=inf", "z", "a number in [0, 1000]"),
        ("pimc:z=nan", "z", "a number in [0, 1000]"),
        ("ismcts-py:time=inf,iterations=5", "time", "a number in [1e-06, 3600]"),  # OverflowError
        ("ismcts-py:c=nan", "c", "a number in [0, 1000]"),
        ("rollout:margin=inf", "margin", "a number in [0, 1000]"),
        ("rollout:samples=-3", "samples", "an integer in [1, 1000000]"),
        ("rollout:samples=1e9", "samples", "an integer"),
        ("rollout:batch=1", "batch", "true or false"),
        ("ppo:deterministic=1", "deterministic", "true or false"),
        ("random:seed=-1", "seed", "an integer in [0, "),
        ("greedy:seed=1.5", "seed", "an integer in [0, "),
    ],
)
def test_every_number_of_a_spec_is_bounded_before_the_bot_is_built(spec, name, allowed):
    if spec.startswith("pimc"):
        pytest.importorskip("numba")
    for build in (check_spec, make_agent):
        with pytest.raises(SpecError) as err:
            build(spec)
        text = str(err.value)
        assert f"{name} must be {allowed}" in text, text
        assert spec.rpartition("=")[2] in text, "the value is named"


def test_the_largest_allowed_numbers_play_a_game():
    pytest.importorskip("numba")
    from conquian_arena.match import deal_for_seed, play_game

    hands, stock = deal_for_seed(1)
    for spec in ("pimc:iterations=30,tries=1000000,z=1000", "ismcts-py:iterations=20,c=1000"):
        record = play_game([make_agent(spec, 0), make_agent("greedy")], hands=hands, stock=stock, seed=1)
        assert record.failure is None, (spec, record.failure)


def test_numpy_scalars_work_and_bad_ones_are_refused_by_name():
    pytest.importorskip("numba")
    from agents.search.ismcts import ISMCTSAgent
    from agents.search.pimc import PIMCAgent, analyze
    from agents.search.rollout import RolloutAgent

    # before: ISMCTSAgent and RolloutAgent refused numpy integers and bools as "not an int"
    bot = ISMCTSAgent(iterations=np.int64(5), c=np.float32(0.5), infer=np.bool_(False))
    assert (bot.iterations, bot.infer) == (5, False)
    assert type(bot.iterations) is int and type(bot.infer) is bool and math.isclose(bot.c, 0.5)
    bot = RolloutAgent(samples=np.int64(4), margin=np.float64(1), infer=np.bool_(True), batch=np.bool_(False))
    assert (type(bot.samples), type(bot.infer), type(bot.batch)) == (int, bool, bool)
    bot = PIMCAgent(iterations=np.uint16(40), tries=np.int8(2), z=np.float16(1.5))
    assert (type(bot.iterations), type(bot.tries), type(bot.z)) == (int, int, float)
    for kwargs, name in (({"time": np.float64("inf")}, "time"), ({"tries": np.uint64(2**63)}, "tries"),
                         ({"z": np.float32("nan")}, "z")):  # fmt: skip
        with pytest.raises(ParamError, match=f"^{name} must be"):
            PIMCAgent(**kwargs)
    with pytest.raises(ParamError, match=r"iterations must be an integer in \[1, 1000000000\], got 10000000000"):
        analyze([], iterations=10**10)


def test_every_numeric_or_flag_parameter_of_a_shipped_bot_is_declared():
    """A bot's parameter listed in the registry that is a number or a flag has a declared bound."""
    for kind, info in KNOWN_BOTS.items():
        if kind in ("python", "random", "greedy", "scorer") or kind == "rllib":
            continue  # no numeric parameters (rllib's deterministic is declared; the class needs ray to import)
        if kind == "ppo":
            pytest.importorskip("torch")
        cls = info.factory()
        declared = bounds_of(cls)
        annotations = {n: str(p.annotation) for n, p in inspect.signature(cls.__init__).parameters.items()}
        for pname, text in info.params.items():
            default = text.split(",")[0].strip()
            if "str" in annotations.get(pname, ""):
                continue  # a file's path (search's belief): no range to declare
            if default in ("none", "true", "false") or default.replace(".", "").isdigit():
                assert pname in declared, f"{kind}: {pname} has no declared bound"


def test_a_batched_opponent_checks_its_spec_too():
    from agents.batched import make_batch_opponent

    # before: ppo:deterministic=maybe made a batched policy that sampled ('maybe' is true)
    with pytest.raises(SpecError, match="deterministic must be true or false, got 'maybe'"):
        make_batch_opponent("ppo:deterministic=maybe", 0)
    with pytest.raises(SpecError, match="seed must be an integer"):
        make_batch_opponent("random:seed=-2", 0)


def test_a_python_class_declares_its_bounds_like_the_shipped_bots():
    bot = make_agent(f"{HERE}:DeclaredBot,width=3,share=0.25,loud=true")
    assert (bot.width, bot.share, bot.loud) == (3, 0.25, True)
    with pytest.raises(SpecError, match=r"width must be an integer in \[1, 8\], got 9"):
        make_agent(f"{HERE}:DeclaredBot,width=9")
    with pytest.raises(TypeError, match="no parameter"):
        bounded(nothing=Flag())(DeclaredBot.__init__.__wrapped__)


# --------------------------------------------------------------------------- a python: class that fails


@pytest.mark.parametrize("kind", ["type", "runtime", "key", "zero"])
def test_a_python_class_that_raises_is_a_spec_error(kind):
    # before: anything but TypeError and ValueError escaped make_agent as itself
    spec = f"{HERE}:RaisingBot,kind={kind}"
    with pytest.raises(SpecError, match="boom") as err:
        make_agent(spec)
    assert spec in str(err.value)


def test_a_module_that_fails_as_it_is_imported_is_a_spec_error(tmp_path, monkeypatch):
    (tmp_path / "spec_broken_module.py").write_text("raise RuntimeError('top-level boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SpecError, match="cannot import module 'spec_broken_module'.*RuntimeError: top-level boom"):
        make_agent("python:spec_broken_module:Bot")


@pytest.mark.parametrize("kind", ["type", "runtime"])
def test_conquian_evaluate_prints_the_spec_error_of_a_failing_class(kind, tmp_path, capsys):
    out = tmp_path / "never"
    spec = f"{HERE}:RaisingBot,kind={kind}"
    assert evaluate.main(["random", spec, "--out", str(out), "--no-progress", "--games", "2"]) == 2
    err = capsys.readouterr().err
    assert spec in err and "boom" in err and "Traceback" not in err
    assert not out.exists()


# --------------------------------------------------------------------------- code in specs read from files


def test_runs_code_reads_the_kind_as_the_parser_does():
    assert runs_code("python:m:C") and runs_code(" PYTHON:m:C,x=1") and runs_code("python:m:C@3")
    assert not any(runs_code(s) for s in ("greedy", "ppo:python.zip", "scorer:x/python:y", "self", 3, None))


def test_refuse_code_names_the_field_and_the_flag(tmp_path):
    specs = [("eval_opponents", "greedy"), ("opponents", "python:some.module:Bot@2")]
    with pytest.raises(SpecError, match=r"config.json: opponents holds the bot spec .*--trust-code"):
        refuse_code(specs, tmp_path / "config.json", False, tmp_path)
    refuse_code(specs, tmp_path / "config.json", True, tmp_path)  # trusted, and the module is not in the folder


def test_a_module_inside_the_run_folder_is_found_without_importing_it(tmp_path, monkeypatch):
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "payload.py").write_text("raise SystemExit('imported!')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert module_in_folder("runs.r1.payload", run) == run  # its package runs.r1 is the folder itself
    assert module_in_folder("r1.payload", tmp_path / "runs") is None  # not on the path that way
    monkeypatch.syspath_prepend(str(run))  # e.g. python run from inside the run folder
    assert module_in_folder("payload", run) == run / "payload.py"
    assert module_in_folder("runs", run) is None
    assert module_in_folder("json", run) is None
    assert "runs.r1.payload" not in sys.modules
    with pytest.raises(SpecError, match="inside the run folder"):
        refuse_code([("teacher", "python:runs.r1.payload:Bot")], run / "config.json", True, run)


def test_docs_say_a_python_spec_runs_code():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    bots = (root / "docs" / "bots.md").read_text()
    assert "imports and runs" in bots and "--trust-code" in bots
    training = (root / "docs" / "training.md").read_text()
    assert "--trust-code" in training


# --------------------------------------------------------------------------- a run folder's config.json

train = pytest.importorskip("train")
from conquian_arena import knobs  # noqa: E402
from conquian_train import recipes  # noqa: E402
from conquian_train.recipes.exit import ExItConfig  # noqa: E402
from conquian_train.recipes.ppo import TrainConfig  # noqa: E402
from conquian_train.recipes.ppo import config_from_args as ppo_config_from_args  # noqa: E402

#: every recipe with one command (``--resume`` reads its ``config.json``, ``--trust-code`` lets a spec there
#: run code): its knobs and its command; the recipes of steps resume by running the same step again
RECIPES = {r.name: (r.configs[0], [r.name]) for r in recipes.every() if not isinstance(r, str) and len(r.configs) == 1}


def _run_folder(path, cls, **changes):
    """A run folder holding only a config.json: the recipe's defaults with ``changes``."""
    path.mkdir(parents=True, exist_ok=True)
    data = {**knobs.to_dict(cls(out=str(path))), **changes}
    (path / "config.json").write_text(json.dumps(data, indent=2))
    return path


def _payload(folder, name):
    """A module that leaves a mark when it is imported (and then fails, so nothing goes on)."""
    folder.mkdir(parents=True, exist_ok=True)
    mark = folder / f"{name}.ran"
    (folder / f"{name}.py").write_text(
        f"open({str(mark)!r}, 'w').close()\nraise RuntimeError('the payload ran')\n"
        "from agents.base import Agent\nclass Bot(Agent):\n    pass\n"
    )
    return mark


def _spec_fields(cls):
    # sorted: the shared knobs (conquian_train.settings.RunSettings) come first in field order
    return sorted(f.name for f in dataclasses.fields(cls) if f.metadata.get("spec"))


def test_every_field_that_holds_bot_specs_is_declared():
    assert _spec_fields(TrainConfig) == ["bc_opponents", "eval_opponents", "opponents", "teacher"]
    assert _spec_fields(ExItConfig) == ["eval_opponents", "opponents"]


@pytest.mark.parametrize(
    "recipe, field", [(r, f) for r, (cls, _) in RECIPES.items() for f in _spec_fields(cls)], ids=str
)
def test_resume_never_imports_a_python_spec_of_its_config(recipe, field, tmp_path, monkeypatch, capsys):
    # before: the module was imported (its code ran) while the config was validated
    cls, command = RECIPES[recipe]
    name = f"spec_payload_{recipe}_{field}"
    mark = _payload(tmp_path / "mods", name)
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    spec = f"python:{name}:Bot"
    value = spec if field == "teacher" else [*knobs.to_dict(cls())[field], spec]
    run = _run_folder(tmp_path / "run", cls, **{field: value})
    assert train.main([*command, "--resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{field} holds the bot spec {spec!r}" in err and "--trust-code" in err and "Traceback" not in err
    assert not mark.exists() and name not in sys.modules
    # --trust-code lets the file's spec import its module (here it fails, by design, once imported)
    config, resume = recipes.config_from_args(cls, {"resume": str(run), "trust_code": True}, ())
    assert resume and not mark.exists(), "reading the config imports nothing, trusted or not"
    with pytest.raises(SpecError, match="the payload ran"):
        config.validate()
    assert mark.exists()


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_module_inside_the_run_folder_is_refused_even_with_trust_code(recipe, tmp_path, monkeypatch, capsys):
    cls, command = RECIPES[recipe]
    run = tmp_path / "runs" / f"inside_{recipe}"
    mark = _payload(run, "payload")
    monkeypatch.syspath_prepend(str(tmp_path))  # as the repository root holds runs/NAME/
    _run_folder(run, cls, eval_opponents=["random", "greedy", f"python:runs.inside_{recipe}.payload:Bot"])
    assert train.main([*command, "--resume", str(run), "--trust-code"]) == 2
    err = capsys.readouterr().err
    assert "inside the run folder" in err and "Traceback" not in err
    assert not mark.exists()


def test_a_new_run_takes_a_python_spec_typed_on_its_command_line(tmp_path):
    config, resume = ppo_config_from_args(["--out", str(tmp_path / "new"), "--teacher", f"{HERE}:DeclaredBot"])
    assert not resume and config.teacher == f"{HERE}:DeclaredBot"
    config.validate()  # no --trust-code needed: the user typed it


BAD_VALUES = [
    # (recipe, key, value in config.json, words the error must hold)
    ("ppo", "learning_rate", "0.001", "learning_rate must be a number > 0, got '0.001'"),
    ("ppo", "n_steps", [512], "n_steps must be a positive integer, got [512]"),
    ("ppo", "seed", True, "seed must be a non-negative integer, got True"),
    ("ppo", "rules", {"forcing": 1}, "rules: forcing must be true or false, got 1"),
    ("ppo", "rules", {"forcng": True}, "rules: unknown rule(s) forcng; known: forcing"),
    ("exit", "rules", "forcing", "rules must be an object of rule fields, got 'forcing'"),
    ("ppo", "progress", "yes", "progress must be true, false or null, got 'yes'"),
    ("ppo", "gamma", 1.5, "gamma must be a number in [0, 1], got 1.5"),
    ("ppo", "ent_coef", -0.1, "ent_coef must be a number >= 0, got -0.1"),
    ("ppo", "total_steps", 1e6, "total_steps must be a positive integer, got 1000000.0"),
    ("ppo", "total_steps", 2**64, "total_steps must be a positive integer below 2**63"),
    ("ppo", "opponents", "greedy", "opponents must be a list of bot specs, got 'greedy'"),
    ("ppo", "net_arch", [64, "64"], "net_arch must be a list of integers, got [64, '64']"),
    ("ppo", "lr", 0.1, "unknown config keys ['lr']"),
    ("exit", "lr", "fast", "lr must be a number > 0, got 'fast'"),
    ("exit", "rounds", [5], "rounds must be a positive integer, got [5]"),
    ("exit", "z", -1, "z must be a number in [0, 1000], got -1"),
    ("exit", "playouts", 10**10, "playouts must be a positive integer up to 1000000000, got 10000000000"),
    ("exit", "temperature", 0, "temperature must be a number > 0, got 0"),
    ("exit", "network", "mlp", "network must be 'scorer' or 'ppo', got 'mlp'"),
    ("exit", "chunk", False, "chunk must be a positive integer, got False"),
]


@pytest.mark.parametrize("recipe, key, value, words", BAD_VALUES, ids=lambda v: str(v)[:20])
def test_a_wrongly_typed_config_value_is_named_on_resume(recipe, key, value, words, tmp_path, capsys):
    # before: most were taken as they were and failed (or ran on) far into the run
    cls, command = RECIPES[recipe]
    run = _run_folder(tmp_path / "run", cls, **{key: value})
    with pytest.raises(ValueError) as err:
        knobs.resumed(cls, run, {}, ())
    assert words in str(err.value) and str(run / "config.json") in str(err.value)
    assert train.main([*command, "--resume", str(run)]) == 2
    out = capsys.readouterr().err
    assert words in out and "Traceback" not in out


@pytest.mark.parametrize(
    "text, words",
    [
        ("{not json", "is not a run's config"),
        ("[1, 2]", "a JSON object of knobs, got list"),
        ('"runs/x"', "a JSON object of knobs, got str"),
        ('{"seed": 1, "seed": 2}', "the key 'seed' is repeated"),
        ('{"learning_rate": NaN}', "NaN is not a JSON number"),
        ('{"gamma": Infinity}', "Infinity is not a JSON number"),
        (b"\xff\xfe{}", "is not a run's config"),
        ("[" * 100_000, "is not a run's config"),
    ],
    ids=["not-json", "list", "string", "repeated-key", "nan", "infinity", "not-utf8", "deep"],
)
@pytest.mark.parametrize("recipe", RECIPES)
def test_a_corrupt_config_json_is_named(recipe, text, words, tmp_path, capsys):
    # before: a list or a string was a TypeError traceback; NaN and a repeated key were taken
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_bytes(text if isinstance(text, bytes) else text.encode())
    assert train.main([*RECIPES[recipe][1], "--resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert words in err and str(run / "config.json") in err and "Traceback" not in err


def test_command_line_numbers_are_held_to_the_same_ranges(tmp_path):
    # before: argparse's float() let nan and inf through, and a negative rate ran
    for flags, words in [
        (["--learning-rate", "nan"], "learning_rate must be a number > 0, got nan"),
        (["--gamma", "inf"], "gamma must be a number in [0, 1], got inf"),
        (["--bc-lr", "-1"], "bc_lr must be a number > 0, got -1.0"),
        (["--clip-range", "0"], "clip_range must be a number > 0, got 0.0"),
    ]:
        with pytest.raises(ValueError, match=re.escape(words)):
            ppo_config_from_args(["--out", str(tmp_path / "x"), *flags])[0].validate()
    with pytest.raises(ValueError, match=re.escape("lr must be a number > 0, got inf")):
        knobs.from_dict(ExItConfig, {"lr": float("inf")})


def test_a_config_in_python_is_checked_and_numpy_scalars_become_python_numbers():
    config = knobs.from_dict(TrainConfig, {"seed": np.int64(3), "gamma": np.float32(0.5), "net_arch": [8]})
    assert (type(config.seed), type(config.gamma), config.net_arch) == (int, float, (8,))
    with pytest.raises(ValueError, match="a config is a JSON object of knobs, got list"):
        knobs.from_dict(TrainConfig, [("seed", 1)])


def test_a_list_flag_with_an_empty_default_parses_its_annotated_type():
    import argparse

    # before: ExItConfig.net_arch's empty default gave str elements and every --net-arch was refused
    args = knobs.add_flags(argparse.ArgumentParser(), ExItConfig).parse_args(["--net-arch", "64", "32"])
    assert knobs.from_dict(ExItConfig, vars(args)).net_arch == (64, 32)


def test_the_ranges_in_docs_bots_md_are_the_declared_ones():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "bots.md").read_text()

    def shown(x):
        return str(x) if isinstance(x, int) else f"{x:g}"

    rows = [line for line in text.splitlines() if line.startswith("| `")]
    for kind in (d.kind for d in discover(Path(registry_module.__file__).parent, "agents")):
        try:
            declared = bounds_of(KNOWN_BOTS[kind].factory())
        except ImportError:  # an optional extra (numba, torch, ray) missing here
            continue
        if not declared:
            continue
        row = next(r for r in rows if f"`{kind}`" in r.split(" | ")[0])  # every bot with bounds has its row
        like = re.match(r"\| [^|]* \| as `([\w-]+)`, and", row)
        if like:  # "as pimc, and ...": its own parameters
            declared = {k: v for k, v in declared.items() if k not in bounds_of(KNOWN_BOTS[like.group(1)].factory())}
        for name, bound in declared.items():
            if isinstance(bound, (Integer, Real)):
                assert f"`{name}` {shown(bound.low)}..{shown(bound.high)}" in row, (kind, name)
            elif isinstance(bound, Flag):
                assert f"`{name}` flag" in row, (kind, name)

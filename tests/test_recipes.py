"""The one training command (``conquian-train RECIPE``, ``python train.py RECIPE``), its recipes and the
settings they share (:mod:`conquian_train.cli`, :mod:`conquian_train.recipes`, :mod:`conquian_train.settings`)."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("numba")
train = pytest.importorskip("train")
from conquian_arena import knobs  # noqa: E402
from conquian_env.rules import Rules  # noqa: E402
from conquian_train import cli, recipes  # noqa: E402
from conquian_train.recipes.belief import FitConfig, GenerateConfig  # noqa: E402
from conquian_train.recipes.exit import ExItConfig  # noqa: E402
from conquian_train.recipes.ppo import TrainConfig  # noqa: E402
from conquian_train.settings import RunSettings  # noqa: E402

#: every knob of each recipe as it was before the shared settings, less those removed for measuring no
#: gain (bc_smoothing_phases, bc_loss, bc_greedy_bonus; exit's loss and greedy_bonus) and ppo's vec_env (one
#: value left): a run's config.json
#: names these, and its checkpoint's recipe hash is taken over them, so an older run resumes only if they stay
#: (the rules object stands for the older "forcing" knob: the hash still names each rule field)
PPO_KNOBS = {
    "out", "seed", "total_steps", "rules", "device", "features", "net_arch", "bc_games", "teacher", "bc_opponents",
    "bc_epochs", "bc_lr", "bc_smoothing", "bc_temperature", "bc_data", "dagger_rounds", "dagger_games", "n_envs",
    "opponents", "snapshot_every", "max_snapshots",
    "learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef",
    "target_kl", "eval_every", "eval_games", "eval_opponents", "eval_seed", "best_by", "checkpoint_every",
    "torch_threads", "workers", "progress",
}  # fmt: skip
EXIT_KNOBS = {
    "out", "seed", "rounds", "games", "chunk", "playouts", "z", "opponents", "features", "network", "net_arch", "init",
    "epochs", "lr", "temperature", "value_coef", "eval_games", "eval_opponents", "eval_seed",
    "best_by", "rules", "torch_threads", "workers", "eval_start", "pool_after",
}  # fmt: skip


def steps_of(name: str, capsys) -> list[str]:
    """The sub-commands of a recipe made of steps (``generate``, ``fit``), read from its usage line; none for
    a recipe with one command."""
    with pytest.raises(SystemExit):
        recipes.find(name).main(["--help"], f"conquian-train {name}")
    usage = capsys.readouterr().out.split("\n\n")[0]
    found = re.search(r"\{([\w,-]+)\}", usage)
    return found.group(1).split(",") if found else []


@pytest.mark.parametrize("name", recipes.names())
def test_every_recipe_answers_help_through_the_one_command(name, capsys):
    """``conquian-train NAME --help`` (and each sub-command's) prints the recipe's usage under its name
    (a recipe's sub-command once failed: its main took no program name)."""
    from conquian_train.cli import main

    steps = steps_of(name, capsys)
    assert (len(steps) > 1) == (len(recipes.find(name).configs) > 1)  # a knob dataclass per step
    for argv in ([name, "--help"], *([name, step, "--help"] for step in steps)):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 0
        assert f"conquian-train {' '.join(argv[:-1])}" in capsys.readouterr().out


def test_every_module_of_the_recipes_package_is_a_recipe_named_after_it():
    import importlib
    import pkgutil

    modules = sorted(m.name for m in pkgutil.iter_modules(recipes.__path__))
    assert recipes.names() == modules and modules  # the list comes from the sub-package, nothing pinned
    found = {r.name: r for r in recipes.every()}  # each module imports here (no optional dependency missing)
    assert list(found) == modules
    for name, recipe in found.items():
        assert importlib.import_module(f"conquian_train.recipes.{name}").RECIPE is recipe
        assert recipes.find(name) is recipe and recipe.summary
        assert recipe.configs and all(dataclasses.is_dataclass(c) for c in recipe.configs)
    assert found["ppo"].configs == (TrainConfig,) and found["exit"].configs == (ExItConfig,)
    assert found["belief"].configs == (GenerateConfig, FitConfig)
    with pytest.raises(ValueError, match=f"unknown recipe 'files'; recipes: {', '.join(modules)}$"):
        recipes.find("files")  # a library module of the package is no recipe


def test_a_recipe_module_must_declare_a_recipe_named_after_it(monkeypatch):
    import sys
    import types

    for name, declared in (("nameless", None), ("misnamed", recipes.find("ppo"))):
        module = types.ModuleType(f"conquian_train.recipes.{name}")
        if declared is not None:
            module.RECIPE = declared
        monkeypatch.setitem(sys.modules, module.__name__, module)
        monkeypatch.setattr(recipes, "names", lambda name=name: ["ppo", name])
        with pytest.raises(ValueError, match=f"conquian_train.recipes.{name}.RECIPE must be a Recipe named {name!r}"):
            recipes.find(name)


def test_listing_the_recipes_imports_none_and_the_library_imports_no_recipe():
    import ast
    import subprocess
    import sys
    from pathlib import Path

    import conquian_train

    code = ("import sys; from conquian_train import recipes; names = recipes.names(); "
            "print(names, [m for m in sys.modules if m.startswith('conquian_train.recipes.')])")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"{recipes.names()} []"
    # the library (every module of conquian_train outside recipes/, but the command) never imports a recipe
    for path in sorted(Path(conquian_train.__file__).parent.glob("*.py")):
        if path.name == "cli.py":  # the command: it finds the recipes
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                named = [f"{'.' * node.level}{node.module or ''}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                named = [a.name for a in node.names]
            else:
                continue
            assert not any("recipes" in n.split(".") for n in named), (path.name, named)


def test_the_command_lists_the_recipes_and_refuses_an_unknown_one(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: conquian-train RECIPE" in out
    for recipe in recipes.every():
        assert f"  {recipe.name:<8} {recipe.summary}" in out
    assert cli.main([]) == 2  # conquian-train alone: the usage, on standard error
    assert "recipes:" in capsys.readouterr().err
    assert cli.main(["nosuch", "--out", "x"]) == 2
    assert "unknown recipe 'nosuch'" in capsys.readouterr().err
    assert cli.main(["--out", "x"]) == 2  # the recipe comes first: one line naming it
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "conquian-train takes the recipe first" in err
    assert "conquian-train ppo --out ..." in err


def test_train_py_is_the_command_under_another_name(capsys):
    with pytest.raises(SystemExit):
        train.main(["exit", "--help"])
    text = capsys.readouterr().out
    assert text.startswith("usage: train.py exit ")
    for f in dataclasses.fields(ExItConfig):
        flags = [f"--{n}" for n in Rules.field_names()] if f.name == "rules" else ["--" + f.name.replace("_", "-")]
        assert all(flag in text for flag in flags), flags
    with pytest.raises(SystemExit):
        cli.main(["ppo", "--help"])
    assert capsys.readouterr().out.startswith("usage: conquian-train ppo ")


def test_train_py_without_a_recipe_is_refused_in_one_line_naming_the_recipe(tmp_path, capsys):
    # the PPO recipe's spelling before recipes had names is never run as something else
    assert train.main(["--out", str(tmp_path / "r"), "--n-steps", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "train.py takes the recipe first" in err and "train.py ppo --out ..." in err
    assert not (tmp_path / "r").exists()
    assert train.main(["ppo", "--out", str(tmp_path / "r"), "--n-steps", "0"]) == 2
    assert "n_steps must be a positive integer" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        train.main(["ppo", "--out", str(tmp_path / "r"), "--rounds", "2"])  # exit's knob, not ppo's
    assert "unrecognized arguments: --rounds 2" in capsys.readouterr().err


def test_the_recipes_share_one_settings_class_with_their_own_defaults():
    assert issubclass(TrainConfig, RunSettings) and issubclass(ExItConfig, RunSettings)
    shared = {f.name for f in dataclasses.fields(RunSettings)}
    assert {"out", "seed", "eval_games", "eval_opponents", "eval_seed", "best_by", "workers", "torch_threads"} <= shared
    ppo, exit_ = TrainConfig(), ExItConfig()
    assert (ppo.out, ppo.eval_games, ppo.workers) == ("runs/default", 600, 0)
    assert (exit_.out, exit_.eval_games, exit_.workers) == ("runs/exit", 2000, 1)
    for config in (ppo, exit_):
        assert (config.eval_seed, config.eval_opponents, config.best_by) == (1_000_003, ("random", "greedy"), "greedy")
        config.best_by = "pimc"
        with pytest.raises(ValueError, match="best_by 'pimc' must be one of eval_opponents"):
            config.validate()
    assert ExItConfig(workers=0).processes >= 1  # 0: all cores, in every recipe


def test_the_knobs_of_a_run_are_those_of_its_config_json_before_the_shared_settings(tmp_path):
    # an older run's config.json holds exactly these keys, and its checkpoint the hash of its recipe over them
    assert {f.name for f in dataclasses.fields(TrainConfig)} == PPO_KNOBS
    assert {f.name for f in dataclasses.fields(ExItConfig)} == EXIT_KNOBS
    folder = tmp_path / "old"
    folder.mkdir()
    written = {**json.loads(json.dumps(dataclasses.asdict(ExItConfig()))), "out": "elsewhere"}
    (folder / "config.json").write_text(json.dumps(written))
    config, resumed = recipes.config_from_args(ExItConfig, {"resume": str(folder), "rounds": 9}, ("rounds",))
    assert resumed and config.rounds == 9 and config.out == str(folder) and config.eval_games == 2000
    # a run from before the step-0 evaluation (no eval_start in its config.json) resumes, its recipe hash unchanged
    from conquian_train.recipes import exit as exit_recipe

    del written["eval_start"]
    (folder / "config.json").write_text(json.dumps(written))
    config, resumed = recipes.config_from_args(ExItConfig, {"resume": str(folder)}, ())
    assert resumed and config.eval_start is True
    assert "eval_start" not in exit_recipe.recipe(config)
    # nor a run from before the deep-sets scorer (no pool_after): no pooling, the same recipe
    assert config.pool_after == -1 and "pool_after" not in exit_recipe.recipe(config)
    assert exit_recipe.recipe(dataclasses.replace(config, pool_after=0))["pool_after"] == 0


@pytest.mark.parametrize("config_class", [TrainConfig, ExItConfig])
def test_a_config_reads_its_rules_object_and_the_recipe_names_each_rule_field(config_class, tmp_path):
    """config.json holds the rules object (a bare ``forcing`` knob is refused by name); the recipe
    (whose hash its checkpoint and shards hold) names each rule field by itself."""
    from conquian_train.recipes import exit as exit_recipe
    from conquian_train.recipes import ppo as ppo_recipe

    recipe = exit_recipe.recipe if config_class is ExItConfig else ppo_recipe.recipe
    written = json.loads(json.dumps(dataclasses.asdict(config_class())))
    assert written.pop("rules") == {"forcing": False}
    folder = tmp_path / "flag"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**written, "forcing": True}))
    with pytest.raises(ValueError, match="forcing"):
        recipes.config_from_args(config_class, {"resume": str(folder)}, ())
    # a new run's config.json holds the rules object, and --forcing sets it
    args = vars(recipes.parser("x", "", config_class).parse_args(["--forcing"]))
    config, _ = recipes.config_from_args(config_class, args, ())
    assert config.rules == Rules(forcing=True) and knobs.to_dict(config)["rules"] == {"forcing": True}
    made = recipe(config)
    assert "rules" not in made and made["forcing"] is True


def test_the_training_callbacks_do_not_take_stable_baselines3s_names():
    """SB3's EvalCallback and CheckpointCallback do other things than ours: a user who knows SB3's
    would be misled by a class of that name (ours were called so once)."""
    from stable_baselines3.common import callbacks as sb3_callbacks

    from conquian_train import callbacks

    ours = {name for name, value in vars(callbacks).items()
            if isinstance(value, type) and value.__module__ == callbacks.__name__}  # fmt: skip
    assert {"EvaluateEvery", "CheckpointEvery", "SnapshotEvery"} <= ours
    assert ours & set(vars(sb3_callbacks)) == set()

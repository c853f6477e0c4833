"""The one training command (``conquian-train RECIPE``, ``python train.py RECIPE``), its recipes and the
settings they share (:mod:`conquian_train.cli`, :mod:`conquian_train.recipes`, :mod:`conquian_train.settings`)."""

from __future__ import annotations

import dataclasses
import json

import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("numba")
train = pytest.importorskip("train")
from conquian_arena import knobs  # noqa: E402
from conquian_env.rules import Rules  # noqa: E402
from conquian_train import cli, recipes, value  # noqa: E402
from conquian_train.belief import FitConfig, GenerateConfig  # noqa: E402
from conquian_train.exit import ExItConfig  # noqa: E402
from conquian_train.ppo import TrainConfig  # noqa: E402
from conquian_train.settings import RunSettings  # noqa: E402

#: every knob of each recipe as it was before the shared settings: a run's config.json names these,
#: and its checkpoint's recipe hash is taken over them, so an older run resumes only if they stay
#: (the rules object stands for the older "forcing" knob: the hash still names each rule field)
PPO_KNOBS = {
    "out", "seed", "total_steps", "rules", "device", "features", "net_arch", "bc_games", "teacher", "bc_opponents",
    "bc_epochs", "bc_lr", "bc_smoothing", "bc_smoothing_phases", "bc_temperature", "bc_loss", "bc_greedy_bonus",
    "bc_data", "dagger_rounds", "dagger_games", "n_envs", "vec_env", "opponents", "snapshot_every", "max_snapshots",
    "learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef",
    "target_kl", "eval_every", "eval_games", "eval_opponents", "eval_seed", "best_by", "checkpoint_every",
    "torch_threads", "workers", "progress",
}  # fmt: skip
EXIT_KNOBS = {
    "out", "seed", "rounds", "games", "chunk", "playouts", "z", "opponents", "features", "network", "net_arch", "init",
    "epochs", "lr", "temperature", "loss", "greedy_bonus", "value_coef", "eval_games", "eval_opponents", "eval_seed",
    "best_by", "rules", "torch_threads", "workers", "eval_start", "pool_after",
}  # fmt: skip


@pytest.mark.parametrize("name", ["ppo", "exit", "belief", "value", "distill"])
def test_every_recipe_answers_help_through_the_one_command(name, capsys):
    """``conquian-train NAME --help`` (and a sub-command's) prints the recipe's usage under its name
    (``conquian-train value`` once failed: its main took no program name)."""
    from conquian_train.cli import main

    subs = {"belief": ["generate"], "value": ["fit"], "distill": ["fit"]}.get(name, [])
    with pytest.raises(SystemExit) as stop:
        main([name, *subs, "--help"])
    assert stop.value.code == 0
    assert f"conquian-train {name}" in capsys.readouterr().out


def test_every_recipe_is_a_module_of_the_package_and_named_after_it():
    found = {r.name: r for r in recipes.every()}  # each module imports here (no optional dependency missing)
    assert set(found) == {"ppo", "exit", "belief", "value", "distill"}
    assert found["ppo"].configs == (TrainConfig,) and found["exit"].configs == (ExItConfig,)
    assert found["belief"].configs == (GenerateConfig, FitConfig)
    assert found["value"].configs == (value.GenerateConfig, value.FitConfig)
    assert all(recipes.find(name) is found[name] for name in found)
    with pytest.raises(ValueError, match="unknown recipe 'files'; recipes: belief, distill, exit, ppo, value"):
        recipes.find("files")  # a module of the package that is no recipe
    # found in the sources: listing them imports none
    assert recipes.names() == ["belief", "distill", "exit", "ppo", "value"]


def test_the_command_lists_the_recipes_and_refuses_an_unknown_one(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: conquian-train RECIPE" in out
    for name in ("ppo", "exit", "belief"):
        assert f"  {name} " in out
    assert cli.main([]) == 2  # conquian-train alone: the usage, on standard error
    assert "recipes:" in capsys.readouterr().err
    assert cli.main(["nosuch", "--out", "x"]) == 2
    assert "unknown recipe 'nosuch'" in capsys.readouterr().err
    assert cli.main(["--out", "x"]) == 2  # only train.py takes a command line without a recipe


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


def test_train_py_without_a_recipe_runs_ppo_and_names_the_new_spelling(tmp_path, capsys):
    # the same bad knob as PPO's: refused by TrainConfig, with a note naming the new spelling
    assert train.main(["--out", str(tmp_path / "r"), "--n-steps", "0"]) == 2
    err = capsys.readouterr().err
    assert "note: train.py without a recipe runs ppo" in err and "conquian-train ppo" in err
    assert "n_steps must be a positive integer, got 0" in err
    assert train.main(["ppo", "--out", str(tmp_path / "r"), "--n-steps", "0"]) == 2
    err = capsys.readouterr().err
    assert "note:" not in err and "n_steps must be a positive integer" in err
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
        config.best_by = "ismcts"
        with pytest.raises(ValueError, match="best_by 'ismcts' must be one of eval_opponents"):
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
    from conquian_train import exit as exit_recipe

    del written["eval_start"]
    (folder / "config.json").write_text(json.dumps(written))
    config, resumed = recipes.config_from_args(ExItConfig, {"resume": str(folder)}, ())
    assert resumed and config.eval_start is True
    assert "eval_start" not in exit_recipe.recipe(config)
    # nor a run from before the deep-sets scorer (no pool_after): no pooling, the same recipe
    assert config.pool_after == -1 and "pool_after" not in exit_recipe.recipe(config)
    assert exit_recipe.recipe(dataclasses.replace(config, pool_after=0))["pool_after"] == 0


@pytest.mark.parametrize("config_class", [TrainConfig, ExItConfig])
def test_a_run_from_before_the_rules_object_resumes_with_its_recipe_hash(config_class, tmp_path):
    """A config.json written when the recipes had a ``forcing`` knob resumes on the same rules, and the
    recipe (whose hash its checkpoint and shards hold) still names each rule field by itself."""
    from conquian_train import exit as exit_recipe
    from conquian_train import ppo as ppo_recipe

    recipe = exit_recipe.recipe if config_class is ExItConfig else ppo_recipe.recipe
    written = json.loads(json.dumps(dataclasses.asdict(config_class())))
    assert written.pop("rules") == {"forcing": False}
    for forcing in (False, True):
        folder = tmp_path / f"old{forcing}"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({**written, "forcing": forcing}))
        config, resumed = recipes.config_from_args(config_class, {"resume": str(folder)}, ())
        assert resumed and config.rules == Rules(forcing=forcing)
        made = recipe(config)
        assert "rules" not in made and made["forcing"] is forcing
    both = {**written, "forcing": True, "rules": {"forcing": True}}
    (folder / "config.json").write_text(json.dumps(both))
    with pytest.raises(ValueError, match="'rules' or the older 'forcing', not both"):
        recipes.config_from_args(config_class, {"resume": str(folder)}, ())
    # a new run's config.json holds the rules object, and --forcing sets it
    args = vars(recipes.parser("x", "", config_class).parse_args(["--forcing"]))
    config, _ = recipes.config_from_args(config_class, args, ())
    assert config.rules == Rules(forcing=True) and knobs.to_dict(config)["rules"] == {"forcing": True}


@pytest.mark.parametrize(
    "old, name, new",
    [
        ("conquian_env.sb3", "SelfPlay", "conquian_train.selfplay"),
        ("conquian_env.sb3", "LearnerOpponent", "conquian_train.selfplay"),
        ("agents.imitation", "fit_imitation", "conquian_train.imitation"),
        ("agents.imitation", "ImitationData", "conquian_train.imitation"),
        ("agents.ppo", "export_model", "conquian_train.policy_files"),
        ("agents.ppo", "restore_checkpoint", "conquian_train.policy_files"),
        ("agents.ppo", "load_snapshots", "conquian_train.policy_files"),
    ],
)
def test_training_code_moved_into_the_package_and_its_old_home_says_where(old, name, new):
    # the lower layers import nothing of the training package, so an old import names the new one
    import importlib

    with pytest.raises(ImportError, match=f"{old}.{name} moved to {new}: from {new} import {name}"):
        getattr(importlib.import_module(old), name)
    assert getattr(importlib.import_module(new), name).__module__ == new
    with pytest.raises(AttributeError):  # any other missing name is still an AttributeError
        importlib.import_module(old).no_such_name  # noqa: B018


def test_the_training_callbacks_do_not_take_stable_baselines3s_names():
    """SB3's EvalCallback and CheckpointCallback do other things than ours: a user who knows SB3's
    would be misled by a class of that name (ours were called so once)."""
    from stable_baselines3.common import callbacks as sb3_callbacks

    from conquian_train import callbacks

    ours = {name for name, value in vars(callbacks).items()
            if isinstance(value, type) and value.__module__ == callbacks.__name__}  # fmt: skip
    assert {"EvaluateEvery", "CheckpointEvery", "SnapshotEvery"} <= ours
    assert ours & set(vars(sb3_callbacks)) == set()

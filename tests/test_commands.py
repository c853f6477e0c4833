"""The commands the README and the training guide name, run as a user runs them, at a tiny size
with two workers: ``make train``, ``make train-exit``, ``make train-ppo`` and every recipe's quick
run (:attr:`conquian_train.recipes.Recipe.quick`, from the recipe registry).  Slow (a few minutes
on two cores): CI runs them with ``make test-commands``; the default suite checks that every
recipe declares its quick run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conquian_train import recipes
from conquian_train.recipes import Recipe

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.executable).parent.parent
#: every make command at a tiny size: the variables the Makefile declares for it
MAKE_SIZES = {
    "train": {"TRAIN_GAMES": "20", "LABEL_ARGS": "--playouts 2 --chunk 10",
              "TRAIN_ARGS": "--hidden 8 --epochs 1 --batch 64 --eval-games 4 --workers 2"},
    "train-exit": {"QUICK": "--games 8 --chunk 4 --rounds 2 --playouts 60 --epochs 2 --eval-games 8 --workers 2"},
    "train-ppo": {"PPO_NEW": "--total-steps 1024 --bc-games 20 --bc-epochs 1 --n-envs 2 --n-steps 256 "
                  "--batch-size 128 --n-epochs 1 --eval-every 512 --eval-games 4 --checkpoint-every 512 "
                  "--snapshot-every 256 --net-arch 16", "TRAIN_ARGS": "--workers 2 --no-progress"},
    "train-ppo-quick": {"PPO_QUICK": "--total-steps 1024 --bc-games 0 --n-envs 2 --n-steps 256 --batch-size 128 "
                        "--n-epochs 1 --eval-every 512 --eval-games 4 --checkpoint-every 512 --snapshot-every 0 "
                        "--net-arch 16", "TRAIN_ARGS": "--workers 2 --no-progress"},
    "train-selfplay": {"SELFPLAY_NEW": "--total-frames 1200 --num-games 16 --horizon 16 --hidden 8 --minibatch 32 "
                       "--eval-every 600 --checkpoint-every 600 --snapshot-every 300 --eval-games 4",
                       "TRAIN_ARGS": "--workers 2 --no-progress"},
    "train-first": {"FIRST_NEW": "--total-frames 1200 --num-games 16 --horizon 16 --hidden 8 --minibatch 32 "
                    "--eval-every 600 --checkpoint-every 600 --snapshot-every 300 --eval-games 4",
                    "TRAIN_ARGS": "--workers 2 --no-progress"},
}  # fmt: skip
RUNS = {"train": "RUN", "train-exit": "EXIT_RUN", "train-ppo": "PPO_RUN", "train-ppo-quick": "PPO_QUICK_RUN",
        "train-selfplay": "SELFPLAY_RUN", "train-first": "FIRST_RUN"}  # fmt: skip


def _run(cmd: list[str], cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    text = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in text, f"{' '.join(cmd)}:\n{text[-3000:]}"
    return text


@pytest.mark.slow
@pytest.mark.parametrize("target", list(MAKE_SIZES))
def test_a_make_training_command_runs_to_its_end_and_resumes(target, tmp_path):
    if shutil.which("make") is None:
        pytest.skip("no make")
    run = tmp_path / "run"
    sizes = [f"{k}={v}" for k, v in MAKE_SIZES[target].items()]
    # the venv running these tests, taken as installed (-o: never rebuilt here)
    cmd = ["make", "-C", str(ROOT), "-o", str(VENV / ".installed"), f"VENV={VENV}", f"{RUNS[target]}={run}", *sizes,
           target]  # fmt: skip
    _run(cmd, ROOT)
    assert any(run.rglob("eval.csv")), sorted(p.name for p in run.rglob("*"))
    _run(cmd, ROOT)  # the same command again: resumed, nothing broken


def _recipes() -> list[Recipe]:
    return [r for r in recipes.every() if isinstance(r, Recipe)]


def test_every_recipe_declares_a_quick_run():
    assert [r.name for r in _recipes()] == recipes.names()
    assert all(callable(r.quick) for r in _recipes()), [r.name for r in _recipes() if r.quick is None]


@pytest.mark.slow
@pytest.mark.parametrize("name", [r.name for r in _recipes()])
def test_every_recipes_quick_run_runs_with_two_workers_through_train_py(name, tmp_path):
    recipe = recipes.find(name)
    for folder, start, again in recipe.quick(tmp_path, 2):
        _run([sys.executable, str(ROOT / "train.py"), name, *start], tmp_path)
        assert (folder / "config.json").is_file()
        _run([sys.executable, str(ROOT / "train.py"), name, *again], tmp_path)

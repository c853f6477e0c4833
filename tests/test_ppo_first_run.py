"""A first PPO run as a newcomer meets it: a run shorter than one rollout refused at once, the
rollout said first, the log's steps/s, losses and entropy, the progress bar through the last
update, and the quick preset of the documentation's Training page (its smoke test)."""

from __future__ import annotations

import csv
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")
train = pytest.importorskip("conquian_train.recipes.ppo")  # the ppo recipe: main, TrainConfig, train_ppo

ROOT = Path(__file__).resolve().parent.parent


def _small(out, *more):
    return [
        "--out", str(out), "--total-steps", "1024", "--bc-games", "0", "--n-envs", "2", "--n-steps", "256",
        "--batch-size", "128", "--n-epochs", "1", "--eval-every", "0", "--eval-games", "4", "--eval-opponents",
        "random", "--best-by", "random", "--checkpoint-every", "0", "--snapshot-every", "512", "--workers", "1", *more,
    ]  # fmt: skip


def test_a_run_shorter_than_one_rollout_is_refused_before_anything_is_played(tmp_path, capsys):
    # before: --total-steps 1000 played a 4000-game warm start and two evaluations, and said at 443 s
    # that the run rounds up to 131,072 steps
    start = time.monotonic()
    assert train.main(["--out", str(tmp_path / "r"), "--total-steps", "1000", "--no-progress"]) == 2
    assert time.monotonic() - start < 30
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: total_steps 1,000 is below one PPO rollout of 131,072 steps (256 games x n_steps")
    assert "--total-steps 131072 or more" in err and not (tmp_path / "r").exists()


def test_the_log_says_the_rollouts_first_then_steps_per_second_losses_and_entropy(tmp_path, capsys):
    out = tmp_path / "r"
    assert train.main(_small(out, "--total-steps", "1000", "--progress")) == 0
    log = (out / "train.log").read_text().splitlines()
    first_ppo = next(i for i, line in enumerate(log) if "PPO collects" in line)
    assert "rollouts of 512 steps (2 games x n_steps 256)" in log[first_ppo]
    assert "this run ends at step 1,024, not 1,000" in log[first_ppo]
    assert first_ppo < next(i for i, line in enumerate(log) if "eval" in line.lower())  # before any evaluation
    updates = [line for line in log if re.search(r"step [\d,]+ of 1,024: [\d,]+ steps/s", line)]
    assert updates and updates[-1].split("] ", 1)[1].startswith("step 1,024 of 1,024")
    for name in ("policy loss", "value loss", "entropy", "KL"):
        assert name in updates[-1], (name, updates[-1])
    entropy = float(re.search(r"entropy ([\d.]+)", updates[-1]).group(1))
    assert 0 < entropy < 4.5  # nats over at most 85 actions: a real entropy, not SB3's negated loss
    # the bar: full while the last update runs (it sat at 99% through it), then done
    segments = re.split(r"[\r\n]", capsys.readouterr().err)
    assert any("100%" in s and "updating the policy" in s for s in segments), segments[-6:]


def quick_preset() -> list[str]:
    """The flags of ``make train-ppo-quick`` (the Makefile's ``PPO_QUICK``), as the docs show them."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.startswith("PPO_QUICK ?="))
    return line.partition("?=")[2].split()


def _eval_rows(out, opponent):
    rows = [r for r in csv.DictReader(open(out / "eval.csv")) if r["opponent"] == opponent]
    return sorted(rows, key=lambda r: int(r["step"]))


def test_the_quick_preset_is_the_one_the_guide_shows_and_runs(tmp_path):
    flags = quick_preset()
    guide = " ".join((ROOT / "docs" / "training.md").read_text().split())
    assert "conquian-train ppo --out runs/ppo-quick " + " ".join(flags) in guide
    out = tmp_path / "q"  # its first two rollouts (the later flags win), evaluated small
    assert train.main([*flags, "--out", str(out), "--total-steps", "16384", "--eval-every", "8192",
                       "--eval-games", "20", "--workers", "1", "--no-progress"]) == 0  # fmt: skip
    assert [int(r["step"]) for r in _eval_rows(out, "random")] == [0, 8192, 16384]


@pytest.mark.slow
def test_the_quick_preset_learns_within_three_minutes(tmp_path):
    out = tmp_path / "q"
    start = time.monotonic()
    assert train.main([*quick_preset(), "--out", str(out), "--workers", "2", "--no-progress"]) == 0
    assert time.monotonic() - start < 180
    rows = _eval_rows(out, "random")
    first, last = rows[0], rows[-1]
    assert float(last["low"]) > float(first["high"]), (first, last)  # moved by more than its interval


def test_the_cleanrl_style_file_runs_from_the_package():
    # before: examples/cleanrl_ppo.py, the run that learns visibly in seconds, was not in the wheel
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    command = [sys.executable, "-m", "conquian_train.cleanrl_ppo", "--total-steps", "2048", "--num-envs", "16",
               "--num-steps", "64", "--eval-every", "0", "--eval-games", "8"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT / "docs", env=env)
    assert run.returncode == 0, run.stderr
    assert "done: 2048 steps" in run.stdout and "illegal moves 0" in run.stdout
    guide = (ROOT / "docs" / "integrations" / "cleanrl.md").read_text()
    assert "python -m conquian_train.cleanrl_ppo" in guide

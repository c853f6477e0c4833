"""A first PPO run as a newcomer meets it: a run shorter than one rollout refused at once, the
rollout said first, the log's steps/s, losses and entropy, the progress bar through the last
update, and the quick preset of the documentation's Training page (its smoke test)."""

from __future__ import annotations

import re
import time

import pytest

pytest.importorskip("sb3_contrib")
train = pytest.importorskip("conquian_train.recipes.ppo")  # the ppo recipe: main, TrainConfig, train_ppo


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
    first_ppo = next(i for i, line in enumerate(log) if "PPO:" in line)
    assert "rollouts of 512 (2 games x n_steps 256)" in log[first_ppo] and "ends at step 1,024" in log[first_ppo]
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

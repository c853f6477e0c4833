"""The PPO recipe's run (``python train.py``): warm start, then MaskablePPO with its callbacks, checkpoints and resume.

A **checkpoint** (``checkpoints/``: ``latest.zip``, ``snapshots.npz``, ``state.json``, swapped in
whole) is taken at the start of a rollout, at step 0 (after the warm start) and every
``checkpoint_every`` steps.  Each checkpoint begins a *segment*: the games in progress are
dropped, the games are dealt anew and the random numbers (torch's, numpy's, the opponent pool's
and its bots') start again from ``derive_seed(seed, SEGMENT_STREAM, step)``.  A resumed run begins
its segment the same way, so it makes the very rollouts, updates, evaluations and files of the
run that was never stopped (on the ``batched`` games; the ``subproc`` and ``dummy`` games reseed
their deals only).  What a stopped session did after its last checkpoint is done again.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from agents.ppo import stamp_model
from conquian_env.seeding import PPO_SEGMENT, derive_seed

from . import files
from .callbacks import CheckpointCallback, EvalCallback, ProgressCallback, SnapshotCallback
from .envs import make_vec_env
from .evaluation import Evaluator
from .run import PPO_STATE, RunFolder, RunFolderError
from .warm_start import warm_start

#: the seed stream of a segment's random numbers: ``derive_seed(seed, SEGMENT_STREAM, step)``
#: (:data:`conquian_env.seeding.PPO_SEGMENT`)
SEGMENT_STREAM = PPO_SEGMENT
#: the knobs a resume may change; the rest of ``config.json`` is the run's recipe
MAY_CHANGE = ("total_steps", "progress", "workers", "torch_threads")


def recipe(config: Any) -> dict[str, Any]:
    """The knobs that make the run what it is (a checkpoint refuses a ``config.json`` that changed them)."""
    return {k: v for k, v in config.to_dict().items() if k not in ("out", *MAY_CHANGE)}


def start_segment(model: Any, seed: int, step: int) -> None:
    """New deals in every game and every random number from ``derive_seed(seed, SEGMENT_STREAM, step)``:
    what the learner meets from ``step`` on depends on the weights and the step alone."""
    from stable_baselines3.common.utils import set_random_seed

    s = derive_seed(seed, SEGMENT_STREAM, step)
    set_random_seed(s % 2**32)
    model.action_space.seed(s % 2**32)
    model.env.seed(s % 2**31)
    model._last_obs = model.env.reset()  # SB3 keeps the observations the next rollout starts from here
    model._last_episode_starts = np.ones((model.env.num_envs,), dtype=bool)


def holds_run(out) -> bool:
    """A PPO run is in ``out`` once it has a checkpoint (a folder without one starts afresh)."""
    return (out / "checkpoints").exists() or (out / "checkpoints.ready").exists()


def train_ppo(config: Any, resume: bool = False) -> dict[str, Any]:
    """The recipe: environments -> new or resumed model -> warm start -> PPO with callbacks -> save.

    ``config`` is ``train.py``'s ``TrainConfig``.  Returns the run state."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import CallbackList

    c, run = config, RunFolder(config.out, recipe(config))
    torch.set_num_threads(c.torch_threads)
    run.out.mkdir(parents=True, exist_ok=True)
    venv = make_vec_env(c.opponents, c.games_in_parallel, c.vec_env, features=c.features, forcing=c.forcing,
                        seed=c.seed, max_snapshots=c.max_snapshots)  # fmt: skip
    model = MaskablePPO("MlpPolicy", venv, tensorboard_log=str(run.out / "tb"), **c.ppo())
    stamp_model(model, c.features)  # its files carry the feature set and layout hash
    evaluate = Evaluator(run, c.eval_opponents, c.best_by, games=c.eval_games, seed=c.eval_seed, forcing=c.forcing,
                         batched=c.vec_env == "batched", jobs=c.processes)  # fmt: skip
    if resume:
        resumed = run.resume(model, c.features)
    elif run.open_checkpoint(PPO_STATE) is not None:
        raise RunFolderError(f"{run.out} already holds a run: use --resume {run.out} or another --out")
    else:
        resumed = False
    if resumed:
        run.log(f"resumed {run.out} at step {model.num_timesteps:,}")
        start_segment(model, c.seed, model.num_timesteps)
    else:
        if resume:
            run.log(f"{run.out} holds no checkpoint yet: the run starts from its beginning")
        warmed = bool(c.bc_games or c.bc_data)
        if warmed:
            warm_start(model.policy, c.warm_start(), run, lambda stage: evaluate(model, 0, stage=stage))
        evaluate(model, 0, stage="warm start" if warmed else "init")
        run.state.update(next_eval=c.eval_every, next_snapshot=0, next_checkpoint=0)
    callbacks = [
        SnapshotCallback(run, c.snapshot_every, c.max_snapshots),
        EvalCallback(run, evaluate, c.eval_every),
        CheckpointCallback(run, c.checkpoint_every, lambda step: start_segment(model, c.seed, step)),
    ]
    if c.progress if c.progress is not None else sys.stderr.isatty():
        callbacks.insert(0, ProgressCallback(c.total_steps))
    remaining, rollout = c.total_steps - model.num_timesteps, venv.num_envs * c.n_steps
    if remaining > 0 and remaining % rollout:
        run.log(f"PPO collects whole rollouts of {rollout:,} steps ({venv.num_envs} games x n_steps {c.n_steps}): "
                f"this run ends at step {model.num_timesteps + -(-remaining // rollout) * rollout:,}, "
                f"not {c.total_steps:,}")  # fmt: skip
    try:
        if remaining > 0:
            model.learn(remaining, callback=CallbackList(callbacks), reset_num_timesteps=not resumed,
                        tb_log_name="ppo")  # fmt: skip
    except KeyboardInterrupt:  # the last checkpoint stands: --resume goes on from it exactly
        run.log(f"interrupted at step {model.num_timesteps:,}: continue with --resume {run.out} (from the last "
                "checkpoint)")  # fmt: skip
        try:
            venv.close()
        except Exception:  # workers that got the Ctrl-C too are gone already
            pass
        raise
    if run.state.get("last_eval_step") != model.num_timesteps:
        evaluate(model, model.num_timesteps)
    venv.close()
    run.save_checkpoint(model)  # with the final evaluation's best score
    files.copy_atomic(run.checkpoints / "latest.zip", run.out / "final.zip")  # the same model
    run.log(f"done: {model.num_timesteps:,} steps in {run.elapsed():.0f} s; best score vs {c.best_by} "
            f"{run.state['best_score']:.3f} at step {run.state['best_step']:,} -> {run.out / 'best.zip'}")  # fmt: skip
    return run.state

"""Train a Conquian agent: behaviour-cloning warm start, then MaskablePPO self-play.

Usage::

    python train.py                                   # the default recipe (make train)
    python train.py --total-steps 2000000 --out runs/long
    python train.py --resume runs/long                # continue a run where it stopped
    python train.py --help                            # every knob, with its meaning

Every knob is a field of :class:`TrainConfig` (its help text is the field's ``help``);
the command line is generated from it, and the config is printed and saved as
``config.json`` in the run folder.

The recipe
    1. **Warm start** (``bc_games`` > 0): the ``teacher`` bot (default ``greedy``) plays
       ``bc_games`` games against the ``bc_opponents``; its decisions, seen through the
       policy's observation, are a supervised data set.  The policy is trained to imitate
       them (cross-entropy on the masked logits) and the value head to predict the game
       result.  This gives PPO a competent start instead of random play.
    2. **PPO** (sb3-contrib ``MaskablePPO``, the legal-action mask applied to every
       decision): the learner plays one seat (drawn each game) in ``n_envs`` games on the
       batched engine (``vec_env`` ``batched``, the default:
       :class:`conquian_env.sb3.ConquianVecEnv`, opponents deciding in batches), or in
       ``n_envs`` copies of :class:`conquian_env.wrappers.SingleAgentEnv` (worker
       processes with ``vec_env`` ``subproc``).  Each game's opponent is drawn from the pool ``opponents``: fixed
       bots (any bot spec) and ``self`` (the latest snapshot of the learner) / ``past`` (an
       older one); a snapshot is taken every ``snapshot_every`` steps.
    3. **Evaluation** every ``eval_every`` steps: the deterministic policy plays
       ``eval_games`` games against each of ``eval_opponents`` on duplicate deals from
       ``eval_seed`` (a seed training never uses), with 95% intervals (``eval.csv``,
       ``learning_curve.png``).  ``best.zip`` is the model with the best score against
       ``best_by`` so far (training can drift past its peak), ``final.zip`` the last one.

The run folder (``out``): ``config.json``, ``eval.csv``, ``learning_curve.png``,
``bc.csv`` (warm start), ``tb/`` (TensorBoard), ``checkpoints/`` (``latest.zip`` plus
``state.json`` and ``snapshots.npz`` for ``--resume``), ``best.zip``, ``final.zip``.
Play a result with ``python evaluate.py ppo:runs/NAME/best.zip greedy``.

The parts live beside what they train: the imitation data set and loss in
:mod:`agents.imitation`, the opponent pool in :mod:`agents.batched` (``OpponentPool``),
snapshots, ``--resume`` and ``--export`` in :mod:`agents.ppo`, the duplicate-deal
evaluation in :func:`conquian_arena.tournament.play_pair` (the deals ``conquian-evaluate
--seed S`` plays at ``eval_seed`` S).  A new stage of the recipe is a function called from
:func:`train` and, when it acts during PPO, one more callback in its list.  The progress
bar is shown when standard error is a terminal (``--progress`` / ``--no-progress`` to choose).

On a small machine set torch to few threads (``torch_threads``, default 1): next to
environment worker processes, torch's default threading can slow training many-fold.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import multiprocessing
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from agents.batched import BatchPolicy, BatchPool, PoolOpponent, parse_pool
from agents.imitation import ImitationData, ImitationSettings, RecordingAgent, fit_imitation
from agents.ppo import NumpyPolicy, PolicyAgent, export_model, load_snapshots, restore_checkpoint, save_snapshots
from agents.registry import make_agent
from conquian_arena.match import deal_for_seed, play_game
from conquian_arena.tournament import pair_score, play_pair
from conquian_env.seeding import derive_seed


def _f(default: Any, help: str, **kw: Any) -> Any:  # noqa: A002 - the field's help text
    if isinstance(default, (list, tuple, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help, **kw})
    return field(default=default, metadata={"help": help, **kw})


@dataclass
class TrainConfig:
    """Every knob of a training run (see the module docstring for the recipe)."""

    out: str = _f("runs/default", "run folder (config, logs, checkpoints, models)")
    seed: int = _f(0, "seed of everything in the run (deals, opponents, network init)")
    total_steps: int = _f(
        1_000_000,
        "PPO learner decisions in total (the warm start not counted), rounded up to whole rollouts of n_envs x n_steps",
    )
    forcing: bool = _f(False, "train and evaluate on the forcing variant (RULES.md section 7)")
    device: str = _f("cpu", "torch device of the learner ('cpu', 'cuda', 'auto'); workers always use numpy")
    features: str = _f("meld", "policy input: 'meld' (raw observation + meld-aware features) or 'raw'")
    net_arch: tuple[int, ...] = _f((256, 256), "hidden layer sizes of the policy and value networks")
    # warm start
    bc_games: int = _f(4000, "games the teacher plays for the behaviour-cloning warm start (0: none)")
    teacher: str = _f("greedy", "bot spec of the teacher imitated in the warm start")
    bc_opponents: tuple[str, ...] = _f(("greedy", "random"), "bot specs the teacher plays in the warm start")
    bc_epochs: int = _f(4, "passes over the warm-start data")
    bc_lr: float = _f(1e-3, "learning rate of the warm start")
    bc_smoothing: float = _f(0.05, "label smoothing over the legal actions (keeps exploration for PPO)")
    bc_smoothing_phases: tuple[str, ...] = _f(
        ("offer", "meld", "discard", "force"), "decision phases whose labels are smoothed (where PPO explores)"
    )
    bc_temperature: float = _f(
        0.02, "soft targets softmax(q / T) where a searching teacher (rollout) gives action values (0: hard labels)"
    )
    bc_loss: str = _f(
        "advantage",
        "how a searching teacher's action values are learned: 'advantage' (logits regress them, least squares)"
        " or 'softmax' (cross-entropy on softmax(q / T))",
    )
    bc_greedy_bonus: float = _f(
        0.0, "added to the teacher's value of greedy's choice: leave greedy only for a larger predicted gain"
    )
    bc_data: str = _f("", "reuse the warm-start data set (bc_data.npz) of an earlier run instead of playing")
    dagger_rounds: int = _f(0, "DAgger rounds after the warm start: the policy plays, the teacher labels")
    dagger_games: int = _f(1000, "games the policy plays per DAgger round")
    # PPO
    n_envs: int = _f(0, "parallel games the learner plays (0: 256 with vec_env 'batched', 8 otherwise)")
    vec_env: str = _f(
        "batched",
        "'batched' (all games in one compiled engine, opponents decide in batches: the fast path), "
        "'subproc' (SingleAgentEnv worker processes) or 'dummy' (SingleAgentEnvs in this process)",
    )
    opponents: tuple[str, ...] = _f(
        ("greedy@4", "random@1", "self@2", "past@1"),
        "opponent pool, SPEC@WEIGHT: any bot spec, 'self' (latest snapshot), 'past' (an older one)",
    )
    snapshot_every: int = _f(100_000, "learner steps between snapshots of the policy for the pool")
    max_snapshots: int = _f(10, "snapshots kept in the pool (oldest dropped)")
    learning_rate: float = _f(1e-4, "PPO learning rate (Adam)")
    n_steps: int = _f(512, "steps per environment per PPO rollout")
    batch_size: int = _f(512, "PPO minibatch size")
    n_epochs: int = _f(4, "PPO epochs per rollout")
    gamma: float = _f(1.0, "discount (the only reward is the result at the end)")
    gae_lambda: float = _f(0.95, "GAE lambda")
    clip_range: float = _f(0.1, "PPO clip range")
    ent_coef: float = _f(0.003, "entropy bonus")
    vf_coef: float = _f(0.5, "value loss weight")
    target_kl: float = _f(0.03, "stop an update's epochs early past this KL (0: never)")
    # evaluation and output
    eval_every: int = _f(250_000, "learner steps between evaluations (0: only at the end)")
    eval_games: int = _f(600, "games per evaluation opponent (duplicate deals, seats swapped)")
    eval_opponents: tuple[str, ...] = _f(("random", "greedy"), "bot specs evaluated against")
    eval_seed: int = _f(1_000_003, "deal seed of the evaluations (never used in training)")
    best_by: str = _f("greedy", "evaluation opponent whose score picks best.zip")
    checkpoint_every: int = _f(250_000, "learner steps between checkpoints")
    torch_threads: int = _f(1, "torch threads in this process (workers use numpy only)")
    workers: int = _f(0, "processes for warm-start games and evaluations (0: all cores)")
    progress: bool | None = _f(None, "progress bar on standard error (default: when it is a terminal)")

    def validate(self) -> None:
        """Raise ``ValueError`` naming the knob that is wrong (before any work starts)."""
        choices = {"features": ("meld", "raw"), "vec_env": ("batched", "subproc", "dummy")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be {' or '.join(map(repr, allowed))}, got {getattr(self, name)!r}")
        positive = ("total_steps", "n_steps", "batch_size", "n_epochs", "eval_games", "max_snapshots")
        counts = ("n_envs", "bc_games", "dagger_rounds", "dagger_games", "snapshot_every", "eval_every")
        for name in positive + counts + ("checkpoint_every", "workers", "seed"):
            value, least = getattr(self, name), 1 if name in positive else 0
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                kind = "a positive" if least else "a non-negative"
                raise ValueError(
                    f"{name} must be {kind} integer{' (0: automatic)' * (name == 'n_envs')}, got {value!r}"
                )
        if self.progress not in (None, True, False):
            raise ValueError(f"progress must be true, false or null (when a terminal), got {self.progress!r}")
        if self.bc_data and not Path(self.bc_data).is_file():
            raise ValueError(f"bc_data {self.bc_data!r} is not a file")
        self.imitation()  # the warm start's knobs check themselves
        if not self.net_arch or any(int(n) < 1 for n in self.net_arch):
            raise ValueError(f"net_arch must be positive layer sizes, got {self.net_arch!r}")
        if self.best_by not in self.eval_opponents:
            raise ValueError(f"best_by {self.best_by!r} must be one of eval_opponents {list(self.eval_opponents)}")
        if not self.opponents:
            raise ValueError("the opponent pool is empty")
        parse_pool(self.opponents)
        for spec in (self.teacher, *self.bc_opponents, *self.eval_opponents):
            make_agent(spec, 0)  # a bad spec fails now, not after an hour

    @property
    def games_in_parallel(self) -> int:
        """``n_envs``, or its automatic value for the ``vec_env`` kind."""
        return self.n_envs or (256 if self.vec_env == "batched" else 8)

    @property
    def processes(self) -> int:
        """``workers``, or all cores."""
        return self.workers or os.cpu_count() or 1

    def imitation(self) -> ImitationSettings:
        """The warm start's loss settings (the ``bc_*`` knobs)."""
        return ImitationSettings(
            epochs=self.bc_epochs, lr=self.bc_lr, smoothing=self.bc_smoothing,
            smoothing_phases=self.bc_smoothing_phases, temperature=self.bc_temperature, loss=self.bc_loss,
            greedy_bonus=self.bc_greedy_bonus, value_coef=self.vf_coef,
        )  # fmt: skip

    def ppo(self) -> dict[str, Any]:
        """MaskablePPO's keyword arguments."""
        return dict(
            learning_rate=self.learning_rate, n_steps=self.n_steps, batch_size=self.batch_size,
            n_epochs=self.n_epochs, gamma=self.gamma, gae_lambda=self.gae_lambda, clip_range=self.clip_range,
            ent_coef=self.ent_coef, vf_coef=self.vf_coef, target_kl=self.target_kl or None,
            policy_kwargs={"net_arch": {"pi": list(self.net_arch), "vf": list(self.net_arch)}},
            seed=self.seed, device=self.device, verbose=0,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in dataclasses.fields(self)
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        names = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; known: {sorted(names)}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


# --------------------------------------------------------------------------- the steps of main


def make_vec_env(config: TrainConfig):
    """The learner's games: the batched engine, or SingleAgentEnvs in processes, each with the opponent pool."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor

    c, pool = config, parse_pool(config.opponents)
    if c.vec_env == "batched":
        from conquian_env.sb3 import ConquianVecEnv

        opponent = BatchPool(pool, seed=c.seed * 1000 + 1, max_snapshots=c.max_snapshots)
        return VecMonitor(
            ConquianVecEnv(c.games_in_parallel, opponent, forcing=c.forcing, observation=c.features, seed=c.seed)
        )
    fns = [
        partial(pool_env, pool, c.seed * 1000 + rank, c.max_snapshots, c.features, c.forcing)
        for rank in range(c.games_in_parallel)
    ]
    venv = SubprocVecEnv(fns, start_method="spawn") if c.vec_env == "subproc" and len(fns) > 1 else DummyVecEnv(fns)
    venv.seed(c.seed)
    return VecMonitor(venv)


def pool_env(
    pool: list[tuple[str, float]], seed: int, max_snapshots: int, features: str, forcing: bool
) -> gymnasium.Env:
    """One SingleAgentEnv against the per-game opponent pool, with its methods for ``VecEnv.env_method``."""
    from agents.features import FeatureObservation
    from conquian_env.wrappers import SingleAgentEnv

    opponent = PoolOpponent(pool, seed=seed, max_snapshots=max_snapshots)
    env: gymnasium.Env = SingleAgentEnv(opponent=opponent, forcing=forcing)
    return PoolEnv(FeatureObservation(env) if features == "meld" else env, opponent)


class PoolEnv(gymnasium.Wrapper):
    """Outermost training wrapper: exposes the opponent pool to ``VecEnv.env_method``."""

    def __init__(self, env: gymnasium.Env, pool: PoolOpponent):
        super().__init__(env)
        self.add_snapshot, self.opponent_counts = pool.add_snapshot, pool.opponent_counts

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def warm_start(model, config: TrainConfig, run: RunFolder, evaluate: Evaluator) -> None:
    """Behaviour cloning of the teacher, then ``dagger_rounds`` rounds of DAgger (each evaluated)."""
    c, t0 = config, time.time()
    if c.bc_data:
        data, meta = ImitationData.load(c.bc_data, c.features)
        run.log(f"warm start: {len(data)} decisions of {meta.get('teacher')} from {c.bc_data}")
    else:
        data, results = record_games(c, c.bc_games, None, 0)
        run.log(f"warm start: {c.bc_games} games of {c.teacher} vs {list(c.bc_opponents)} "
                f"(W/D/L {results}), {len(data)} decisions, {time.time() - t0:.0f} s")  # fmt: skip
    run.append_csv("bc.csv", fit_imitation(model.policy, data, c.imitation(), c.seed, "bc", run.log))
    for r in range(1, c.dagger_rounds + 1):
        evaluate(model, 0, stage="bc" if r == 1 else f"dagger{r - 1}")
        t0 = time.time()
        new, results = record_games(c, c.dagger_games, NumpyPolicy.from_sb3(model.policy), r)
        run.log(f"DAgger round {r}: the policy played {c.dagger_games} games vs {list(c.bc_opponents)} (W/D/L "
                f"{results}), {c.teacher} labelled {len(new)} decisions, {time.time() - t0:.0f} s")  # fmt: skip
        data = ImitationData.concatenate([data, new])
        run.append_csv("bc.csv", fit_imitation(model.policy, data, c.imitation(), c.seed, f"dagger{r}", run.log))
    data.save(
        run.out / "bc_data.npz", {"teacher": c.teacher, "features": c.features, "bc_opponents": list(c.bc_opponents)}
    )


def record_games(config: TrainConfig, games: int, student: NumpyPolicy | None, round_: int):
    """Warm-start round ``round_``: ``games`` games over the worker processes; their decisions and W/D/L."""
    n = max(1, min(config.processes, games))
    per = [games // n + (1 if i < games % n else 0) for i in range(n)]
    c = config
    jobs = [(c.teacher, c.bc_opponents, int(s), k, c.seed, round_, c.features, c.forcing, student)
            for s, k in zip(np.cumsum([0, *per[:-1]]), per, strict=True) if k]  # fmt: skip
    chunks = _map(_record_chunk, jobs, config.processes)
    results: dict[str, list[int]] = {}
    for _, part in chunks:
        for k, v in part.items():
            results[k] = [a + b for a, b in zip(results.get(k, [0, 0, 0]), v, strict=True)]
    return ImitationData.concatenate([data for data, _ in chunks]), results


def _record_chunk(job: tuple) -> tuple[ImitationData, dict[str, list[int]]]:
    """Games ``start .. start+count`` of a warm-start round (in a worker): the teacher's decisions, W/D/L."""
    teacher_spec, opponent_specs, start, count, seed, round_, features, forcing, student = job
    learner = PolicyAgent(student, deterministic=False) if student is not None else None
    teacher = RecordingAgent(make_agent(teacher_spec, seed), features, learner)
    opponents = {spec: make_agent(spec, seed + 1) for spec in opponent_specs}
    decisions, results = [], {}
    for g in range(start, start + count):
        spec = opponent_specs[g % len(opponent_specs)]
        seat = (g // len(opponent_specs)) % 2
        game_seed = derive_seed(seed, 11, round_, g)
        hands, stock = deal_for_seed(game_seed)
        players = [teacher, opponents[spec]] if seat == 0 else [opponents[spec], teacher]
        record = play_game(players, hands=hands, stock=stock, seed=game_seed, forcing=forcing)
        if record.failure is not None:
            raise RuntimeError(f"warm-start game {g} failed: {record.failure}")
        result = 0.0 if record.winner is None else (1.0 if record.winner == seat else -1.0)
        results.setdefault(spec, [0, 0, 0])[0 if result > 0 else 1 if result == 0 else 2] += 1
        # which game each row is from: held-out sets take whole games
        decisions += [(o, m, a, result, q, round_ * 1_000_000_000 + g) for o, m, a, q in teacher.rows]
    return ImitationData.from_decisions(decisions, features), results


def _map(fn, jobs: list, processes: int) -> list:
    if min(processes, len(jobs)) <= 1:
        return [fn(j) for j in jobs]
    with multiprocessing.get_context("spawn").Pool(min(processes, len(jobs))) as pool:
        return pool.map(fn, jobs)


def evaluate_policy(policy: NumpyPolicy, spec: str, games: int, seed: int, *, forcing: bool = False,
                    batched: bool = True, jobs: int = 1) -> dict[str, Any]:  # fmt: skip
    """The deterministic policy against the bot ``spec`` on the duplicate deals of ``conquian-evaluate
    --seed SEED`` (:func:`conquian_arena.tournament.play_pair`; ``batched``: on the batched engine
    where ``spec`` has a batched form), as W/D/L and the score with its interval over deals."""
    learner, learner_batch = PolicyAgent(policy, deterministic=True), BatchPolicy(policy, deterministic=True)
    played = play_pair(
        learner, spec, games, seed, forcing=forcing, jobs=jobs, a_batch=learner_batch if batched else None
    )
    return {"opponent": spec, **pair_score(played)}


class RunFolder:
    """The run folder: ``train.log``, the CSV files, checkpoints and the run state (``checkpoints/state.json``)."""

    def __init__(self, out: str | Path):
        self.out = Path(out)
        self.state: dict[str, Any] = {
            "best_score": -1.0, "best_step": None, "next_eval": 0, "next_snapshot": 0, "next_checkpoint": 0,
            "snapshot_steps": [], "seconds": 0.0,
        }  # fmt: skip
        self.snapshots: list[NumpyPolicy] = []  # the pool's snapshots, newest last (also in the games' pools)
        self.t_start = time.time()

    def log(self, text: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {text}"
        print(line, file=sys.stderr, flush=True)
        with open(self.out / "train.log", "a") as f:
            f.write(line + "\n")

    def elapsed(self) -> float:
        return self.state["seconds"] + time.time() - self.t_start

    def append_csv(self, name: str, rows: list[dict[str, Any]]) -> None:
        path = self.out / name
        new = not path.exists()
        with open(path, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                w.writeheader()
            w.writerows(rows)

    def resume(self, model, features: str) -> None:
        """Put the checkpoint's weights, counters, snapshots and run state into the fresh ``model``."""
        latest = self.out / "checkpoints" / "latest.zip"
        if not latest.exists():
            raise ValueError(f"--resume {self.out}: no checkpoint at {latest}")
        self.state.update(json.loads((self.out / "checkpoints" / "state.json").read_text()))
        restore_checkpoint(model, latest, features)  # weights only: no code from the file runs
        self.snapshots = load_snapshots(self.out / "checkpoints" / "snapshots.npz", features)
        for snapshot in self.snapshots:
            model.get_env().env_method("add_snapshot", snapshot)

    def save_checkpoint(self, model) -> None:
        """The model, the snapshot pool and the run state, each written atomically."""
        ck = self.out / "checkpoints"
        ck.mkdir(exist_ok=True)
        model.save(ck / "latest.tmp.zip")
        os.replace(ck / "latest.tmp.zip", ck / "latest.zip")
        save_snapshots(ck / "snapshots.npz", self.snapshots)
        self.write_state(model)

    def write_state(self, model) -> None:
        """``checkpoints/state.json``: counters, best score, elapsed time, step count (atomic)."""
        path = self.out / "checkpoints" / "state.json"
        path.with_suffix(".tmp.json").write_text(
            json.dumps({**self.state, "seconds": self.elapsed(), "num_timesteps": model.num_timesteps}, indent=2)
        )
        os.replace(path.with_suffix(".tmp.json"), path)


class Evaluator:
    """One evaluation of the model (:func:`evaluate_policy` against each opponent): ``eval.csv``,
    the log, ``best.zip`` when the score against ``best_by`` is the best so far, the plot."""

    def __init__(self, config: TrainConfig, run: RunFolder):
        c = config
        self.opponents, self.best_by, self.run = c.eval_opponents, c.best_by, run
        self.settings = dict(games=c.eval_games, seed=c.eval_seed, forcing=c.forcing, batched=c.vec_env == "batched",
                             jobs=c.processes)  # fmt: skip

    def __call__(self, model, step: int, stage: str = "ppo") -> None:
        run, policy, rows = self.run, NumpyPolicy.from_sb3(model.policy), []
        for spec in self.opponents:
            r = evaluate_policy(policy, spec, **self.settings)
            rows.append({"stage": stage, "step": step, "seconds": round(run.elapsed(), 1), **r})
            run.log(f"eval @ {step:,}: vs {spec}: W/D/L {r['wins']}/{r['draws']}/{r['losses']}, score {r['score']:.3f} "
                    f"[{r['low']:.3f}, {r['high']:.3f}], decided games won {r['decided_won']:.1%}")  # fmt: skip
        run.append_csv(
            "eval.csv", [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in rows]
        )
        run.state["last_eval_step"] = step
        best = next(r["score"] for r in rows if r["opponent"] == self.best_by)
        if best > run.state["best_score"]:
            run.state["best_score"], run.state["best_step"] = best, step
            model.save(run.out / "best.zip")
            run.log(f"new best model (score {best:.3f} vs {self.best_by}) -> {run.out / 'best.zip'}")
        plot_learning_curve(run.out / "eval.csv", run.out / "learning_curve.png")


# --------------------------------------------------------------------------- callbacks of learn
# Each acts at the start of a rollout, not at its end: SB3 updates the policy after
# _on_rollout_end, so what was taken there saw the weights from before the update.


class SnapshotCallback(BaseCallback):
    """Every ``every`` steps a snapshot of the learner joins the opponent pools (``self`` / ``past``)."""

    def __init__(self, run: RunFolder, every: int, max_snapshots: int):
        super().__init__()
        self.run, self.every, self.max_snapshots = run, max(1, every), max_snapshots

    def _on_rollout_start(self) -> None:
        step, state = self.model.num_timesteps, self.run.state
        if step >= state["next_snapshot"]:
            snapshot = NumpyPolicy.from_sb3(self.model.policy)
            self.training_env.env_method("add_snapshot", snapshot)
            self.run.snapshots = [*self.run.snapshots, snapshot][-self.max_snapshots :]
            state["snapshot_steps"].append(step)
            state["next_snapshot"] = step + self.every

    def _on_step(self) -> bool:
        return True


class EvalCallback(BaseCallback):
    """Every ``every`` steps (0: never) an evaluation (:class:`Evaluator`), and the opponents met so far."""

    def __init__(self, run: RunFolder, evaluate: Evaluator, every: int):
        super().__init__()
        self.run, self.evaluate, self.every = run, evaluate, every

    def _on_rollout_start(self) -> None:
        step = self.model.num_timesteps
        if self.every and step >= self.run.state["next_eval"]:
            self.evaluate(self.model, step)
            self.run.state["next_eval"] = step + self.every
            counts: dict[str, int] = {}
            for d in self.training_env.env_method("opponent_counts"):
                for k, v in d.items():
                    counts[k] = counts.get(k, 0) + v
            self.run.log(f"opponents so far: {counts}")

    def _on_step(self) -> bool:
        return True


class CheckpointCallback(BaseCallback):
    """Every ``every`` steps (0: never) a checkpoint for ``--resume``; the elapsed time to TensorBoard."""

    def __init__(self, run: RunFolder, every: int):
        super().__init__()
        self.run, self.every = run, every

    def _on_rollout_start(self) -> None:
        step = self.model.num_timesteps
        if self.every and step >= self.run.state["next_checkpoint"]:
            self.run.save_checkpoint(self.model)
            self.run.state["next_checkpoint"] = step + self.every
        self.logger.record("conquian/elapsed_s", self.run.elapsed())

    def _on_step(self) -> bool:
        return True


class ProgressCallback(BaseCallback):
    """A tqdm bar of the learner's steps on standard error."""

    def __init__(self, total: int):
        super().__init__()
        self.total = total

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=self.total, initial=self.model.num_timesteps, unit="step", dynamic_ncols=True,
                        file=sys.stderr)  # fmt: skip

    def _on_step(self) -> bool:
        self.bar.update(self.model.num_timesteps - self.bar.n)
        return True

    def _on_training_end(self) -> None:
        self.bar.close()


def plot_learning_curve(eval_csv: Path, png: Path) -> None:
    """Score with its interval against each evaluation opponent, by learner step."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    rows = list(csv.DictReader(open(eval_csv)))
    fig, ax = plt.subplots(figsize=(7, 4))
    for spec in dict.fromkeys(r["opponent"] for r in rows):
        sub = [r for r in rows if r["opponent"] == spec]
        x = [int(r["step"]) for r in sub]
        ax.plot(x, [float(r["score"]) for r in sub], marker="o", label=f"vs {spec}")
        ax.fill_between(x, [float(r["low"]) for r in sub], [float(r["high"]) for r in sub], alpha=0.2)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set(xlabel="learner steps", ylabel="score (win 1, draw 1/2), 95% interval", ylim=(0, 1))
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------- command line and main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Train a Conquian agent (warm start + MaskablePPO self-play). Every option is a TrainConfig field.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR (its config.json is used)")
    parser.add_argument("--export", nargs=2, metavar=("MODEL", "DEST"), help="write MODEL (a .zip from a run) to "
                        "DEST without its optimizer state (a small file to ship), then exit")  # fmt: skip
    defaults = TrainConfig()
    for f in dataclasses.fields(TrainConfig):
        flag, default = "--" + f.name.replace("_", "-"), getattr(defaults, f.name)
        kw: dict[str, Any] = {"help": f.metadata["help"] + f" (default: {default!r})", "default": argparse.SUPPRESS}
        if isinstance(default, bool) or f.type == "bool | None":
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, **kw)
        elif isinstance(default, tuple):
            parser.add_argument(flag, nargs="+", type=type(default[0]) if default else str, metavar="X", **kw)
        else:
            parser.add_argument(flag, type=type(default), **kw)
    return parser


def config_from_args(argv: list[str] | None = None) -> tuple[TrainConfig, bool]:
    args = vars(build_parser().parse_args(argv))
    resume = args.pop("resume", None)
    args.pop("export", None)
    if not resume:
        return TrainConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in args.items()}), False
    path = Path(resume) / "config.json"
    if not path.exists():
        raise ValueError(f"--resume {resume}: no config.json there (not a run folder)")
    extra = sorted(k for k in args if k not in ("total_steps", "progress", "workers", "torch_threads"))
    if extra:
        raise ValueError(f"--resume takes its config from {path}; only --total-steps, --progress, "
                         f"--workers and --torch-threads may change, got {extra}")  # fmt: skip
    return TrainConfig.from_dict({**json.loads(path.read_text()), **args, "out": str(Path(resume))}), True


def train(config: TrainConfig, resume: bool = False) -> dict[str, Any]:
    """The recipe: environments -> new or resumed model -> warm start -> PPO with callbacks -> save."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import CallbackList

    c, run = config, RunFolder(config.out)
    torch.set_num_threads(c.torch_threads)
    run.out.mkdir(parents=True, exist_ok=True)
    venv = make_vec_env(c)
    model = MaskablePPO("MlpPolicy", venv, tensorboard_log=str(run.out / "tb"), **c.ppo())
    evaluate = Evaluator(c, run)
    if resume:
        run.resume(model, c.features)
        run.log(f"resumed {run.out} at step {model.num_timesteps:,}")
    else:
        if c.bc_games or c.bc_data:
            warm_start(model, c, run, evaluate)
        evaluate(model, 0, stage="warm start" if c.bc_games or c.bc_data else "init")
        run.state.update(next_eval=c.eval_every, next_snapshot=0, next_checkpoint=c.checkpoint_every)
    callbacks = [
        SnapshotCallback(run, c.snapshot_every, c.max_snapshots),
        EvalCallback(run, evaluate, c.eval_every),
        CheckpointCallback(run, c.checkpoint_every),
    ]
    if c.progress if c.progress is not None else sys.stderr.isatty():
        callbacks.insert(0, ProgressCallback(c.total_steps))
    remaining, rollout = c.total_steps - model.num_timesteps, venv.num_envs * c.n_steps
    if remaining > 0 and remaining % rollout:
        run.log(f"PPO collects whole rollouts of {rollout:,} steps ({venv.num_envs} games x n_steps {c.n_steps}): "
                f"this run ends at step {model.num_timesteps + -(-remaining // rollout) * rollout:,}, "
                f"not {c.total_steps:,}")  # fmt: skip
    if remaining > 0:
        try:
            model.learn(remaining, callback=CallbackList(callbacks), reset_num_timesteps=not resume, tb_log_name="ppo")
        except KeyboardInterrupt:
            # Ctrl-C: keep everything up to here; --resume continues from this step
            run.save_checkpoint(model)
            run.log(f"interrupted at step {model.num_timesteps:,}: saved; continue with --resume {run.out}")
            try:
                venv.close()
            except Exception:  # workers that got the Ctrl-C too are gone already
                pass
            raise
    run.save_checkpoint(model)
    shutil.copyfile(run.out / "checkpoints" / "latest.zip", run.out / "final.zip")  # the same model
    if run.state.get("last_eval_step") != model.num_timesteps:
        evaluate(model, model.num_timesteps)
    venv.close()
    run.write_state(model)  # the final evaluation may have moved the best score
    run.log(f"done: {model.num_timesteps:,} steps in {run.elapsed():.0f} s; best score vs {c.best_by} "
            f"{run.state['best_score']:.3f} at step {run.state['best_step']:,} -> {run.out / 'best.zip'}")  # fmt: skip
    return run.state


def main(argv: list[str] | None = None) -> int:
    export = build_parser().parse_args(argv).export if argv is None or "--export" in argv else None
    if export:
        try:
            dest = export_model(*export)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"{dest}: {dest.stat().st_size / 1e6:.1f} MB", file=sys.stderr)
        return 0
    try:
        config, resume = config_from_args(argv)
        config.validate()
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(config.out)
    if not resume and (out / "checkpoints" / "latest.zip").exists():
        print(f"error: {out} already holds a run: use --resume {out} or another --out", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    print(json.dumps(config.to_dict(), indent=2), file=sys.stderr)
    try:
        train(config, resume=resume)
    except KeyboardInterrupt:
        print(f"\ninterrupted: the run is saved; continue with: python train.py --resume {out}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

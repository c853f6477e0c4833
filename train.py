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

On a small machine set torch to few threads (``torch_threads``, default 1): next to
environment worker processes, torch's default threading can slow training many-fold.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import multiprocessing
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from agents.base import Agent, PlayerView
from agents.ppo import NumpyPolicy, PolicyAgent
from agents.registry import make_agent
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.observation import OBS_LAYOUT

PHASE_AT = dict((name, start) for name, start, _, _ in OBS_LAYOUT)["phase"]


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
    progress: bool = _f(True, "show a progress bar")

    def validate(self) -> None:
        if self.features not in ("meld", "raw"):
            raise ValueError(f"features must be 'meld' or 'raw', got {self.features!r}")
        if self.vec_env not in ("batched", "subproc", "dummy"):
            raise ValueError(f"vec_env must be 'batched', 'subproc' or 'dummy', got {self.vec_env!r}")
        if not isinstance(self.n_envs, int) or isinstance(self.n_envs, bool) or self.n_envs < 0:
            raise ValueError(f"n_envs must be a non-negative integer (0: automatic), got {self.n_envs!r}")
        for name in ("total_steps", "n_steps", "batch_size", "n_epochs", "eval_games", "max_snapshots"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.bc_data and not Path(self.bc_data).is_file():
            raise ValueError(f"bc_data {self.bc_data!r} is not a file")
        bad = sorted(set(self.bc_smoothing_phases) - {"offer", "meld", "discard", "force"})
        if bad:
            raise ValueError(f"bc_smoothing_phases {bad} unknown; phases: offer, meld, discard, force")
        if self.bc_loss not in ("advantage", "softmax"):
            raise ValueError(f"bc_loss must be 'advantage' or 'softmax', got {self.bc_loss!r}")
        if not self.bc_temperature >= 0:
            raise ValueError(f"bc_temperature must be >= 0, got {self.bc_temperature!r}")
        if not 0 <= self.bc_smoothing < 1:
            raise ValueError(f"bc_smoothing must be in [0, 1), got {self.bc_smoothing!r}")
        for name in (
            "bc_games",
            "dagger_rounds",
            "dagger_games",
            "snapshot_every",
            "eval_every",
            "checkpoint_every",
            "workers",
            "seed",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
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


# --------------------------------------------------------------------------- opponents


def parse_pool(entries: tuple[str, ...]) -> list[tuple[str, float]]:
    """``SPEC@WEIGHT`` entries (weight 1 when omitted) as (spec, weight); specs are checked."""
    pool = []
    for entry in entries:
        spec, at, weight_text = entry.rpartition("@") if "@" in entry else (entry, "", "1")
        try:
            weight = float(weight_text)
        except ValueError:
            raise ValueError(f"opponent {entry!r}: weight {weight_text!r} is not a number (SPEC@WEIGHT)") from None
        if not weight > 0 or not math.isfinite(weight):
            raise ValueError(f"opponent {entry!r}: the weight must be a positive number")
        if spec not in ("self", "past"):
            make_agent(spec, 0)
        pool.append((spec, weight))
    return pool


class PoolOpponent(Agent):
    """Plays each game as one member of a weighted pool of bots and learner snapshots.

    Until the first snapshot exists, ``self`` and ``past`` games go to the fixed bots.
    """

    name = "pool"

    def __init__(self, entries: tuple[str, ...], seed: int, max_snapshots: int = 10):
        self.entries = parse_pool(entries)
        self.bots = {
            spec: make_agent(spec, seed + i) for i, (spec, _) in enumerate(self.entries) if spec not in ("self", "past")
        }
        self.snapshots: list[NumpyPolicy] = []
        self.max_snapshots = max_snapshots
        self.rng = np.random.default_rng([seed, 7])
        self.current: Agent | None = None
        self.counts: dict[str, int] = {}

    def add_snapshot(self, policy: NumpyPolicy) -> None:
        self.snapshots.append(policy)
        del self.snapshots[: -self.max_snapshots]

    def reset(self, player: int, seed: int | None = None) -> None:
        usable = [
            (s, w)
            for s, w in self.entries
            if s in self.bots or (self.snapshots and (s == "self" or len(self.snapshots) > 1))
        ]
        if not usable:
            usable = [(s, w) for s, w in self.entries if s in self.bots] or [("random", 1.0)]
            self.bots.setdefault("random", make_agent("random", 0))
        weights = np.array([w for _, w in usable])
        spec = usable[int(self.rng.choice(len(usable), p=weights / weights.sum()))][0]
        if spec == "self":
            self.current = PolicyAgent(self.snapshots[-1], deterministic=False)
        elif spec == "past":
            self.current = PolicyAgent(
                self.snapshots[int(self.rng.integers(len(self.snapshots) - 1))], deterministic=False
            )
        else:
            self.current = self.bots[spec]
        self.counts[spec] = self.counts.get(spec, 0) + 1
        self.current.reset(player, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        assert self.current is not None, "reset() first"
        return self.current.act(observation, action_mask, view)


def make_env_fn(config: TrainConfig, rank: int):
    def build():
        from agents.features import FeatureObservation
        from conquian_env.wrappers import SingleAgentEnv

        opponent = PoolOpponent(config.opponents, seed=config.seed * 1000 + rank, max_snapshots=config.max_snapshots)
        env: gymnasium.Env = SingleAgentEnv(opponent=opponent, forcing=config.forcing)
        if config.features == "meld":
            env = FeatureObservation(env)
        return PoolEnv(env, opponent)

    return build


class PoolEnv(gymnasium.Wrapper):
    """Outermost training wrapper: exposes the opponent pool to ``VecEnv.env_method``."""

    def __init__(self, env: gymnasium.Env, pool: PoolOpponent):
        super().__init__(env)
        self.pool = pool

    def add_snapshot(self, policy: NumpyPolicy) -> None:
        self.pool.add_snapshot(policy)

    def opponent_counts(self) -> dict[str, int]:
        return dict(self.pool.counts)

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


# --------------------------------------------------------------------------- games in worker processes


def _pool_size(config: TrainConfig) -> int:
    return config.workers or os.cpu_count() or 1


class RecordingAgent(Agent):
    """Records ``teacher``'s choice at every decision, as seen through the policy's input.

    Without a ``student`` the teacher's moves are played (behaviour cloning); with one the
    student's moves are played and the teacher only labels the positions the student
    reaches (DAgger, Ross et al. 2011).
    """

    def __init__(self, teacher: Agent, features: str, student: Agent | None = None):
        self.teacher = teacher
        self.student = student
        self.name = teacher.name if student is None else student.name
        self.encoder = None
        if features == "meld":
            from agents.features import FeatureEncoder

            self.encoder = FeatureEncoder()
        self.rows: list[tuple[np.ndarray, np.ndarray, int, np.ndarray | None]] = []

    def reset(self, player: int, seed: int | None = None) -> None:
        self.rows = []
        if self.encoder is not None:
            self.encoder.reset()
        self.teacher.reset(player, seed)
        if self.student is not None:
            self.student.reset(player, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        label = self.teacher.act(observation, action_mask, view)
        obs = observation if self.encoder is None else self.encoder.encode(view._state, view.player)
        scores = getattr(self.teacher, "last_scores", None)  # a searching teacher's action values
        q = None
        if scores:
            q = np.full(85, np.nan, np.float32)
            for a, v in scores.items():
                q[a] = v
        self.rows.append((obs, np.asarray(action_mask, dtype=bool), int(label), q))
        return label if self.student is None else self.student.act(observation, action_mask, view)


def _bc_chunk(args: tuple[TrainConfig, int, int, NumpyPolicy | None, int]) -> dict[str, Any]:
    """Games ``start .. start+count`` of warm-start round ``round_`` (in a worker)."""
    config, start, count, student, round_ = args
    obs, masks, actions, returns, qs, games = [], [], [], [], [], []
    results: dict[str, list[int]] = {}
    learner = PolicyAgent(student, deterministic=False) if student is not None else None
    teacher = RecordingAgent(make_agent(config.teacher, config.seed), config.features, learner)
    opponents = {spec: make_agent(spec, config.seed + 1) for spec in config.bc_opponents}
    for g in range(start, start + count):
        spec = config.bc_opponents[g % len(config.bc_opponents)]
        seat = (g // len(config.bc_opponents)) % 2
        seed = int(np.random.SeedSequence([config.seed, 11, round_, g]).generate_state(1)[0])
        hands, stock = deal_for_seed(seed)
        players = [teacher, opponents[spec]] if seat == 0 else [opponents[spec], teacher]
        record = play_game(players, hands=hands, stock=stock, seed=seed, forcing=config.forcing)
        if record.failure is not None:
            raise RuntimeError(f"warm-start game {g} failed: {record.failure}")
        result = 0.0 if record.winner is None else (1.0 if record.winner == seat else -1.0)
        results.setdefault(spec, [0, 0, 0])[0 if result > 0 else 1 if result == 0 else 2] += 1
        for o, m, a, q in teacher.rows:
            obs.append(o)
            masks.append(m)
            actions.append(a)
            returns.append(result)
            qs.append(np.full(85, np.nan, np.float32) if q is None else q)
            games.append(round_ * 1_000_000_000 + g)  # which game: held-out sets take whole games
    return {
        "obs": np.asarray(obs, np.float16 if config.features == "meld" else np.int8),
        "masks": np.asarray(masks, bool),
        "actions": np.asarray(actions, np.int64),
        "returns": np.asarray(returns, np.float32),
        "q": np.asarray(qs, np.float16).reshape(-1, 85),
        "game": np.asarray(games, np.int64),
        "results": results,
    }


def collect(config: TrainConfig, games: int, student: NumpyPolicy | None, round_: int) -> dict[str, Any]:
    """Play ``games`` warm-start games over the worker processes and gather their decisions."""
    n = max(1, min(_pool_size(config), games))
    per = [games // n + (1 if i < games % n else 0) for i in range(n)]
    starts = np.cumsum([0, *per[:-1]])
    jobs = [(config, int(s), k, student, round_) for s, k in zip(starts, per, strict=True) if k]
    chunks = _map(config, _bc_chunk, jobs)
    data = {k: np.concatenate([ch[k] for ch in chunks]) for k in ("obs", "masks", "actions", "returns", "q", "game")}
    results: dict[str, list[int]] = {}
    for ch in chunks:
        for k, v in ch["results"].items():
            results[k] = [a + b for a, b in zip(results.get(k, [0, 0, 0]), v, strict=True)]
    data["results"] = results
    return data


def _eval_chunk(args: tuple[NumpyPolicy, str, int, list[int], bool]) -> list[tuple[int, int, float]]:
    """Evaluation games (a worker): (deal, swap, score of the policy) for each game."""
    policy, spec, eval_seed, deals, forcing = args
    learner = PolicyAgent(policy, deterministic=True)
    opponent = make_agent(spec, eval_seed)
    out = []
    for deal in deals:
        seed = _eval_deal_seed(eval_seed, deal)
        hands, stock = deal_for_seed(seed)
        for swap in (0, 1):
            players = [learner, opponent] if swap == 0 else [opponent, learner]
            record = play_game(players, hands=hands, stock=stock, seed=seed + swap, forcing=forcing)
            seat = swap
            score = 0.5 if record.winner is None else float(record.winner == seat)
            out.append((deal, swap, score))
    return out


def _map(config: TrainConfig, fn, jobs: list) -> list:
    n = min(_pool_size(config), len(jobs))
    if n <= 1:
        return [fn(j) for j in jobs]
    with multiprocessing.get_context("spawn").Pool(n) as pool:
        return pool.map(fn, jobs)


def _eval_deal_seed(eval_seed: int, deal: int) -> int:
    return int(np.random.SeedSequence([eval_seed, deal]).generate_state(1)[0])


def _eval_batched(policy: NumpyPolicy, spec: str, eval_seed: int, deals: list[int], forcing: bool):
    """The evaluation games of :func:`_eval_chunk`, all at once on the batched engine."""
    from agents.batched import BatchPolicy, make_batch_opponent, play_batch
    from conquian_env.vector import deal_permutation

    perms = []
    for deal in deals:
        perm = deal_permutation(*deal_for_seed(_eval_deal_seed(eval_seed, deal)))
        perms += [perm, perm]
    seats = np.tile([0, 1], len(deals))
    scores, _ = play_batch(
        BatchPolicy(policy, deterministic=True),
        make_batch_opponent(spec, eval_seed),
        np.stack(perms),
        seats,
        forcing=forcing,
    )
    return [(deal, swap, float(scores[2 * k + swap])) for k, deal in enumerate(deals) for swap in (0, 1)]


def batchable(spec: str) -> bool:
    """Whether ``spec`` has a batched form (``agents.batched``), so its games can run in lockstep."""
    from agents.batched import PerGameOpponent, make_batch_opponent

    return not isinstance(make_batch_opponent(spec, 0), PerGameOpponent)


def evaluate_policy(policy: NumpyPolicy, config: TrainConfig, spec: str) -> dict[str, Any]:
    """Duplicate-deal evaluation of the deterministic policy against one bot.

    With ``vec_env`` "batched" and a bot that has a batched form (random, greedy, ppo) all
    games run at once on the batched engine; otherwise game by game in worker processes.
    """
    from conquian_arena.stats import score_interval

    deals = list(range((config.eval_games + 1) // 2))
    if config.vec_env == "batched" and batchable(spec):
        games = _eval_batched(policy, spec, config.eval_seed, deals, config.forcing)
    else:
        n = max(1, min(_pool_size(config), len(deals)))
        jobs = [(policy, spec, config.eval_seed, deals[i::n], config.forcing) for i in range(n)]
        games = [g for chunk in _map(config, _eval_chunk, jobs) for g in chunk]
    per_deal: dict[int, list[float]] = {}
    for deal, _, score in games:
        per_deal.setdefault(deal, []).append(score)
    wins = sum(1 for g in games if g[2] == 1.0)
    losses = sum(1 for g in games if g[2] == 0.0)
    draws = len(games) - wins - losses
    interval = score_interval([np.mean(v) for v in per_deal.values()], unit="deals")
    return {
        "opponent": spec,
        "games": len(games),
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "score": interval.estimate,
        "low": interval.low,
        "high": interval.high,
        "decided_won": wins / (wins + losses) if wins + losses else math.nan,
    }


# --------------------------------------------------------------------------- the run


class Trainer:
    def __init__(self, config: TrainConfig, resume: bool = False):
        import torch

        self.config = config
        self.out = Path(config.out)
        self.resume = resume
        torch.set_num_threads(config.torch_threads)
        self.eval_path = self.out / "eval.csv"
        self.snapshots: list[NumpyPolicy] = []  # the pool's snapshots, newest last (also in the workers)
        self.state_path = self.out / "checkpoints" / "state.json"
        self.state: dict[str, Any] = {
            "best_score": -1.0,
            "best_step": None,
            "next_eval": 0,
            "next_snapshot": 0,
            "next_checkpoint": 0,
            "snapshot_steps": [],
            "seconds": 0.0,
        }

    # ------------------------------------------------------------ setup
    def _make_vec_env(self):
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor

        c = self.config
        if c.vec_env == "batched":
            from agents.batched import BatchPool
            from conquian_env.sb3 import ConquianVecEnv

            pool = BatchPool(parse_pool(c.opponents), seed=c.seed * 1000 + 1, max_snapshots=c.max_snapshots)
            venv = ConquianVecEnv(c.games_in_parallel, pool, forcing=c.forcing, observation=c.features, seed=c.seed)
            return VecMonitor(venv)
        fns = [make_env_fn(c, rank) for rank in range(c.games_in_parallel)]
        if c.vec_env == "subproc" and c.games_in_parallel > 1:
            venv = SubprocVecEnv(fns, start_method="spawn")
        else:
            venv = DummyVecEnv(fns)
        venv.seed(self.config.seed)
        return VecMonitor(venv)

    def _new_model(self, venv):
        from sb3_contrib import MaskablePPO

        c = self.config
        return MaskablePPO(
            "MlpPolicy",
            venv,
            learning_rate=c.learning_rate,
            n_steps=c.n_steps,
            batch_size=c.batch_size,
            n_epochs=c.n_epochs,
            gamma=c.gamma,
            gae_lambda=c.gae_lambda,
            clip_range=c.clip_range,
            ent_coef=c.ent_coef,
            vf_coef=c.vf_coef,
            target_kl=c.target_kl or None,
            policy_kwargs={"net_arch": {"pi": list(c.net_arch), "vf": list(c.net_arch)}},
            tensorboard_log=str(self.out / "tb"),
            seed=c.seed,
            device=c.device,
            verbose=0,
        )

    # ------------------------------------------------------------ warm start
    def warm_start(self, model) -> None:
        """Behaviour cloning of the teacher, then ``dagger_rounds`` rounds of DAgger."""
        c = self.config
        t0 = time.time()
        if c.bc_data:
            loaded = np.load(c.bc_data, allow_pickle=False)
            meta = json.loads(str(loaded["meta"]))
            if meta.get("features") != c.features:
                raise ValueError(f"--bc-data {c.bc_data} holds {meta.get('features')!r} features, not {c.features!r}")
            data = {k: loaded[k] for k in ("obs", "masks", "actions", "returns")}
            data["q"] = loaded["q"] if "q" in loaded else np.full((len(data["actions"]), 85), np.nan, np.float16)
            # data sets from before game ids: every row its own "game"
            data["game"] = loaded["game"] if "game" in loaded else np.arange(len(data["actions"]))
            self.log(f"warm start: {len(data['actions'])} decisions of {meta.get('teacher')} from {c.bc_data}")
        else:
            data = collect(c, c.bc_games, None, 0)
            self.log(
                f"warm start: {c.bc_games} games of {c.teacher} vs {list(c.bc_opponents)} "
                f"(W/D/L {data.pop('results')}), {len(data['actions'])} decisions, {time.time() - t0:.0f} s"
            )
        self.fit_imitation(model, data, "bc")
        for r in range(1, c.dagger_rounds + 1):
            if r > 1:
                self.evaluate(model, 0, stage=f"dagger{r - 1}")
            else:
                self.evaluate(model, 0, stage="bc")
            t0 = time.time()
            new = collect(c, c.dagger_games, NumpyPolicy.from_sb3(model.policy), r)
            self.log(
                f"DAgger round {r}: the policy played {c.dagger_games} games vs {list(c.bc_opponents)} "
                f"(W/D/L {new.pop('results')}), {c.teacher} labelled {len(new['actions'])} decisions, "
                f"{time.time() - t0:.0f} s"
            )
            data = {k: np.concatenate([data[k], new[k]]) for k in data}
            self.fit_imitation(model, data, f"dagger{r}")
        meta = {"teacher": c.teacher, "features": c.features, "bc_opponents": list(c.bc_opponents)}
        np.savez(self.out / "bc_data.npz", meta=json.dumps(meta), **data)

    def fit_imitation(self, model, data: dict[str, np.ndarray], stage: str) -> None:
        import torch

        c = self.config
        obs, masks, actions, returns = data["obs"], data["masks"], data["actions"], data["returns"]
        q = data["q"].astype(np.float32)
        q_raw = q.copy()  # the regret diagnostics use the teacher's values as they are
        has_q = ~np.isnan(q).all(axis=1)
        # a searching teacher's action values become soft targets: softmax(q / temperature)
        target = np.zeros_like(q)
        if has_q.any():
            z = np.where(np.isnan(q[has_q]), -np.inf, q[has_q] / c.bc_temperature)
            z = np.exp(z - z.max(axis=1, keepdims=True))
            target[has_q] = z / z.sum(axis=1, keepdims=True)
        use_soft = has_q if c.bc_temperature > 0 else np.zeros_like(has_q)
        if c.bc_greedy_bonus and has_q.any():
            # conservative targets: the greedy choice gets a bonus, so the policy leaves it only
            # where the teacher's values say the gain is larger than the bonus
            from agents.features import FEATURE_LAYOUT

            if c.features != "meld":
                raise ValueError("bc_greedy_bonus needs the 'meld' features (they carry greedy's choice)")
            at = dict((n, s) for n, s, _ in FEATURE_LAYOUT)["greedy_action"]
            g = obs[:, at : at + 85].astype(np.float32).argmax(axis=1)
            rows = np.flatnonzero(has_q)
            q[rows, g[rows]] += c.bc_greedy_bonus
        q_filled = np.nan_to_num(q, nan=0.0)
        # label smoothing only on the decisions of the phases in bc_smoothing_phases
        phase_names = ("offer", "meld", "discard", "force")
        phase = obs[:, PHASE_AT : PHASE_AT + 4].astype(np.float32).argmax(axis=1)
        smooth_rows = np.isin(phase, [phase_names.index(p) for p in c.bc_smoothing_phases]).astype(np.float32)
        rng = np.random.default_rng([c.seed, 5, len(actions)])
        # hold out whole games (rows of one game are alike: a row split would flatter the fit)
        game_ids = np.unique(data["game"])
        if len(game_ids) >= 2:
            held = np.isin(data["game"], rng.permutation(game_ids)[: max(1, len(game_ids) // 20)])
        else:  # a single game: hold out some of its rows
            held = np.zeros(len(actions), bool)
            held[rng.permutation(len(actions))[: max(1, len(actions) // 20)]] = True
        hold = np.flatnonzero(held)
        train = rng.permutation(np.flatnonzero(~held))
        policy = model.policy
        policy.set_training_mode(True)
        opt = torch.optim.Adam(policy.parameters(), lr=c.bc_lr)
        to_t = lambda a: torch.as_tensor(a, device=policy.device)  # noqa: E731
        rows = []
        for epoch in range(c.bc_epochs):
            rng.shuffle(train)
            losses = []
            for i in range(0, len(train), 512):
                idx = train[i : i + 512]
                o = to_t(obs[idx]).float()
                m = to_t(masks[idx])
                log_p = policy.get_distribution(o, action_masks=masks[idx]).distribution.logits  # log-softmax
                nll = -log_p.gather(1, to_t(actions[idx])[:, None]).squeeze(1)
                # label smoothing over the legal actions keeps some exploration for PPO
                smooth = -(log_p * m).sum(1) / m.sum(1) * to_t(smooth_rows[idx])
                hard = (1 - c.bc_smoothing) * nll + c.bc_smoothing * smooth
                if c.bc_loss == "advantage":
                    # logits regress the teacher's action values: (logit - mean legal logit) * T
                    # against (q - mean legal q).  Least squares learns the mean value over
                    # similar positions, so the rollouts' noise averages out instead of being
                    # imitated; the policy's best action is the best predicted value.
                    qa = to_t(q_filled[idx])
                    n_legal = m.sum(1, keepdim=True)
                    lp = torch.where(m, log_p, torch.zeros_like(log_p))
                    lp_c = (lp - lp.sum(1, keepdim=True) / n_legal) * c.bc_temperature
                    qa_c = qa - (qa * m).sum(1, keepdim=True) / n_legal
                    soft = (((lp_c - qa_c) * m) ** 2).sum(1) / n_legal.squeeze(1) / 0.05**2
                else:
                    soft = -(to_t(target[idx]) * torch.where(m, log_p, torch.zeros_like(log_p))).sum(1)
                imitation = torch.where(to_t(use_soft[idx]), soft, hard).mean()
                values = policy.predict_values(o).flatten()
                loss = imitation + c.vf_coef * torch.nn.functional.mse_loss(values, to_t(returns[idx]))
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
                opt.step()
                losses.append(loss.item())
            with torch.no_grad():
                o = to_t(obs[hold]).float()
                dist = policy.get_distribution(o, action_masks=masks[hold])
                pred = dist.distribution.probs.argmax(dim=1).cpu().numpy()
                acc = float((pred == actions[hold]).mean())
                # accuracy on the decisions that were real choices
                choice = masks[hold].sum(axis=1) > 1
                acc_choice = float((pred[choice] == actions[hold][choice]).mean()) if choice.any() else math.nan
                # expected score the policy leaves on the table by the teacher's action values
                searched = hold[has_q[hold]]
                regret = greedy_regret = math.nan
                if len(searched):
                    qh = np.nan_to_num(q_raw[searched], nan=-1.0)
                    best = qh.max(axis=1)
                    regret = float((best - qh[np.arange(len(searched)), pred[has_q[hold]]]).mean())
                    if c.features == "meld":
                        from agents.features import FEATURE_LAYOUT

                        at = dict((n, s) for n, s, _ in FEATURE_LAYOUT)["greedy_action"]
                        g = obs[searched, at : at + 85].astype(np.float32).argmax(axis=1)
                        greedy_regret = float((best - qh[np.arange(len(searched)), g]).mean())
            rows.append(
                {
                    "stage": stage,
                    "epoch": epoch + 1,
                    "loss": float(np.mean(losses)),
                    "holdout_accuracy": acc,
                    "holdout_accuracy_real_choices": acc_choice,
                    "holdout_regret": regret,
                    "holdout_regret_of_greedy": greedy_regret,
                }
            )
            self.log(
                f"{stage} epoch {epoch + 1}: loss {np.mean(losses):.4f}, held-out accuracy {acc:.4f} "
                f"({acc_choice:.4f} on decisions with a choice)"
                + (f", regret {regret:.4f} (greedy {greedy_regret:.4f})" if len(searched) else "")
            )
        policy.set_training_mode(False)
        path = self.out / "bc.csv"
        new = not path.exists()
        with open(path, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                w.writeheader()
            w.writerows(rows)

    # ------------------------------------------------------------ evaluation
    def evaluate(self, model, step: int, stage: str = "ppo") -> float:
        c = self.config
        policy = NumpyPolicy.from_sb3(model.policy)
        best_score = math.nan
        new = not self.eval_path.exists()
        with open(self.eval_path, "a", newline="") as f:
            w = csv.DictWriter(
                f,
                fieldnames=[
                    "stage",
                    "step",
                    "seconds",
                    "opponent",
                    "games",
                    "wins",
                    "draws",
                    "losses",
                    "score",
                    "low",
                    "high",
                    "decided_won",
                ],
            )
            if new:
                w.writeheader()
            for spec in c.eval_opponents:
                r = evaluate_policy(policy, c, spec)
                row = {"stage": stage, "step": step, "seconds": round(self.elapsed(), 1), **r}
                w.writerow({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()})
                self.log(
                    f"eval @ {step:,}: vs {spec}: W/D/L {r['wins']}/{r['draws']}/{r['losses']}, "
                    f"score {r['score']:.3f} [{r['low']:.3f}, {r['high']:.3f}], "
                    f"decided games won {r['decided_won']:.1%}"
                )
                if spec == c.best_by:
                    best_score = r["score"]
        self.state["last_eval_step"] = step
        if best_score > self.state["best_score"]:
            self.state["best_score"] = best_score
            self.state["best_step"] = step
            model.save(self.out / "best.zip")
            self.log(f"new best model (score {best_score:.3f} vs {c.best_by}) -> {self.out / 'best.zip'}")
        plot_learning_curve(self.eval_path, self.out / "learning_curve.png")
        return best_score

    # ------------------------------------------------------------ helpers
    def log(self, text: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {text}"
        print(line, file=sys.stderr, flush=True)
        with open(self.out / "train.log", "a") as f:
            f.write(line + "\n")

    def elapsed(self) -> float:
        return self.state["seconds"] + time.time() - self.t_start

    def save_checkpoint(self, model) -> None:
        """The model, the snapshot pool and the run state, each written atomically."""
        ck = self.out / "checkpoints"
        ck.mkdir(exist_ok=True)
        model.save(ck / "latest.tmp.zip")
        os.replace(ck / "latest.tmp.zip", ck / "latest.zip")
        snaps = self.snapshots
        np.savez(
            ck / "snapshots.tmp.npz",
            **{
                f"s{i}_l{j}_{k}": arr
                for i, p in enumerate(snaps)
                for j, layer in enumerate(p.layers)
                for k, arr in (("w", layer[0]), ("b", layer[1]))
            },
            acts=np.array([json.dumps([layer[2] for layer in p.layers]) for p in snaps]),
        )
        os.replace(ck / "snapshots.tmp.npz", ck / "snapshots.npz")
        self.write_state(model)

    def write_state(self, model) -> None:
        """``checkpoints/state.json``: counters, best score, elapsed time, step count (atomic)."""
        state = {**self.state, "seconds": self.elapsed(), "num_timesteps": model.num_timesteps}
        tmp = self.state_path.with_suffix(".tmp.json")
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, self.state_path)

    def load_snapshots(self) -> list[NumpyPolicy]:
        path = self.out / "checkpoints" / "snapshots.npz"
        if not path.exists():
            return []
        data = np.load(path, allow_pickle=False)
        out = []
        for i, acts in enumerate(data["acts"]):
            acts = json.loads(str(acts))
            layers = [(data[f"s{i}_l{j}_w"], data[f"s{i}_l{j}_b"], a) for j, a in enumerate(acts)]
            out.append(NumpyPolicy(layers, features=self.config.features))
        return out

    # ------------------------------------------------------------ main loop
    def run(self) -> dict[str, Any]:
        from stable_baselines3.common.callbacks import BaseCallback

        c = self.config
        self.out.mkdir(parents=True, exist_ok=True)
        self.t_start = time.time()
        venv = self._make_vec_env()
        latest = self.out / "checkpoints" / "latest.zip"
        if self.resume:
            if not latest.exists():
                raise ValueError(f"--resume {self.out}: no checkpoint at {latest}")
            self.state.update(json.loads(self.state_path.read_text()))
            model = self._new_model(venv)
            restore_checkpoint(model, latest, c.features)  # weights only: no code from the file runs
            self.snapshots = self.load_snapshots()
            for snap in self.snapshots:
                venv.env_method("add_snapshot", snap)
            self.log(f"resumed {self.out} at step {model.num_timesteps:,}")
        else:
            model = self._new_model(venv)
            if c.bc_games or c.bc_data:
                self.warm_start(model)
            self.evaluate(model, 0, stage="warm start" if c.bc_games or c.bc_data else "init")
            self.state["next_eval"] = c.eval_every
            self.state["next_snapshot"] = 0
            self.state["next_checkpoint"] = c.checkpoint_every
        trainer = self

        class Hooks(BaseCallback):
            def _on_training_start(self) -> None:
                self.bar = None
                if c.progress:
                    from tqdm import tqdm

                    self.bar = tqdm(
                        total=c.total_steps,
                        initial=self.model.num_timesteps,
                        unit="step",
                        dynamic_ncols=True,
                        file=sys.stderr,
                    )

            def _on_step(self) -> bool:
                if self.bar is not None:
                    self.bar.update(self.model.num_timesteps - self.bar.n)
                return True

            def _on_rollout_start(self) -> None:
                # Here, not at the end of a rollout: SB3 updates the policy after
                # _on_rollout_end, so evaluations, snapshots and checkpoints taken there saw
                # the weights from before the update (and the last update was never evaluated).
                step = self.model.num_timesteps
                st = trainer.state
                if step >= st["next_snapshot"]:
                    snapshot = NumpyPolicy.from_sb3(self.model.policy)
                    self.training_env.env_method("add_snapshot", snapshot)
                    trainer.snapshots = [*trainer.snapshots, snapshot][-c.max_snapshots :]
                    st["snapshot_steps"].append(step)
                    st["next_snapshot"] = step + max(1, c.snapshot_every)
                if c.eval_every and step >= st["next_eval"]:
                    trainer.evaluate(self.model, step)
                    st["next_eval"] = step + c.eval_every
                    counts: dict[str, int] = {}
                    for d in self.training_env.env_method("opponent_counts"):
                        for k, v in d.items():
                            counts[k] = counts.get(k, 0) + v
                    trainer.log(f"opponents so far: {counts}")
                if c.checkpoint_every and step >= st["next_checkpoint"]:
                    trainer.save_checkpoint(self.model)
                    st["next_checkpoint"] = step + c.checkpoint_every
                self.logger.record("conquian/elapsed_s", trainer.elapsed())

            def _on_training_end(self) -> None:
                if self.bar is not None:
                    self.bar.close()

        remaining = c.total_steps - model.num_timesteps
        rollout = venv.num_envs * c.n_steps
        if remaining > 0 and remaining % rollout:
            end = model.num_timesteps + -(-remaining // rollout) * rollout
            self.log(
                f"PPO collects whole rollouts of {rollout:,} steps ({venv.num_envs} games x n_steps {c.n_steps}): "
                f"this run ends at step {end:,}, not {c.total_steps:,}"
            )
        if remaining > 0:
            try:
                model.learn(remaining, callback=Hooks(), reset_num_timesteps=not self.resume, tb_log_name="ppo")
            except KeyboardInterrupt:
                # Ctrl-C: keep everything up to here; --resume continues from this step
                self.save_checkpoint(model)
                self.log(f"interrupted at step {model.num_timesteps:,}: saved; continue with --resume {self.out}")
                try:
                    venv.close()
                except Exception:  # workers that got the Ctrl-C too are gone already
                    pass
                raise
        self.save_checkpoint(model)
        shutil.copyfile(self.out / "checkpoints" / "latest.zip", self.out / "final.zip")  # the same model
        if self.state.get("last_eval_step") != model.num_timesteps:
            self.evaluate(model, model.num_timesteps)
        venv.close()
        self.write_state(model)  # the final evaluation may have moved the best score
        self.log(
            f"done: {model.num_timesteps:,} steps in {self.elapsed():.0f} s; best score vs {c.best_by} "
            f"{self.state['best_score']:.3f} at step {self.state['best_step']:,} -> {self.out / 'best.zip'}"
        )
        return self.state


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
    ax.set_xlabel("learner steps")
    ax.set_ylabel("score (win 1, draw 1/2), 95% interval")
    ax.set_ylim(0, 1)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Train a Conquian agent (warm start + MaskablePPO self-play). Every option is a TrainConfig field.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR (its config.json is used)")
    parser.add_argument(
        "--export",
        nargs=2,
        metavar=("MODEL", "DEST"),
        help="write MODEL (a .zip from a run) to DEST without its optimizer state (a small file to ship), then exit",
    )
    defaults = TrainConfig()
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        default = getattr(defaults, f.name)
        kw: dict[str, Any] = {"help": f.metadata["help"], "default": argparse.SUPPRESS}
        if isinstance(default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, **kw)
        elif isinstance(default, tuple):
            elem = type(default[0]) if default else str
            parser.add_argument(flag, nargs="+", type=elem, metavar="X", **kw)
        else:
            parser.add_argument(flag, type=type(default), **kw)
        parser._option_string_actions[flag].help += f" (default: {default!r})"
    return parser


def config_from_args(argv: list[str] | None = None) -> tuple[TrainConfig, bool]:
    args = vars(build_parser().parse_args(argv))
    resume = args.pop("resume", None)
    args.pop("export", None)
    if resume:
        path = Path(resume) / "config.json"
        if not path.exists():
            raise ValueError(f"--resume {resume}: no config.json there (not a run folder)")
        data = json.loads(path.read_text())
        extra = {k: v for k, v in args.items() if k not in ("total_steps", "progress", "workers", "torch_threads")}
        if extra:
            raise ValueError(
                f"--resume takes its config from {path}; only --total-steps, --progress, "
                f"--workers and --torch-threads may change, got {sorted(extra)}"
            )
        data.update(args)
        data["out"] = str(Path(resume))
        return TrainConfig.from_dict(data), True
    args = {k: tuple(v) if isinstance(v, list) else v for k, v in args.items()}
    return TrainConfig(**args), False


#: MaskablePPO settings a model file keeps as plain JSON (copied into an export as they are)
_PLAIN_HYPERPARAMETERS = (
    "learning_rate",
    "n_steps",
    "batch_size",
    "n_epochs",
    "gamma",
    "gae_lambda",
    "ent_coef",
    "vf_coef",
    "max_grad_norm",
    "target_kl",
    "normalize_advantage",
    "seed",
)


def restore_checkpoint(model, path: str | Path, features: str) -> None:
    """Put the policy, its Adam state and the step counters of the checkpoint ``path`` into ``model``.

    ``model`` is a fresh MaskablePPO built from the run's ``config.json``.  The file is read
    weights-only (:func:`agents.ppo.read_model`, ``torch.load(weights_only=True)`` for the
    policy and optimizer, plain JSON for the counters): nothing in it is unpickled, so a
    checkpoint cannot run code.  Not restored: SB3's episode-statistics buffer (the rolling
    ``rollout/ep_rew_mean`` in TensorBoard starts afresh) and the last observation (the
    environments are reset, as they are new processes anyway).
    """
    from agents.ppo import read_model

    saved = read_model(path)
    if saved.features != features:
        raise ValueError(f"checkpoint {str(path)!r} reads {saved.features!r} features, the run {features!r}")
    try:
        model.policy.load_state_dict(saved.policy_state)
    except RuntimeError as err:  # missing or extra tensors, or sizes unlike config.json's net_arch
        raise ValueError(f"checkpoint {str(path)!r} does not fit the run's network: {err}") from err
    optimizer = saved.optimizer_state()
    if optimizer is not None:
        try:
            model.policy.optimizer.load_state_dict(optimizer)
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"checkpoint {str(path)!r}: its optimizer state does not fit: {err}") from err
    for key in ("num_timesteps", "_n_updates", "_episode_num"):
        value = saved.metadata.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"checkpoint {str(path)!r}: {key} is {value!r}, not a step count")
        setattr(model, key, value)


def export_model(src: str | Path, dest: str | Path) -> Path:
    """Save the policy of the model ``src`` to ``dest`` without its optimizer state (for shipping).

    ``src`` is read weights-only (no code in it runs, :func:`agents.ppo.read_model`); ``dest``
    is a fresh MaskablePPO ``.zip`` holding the same policy tensors and the settings ``src``
    keeps as plain JSON, which ``MaskablePPO.load`` and the ``ppo`` bot both read.
    """
    import re
    import warnings

    import torch
    from sb3_contrib import MaskablePPO

    from agents.features import FeatureObservation
    from agents.ppo import read_model
    from conquian_env.wrappers import SingleAgentEnv

    saved = read_model(src)  # clear errors for a missing, corrupt or non-Conquian file
    meta = saved.metadata
    settings: dict[str, Any] = {}
    for key in _PLAIN_HYPERPARAMETERS:
        value = meta.get(key)
        if isinstance(value, bool) == (key == "normalize_advantage") and isinstance(value, (int, float)):
            settings[key] = value
    clip = meta.get("clip_range")
    text = clip.get("value_schedule", "") if isinstance(clip, dict) else ""
    found = re.fullmatch(r"ConstantSchedule\(val=([0-9.eE+-]+)\)", str(text))
    if found:
        settings["clip_range"] = float(found.group(1))
    value_arch = sorted(
        int(k.split(".")[2])
        for k in saved.policy_state
        if k.startswith("mlp_extractor.value_net.") and k.endswith(".weight")
    )
    policy_kwargs: dict[str, Any] = {
        "net_arch": {
            "pi": list(saved.net_arch),
            "vf": [int(saved.policy_state[f"mlp_extractor.value_net.{i}.weight"].shape[0]) for i in value_arch],
        }
    }
    if saved.activation != "Tanh":
        policy_kwargs["activation_fn"] = getattr(torch.nn, saved.activation)
    env: gymnasium.Env = SingleAgentEnv()
    if saved.features == "meld":
        env = FeatureObservation(env)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SB3's note on batch_size vs the one-env rollout buffer
        model = MaskablePPO("MlpPolicy", env, policy_kwargs=policy_kwargs, device="cpu", **settings)
    try:
        model.policy.load_state_dict(saved.policy_state)
    except RuntimeError as err:
        raise ValueError(f"model {str(src)!r}: its tensors do not form a MaskablePPO MLP policy: {err}") from err
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    model.save(dest)
    read_model(dest)
    return dest


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
        Trainer(config, resume=resume).run()
    except KeyboardInterrupt:
        print(f"\ninterrupted: the run is saved; continue with: python train.py --resume {out}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

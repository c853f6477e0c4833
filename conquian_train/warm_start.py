"""The warm start: behaviour cloning of a teacher bot, then rounds of DAgger (the policy plays, the teacher labels)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agents.networks.ppo import NumpyPolicy, PolicyAgent
from agents.registry import make_agent
from conquian_arena.worker import map_jobs
from conquian_env.rules import Rules
from conquian_env.seeding import derive_seed

from .imitation import ImitationData, ImitationSettings, RecordingAgent, fit_imitation, play_recorded
from .run import RunFolder
from .seeding import WARM_START_GAMES


@dataclass(frozen=True)
class WarmStart:
    """What the warm start plays and learns: the ``ppo`` recipe's ``bc_*`` and ``dagger_*`` knobs
    (:meth:`~conquian_train.recipes.ppo.TrainConfig.warm_start`), which give the defaults and check
    the ranges; ``data`` is an earlier run's ``bc_data.npz`` to learn from instead of playing."""

    games: int
    teacher: str
    opponents: tuple[str, ...]
    data: str
    dagger_rounds: int
    dagger_games: int
    features: str
    rules: Rules
    seed: int
    processes: int
    imitation: ImitationSettings


@dataclass(frozen=True)
class RecordJob:
    """One worker's part of a warm-start round: games ``start .. start+count`` of round ``round_``,
    the teacher labelling, the ``student`` (None: the teacher itself) playing."""

    ws: WarmStart
    start: int
    count: int
    round_: int
    student: NumpyPolicy | None


def warm_start(policy, ws: WarmStart, run: RunFolder, evaluate: Callable[[str], object]) -> None:
    """Behaviour cloning of ``ws.teacher`` into ``policy`` (an SB3 policy), then ``ws.dagger_rounds``
    rounds of DAgger, each evaluated first (``evaluate(stage)``); the data set goes to ``bc_data.npz``."""
    t0 = time.time()
    if ws.data:
        data, meta = ImitationData.load(ws.data, ws.features)
        run.log(f"warm start: {len(data)} decisions of {meta.get('teacher')} from {ws.data}")
    else:
        data, results = record_games(ws, ws.games, None, 0)
        run.log(f"warm start: {ws.games} games of {ws.teacher} vs {list(ws.opponents)} "
                f"(W/D/L {results}), {len(data)} decisions, {time.time() - t0:.0f} s")  # fmt: skip
    run.append_csv("bc.csv", fit_imitation(policy, data, ws.imitation, ws.seed, "bc", run.log))
    for r in range(1, ws.dagger_rounds + 1):
        evaluate("bc" if r == 1 else f"dagger{r - 1}")
        t0 = time.time()
        new, results = record_games(ws, ws.dagger_games, NumpyPolicy.from_sb3(policy), r)
        run.log(f"DAgger round {r}: the policy played {ws.dagger_games} games vs {list(ws.opponents)} (W/D/L "
                f"{results}), {ws.teacher} labelled {len(new)} decisions, {time.time() - t0:.0f} s")  # fmt: skip
        data = ImitationData.concatenate([data, new])
        run.append_csv("bc.csv", fit_imitation(policy, data, ws.imitation, ws.seed, f"dagger{r}", run.log))
    meta = {"teacher": ws.teacher, "features": ws.features, "bc_opponents": list(ws.opponents)}
    run.write_file("bc_data.npz", lambda tmp: data.save(tmp, meta))


def record_games(ws: WarmStart, games: int, student: NumpyPolicy | None, round_: int):
    """Round ``round_``: ``games`` games over the worker processes; the teacher's decisions and W/D/L by opponent."""
    n = max(1, min(ws.processes, games))
    per = [games // n + (1 if i < games % n else 0) for i in range(n)]
    starts = np.cumsum([0, *per[:-1]])
    jobs = [RecordJob(ws, int(s), k, round_, student) for s, k in zip(starts, per, strict=True) if k]
    chunks = map_jobs(_record_chunk, jobs, ws.processes)
    results: dict[str, list[int]] = {}
    for _, part in chunks:
        for k, v in part.items():
            results[k] = [a + b for a, b in zip(results.get(k, [0, 0, 0]), v, strict=True)]
    return ImitationData.concatenate([data for data, _ in chunks]), results


def _record_chunk(job: RecordJob) -> tuple[ImitationData, dict[str, list[int]]]:
    """``job``'s games (in a worker): the teacher's decisions, W/D/L by opponent."""
    ws, student, round_, seed, features = job.ws, job.student, job.round_, job.ws.seed, job.ws.features
    teacher_spec, opponent_specs = ws.teacher, ws.opponents
    learner = PolicyAgent(student, deterministic=False) if student is not None else None
    teacher = RecordingAgent(make_agent(teacher_spec, seed), features, learner)
    opponents = {spec: make_agent(spec, seed + 1) for spec in opponent_specs}
    decisions, results = [], {}
    games = range(job.start, job.start + job.count)
    for g, spec, result in play_recorded(teacher, opponents, opponent_specs, games,
                                         lambda g: derive_seed(seed, WARM_START_GAMES, round_, g), ws.rules,
                                         "warm-start game"):  # fmt: skip
        results.setdefault(spec, [0, 0, 0])[0 if result > 0 else 1 if result == 0 else 2] += 1
        # which game each row is from: held-out sets take whole games
        decisions += [(o, m, a, result, q, round_ * 1_000_000_000 + g) for o, m, a, q in teacher.rows]
    return ImitationData.from_decisions(decisions, features), results

"""Tournament games as Ray tasks: on a local Ray instance or on a cluster.

``conquian-evaluate ... --ray local`` (a local instance with ``--jobs`` CPUs) or ``--ray
ADDRESS`` (an existing cluster, e.g. ``auto`` on a cluster node or ``ray://host:10001``)
plays the scheduled games of :mod:`conquian_arena.tournament` as Ray tasks.  Everything
else is the local runner's: the same schedule and seeds (so the same games, whichever
runner and however many workers), each game appended to ``games.jsonl`` as its task ends
(a Ctrl-C or a lost node keeps every finished game; run the command again to resume), the
same statistics.  Each Ray worker process plays its games as a local worker process does
(:mod:`conquian_arena.worker`): it builds a bot once per label and keeps it.

The cluster's nodes need this package installed (``pip install conquian-env[...]`` in the
same environment), like any Ray program's code.  Ray is the optional ``ray`` extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conquian_env.extras import missing
from conquian_env.rules import Rules

from . import worker

#: tasks kept in flight per CPU of the cluster (more hides scheduling latency)
IN_FLIGHT_PER_CPU = 2


def _require_ray() -> Any:
    try:
        import ray
    except ImportError as err:  # the 'ray' extra
        raise missing(err, "--ray", typed=True) from None
    return ray


def connect(address: str, num_cpus: int | None) -> tuple[Any, bool]:
    """Connect to ``address`` (``"local"``: start a local instance with ``num_cpus``).

    Returns the ray module and whether this call started Ray (and so should stop it)."""
    ray = _require_ray()
    if ray.is_initialized():
        return ray, False
    if address == "local":
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)
    return ray, True


def _play_remote(
    task: worker.Task, spec_of: dict[str, str], bot_seed_of: dict[str, int], rules: Rules
) -> dict[str, Any]:
    """The body of a Ray task: one game, with the worker's bots built once per tournament."""
    worker.ensure_setup(spec_of, bot_seed_of, rules)
    return worker.play_task(task)


def ray_map(body: Any, jobs: list[tuple[Any, ...]], address: str, num_cpus: int | None,
            window: bool = True) -> Iterator[tuple[int, Any]]:  # fmt: skip
    """Every ``body(*jobs[i])`` as a Ray task (one CPU, retried twice), yielding ``(i, result)`` as each
    ends; with ``window``, at most :data:`IN_FLIGHT_PER_CPU` tasks per CPU of the cluster in flight.  Ray
    is started (``"local"``) or joined at ``address`` and stopped after if this call started it; an
    error (or a generator closed early) cancels the tasks still pending.  The one Ray seam of the
    package: tournaments' games and training's shards."""
    ray, started = connect(address, num_cpus)
    pending: dict[Any, int] = {}
    try:
        remote = ray.remote(num_cpus=1, max_retries=2)(body)
        limit = max(1, int(ray.cluster_resources().get("CPU", 1))) * IN_FLIGHT_PER_CPU if window else len(jobs)
        queue = iter(enumerate(jobs))
        for i, job in queue:
            pending[remote.remote(*job)] = i
            if len(pending) >= limit:
                break
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                yield pending.pop(ref), ray.get(ref)
            for i, job in queue:
                pending[remote.remote(*job)] = i
                break
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()


def play_on_ray(
    todo: list[worker.Task],
    spec_of: dict[str, str],
    bot_seed_of: dict[str, int],
    rules: Rules,
    address: str,
    num_cpus: int | None,
) -> Iterator[dict[str, Any]]:
    """Play ``todo`` as Ray tasks and yield each game's line as soon as its task ends."""
    for _, line in ray_map(_play_remote, [(task, spec_of, bot_seed_of, rules) for task in todo], address, num_cpus):
        yield line

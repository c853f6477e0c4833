"""Tournaments on Ray (conquian_arena.ray_runner): the same games as the local runner."""

from __future__ import annotations

import json

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("scipy")

from conquian_arena.tournament import TournamentConfig, run_tournament  # noqa: E402

TIMING = ("think_time", "max_think", "check")  # the timings, and the check keyed by each folder's games.key


def _games(folder) -> list[dict]:
    lines = [json.loads(line) for line in (folder / "games.jsonl").read_text().splitlines()]
    for line in lines:
        for key in TIMING:
            line.pop(key, None)
    return sorted(lines, key=lambda line: line["index"])


@pytest.mark.slow
def test_ray_tournament_plays_the_same_games_as_one_process(tmp_path):
    common = {"specs": ["greedy", "random", "pimc:iterations=10"], "games": 6, "seed": 11, "plot": False}
    local = run_tournament(TournamentConfig(**common, jobs=1, out=tmp_path / "local"))
    on_ray = run_tournament(TournamentConfig(**common, jobs=2, ray="local", out=tmp_path / "ray"))
    assert _games(tmp_path / "local") == _games(tmp_path / "ray")
    assert len(_games(tmp_path / "ray")) == 18
    assert local["pairs"] == on_ray["pairs"]
    # resume on Ray after losing games: only the missing ones are played, the rest kept
    path = tmp_path / "ray" / "games.jsonl"
    kept = path.read_text().splitlines()[:10]
    path.write_text("\n".join(kept) + "\n")
    run_tournament(TournamentConfig(**common, jobs=2, ray="local", out=tmp_path / "ray"))
    assert _games(tmp_path / "ray") == _games(tmp_path / "local")


def test_ray_option_is_on_the_command_line():
    from conquian_arena.tournament import build_parser

    args = build_parser().parse_args(["greedy", "random", "--ray", "local"])
    assert args.ray == "local"
    args = build_parser().parse_args(["--ray", "local", "greedy", "random"])  # the first bot is not taken
    assert args.ray == "local" and args.specs == ["greedy", "random"]
    args = build_parser().parse_args(["greedy", "random", "--ray", "auto"])
    assert args.ray == "auto"
    assert build_parser().parse_args(["greedy", "random"]).ray is None


def test_distill_shards_made_on_ray_equal_the_local_ones(tmp_path):
    """Training's shards go through the same Ray seam (conquian_arena.ray_runner.ray_map) as the games."""
    from conquian_train.recipes import distill

    for name, extra in (("local", {}), ("ray", {"ray": "local"})):
        config = distill.GenerateConfig(out=str(tmp_path / name), games=24, chunk=8, playouts=4, seed=5, **extra)
        distill.generate(config, log=lambda _: None)
    made = sorted(p.name for p in (tmp_path / "local" / "shards").glob("*.npz"))
    assert made == sorted(p.name for p in (tmp_path / "ray" / "shards").glob("*.npz")) and len(made) == 3
    for name in made:
        with np.load(tmp_path / "local" / "shards" / name) as a, np.load(tmp_path / "ray" / "shards" / name) as b:
            assert a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)

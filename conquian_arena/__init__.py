"""Games between bots, or between a bot and a person: the layer above the bots.

The packages import one way: :mod:`conquian_env` (rules, observation, environments) <-
:mod:`agents` (bots) <- ``conquian_arena`` (this package) <- the scripts ``train.py`` and
``evaluate.py``.

* :mod:`~conquian_arena.match`: :func:`play_game`, the one game loop (with forfeits and
  recording), and :func:`deal_for_seed`; :mod:`~conquian_arena.batch`: its batched twin,
  :func:`~conquian_arena.batch.play_batch` (two batched bots, many games at once).
* :mod:`~conquian_arena.record`: the game record format (:class:`GameRecord`) and its
  validating replay.
* :mod:`~conquian_arena.tournament`: tournaments (``conquian-evaluate``), with
  :mod:`~conquian_arena.stats` and :mod:`~conquian_arena.report`; their schedule and seeds in
  :mod:`~conquian_arena.schedule`, a resume's checks of ``games.jsonl`` in
  :mod:`~conquian_arena.game_lines`, training's pair play in :mod:`~conquian_arena.pair`; both
  runners, the local one and :mod:`~conquian_arena.ray_runner`, play their games in
  :mod:`~conquian_arena.worker`;
  :mod:`~conquian_arena.runfiles`, the run-folder library of tournaments and training alike (the
  lock, whole files never written through a link, append-only tables), checks the game lines.
* :mod:`~conquian_arena.knobs`: a dataclass of knobs as a command line and a checked
  ``config.json``, the one builder of every command's flags (the tournament's and training's).
* :mod:`~conquian_arena.narration`: a game in words
  (:func:`~conquian_arena.narration.describe_move`), for every front end and replay.
* :mod:`~conquian_arena.human`: a person as a player (the meld held until finished), and
  :mod:`~conquian_arena.human_game`: one game of a person against a bot (seed, bot, names,
  result, saving), both shared by the two front ends:
* :mod:`~conquian_arena.play`: a person against a bot in the terminal (``conquian-play``);
  the person is an :class:`agents.base.Agent` like any bot.
* :mod:`~conquian_arena.webplay`: a person against a bot in the browser
  (``conquian-play --web``, the ``web`` extra), the person again an Agent.
* :mod:`~conquian_arena.replay`: the replay viewer (``conquian-replay``), in the terminal,
  as a GIF or as a self-contained HTML page (:mod:`~conquian_arena.pages`, which makes the
  pages of the package's page assets, ``conquian_arena/assets/``).
"""

from __future__ import annotations

from .match import deal_for_seed, play_game
from .record import GameRecord, ReplayError

__all__ = ["GameRecord", "ReplayError", "deal_for_seed", "play_game"]

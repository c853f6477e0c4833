"""Head-to-head tournaments between Conquian bots, with statistics a reviewer can check.

Usage (``conquian-evaluate`` is the installed command; ``python evaluate.py`` in the
repository and ``python -m conquian_arena.tournament`` are the same)::

    conquian-evaluate greedy random --games 200 -j 2                   # a few seconds
    conquian-evaluate random pimc:iterations=100 --gauntlet greedy --games 40
    conquian-evaluate greedy random --games 200 --out results/x -j 4   # a variant: its flag (conquian_env.rules)

Every knob is a field of :class:`TournamentConfig` (the command line is generated from
it; ``--help`` lists them and the bot specs).  From Python::

    from conquian_arena.tournament import TournamentConfig, run_tournament
    summary = run_tournament(TournamentConfig(specs=["greedy", "random"], games=100))
    summary = run_tournament(["greedy", "random"], games=100)      # the same

How games are scheduled
    Each pair of bots plays ``--games`` games.  By default deals are **duplicated**: deal
    ``d`` is played twice, once with each bot in seat 0, so both bots get each hand and
    each playing position once and the luck of the cards cancels (``--games`` is rounded
    up to even).  Seat 0 always plays first (RULES.md section 3).  With
    ``--no-duplicate`` every game gets a fresh deal and the seats alternate.  Deal ``d``
    is shuffled from a seed derived from ``(--seed, d)``; it is the same deal for every
    pair (common random numbers).  Bots are built once per worker process from their
    specs and re-seeded before every game with a seed derived from ``(--seed, d, seat
    swap)``, so the tournament is reproducible for any ``-j`` and any scheduling order,
    as long as each bot's play depends only on the seed given to ``Agent.reset``.

Statistics (all intervals 95% by default, ``--confidence``): :mod:`conquian_arena.stats`
    score of A against B with a t interval over deals, stakes (RULES.md section 6) with a
    regenerative interval, Bradley-Terry ratings on the Elo scale (``--bt-prior`` virtual
    draws per pair, ``--anchor BOT`` at 0) with bootstrap intervals over deals
    (``--bootstrap`` resamples).  Reports: :mod:`conquian_arena.report`.

Output folder (``--out``, default ``results/<bots>_g<games>_s<seed>``)
    ``config.json``    what defines the tournament (specs, games, seed, rules, duplicate);
                       re-running with the same folder resumes, a different config is an error.
                       Its ``options`` are the :class:`TournamentConfig` of the latest run.
    ``games.jsonl``    one JSON object per game, written and flushed as each game ends:
                       ``index pair deal swap seats specs deal_seed game_seed hands stock first
                       rules players actions winner winner_label moves failure think_time max_think
                       decisions`` (:class:`conquian_arena.record.GameRecord` fields plus
                       the schedule) and last ``check``, the line's HMAC keyed by ``games.key``
                       (:mod:`conquian_arena.runfiles`).  On a resume every line's check is
                       verified and every line is checked field by field against the schedule
                       and its replay; a game that ended by a failure (crash, illegal, quit), or
                       with ``--verify`` every game, is re-played with the bots, which must
                       reproduce it (:mod:`conquian_arena.game_lines`); a corrupt, half-written,
                       unchecked, unfaithful or unreproduced line is reported, moved to
                       ``games.rejected.txt`` (``line N<TAB>why<TAB>the line``) and
                       its game played again.  What this can and cannot detect:
                       docs/tournaments.md.
    ``games.key``      the run's secret that signs the lines (its owner's only).
    ``summary.json``   the statistics with their methods, ``summary.csv`` one row per pair,
    ``ratings.csv``    one row per bot, ``summary.png`` score matrix and ratings.
    ``report.html``    the tables, the plot and a link to every game's replay in ``replays/``
                       (self-contained pages, one per pair of bots; ``--no-html`` skips them).
    ``run.lock``       held while a run works in the folder: a second run stops, naming the holder.
    Every file is written through :mod:`conquian_arena.runfiles`, the run-folder library of
    training too: whole or absent, never through a symbolic link (a link, a FIFO in the folder is
    refused in one line naming it).
    Only ``timing`` (seconds of thinking) in ``summary.json`` and ``think_time`` / ``max_think``
    in ``games.jsonl`` differ between reruns.

A Ctrl-C or a kill keeps every game played so far (each is written as it ends; every other
file is written whole or not at all); the same command resumes the tournament.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.registry import SpecError, describe_bots
from conquian_env.extras import MissingExtraError, for_command
from conquian_env.rules import STANDARD, Rules, rules_of_record

from . import knobs, runfiles, worker
from .game_lines import load_games
from .knobs import add_flags, knob
from .report import format_summary, plot_summary, write_html_report, write_summary
from .schedule import bot_labels, bot_names, bot_seeds, games_per_pair, make_schedule
from .stats import summarize
from .worker import Task, play_task

FORMAT_VERSION = 1


# --------------------------------------------------------------------------- the knobs


@dataclass
class TournamentConfig:
    """Every knob of a tournament.  The command line is generated from these fields
    (:func:`build_parser`), and ``config.json`` keeps them (``options``) with the run."""

    specs: list[str] = knob([], "bot specs, e.g. greedy random pimc:iterations=200", positional=True, spec=True)
    gauntlet: str | None = knob(
        None, "play only SPEC against each listed bot instead of a round robin", type=str, metavar="SPEC", spec=True
    )
    games: int = knob(1000, "games per pair (rounded up to even with duplicate deals)", low=1)
    seed: int = knob(0, "tournament seed: deals and bot seeds derive from it", low=0)
    jobs: int | None = knob(None, "worker processes (default: one per core)", type=int, flags=("-j", "--jobs"), low=1)
    rules: Rules = knob(STANDARD, "the rule variant: one flag per field of conquian_env.rules.Rules", rules=True)
    duplicate: bool = knob(True, "each deal twice with the seats swapped (--no-duplicate: a fresh deal for every game)")
    out: str | Path | None = knob(None, "results folder (default: results/<bots>_g<games>_s<seed>)", type=str)
    confidence: float = knob(0.95, "level of every interval", above=0, below=1)
    bootstrap: int = knob(1000, "bootstrap resamples for rating intervals", low=1)
    bt_prior: float = knob(1.0, "virtual draws added to each pair in the Bradley-Terry fit (0 = plain MLE)", low=0)
    anchor: str | None = knob(None, "bot label rated 0 Elo (default: mean 0)", type=str, metavar="BOT")
    progress: bool | None = knob(None, "progress bar on standard error (default: when it is a terminal)")
    plot: bool = knob(True, "write summary.png (needs matplotlib)")
    html: bool = knob(True, "write report.html and replays/: the report and every game's replay, for a browser")
    verify: bool = knob(
        False,
        "on a resume, re-play every kept game with its scheduled bots and seeds, and set aside (and play again) "
        "any that comes out otherwise: for bots whose play is a function of their seed; it costs the games' time",
    )
    ray: str | None = knob(
        None,
        "play the games as Ray tasks: --ray local starts a local Ray instance with --jobs CPUs, "
        "--ray ADDRESS joins a cluster (e.g. auto, ray://HOST:10001); same games, results and resume",
        type=str,
        metavar="ADDRESS",
    )

    def validate(self) -> None:
        """Raise ``ValueError`` saying what is wrong with a knob: each field against its type and
        declared range (:func:`conquian_arena.knobs.check`: ``games must be a positive integer, got
        0``), then what the fields ask of each other."""
        knobs.check(self)
        if self.gauntlet is None and len(self.specs) < 2:
            raise ValueError(f"a round robin needs at least two bots, got {self.specs}; or use --gauntlet SPEC")

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["out"] = None if self.out is None else str(self.out)
        return data


def build_parser() -> argparse.ArgumentParser:
    """The command line, one option per :class:`TournamentConfig` field (:func:`conquian_arena.knobs.add_flags`,
    every default in the namespace)."""
    parser = argparse.ArgumentParser(
        description="Round robin (or gauntlet) tournament between Conquian bots, with duplicate deals, "
        "confidence intervals, stakes and Bradley-Terry ratings.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="bot specs:\n" + describe_bots(),
    )
    return add_flags(parser, TournamentConfig, defaults_in_namespace=True)


# --------------------------------------------------------------------------- the config


def make_config(options: TournamentConfig) -> dict[str, Any]:
    """What defines the tournament: a resume must ask for the same.  (config.json keeps it,
    as :func:`config_data`, with the ``options`` of the latest run, whose other knobs may change
    between runs.)  Its ``rules`` are the :class:`~conquian_env.rules.Rules` object itself, parsed
    once (from the command line or the options), which everything that plays or checks a game reads."""
    bot_specs = ([options.gauntlet] if options.gauntlet is not None else []) + list(options.specs)
    return {
        "format": FORMAT_VERSION,
        "specs": list(options.specs),
        "gauntlet": options.gauntlet,
        "bot_specs": bot_specs,
        "labels": bot_labels(bot_specs),
        "games": games_per_pair(options.games, options.duplicate),
        "games_requested": options.games,
        "seed": options.seed,
        "rules": options.rules,
        "duplicate": bool(options.duplicate),
    }


def config_data(config: dict[str, Any]) -> dict[str, Any]:
    """:func:`make_config`'s ``config`` as JSON data (its rules as their fields), as config.json keeps it."""
    return {**config, "rules": config["rules"].to_dict()}


def config_from_data(data: dict[str, Any]) -> dict[str, Any]:
    """The ``config`` of a folder's config.json (:func:`config_data`'s form), its rules parsed into the
    rules object once, as :func:`make_config` makes it."""
    return {**data, "rules": rules_of_record(data, "config")}


def default_out_dir(config: dict[str, Any]) -> Path:
    slug = "-".join(re.sub(r"[^A-Za-z0-9=.]+", "_", label).strip("_") for label in config["labels"])
    if config["gauntlet"] is not None:
        slug = "gauntlet-" + slug
    if len(slug) > 60:
        slug = slug[:50] + "-" + hashlib.sha1(slug.encode()).hexdigest()[:8]
    rules = config["rules"]
    extra = ("" if rules == STANDARD else "_" + rules.name) + ("" if config["duplicate"] else "_nodup")
    return Path("results") / f"{slug}_g{config['games']}_s{config['seed']}{extra}"


def _check_config(out_dir: Path, config: dict[str, Any]) -> None:
    path = out_dir / "config.json"
    if runfiles.check_entry(path):
        try:
            old = json.loads(runfiles.read_text(path))
        except runfiles.RunFolderError:
            raise
        except (ValueError, RecursionError) as err:  # bad UTF-8, bad JSON, absurd nesting
            raise ValueError(f"{path} is not valid JSON ({str(err)[:120]}); fix it or use another --out") from None
        if not isinstance(old, dict):
            raise ValueError(f"{path} is not a tournament's config: a JSON object expected, got a JSON "
                             f"{type(old).__name__}; fix it or use another --out")  # fmt: skip
        data = config_data(config)
        compare = [k for k in data if k != "games_requested"]
        # the rules as the rules object reads them: a field the folder leaves out is off (it was
        # written before that variant existed); a field this version does not know is refused by name
        same_rules = "rules" in old and rules_of_record(old, str(path)) == config["rules"]
        diff = [k for k in compare if (not same_rules if k == "rules" else old.get(k) != data[k])]
        if diff:
            details = "; ".join(f"{k}: folder has {old.get(k)!r}, this run asks {data[k]!r}" for k in diff)
            raise ValueError(
                f"{out_dir} holds a different tournament ({details}). "
                "Resume it with the same settings, or choose another --out."
            )
    elif runfiles.check_entry(out_dir / "games.jsonl"):
        raise ValueError(f"{out_dir} has games.jsonl but no config.json; choose another --out")


# --------------------------------------------------------------------------- the tournament


def optional_outputs(plot: bool = True, progress: bool = False) -> tuple[bool, bool]:
    """Which of the plot (matplotlib) and the progress bar (tqdm) asked for can be made: each whose
    package is missing is skipped with a one-line note on standard error naming the 'eval' extra.
    Nothing else of a tournament needs them (the statistics need no scipy)."""
    missing = []
    if plot and importlib.util.find_spec("matplotlib") is None:
        plot = False
        missing.append("matplotlib (summary.png)")
    if progress and importlib.util.find_spec("tqdm") is None:
        progress = False
        missing.append("tqdm (the progress bar)")
    if missing:
        print(f"note: no {' or '.join(missing)}: skipped; pip install 'conquian-env[eval]' adds it", file=sys.stderr)
    return plot, progress


def run_tournament(
    options: TournamentConfig | Sequence[str] | str, /, *, verbose: bool = False, **knobs: Any
) -> dict[str, Any]:
    """Play (or resume) a tournament, write its folder and return the summary dict.

    ``options`` is a :class:`TournamentConfig`, or the bot specs with any other field of it
    as a keyword (``run_tournament(["greedy", "random"], games=100, out="results/x")``);
    keywords given with a config replace its fields.  ``verbose`` prints what is resumed
    to standard error.  Raises ``ValueError`` (a :class:`~agents.registry.SpecError` for a
    bad bot spec) before any game is played or any folder made.
    """
    if isinstance(options, TournamentConfig):
        options = dataclasses.replace(options, **knobs)
    else:
        options = TournamentConfig(specs=[options] if isinstance(options, str) else list(options), **knobs)
    options.validate()
    config = make_config(options)
    if options.anchor is not None and options.anchor not in config["labels"]:
        raise ValueError(f"--anchor {options.anchor!r} is not one of the bots {config['labels']}")
    spec_of = dict(zip(config["labels"], config["bot_specs"], strict=True))
    bot_seed_of = bot_seeds(config)
    progress = sys.stderr.isatty() if options.progress is None else options.progress
    if options.progress is None and progress:
        progress = importlib.util.find_spec("tqdm") is not None  # not asked for: no tqdm, no bar, no note
    if options.ray is not None and importlib.util.find_spec("ray") is None:
        raise MissingExtraError("ray", "conquian-evaluate --ray", typed=True)
    names = bot_names(config)  # builds every bot: fail fast, before any folder or worker exists
    plot, progress = optional_outputs(plot=options.plot, progress=progress)  # after any error: notes

    out = Path(options.out) if options.out is not None else default_out_dir(config)
    with runfiles.hold_folder(out):  # one process at a time: a second stops, naming the holder
        return _run_in(out, config, options, spec_of, bot_seed_of, names, plot, progress, verbose)


def _run_in(out: Path, config: dict[str, Any], options: TournamentConfig, spec_of: dict[str, str],
            bot_seed_of: dict[str, int], names: dict[str, str], plot: bool, progress: bool,
            verbose: bool) -> dict[str, Any]:  # fmt: skip
    """:func:`run_tournament`'s work in the folder ``out``, whose lock the caller holds."""
    _check_config(out, config)
    gone = runfiles.remove_partials(out, ("replays",))  # what a killed run was writing
    if verbose and gone:
        print(f"{out}: deleted the half-written {', '.join(gone)} of a killed run", file=sys.stderr)
    written = {**config_data(config), "options": options.to_dict()}
    runfiles.write_text(out / "config.json", json.dumps(written, indent=2) + "\n")

    tasks = make_schedule(config)
    games_path = out / "games.jsonl"
    done = load_games(games_path, config, names, verify=options.verify)
    key = runfiles.read_key(out)
    assert key is not None  # load_games keeps one
    # played deal by deal across the pairs (not pair after pair), so that the progress bar's
    # rate, and so its time left, is that of the whole mix from the start
    todo = sorted((t for t in tasks if t.key not in done), key=lambda t: (t.deal, t.swap, t.index))
    if verbose:
        if config["games"] != options.games:
            print(
                f"note: --games {options.games} rounded up to {config['games']} (duplicate deals come in pairs)",
                file=sys.stderr,
            )
        print(f"{out}: {len(done)} of {len(tasks)} games already played, {len(todo)} to play", file=sys.stderr)
    new = _play(todo, spec_of, bot_seed_of, options, games_path, key, len(tasks), len(done), progress)
    summary = summarize(
        list(done.values()) + new, config, options.confidence, options.bootstrap, options.bt_prior, options.anchor
    )
    summary["out_dir"] = str(out)
    write_summary(summary, out)
    if plot:
        plot_summary(summary, out / "summary.png")
    if options.html:
        write_html_report(summary, out)
    return summary


def _play(
    todo: list[Task],
    spec_of: dict[str, str],
    bot_seed_of: dict[str, int],
    options: TournamentConfig,
    games_path: Path,
    key: bytes,
    total: int,
    done: int,
    progress: bool,
) -> list[dict[str, Any]]:
    """Play the games of ``todo`` (in worker processes with ``jobs`` > 1), appending each to
    ``games_path`` as it ends, signed with ``key`` (:func:`conquian_arena.runfiles.sign_line`),
    and return their lines.  A Ctrl-C keeps every finished game."""
    jobs = max(1, min(options.jobs or os.cpu_count() or 1, len(todo) or 1))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, initial=done, unit="game", file=sys.stderr, dynamic_ncols=True)
    new: list[dict[str, Any]] = []
    with runfiles.open_append(games_path) as f:

        def save(line: dict[str, Any]) -> None:
            f.write(runfiles.sign_line(json.dumps(line), key) + "\n")
            f.flush()  # a kill loses at most the line being written
            new.append(line)
            if bar is not None:
                bar.update(1)

        try:
            if options.ray is not None and todo:
                from .ray_runner import play_on_ray

                for line in play_on_ray(todo, spec_of, bot_seed_of, options.rules, options.ray, options.jobs):
                    save(line)
            elif jobs == 1:
                worker.setup(spec_of, bot_seed_of, options.rules)
                for task in todo:
                    save(play_task(task))
            elif todo:
                with worker.worker_pool(jobs, (spec_of, bot_seed_of, options.rules)) as pool:
                    # chunksize 1: each game comes back, and is written, as soon as it ends
                    for line in pool.imap_unordered(play_task, todo, chunksize=1):
                        save(line)
        finally:
            if bar is not None:
                bar.close()
    return new


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line (the knobs of :class:`TournamentConfig`); returns the exit status:
    0 done, 2 a bad command line or bot spec, 130 interrupted (the games played are kept)."""
    parser = build_parser()
    options = TournamentConfig(**vars(parser.parse_args(argv)))
    try:
        summary = run_tournament(options, verbose=True)
    except SpecError as err:
        print(f"{parser.prog}: {err}", file=sys.stderr)
        return 2
    except ImportError as err:  # a missing extra: one line naming what asked for it and its install line
        told = for_command(err, parser.prog)
        if not isinstance(told, MissingExtraError):
            raise  # no optional package is missing: a broken install or a bug, with its traceback
        print(f"{parser.prog}: error: {told}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a file of the folder that is a folder, a FIFO: one line; any other error as it is
        if (line := runfiles.misplaced(err)) is None:
            raise
        print(f"{parser.prog}: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: games played so far are saved; run the same command again to resume", file=sys.stderr)
        return 130
    print(format_summary(summary))
    png = options.plot and (Path(summary["out_dir"]) / "summary.png").exists()  # skipped without matplotlib
    print(f"\nwrote {summary['out_dir']}/: config.json games.jsonl summary.json summary.csv ratings.csv"
          + (" summary.png" if png else "") + (" report.html replays/" if options.html else ""))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

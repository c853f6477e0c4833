"""Bot spec strings for the environments, without the environments knowing any bot.

``SingleAgentEnv(opponent="greedy")``, ``gymnasium.make("conquian_env/Conquian-v0",
opponent="greedy")`` and ``ConquianVectorEnv(opponent="greedy")`` take a bot spec string,
but this package defines no bots and imports nothing that does (the bots build on the
environment, not the other way round).  A spec is handed to a *resolver* that an
installed package registers as a Python entry point.  This project's bots (the
``agents`` package) register theirs in ``pyproject.toml``::

    [project.entry-points."conquian_env.bots"]
    agent = "agents.registry:make_agent"            # spec -> bot with act(observation, action_mask, view)
    batch = "agents.batched:make_batch_opponent"    # spec -> batched bot with act_batch(games, rows)

    [project.entry-points."conquian_env.observations"]
    meld = "agents.batched:MELD_FEATURES"           # ConquianVectorEnv(observation="meld")

Another package can provide bots the same way (an entry point named ``agent`` or
``batch`` in the group ``conquian_env.bots``), as long as only one installed package
claims each name.  Without any (e.g. the sources on ``sys.path`` but not installed) a
spec string is a ``ValueError`` that says so; pass a bot object instead.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

#: entry point group of the bot resolvers: ``agent`` (per-game bots), ``batch`` (batched bots)
BOT_GROUP = "conquian_env.bots"
#: entry point group of named batched observation encoders (``ConquianVectorEnv(observation=NAME)``)
OBSERVATION_GROUP = "conquian_env.observations"


def _load(group: str, name: str, wanted: str) -> Any:
    found = {ep.value: ep for ep in entry_points(group=group, name=name)}
    if not found:
        raise ValueError(
            f"{wanted}, but no installed package provides one (no entry point {name!r} in the group "
            f"{group!r}): install conquian-env with its bots (pip install -e . in the repository), "
            "or pass an object instead of a name"
        )
    if len(found) > 1:
        raise ValueError(
            f"{wanted}, and several installed packages provide it (entry point {name!r} in the group {group!r}: "
            f"{', '.join(sorted(found))}): uninstall all but one, or pass an object instead of a name"
        )
    (ep,) = found.values()
    try:
        return ep.load()
    except (ImportError, AttributeError) as err:
        raise ValueError(f"{wanted}, but its provider {ep.value} cannot be loaded: {err}") from err


def make_opponent(spec: str) -> Any:
    """The bot ``spec`` names (``"greedy"``, ``"pimc:iterations=200"``), built by the
    installed ``agent`` resolver; its errors (a bad spec) pass through as they are."""
    return _load(BOT_GROUP, "agent", f"the bot spec {spec!r} needs a bot resolver")(spec)


def make_batch_opponent(spec: str, seed: int | None = None) -> Any:
    """The batched bot (``act_batch(games, rows)``) ``spec`` names, built by the installed
    ``batch`` resolver and seeded with ``seed`` (a bot that draws random numbers)."""
    return _load(BOT_GROUP, "batch", f"the bot spec {spec!r} needs a batched bot resolver")(spec, seed)


def observation_encoder(name: str) -> Any:
    """The batched observation encoder registered under ``name`` (e.g. ``"meld"``)."""
    return _load(OBSERVATION_GROUP, name, f"the observation {name!r} needs an encoder")

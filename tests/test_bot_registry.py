# ruff: noqa: E501  (the pinned text has the long lines it prints)
"""The bot registry: bots declared on their classes (``@bot``), found from the sources without importing them."""

from __future__ import annotations

#: describe_bots() as it was before the bots declared themselves (pinned: the text must not change)
DESCRIBE_BOTS = (
    "  random                             uniform over legal actions\n"
    "  greedy                             rule-based: takes what improves its hand, goes out when it can, discards the least useful card\n"
    "  ismcts                             compiled search (needs numba): paired greedy playouts of every action on plausible deals, racing\n"
    "      time=0.15, seconds per searched decision at most (the race ends most decisions sooner)\n"
    "      iterations=none, playouts per decision instead of time (reproducible with a seed)\n"
    "      z=3, standard errors behind the leader at which an action leaves the race (0: never)\n"
    "      tries=10, deals drawn per determinization to find one explaining the opponent's play\n"
    "      take_options=false, value a take with each discard that can follow it (not only greedy's)\n"
    "  search                             the compiled search with deals drawn from the belief model of the opponent's hand (needs numba)\n"
    "      time=0.15, seconds per searched decision at most (the race ends most decisions sooner)\n"
    "      iterations=none, playouts per decision instead of time (reproducible with a seed)\n"
    "      z=3, standard errors behind the leader at which an action leaves the race (0: never)\n"
    "      tries=1, belief deals drawn per determinization, the most plausible kept (1: the belief alone)\n"
    "      take_options=false, value a take with each discard that can follow it (not only greedy's)\n"
    "      belief=none, a belief model file (none: the shipped agents/data/conquian_belief.npz)\n"
    "      uniform=false, uniform deals instead of the belief's (with tries > 1: the plausibility filter)\n"
    "      inner=0, deals of a second ply (the searcher's first playout decision searched on its re-deals)\n"
    "      leaf=none, greedy steps of a playout before the leaf value is read instead (none: played out)\n"
    "      value=none, a leaf value model file (conquian_train.value fit), read at the leaf (needs leaf)\n"
    "  guided:PATH.zip                    the compiled search guided by a network: its prior (only the most likely actions race) and playout policy\n"
    "      keep=3, legal actions (by the policy's ranking) that are searched (0: all)\n"
    "      steps=0, the searching player's next decisions in each playout that the network makes (a scorer)\n"
    "      both=false, the network also makes the opponent's decisions in the playouts (steps counts both)\n"
    "      time=0.15, seconds per searched decision at most\n"
    "      iterations=none, playouts per decision instead of time\n"
    "      z=3, standard errors behind the leader at which an action leaves the race\n"
    "      tries=10, deals drawn per determinization to find one explaining the opponent's play\n"
    "  ismcts-py                          the Python information-set Monte Carlo tree search (readable reference; slow)\n"
    "      iterations=500, simulations per decision\n"
    "      time=none, seconds per decision (overrides iterations when given)\n"
    "      c=0.7, UCB exploration constant (scores in [0, 1])\n"
    "      infer=true, prefer deals that explain the opponent's refusals and discards\n"
    "  rollout                            flat Monte Carlo: every legal action scored by paired greedy rollouts on sampled deals\n"
    "      samples=32, determinizations per decision (each action is rolled out on each)\n"
    "      margin=0, leave the greedy choice only for a paired gain of this many standard errors\n"
    "      infer=true, prefer deals that explain the opponent's refusals and discards\n"
    "      batch=false, run the rollouts together on the batched engine (needs numba; same games, faster)\n"
    "  ppo:[PATH.zip]                     a MaskablePPO model (sb3-contrib .zip from train.py); no path: the shipped model\n"
    "      deterministic=true, argmax instead of sampling\n"
    "  scorer:[PATH.npz]                  the action scorer alone (a network from train.py exit scoring each legal action); no path: the shipped one\n"
    "  rllib:PATH                         an RLlib policy (a checkpoint of conquian_env.integrations.rllib / examples/rllib_selfplay.py)\n"
    "      module_id=shared, the policy in a multi-policy checkpoint\n"
    "      deterministic=true, argmax instead of sampling\n"
    "  python:package.module:ClassName    your own Agent subclass\n"
    "      any=keyword arguments passed to the class\n"
    "  pimc                               compiled search (needs numba): paired greedy playouts of every action on plausible deals, racing\n"
    "      time=0.15, seconds per searched decision at most (the race ends most decisions sooner)\n"
    "      iterations=none, playouts per decision instead of time (reproducible with a seed)\n"
    "      z=3, standard errors behind the leader at which an action leaves the race (0: never)\n"
    "      tries=10, deals drawn per determinization to find one explaining the opponent's play\n"
    "      take_options=false, value a take with each discard that can follow it (not only greedy's)"
)

#: the class each kind builds (ppo and rllib need torch / ray: checked by name only)
CLASSES = {
    "random": "agents.base.RandomAgent",
    "greedy": "agents.greedy.GreedyAgent",
    "ismcts": "agents.search.SearchAgent",
    "search": "agents.search.BeliefSearchAgent",
    "guided": "agents.search.GuidedSearchAgent",
    "ismcts-py": "agents.ismcts.ISMCTSAgent",
    "rollout": "agents.rollout.RolloutAgent",
    "scorer": "agents.scorer.ScorerAgent",
    "python": "agents.base.Agent",
    "pimc": "agents.search.SearchAgent",
}

POSITIONAL = {
    "random": None,
    "greedy": None,
    "ismcts": None,
    "search": None,
    "guided": "PATH.zip",
    "ismcts-py": None,
    "rollout": None,
    "ppo": "[PATH.zip]",
    "scorer": "[PATH.npz]",
    "rllib": "PATH",
    "python": "package.module:ClassName",
    "pimc": None,
}


def test_describe_bots_is_unchanged():
    from agents.registry import describe_bots

    assert describe_bots() == DESCRIBE_BOTS


def test_every_kind_builds_the_same_class_and_keeps_its_fields():
    from agents.registry import KNOWN_BOTS

    assert list(KNOWN_BOTS) == list(POSITIONAL)
    assert {k: v.positional for k, v in KNOWN_BOTS.items()} == POSITIONAL
    for kind, name in CLASSES.items():
        cls = KNOWN_BOTS[kind].factory()
        assert f"{cls.__module__}.{cls.__name__}" == name, kind
    assert KNOWN_BOTS["pimc"] is KNOWN_BOTS["ismcts"]

"""Adapters for third-party RL libraries, each imported only when used.

* :mod:`conquian_env.integrations.rllib`: RLlib (new API stack): a ``MultiAgentEnv`` with
  the observation keys and dtypes of RLlib's action-masking RLModule, a self-play PPO
  config and checkpoint loading (needs ``ray[rllib]``).
* :mod:`conquian_env.integrations.openspiel`: OpenSpiel: registers the Python game
  ``python_conquian`` for ``pyspiel.load_game`` (needs ``open_spiel``).

Nothing here is imported by ``import conquian_env``: importing this package costs nothing,
and a library is imported only with the module that adapts it.  Tianshou and AgileRL need
no adapter: see ``conquian_env.env(numeric_infos=True)`` and
:mod:`conquian_env.transitions`, and the examples in ``examples/``.
"""

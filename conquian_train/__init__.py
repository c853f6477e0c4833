"""Training parts above the arena: what ``train.py`` puts together.

Layers: ``conquian_env`` <- ``agents`` <- ``conquian_arena`` <- ``conquian_train`` <- scripts.

- :mod:`conquian_train.knobs`: a dataclass of knobs as a command line (help from each field).
- :mod:`conquian_train.run`: the run folder (log, CSV files, checkpoints and run state, learning-curve plot).
- :mod:`conquian_train.files`: every write of a run folder (atomic files, checkpoints swapped in whole, the lock).
- :mod:`conquian_train.ppo`: the PPO recipe's run (``python train.py``).
- :mod:`conquian_train.envs`: the learner's games against the opponent pool (batched or per game).
- :mod:`conquian_train.warm_start`: behaviour cloning and DAgger rounds on a teacher's decisions.
- :mod:`conquian_train.evaluation`: the duplicate-deal evaluation of a policy (``conquian-evaluate``'s deals).
- :mod:`conquian_train.callbacks`: the named callbacks of ``MaskablePPO.learn``.
- :mod:`conquian_train.exit`: expert iteration on the compiled search.
- :mod:`conquian_train.scorer_fit`: fitting the action scorer (:mod:`agents.scorer`) to the search's values.
"""

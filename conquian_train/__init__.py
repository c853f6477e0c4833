"""All of training, behind one command: ``conquian-train RECIPE ...`` (``python train.py RECIPE ...``).

Layers: ``conquian_env`` <- ``agents`` <- ``conquian_arena`` <- ``conquian_train`` <- scripts.

- :mod:`conquian_train.cli`: the command; :mod:`conquian_train.recipes`: the recipes (every module of
  the sub-package is one, and declares ``RECIPE``) and the run they share.
- the recipes: :mod:`conquian_train.recipes.ppo` (warm start + MaskablePPO),
  :mod:`conquian_train.recipes.exit` (expert iteration on the compiled search),
  :mod:`conquian_train.recipes.belief` (the belief model), :mod:`conquian_train.recipes.distill`
  (the shipped action scorer).
- the library the recipes share (it imports no recipe):
- :mod:`conquian_train.settings`: the knobs every recipe shares (run folder, seed, evaluation, processes).
- the knobs of every recipe: a dataclass, as a command line and a checked ``config.json``, by
  :mod:`conquian_arena.knobs` (the builder of every command).
- :mod:`conquian_train.run`: the run folder (log, CSV files, checkpoints and run state, learning-curve plot).
- :mod:`conquian_arena.runfiles` (below it, shared with tournaments): every file of a run folder (the lock,
  atomic files, checkpoints swapped in whole, append-only tables; never through a link).
- :mod:`conquian_train.envs`: the learner's games against the opponent pool (the batched engine).
- :mod:`conquian_train.warm_start`: behaviour cloning and DAgger rounds on a teacher's decisions.
- :mod:`conquian_train.imitation`: the imitation data set, the recording bot and the loss.
- :mod:`conquian_train.evaluation`: the duplicate-deal evaluation of a policy (``conquian-evaluate``'s deals).
- :mod:`conquian_train.callbacks`: the named callbacks of ``MaskablePPO.learn``.
- :mod:`conquian_train.policy_files`: learner snapshots, a checkpoint's restore, a model's export.
- :mod:`conquian_train.scorer_fit`: fitting the action scorer (:mod:`agents.scorer.scorer`) to the search's values.
"""

"""The parts of the literature's benchmark that `benchmarks/bench_standard.py` runs (its commands:
``speed``, ``games``, ``--versus``), each a module the other benchmark scripts may import too:

- `players`: the 1-ply player of an evaluator (`players.make`), the one-line error, a series'
  summary and the state file of a game in play;
- `series`: the series file (``--json``), its journal, and the games in play ``--resume`` goes on
  from;
- `versus`: MdpTetris's ``mdptetris_play_games`` beside our games, whole processes.
"""

"""A policy for unknown pieces is one module: this file defines one (`ranked`, its settings, its
bundle, its kernel, its registration) and plays it through `solve` and the configuration files, as
the project's own; the registry refuses a name taken twice, a shared bundle, a reserved key."""

import pickle
from pathlib import Path
from typing import NamedTuple, get_args

import numpy as np
import pytest
from numba import njit
from pydantic import Field

from engine._jit import cache
from engine.lock import spawn_state
from engine.movegen.generators import placements_into
from evaluators import board_values, priority
from engine.config import ConfigError
from experiments.reference import configuration_reference
from solver import load_online_policy, load_solver_config
from solver import SolverConfig, registry, solve
from solver._base import best_first, value_child
from solver.config import Strict
from solver.online import CURRENT, OnlinePolicy, ply_scratch
from solver.online.games import game_loop, outside_stamp, play_chunk_bare, play_chunk_fresh, stamped_loop
from solver.online.one_ply import OnePlyBundle, choose_one_ply
from solver.registry import PolicyError, register


# ------------------------------------------------------------------------------------------------
# The policy: the placement of rank ``rank`` in the evaluator's order (0: the best, as one_ply;
# -1: the worst that survives)


class RankedConfig(Strict):
    """``ranked``: the placement of a given rank in the evaluator's order (a test's policy)."""

    rank: int = Field(0, description="0: the best placement, 1: the next, ...; -1: the worst surviving")


class RankedBundle(NamedTuple):
    rank: int


@njit
def choose_ranked(bundle, board, shape, preview, t, rules, spec, ws):
    found = ws.found[CURRENT]
    vs = ply_scratch(ws, CURRENT)
    ss = spawn_state(t, rules)
    n = placements_into(board, rules, shape, ss, ws.moves, found)
    board_values(board, rules.width, spec, vs.pvals)
    alive = 0
    for k in range(n):
        ok, v = value_child(board, rules, shape, found[k, 2], found[k, 0], found[k, 1], t + 1, spec, vs)
        ws.values[k] = v if ok else -np.inf
        ws.ranks[k] = priority(spec, found[k, 0], found[k, 2], rules.spawn_x, ss)
        if ok:
            alive += 1
    if alive == 0:
        return -1
    order = best_first(ws.values, ws.ranks, n)
    i = bundle.rank if bundle.rank >= 0 else alive + bundle.rank
    return order[min(max(i, 0), alive - 1)]


class Ranked(OnlinePolicy):
    name = "ranked"
    Settings = RankedConfig
    Bundle = RankedBundle
    choose_kernel = choose_ranked

    def new_bundle(self):
        return RankedBundle(self.settings.rank)


@pytest.fixture(scope="module", autouse=True)
def _registered_while_this_module_runs():
    """The policy is registered (as ``@register`` above its class would) while this module's tests
    run, and only then: collecting this file registers nothing, so the tests of other files see the
    project's registry, in whatever order or process (``pytest -n``) they run."""
    register(Ranked)
    yield
    registry.unregister("ranked")


# ------------------------------------------------------------------------------------------------


def games(policy, **kw):
    base = {"policy": policy, "rules": "classic", "pieces": 300, "evaluator": "el_tetris", "seed": 3, "threads": 1,
            "online": {"games": 2}}
    return SolverConfig(**{**base, **kw})


def test_the_policy_is_registered_and_its_section_is_a_key():
    entry = registry.get("ranked")
    assert entry.policy is Ranked and entry.settings is RankedConfig and not entry.known_pieces
    assert "ranked" in registry.names(known_pieces=False)
    assert "ranked" in SolverConfig.model_fields  # the SolverConfig every module imported: the schema of now
    assert SolverConfig(policy="ranked", rules="classic", pieces=5).ranked.rank == 0


def test_configuration_files_name_the_policy_and_its_settings(tmp_path):
    path = tmp_path / "ranked.yaml"
    path.write_text("policy: ranked\nrules: classic\npieces: 50\nranked:\n  rank: 2\n")
    config = load_solver_config(path, ["ranked.rank=-1"])
    assert config.policy == "ranked" and config.ranked.rank == -1
    _, policy = load_online_policy(path)  # the players accept it: it plays unknown pieces
    assert isinstance(policy, Ranked) and policy.bundle == RankedBundle(2)
    path.write_text("policy: ranked\nrules: classic\npieces: 50\nranked:\n  rnak: 2\n")
    with pytest.raises(ConfigError, match="ranked.rnak: unknown key"):
        load_solver_config(path)


def test_rank_zero_plays_as_one_ply_through_solve():
    best = solve(games("ranked", ranked={"rank": 0}))
    one_ply = solve(games("one_ply"))
    assert list(best.games.scores) == list(one_ply.games.scores) and best.score > 0
    assert best.games.ends == ["capped", "capped"]
    assert best.clear_kinds == one_ply.clear_kinds


def test_the_worst_placement_loses_early():
    worst = solve(games("ranked", ranked={"rank": -1}))
    again = solve(games("ranked", ranked={"rank": -1}))
    assert list(worst.games.scores) == list(again.games.scores)  # seeded: reproducible
    g = worst.games
    assert all(end != "capped" for end in g.ends) and max(g.pieces) < 300


def test_a_policy_from_elsewhere_in_the_project_plays_through_a_loop_named_by_its_files_stamp():
    from solver.online import make_policy

    policy = make_policy(games("ranked"))
    loop = game_loop(policy)
    stamp = outside_stamp(policy)
    assert stamp is not None and loop is stamped_loop(stamp, False) and loop.py_func.__name__.endswith(stamp[:24])
    assert loop._cache._cache_path and "solver" in loop._cache._cache_path  # cached on disk, beside games.py's kernels
    assert game_loop(make_policy(games("one_ply"))) is play_chunk_bare  # the kernel packages' own loop


def test_the_loops_stamp_follows_the_policys_files(tmp_path, monkeypatch):
    from solver.online import make_policy

    policy = make_policy(games("ranked"))
    stamp = outside_stamp(policy)
    real = cache.SOURCES.stamp
    here = Path(__file__).resolve()
    monkeypatch.setattr(cache.SOURCES, "stamp", lambda p: "edited" if Path(p) == here else real(p))
    assert outside_stamp(policy) not in (None, stamp)  # this file edited: another loop, never a stale one


def test_a_policy_the_cache_cannot_stamp_plays_through_a_loop_compiled_afresh(monkeypatch):
    from solver.online import make_policy

    policy = make_policy(games("ranked"))
    monkeypatch.setattr(cache, "ROOT", Path("/nonexistent-project"))  # its files outside the project
    assert outside_stamp(policy) is None and game_loop(policy) is play_chunk_fresh
    monkeypatch.undo()
    monkeypatch.setattr(cache, "CACHE_DIR", None)  # no cache folder
    assert game_loop(policy) is play_chunk_fresh
    monkeypatch.undo()
    monkeypatch.setattr(Ranked, "choose_kernel", len)  # a kernel without code of its own: no file to stamp
    assert outside_stamp(policy) is None


def test_the_reference_documents_the_projects_policies_only():
    text = configuration_reference()
    assert "`ranked" not in text and "`mcts.simulations`" in text and "`preview.keep`" in text


def test_a_name_registered_twice_is_refused():
    class Again(OnlinePolicy):
        name = "ranked"
        Settings = RankedConfig
        Bundle = tuple
        choose_kernel = choose_ranked

    with pytest.raises(PolicyError, match=r"policy 'ranked' .*: the name 'ranked' is registered already, by "
                                            r"\S*test_online_registry\.Ranked; a policy's name must be unique"):
        register(Again)
    assert registry.get("ranked").policy is Ranked


def test_a_shared_bundle_or_a_reserved_name_is_refused():
    class Copycat(OnlinePolicy):
        name = "copycat"
        Bundle = OnePlyBundle
        choose_kernel = choose_one_ply

    with pytest.raises(PolicyError, match="its Bundle OnePlyBundle is already the bundle of policy 'one_ply'"):
        register(Copycat)

    class Rules(OnlinePolicy):
        name = "rules"
        Bundle = RankedBundle
        choose_kernel = choose_ranked

    with pytest.raises(PolicyError, match="'rules' is a key of every solver configuration"):
        register(Rules)
    assert "copycat" not in registry.names() and "rules" not in registry.names()


def test_the_schema_is_made_once_per_registration_and_never_changed():
    made = registry.schema()
    assert registry.schema() is made and SolverConfig.model_fields is made.model_fields
    before = SolverConfig(policy="ranked", rules="classic", pieces=5)
    assert type(before) is made and isinstance(before, SolverConfig)
    assert pickle.loads(pickle.dumps(before)) == before  # (a worker's task may carry one)

    class Brief(NamedTuple):
        rank: int

    @register
    class Fleeting(OnlinePolicy):
        name = "fleeting"
        Bundle = Brief
        choose_kernel = choose_ranked

    try:
        now = registry.schema()
        assert now is not made and "fleeting" in get_args(now.model_fields["policy"].annotation)
        assert "fleeting" not in get_args(made.model_fields["policy"].annotation)  # the model made before is as it was
        assert SolverConfig(policy="fleeting", rules="classic", pieces=5).policy == "fleeting"
        assert type(before) is made and isinstance(before, SolverConfig)
    finally:
        registry.unregister("fleeting")
    assert "fleeting" not in get_args(SolverConfig.model_fields["policy"].annotation)


def test_unregistering_removes_the_name_and_the_section():
    class Doomed(NamedTuple):
        rank: int

    @register
    class Transient(OnlinePolicy):
        name = "transient"
        Settings = RankedConfig
        Bundle = Doomed
        choose_kernel = choose_ranked

    assert SolverConfig(policy="transient", rules="classic", pieces=5, transient={"rank": 1}).transient.rank == 1
    registry.unregister("transient")
    with pytest.raises(ValueError, match="transient"):
        SolverConfig(policy="transient", rules="classic", pieces=5)
    assert "transient" not in SolverConfig.model_fields
    with pytest.raises(PolicyError, match="unknown policy 'transient'"):
        registry.get("transient")

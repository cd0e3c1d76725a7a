"""A step in rounds (Simulation._run_rounds, body_stage.BodyContacts.surprised): when a
self-colliding cloth's particle ends a round farther outside the box the broad phase gave it
than its radius (it went where its contacts were not looked for), the step runs again from its
start in twice the rounds, and its group's body contacts are found again before each round.

- A flag in a gusty wind never passes through itself. Before the rounds, this flag's folding
  corner crossed it at frame 18 on both backends (the step's contacts came from each
  particle's predicted motion, and the flag's waves put its corner far from any prediction).
- In a calm, the rounds go back to one, a halving at a time.
- A step in rounds leaves the contacts within a group in them to its rounds: the same bits.
- Both backends take the same rounds and give the same bits; resuming from a checkpoint (and
  from a file's arrays) in the middle of the rounds is bit-identical.
"""

import numpy as np
import pytest

from solver import Builder, Simulation, backend as _backend
from solver.geometry import self_intersections
from solver.state import Checkpoint

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])

GUST = dict(velocity=(7.0, 1.5, 0.0), turbulence=0.8, seed=3)


def _flag(backend=None, nx=20, nz=14, size=(1.2, 0.8), thickness=0.008):
    """A flag of nx x nz vertices, 100 g/m^2, pinned along its edge at x = 0, colliding with
    itself at ``thickness``, in a gusty wind."""
    fw, fh = size
    u, w = np.meshgrid(np.linspace(0.0, fw, nx), np.linspace(-fh / 2, fh / 2, nz))
    x = np.column_stack([u.ravel(), np.zeros(nx * nz), w.ravel() + 2.0])
    idx = np.arange(nx * nz).reshape(nz, nx)
    quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]],
                     -1).reshape(-1, 4)
    b = Builder()
    ids = b.add_cloth(x, quads, mass=0.1 * fw * fh / (nx * nz), radius=thickness,
                      self_collision=True)
    b.pin(ids[u.ravel() == 0.0])
    model = b.build()
    sim = Simulation(model, backend=backend)
    sim.set_wind(**GUST)
    return sim, model.contact_tris


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_flag_in_a_gusty_wind_never_passes_through_itself(backend):
    sim, tris = _flag(backend)
    most_rounds = 1
    for frame in range(24):
        sim.step(1 / 24)
        crossing = self_intersections(sim.x, tris)
        assert len(crossing) == 0, f"frame {frame}: {len(crossing)} edges through the flag"
        most_rounds = max(most_rounds, sim.state.contact_rounds)
    assert sim.reruns > 0 and most_rounds > 1      # the rounds were needed (not only at the end)
    # and it flew: its free edge blown out along the wind, not hanging down
    assert np.ptp(sim.x[:, 0]) > 0.6


def test_in_a_calm_the_rounds_go_back_to_one_halving_at_a_time():
    """A flag calm at 4 rounds may not be calm at 1: the rounds come down a halving at a time
    (ROUNDS_KEPT calm steps each), the flag staying in them until they are one. Leaving them
    at once, the demo's flag strayed again in the next step's first substeps, which ran again
    in 2, 4 and 8 rounds."""
    sim, tris = _flag()
    for _ in range(12):
        sim.step(1 / 24)
    assert sim.state.contact_rounds >= 4 and sim.state.round_groups.any()
    sim.set_wind((0.0, 0.0, 0.0))
    rounds = [sim.state.contact_rounds]
    while sim.state.contact_rounds > 1 and len(rounds) < 240:
        sim.step(1 / 24)
        rounds.append(sim.state.contact_rounds)
        assert len(self_intersections(sim.x, tris)) == 0
        assert sim.state.round_groups.any() == (rounds[-1] > 1)
    assert rounds[-1] == 1 and not sim.state.round_groups.any(), rounds
    assert all(b >= a // 2 for a, b in zip(rounds, rounds[1:])), rounds
    assert rounds[-2] == 2, rounds


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_step_in_rounds_leaves_its_groups_own_contacts_to_the_rounds(backend):
    """The step's first collide leaves out the contacts within a group in rounds (each round
    finds them again, the first from the same positions with the same sides): the same bits
    as finding them, fewer contacts found. A group of two islands keeps them (they join its
    islands, which sleep reads)."""
    runs = []
    for skip in (True, False):
        sim, _ = _flag(backend)
        if not skip:
            sim.bodies.one_island[:] = False
        first = []
        collide = sim.bodies.collide

        def counted(*args, **kw):
            collide(*args, **kw)
            if kw.get("only") is None and kw.get("skip") is not None:      # a step in rounds
                first.append(len(sim.contacts.body_idx))
        sim.bodies.collide = counted
        for _ in range(16):
            sim.step(1 / 24)
        runs.append((np.array(sim.x), sim.reruns, first))
    (xa, na, fa), (xb, nb, fb) = runs
    assert na == nb and len(fa) == len(fb) and len(fa) > 0
    assert sum(fa) < 0.5 * sum(fb), (sum(fa), sum(fb))
    assert np.array_equal(xa, xb), f"largest difference {np.abs(xa - xb).max():.3e} m"
    # two flags as one cloth: one group, two islands
    b = Builder()
    quads = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    x = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0.0]])
    b.add_cloth(np.r_[x, x + [0, 0, 0.5]], quads, radius=0.01, self_collision=True)
    b.add_cloth(x + [3, 0, 0], quads[:1], radius=0.01, self_collision=True)
    one = Simulation(b.build(), backend=backend).bodies.one_island
    assert one.tolist() == [False, True]


def test_resume_in_rounds_is_bit_identical():
    sim, _ = _flag()
    for _ in range(14):
        sim.step(1 / 24)
    assert sim.state.contact_rounds > 1
    saved = sim.get_state()
    arrays = saved.to_arrays()
    for _ in range(6):
        sim.step(1 / 24)
    first = sim.x.copy()
    sim.set_state(saved)
    for _ in range(6):
        sim.step(1 / 24)
    assert np.array_equal(sim.x, first)
    other, _ = _flag()
    other.set_state(Checkpoint.from_arrays(arrays))
    assert other.state.contact_rounds == saved.state.contact_rounds
    for _ in range(6):
        other.step(1 / 24)
    assert np.array_equal(other.x, first)


@pytest.mark.skipif(len(BACKENDS) < 2, reason="the compiled kernels did not load")
def test_both_backends_take_the_same_rounds_to_the_bit():
    runs = []
    for name in BACKENDS:
        sim, _ = _flag(name)
        rounds = []
        for _ in range(16):
            sim.step(1 / 24)
            rounds.append(sim.state.contact_rounds)
        runs.append((np.array(sim.x), rounds, sim.reruns))
    (xa, ra, na), (xb, rb, nb) = runs
    assert max(ra) > 1 and na > 0
    assert ra == rb and na == nb
    assert np.array_equal(xa, xb), f"largest difference {np.abs(xa - xb).max():.3e} m"


def test_a_particle_outside_its_box_by_more_than_its_tolerance_is_a_surprise():
    """body_stage.surprised: the ratio of the distance outside the box to the tolerance (the
    particle's radius), and the groups of the particles beyond ``clean`` of it."""
    sim, _ = _flag(nx=6, nz=4)
    sim.step(1 / 24)
    bodies = sim.bodies
    x = sim.x.copy()
    assert bodies.surprised(x, 0.5)[0] <= 1.0
    lo, hi = bodies._box
    i = len(bodies.watched) // 2
    x[bodies.watched[i]] = hi[i] + [0.0, 0.0, 1.5 * 0.008]      # 1.5 radii above its box
    ratio, strays = bodies.surprised(x, 0.5)
    assert ratio == pytest.approx(1.5)
    assert strays[sim.model.particle_group[bodies.watched[i]]]
    x[bodies.watched[i]] = hi[i] + [0.0, 0.0, 0.4 * 0.008]      # within its tolerance
    ratio, strays = bodies.surprised(x, 0.5)
    assert ratio == pytest.approx(0.4) and not strays.any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pair_found_again_in_a_round_keeps_its_side(backend):
    """Contacts.set_round_contacts: a contact found again in a round keeps the side (and an
    edge pair the normal) it was found with, whatever the positions say now: layers pressed
    within the contact distance may hold a vertex a hair past the face's plane, and its side
    read anew would push it through (a Z-folded N = 128 cloth crossed itself in 6 edges at
    its landing so, 0 with the sides kept). A contact found for the first time takes the side
    it was found with; contacts without a fast particle stay as they were."""
    from solver.collision.bodies import EDGES, VERTEX_TRI
    from solver.collision.contacts import Contacts
    from solver.kernels import table
    c = Contacts(8, 0, 0, kernels=table(backend))
    idx = np.array([[0, 1, 2, 3], [4, 5, 6, 7], [1, 2, 5, 6]])
    kind = np.array([VERTEX_TRI, VERTEX_TRI, EDGES])
    c.set_body_contacts(idx, kind, np.array([1.0, 1.0, -1.0]), np.full(3, 0.01),
                        np.zeros(3), np.array([[0, 0, 0], [0, 0, 0], [0, 0, 1.0]]))
    fast = np.array([True, True, True, True, False, False, False, False])
    # found again: the first (now read as side -1) and the edge pair (its normal flipped);
    # new: vertex 0 against another triangle; the second contact has no fast particle
    again = np.array([[0, 1, 2, 3], [1, 2, 5, 6], [0, 4, 5, 6]])
    c.set_round_contacts(fast, again, np.array([VERTEX_TRI, EDGES, VERTEX_TRI]),
                         np.array([-1.0, 1.0, -1.0]), np.full(3, 0.02), np.zeros(3),
                         np.array([[0, 0, 0], [0, 0, -1.0], [0, 0, 0]]))
    s_idx, s_kind, s_side, s_dist, _, s_jit = c.solved
    rows = {tuple(r): k for k, r in enumerate(s_idx)}
    assert set(rows) == {(0, 1, 2, 3), (4, 5, 6, 7), (1, 2, 5, 6), (0, 4, 5, 6)}
    assert s_side[rows[(0, 1, 2, 3)]] == 1.0 and s_dist[rows[(0, 1, 2, 3)]] == 0.02
    assert s_side[rows[(1, 2, 5, 6)]] == -1.0
    assert np.array_equal(s_jit[rows[(1, 2, 5, 6)]], [0, 0, 1.0])
    assert s_side[rows[(0, 4, 5, 6)]] == -1.0                   # new: as found
    assert s_side[rows[(4, 5, 6, 7)]] == 1.0 and s_dist[rows[(4, 5, 6, 7)]] == 0.01


@pytest.mark.parametrize("top", [5_000, 40_000])
def test_a_contact_is_known_again_by_its_particles_and_kind(top):
    """contacts._identities: two contacts get the same value exactly when they have the same
    particles (corner by corner) and kind, packed in one int64 for ids below 2^15 - 1 and as
    the rows' bytes beyond; two lists are compared in the same form."""
    from solver.collision.contacts import _identities
    rng = np.random.default_rng(top)
    idx = rng.integers(-1, top, (4000, 4))
    idx[::7, 2:] = -1                                 # particle pairs: two corners
    idx[1::5, 3] = idx[1::5, 2]                       # rows that differ in one corner only
    kind = rng.integers(0, 4, 4000)
    other = np.r_[idx[:2000], idx[:1000] + 1]
    other_kind = np.r_[kind[:2000], kind[:1000]]
    other_kind[:500] = (other_kind[:500] + 1) % 4     # same particles, another kind
    a, b = _identities((idx, kind), (other, other_kind))
    rows = {tuple(r) + (k,) for r, k in zip(idx.tolist(), kind.tolist())}
    same = np.array([tuple(r) + (k,) in rows for r, k in zip(other.tolist(),
                                                             other_kind.tolist())])
    assert np.array_equal(np.isin(b, a), same) and 1000 < same.sum() < 3000
    assert len(np.unique(a)) == len(rows)
    # every row of ids either side of the powers of two a narrower packing would confuse
    ids = np.array(sorted({-1, 0, 1, top - 1} | {v for k in (12, 13, 14, 15)
                                                 for v in (2 ** k - 2, 2 ** k - 1, 2 ** k)
                                                 if v < top}))
    grid = np.stack(np.meshgrid(*[ids] * 4, indexing="ij"), -1).reshape(-1, 4)
    every = np.repeat(grid, 4, axis=0)
    (keys,) = _identities((every, np.tile(np.arange(4), len(grid))))
    assert len(np.unique(keys)) == len(every)


@pytest.mark.skipif("numba" not in BACKENDS, reason="the compiled kernels are not available")
def test_the_compiled_merge_of_a_rounds_contacts_is_the_numpy_merge():
    """kernels/compiled_order.merge_round gives contacts.merge_round's arrays, to the bit, on
    random lists where about half the round's contacts were in the list before (a hash table
    of identities there, a sort of packed identities here)."""
    from solver.kernels import table
    rng = np.random.default_rng(11)
    n = 500

    def contacts(k):
        idx = rng.integers(0, n, (k, 4))
        idx[::3, 2:] = -1
        return [idx, rng.integers(0, 4, k), rng.choice([-1.0, 0.0, 1.0], k),
                rng.random(k), rng.random(k), rng.normal(size=(k, 3))]

    base = contacts(900)
    base[0] = np.unique(base[0], axis=0)[:800]       # no contact twice in a list
    base = [np.ascontiguousarray(a[:800]) for a in base]
    old = [a[::2].copy() for a in base]
    found = contacts(600)
    found[0][:300], found[1][:300] = old[0][:300], old[1][:300]   # found again
    found[1][300:] = (found[1][300:] + 1) % 4
    fast = rng.random(n) < 0.4
    stay = rng.random(800) < 0.5
    ours = table("numba").merge_round(tuple(base), stay, fast, tuple(found), tuple(old))
    theirs = table("numpy").merge_round(tuple(base), stay, fast, tuple(found), tuple(old))
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)
    kept = np.any((found[0] >= 0) & fast[np.maximum(found[0], 0)], axis=1)
    assert len(ours[0]) == stay.sum() + kept.sum() and kept[:300].sum() > 100
    # those found again took old's side: some differ from what the round found
    assert not np.array_equal(ours[2][stay.sum():], found[2][kept])


def test_the_contacts_a_round_keeps_keep_the_sides_its_substeps_gave_them():
    """Of a step in rounds, the contacts of the groups not in them stay the step's, and keep
    from round to round the sides the substeps gave them (a vertex beside its face takes the
    side it is on, collision/bodies.py), not the sides the step's collide read."""
    from solver.collision.bodies import VERTEX_TRI
    from solver.collision.contacts import Contacts
    c = Contacts(8, 0, 0)
    idx = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    kind = np.full(2, VERTEX_TRI)
    c.set_body_contacts(idx, kind, np.array([1.0, 1.0]), np.full(2, 0.01), np.zeros(2),
                        np.zeros((2, 3)))
    fast = np.arange(8) >= 4                       # particles 4 to 7: a group in rounds
    found = (idx[1:], kind[1:], np.array([1.0]), np.full(1, 0.01), np.zeros(1), np.zeros((1, 3)))
    c.set_round_contacts(fast, *found)             # round 0
    assert c.solved[0].tolist() == idx.tolist()
    c.solved[2][:] = -1.0                          # what round 0's substeps left
    c.set_round_contacts(fast, *found)             # round 1
    assert c.solved[2].tolist() == [-1.0, -1.0]    # the one that stays, and the one found again
    c.set_body_contacts(idx, kind, np.array([1.0, 1.0]), np.full(2, 0.01), np.zeros(2),
                        np.zeros((2, 3)))          # the next step (or a step run again)
    c.set_round_contacts(fast, *found)
    assert c.solved[2].tolist() == [1.0, 1.0]

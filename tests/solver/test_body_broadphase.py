"""The collide stage's active-item filter between bodies (solver/collision/body_stage.py
BodyContacts._group_pairs, _active): group boxes paired by sweep and prune, disabled pairs (a
joint's two bodies) and particles without a radius (a ragdoll's frame particles) left out.

The filter only saves work: the contacts must be exactly those found with every item taking
part. Each test fails when the filter drops a pair that can touch (a contact goes missing) or
the sweep misses an overlapping pair of groups.
"""

import os
import sys

import numpy as np
import pytest

from solver import Builder, Simulation, backend as _backend
from solver.collision import body_stage
from solver.collision.bodies import SEGMENTS
from solver.kernels import table

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import ragdolls  # noqa: E402

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def _contacts(sim):
    c = sim.contacts
    return (c.body_idx.copy(), c.body_kind.copy(), c.body_side.copy(), c.body_dist.copy())


def test_group_pairs_match_all_pairs():
    rng = np.random.default_rng(3)
    b = Builder()
    for k in range(40):
        b.add_capsule_body(rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3) + 0.05, 0.05)
    stage = body_stage.BodyContacts(b.build(), table("numpy"))
    lo = rng.uniform(0, 4, (40, 3))
    hi = lo + rng.uniform(0, 1.5, (40, 3))
    a, c = stage._group_pairs(lo, hi)
    got = set(zip(a.tolist(), c.tolist()))
    want = {(i, j) for i in range(40) for j in range(i + 1, 40)
            if np.all(lo[i] <= hi[j]) and np.all(hi[i] >= lo[j])}
    assert got == want and len(want) > 20


@pytest.mark.parametrize("m", [0, 1, 2, 40, 600])
def test_sweep_pairs_are_the_overlapping_boxes_on_both_backends(m):
    """Both tables' sweep_pairs give every overlapping pair (against all pairs), in the same
    order, and give up alike past the limit."""
    rng = np.random.default_rng(m)
    lo = rng.uniform(0, 3, (m, 3)).round(1)          # rounded: equal ends meet
    hi = lo + rng.uniform(0, 1.2, (m, 3)).round(1)
    want = {(i, j) for i in range(m) for j in range(i + 1, m)
            if np.all(lo[i] <= hi[j]) and np.all(hi[i] >= lo[j])}
    got = []
    for name in BACKENDS:
        a, b, ok = table(name).sweep_pairs(lo, hi, 10 ** 9)
        assert ok and set(zip(a.tolist(), b.tolist())) == want and np.all(a < b)
        got.append((a, b))
        a, b, ok = table(name).sweep_pairs(lo, hi, len(want) - 1)   # fewer than it needs
        assert len(a) == len(b) == 0 and ok == (m < 2)
    assert all(np.array_equal(g[0], got[0][0]) and np.array_equal(g[1], got[0][1]) for g in got)
    assert m < 40 or len(want) > m


def test_a_joint_disables_its_pair_of_groups():
    b = Builder()
    _, p = b.add_capsule_body((0, 0, 1), (0, 0, 1.3), 0.05)
    _, q = b.add_capsule_body((0, 0, 1.3), (0, 0, 1.6), 0.05)
    _, r = b.add_capsule_body((0.02, 0, 1.2), (0.02, 0.3, 1.2), 0.05)
    b.add_joint(p, q, (0, 0, 1.3))
    stage = body_stage.BodyContacts(b.build(), table("numpy"))
    lo = np.zeros((3, 3))
    hi = np.ones((3, 3))
    a, c = stage._group_pairs(lo, hi)
    assert set(zip(a.tolist(), c.tolist())) == {(0, 2), (1, 2)}


def test_ragdoll_contacts_equal_those_with_every_item_taking_part(backend, monkeypatch):
    """Five ragdolls down the stairs: every step's body contacts with the filter equal those
    found when every item takes part, and the filter leaves most particles out."""
    def run(filtered):
        if not filtered:
            monkeypatch.setattr(body_stage.BodyContacts, "_group_pairs", lambda self, lo, hi: None)
        model = ragdolls.build(5).build()
        sim = Simulation(model, substeps=10, backend=backend)
        sim.set_velocities(np.arange(model.particle_count),
                           np.tile([1.0, 0.0, 0.0], (model.particle_count, 1)))
        out, counts = [], []
        real = sim.bodies._active
        def spy(*args):
            act = real(*args)
            counts.append(int(act[0].sum()))
            return act
        sim.bodies._active = spy
        for _ in range(12):
            sim.step(1 / 24)
            out.append(_contacts(sim))
        monkeypatch.undo()
        return out, counts, np.array(sim.x), model.particle_count
    fast, n_fast, x_fast, n = run(True)
    full, n_full, x_full, _ = run(False)
    assert sum(len(c[0]) for c in fast) > 100          # the ragdolls touch each other
    assert all((c[1] == SEGMENTS).any() for c in fast[4:])     # bone against bone, as axes
    for a, b in zip(fast, full):
        for u, v in zip(a, b):
            assert np.array_equal(u, v)
    assert np.array_equal(x_fast, x_full)
    # a ragdoll's frame particles (radius 0, 4 of 11 per bone) are left out; with every item
    # taking part the spheres are hashed, but no two capsules' spheres pair; filtered, a
    # capsule's spheres take part only near a body that is not a capsule (here none)
    assert max(n_full) <= np.count_nonzero(ragdolls.build(5).build().particle_radius > 0) < n
    assert max(n_fast) == 0


def _grid(n, z, size=1.0):
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    x = np.column_stack([i.ravel() * size / (n - 1), j.ravel() * size / (n - 1),
                         np.full(n * n, z)])
    q = (i[:-1, :-1] * n + j[:-1, :-1]).ravel()
    faces = np.concatenate([np.column_stack([q, q + n, q + 1]),
                            np.column_stack([q + 1, q + n, q + n + 1])])
    return x, faces


@pytest.mark.parametrize("second, self_collision, never", [
    (None, False, True),          # a lone cloth: nothing it could touch
    (None, True, False),          # a lone cloth that collides with itself
    ("cloth", False, False),      # two cloths: one's vertices against the other's faces
    ("points", False, False),     # a cloth and loose particles without radii: against its faces
])
def test_the_stage_is_skipped_only_when_nothing_can_touch(second, self_collision, never,
                                                          monkeypatch):
    """BodyContacts.never: the stage is skipped for a scene where no two items could ever meet,
    and the run is then the same, bit for bit, as one that runs the stage."""
    def build():
        b = Builder()
        x, faces = _grid(8, 1.0)
        b.add_cloth(x, faces, radius=0.01, self_collision=self_collision)
        if second == "cloth":
            x2, f2 = _grid(8, 0.5)
            b.add_cloth(x2 + (0.2, 0.2, 0.0), f2, radius=0.01)
        elif second == "points":
            b.add_particles(np.array([[0.5, 0.5, 1.3], [0.3, 0.6, 1.4]]), mass=0.002)
        b.add_collider("plane")
        return b.build()

    def run(forced):
        sim = Simulation(build(), substeps=8)
        assert sim.bodies.never is never
        if forced:
            sim.bodies.never = False
        for _ in range(20):
            sim.step(1 / 24)
        return np.array(sim.x)

    x = run(False)
    if never:
        assert np.array_equal(x, run(True))
    elif second == "points":
        # they landed on the cloth (its vertices rest 1 cm up, its faces 1 cm thick), not
        # through it on the ground
        assert x[-2:, 2].min() > 0.012

"""The collide stage's broad phase against primitives (collision/colliders.primitive_candidates
and its compiled mirror): particle i is a candidate of collider k exactly when its distance to
k is below its reach plus k's sweep and thickness.

The distances here are analytic (a sphere's |x - c| - r, a plane's height, a rotated box's
distance from its half extents, a capsule's distance to its segment), written independently
of solver/collision/sdf.py, so a kernel that measured the wrong distance, dropped the reach or
the extra margin, or wrote a row it was not asked for fails on both backends.
"""

import numpy as np
import pytest

from solver import backend as _backend
from solver.collision import frames, sdf
from solver.kernels import table

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])


def _rot_z(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _rot_x(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


# (shape, dims, rotation, translation, extra [m], analytic distance of world points (m, 3))
SPHERE_C = np.array([0.2, -0.1, 0.3])
BOX_R, BOX_T, BOX_H = _rot_z(0.5), np.array([1.5, 0.2, 0.0]), np.array([0.3, 0.2, 0.1])
PLANE_T = np.array([0.0, 0.0, -0.8])
CAP_R, CAP_T = _rot_x(0.7), np.array([-1.2, 0.4, 0.1])


def _box_distance(x):
    q = np.abs((x - BOX_T) @ BOX_R) - BOX_H
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=1)
    return outside + np.minimum(q.max(axis=1), 0.0)


def _capsule_distance(x):
    q = (x - CAP_T) @ CAP_R
    seg = 0.5 * 0.9 - 0.15                       # half the depth, less the radius: the segment
    z = np.clip(q[:, 2], -seg, seg)
    return np.linalg.norm(q - np.column_stack([0 * z, 0 * z, z]), axis=1) - 0.15


COLLIDERS = [
    (frames.SPHERE, (0.4, 0.0, 0.0), np.eye(3), SPHERE_C, 0.05,
     lambda x: np.linalg.norm(x - SPHERE_C, axis=1) - 0.4),
    (frames.BOX, tuple(2 * BOX_H), BOX_R, BOX_T, 0.1, _box_distance),
    (frames.PLANE, (0.0, 0.0, 0.0), np.eye(3), PLANE_T, 0.0, lambda x: x[:, 2] - PLANE_T[2]),
    (frames.CAPSULE, (0.15, 0.9, 0.0), CAP_R, CAP_T, 0.02, _capsule_distance),
]


def _arrays(take):
    C = len(COLLIDERS)
    shape = np.array([c[0] for c in COLLIDERS], np.int64)
    approximate, abc = np.zeros(C, bool), np.zeros((C, 3))
    R, t, s = np.zeros((C, 3, 3)), np.zeros((C, 3)), np.ones((C, 3))
    extra = np.array([c[4] for c in COLLIDERS])
    for k, (code, dims, rot, tr, _, _) in enumerate(COLLIDERS):
        approximate[k], abc[k] = sdf.placement(code, np.array(dims, float), s[k])
        R[k], t[k] = rot, tr
    return shape, approximate, abc, R, t, s, np.asarray(take, bool), extra


# 4000 runs on the calling thread, 10000 in parallel (compiled_candidates.SERIAL_BELOW)
@pytest.mark.parametrize("count", [4000, 10000])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_particle_is_a_candidate_when_its_reach_covers_the_distance(backend, count):
    rng = np.random.default_rng(11)
    x = rng.uniform((-2.0, -1.0, -1.2), (2.2, 1.2, 1.2), (count, 3))
    reach = rng.uniform(0.0, 0.3, len(x))
    take = [True, True, True, True]
    args = _arrays(take)
    out = np.zeros((len(COLLIDERS), len(x)), bool)
    X = np.ascontiguousarray(x.T)
    table(backend).primitive_candidates(*args[:7], X, reach, args[7], out)
    for k, (_, _, _, _, extra, distance) in enumerate(COLLIDERS):
        gap = distance(x) - (reach + extra)
        clear = np.abs(gap) > 1e-9                # not on the margin itself, within rounding
        assert np.array_equal(out[k][clear], (gap < 0)[clear]), k
        # both answers occur, and the reach matters: without it some would not be candidates
        assert 0 < out[k].sum() < len(x)
        assert np.any(out[k] & (distance(x) >= extra))


@pytest.mark.parametrize("backend", BACKENDS)
def test_only_the_colliders_asked_for_are_written(backend):
    x = np.array([[0.2, -0.1, 0.3], [5.0, 5.0, 5.0]])        # in the sphere, 1.1 m above the
    #                                                          plane; far from all
    out = np.ones((len(COLLIDERS), 2), bool)
    args = _arrays([True, False, True, False])
    table(backend).primitive_candidates(*args[:7], np.ascontiguousarray(x.T), np.zeros(2), args[7],
                                        out)
    assert out[:, 0].tolist() == [True, True, False, True]  # rows 1, 3 untouched (were True)
    assert out[:, 1].tolist() == [False, True, False, True]


@pytest.mark.skipif(_backend.numba_kernels() is None, reason="compiled kernels only")
def test_candidate_clearance_is_the_distance_to_a_static_primitive_only():
    """The compiled loop's clearance per candidate pair (kernels/compiled_candidates.py): for a
    static sphere, |x - c| - r - thickness - particle radius - CLEAR_MARGIN at the step's start,
    checked against the analytic distance; -inf for a collider that moves during the step (its
    SDF changes, so no bound holds) and for a mesh. A clearance too large would let the loop skip
    a pair that touches; one that is always -inf would skip nothing."""
    from types import SimpleNamespace

    from solver import Builder, Simulation
    from solver.kernels import compiled_candidates as cc

    b = Builder()
    heights = np.array([0.52, 0.8, 1.5, 2.5])
    ids = b.add_particles(np.column_stack([np.zeros(4), np.zeros(4), heights]), radius=0.01)
    b.add_collider("sphere", radius=0.5, thickness=0.02)
    start = np.eye(4)
    start[:3, 3] = (1.2, 0.0, 0.1)
    b.add_collider("sphere", matrix=start, radius=0.3)
    b.add_collider("mesh", matrix=np.eye(4), vertices=[[-1, -1, 0], [-3, -1, 0], [-2, 1, 0],
                                                       [-2, 0, 1.5]],
                   triangles=[[0, 1, 2], [0, 3, 1], [1, 3, 2], [2, 3, 0]])
    sim = Simulation(b.build(), backend="numba", sleep=False)
    # falling fast, every particle is a candidate of every collider within 2.5 m of it
    sim.set_velocities(ids, np.tile([0.0, 0.0, -30.0], (4, 1)))
    moved = start.copy()
    moved[:3, 3] = (1.3, 0.0, 0.1)
    sim.set_collider_matrix(1, moved)                     # the second sphere moves this step
    seen = {}
    real = sim.kernels

    def run_substeps(*args):
        seen["X0"] = args[0][0].copy()
        seen["colliders"] = args[9]
        return real.run_substeps(*args)
    sim.kernels = SimpleNamespace(**{k: getattr(real, k) for k in vars(real)})
    sim.kernels.run_substeps = run_substeps
    sim.step(1 / 24)
    c = seen["colliders"]
    (shape, thickness, radius, by_particle, start, pair_collider, approximate, abc, R, t, s,
     moving, mesh) = (c[0], c[1], c[7], c[10], c[11], c[12], c[13], c[14], c[15], c[16], c[17],
                      c[21], c[22])
    clear = np.full(len(pair_collider), np.nan)
    cc.candidate_clearance(seen["X0"], by_particle, start, pair_collider, shape, approximate,
                           abc, thickness, radius, R, t, s, moving, mesh, clear)
    owner = np.repeat(by_particle, np.diff(start))
    assert set(pair_collider.tolist()) == {0, 1, 2}
    for r, (i, k) in enumerate(zip(owner, pair_collider)):
        if k == 0:
            want = np.linalg.norm(seen["X0"][:, i]) - 0.5 - 0.02 - 0.01 - cc.CLEAR_MARGIN
            assert clear[r] == pytest.approx(want, abs=1e-12)
        else:
            assert clear[r] == -np.inf
    assert np.sum(pair_collider == 0) == 4 and np.max(clear) > 1.0


@pytest.mark.skipif(_backend.numba_kernels() is None, reason="compiled kernels only")
def test_a_particle_is_passed_over_only_while_every_pair_of_it_is_clear():
    """compiled_candidates.least_clearance, what project_colliders tests a particle by before
    its pairs: each candidate's least clearance over its pairs, squared, and its index among
    the candidates. A pair that is never clear (a clearance of 0, -inf or NaN: a mesh, a
    moving or degenerate collider) keeps its particle tested (-1); a particle that is no
    candidate has no index. Were the least not the least, the particle would be passed over
    while one of its pairs could touch."""
    from solver.kernels import compiled_candidates as cc

    particles = np.array([1, 3, 4, 6])
    start = np.array([0, 2, 3, 5, 7])
    clear = np.array([0.5, 0.2,            # particle 1: two colliders, the nearer 0.2 m clear
                      0.3,                 # particle 3: one
                      0.4, -np.inf,        # particle 4: one collider gives no bound
                      np.nan, 0.1])        # particle 6: a NaN clearance counts as none
    least2 = np.full(8, 7.0)
    slot = np.full(8, 9, np.int64)
    cc.least_clearance(particles, start, clear, least2, slot)
    assert slot.tolist() == [-1, 0, -1, 1, 2, -1, 3, -1]
    assert least2[[1, 3]] == pytest.approx([0.04, 0.09], abs=1e-15)
    assert least2[[4, 6]].tolist() == [-1.0, -1.0]
    assert least2[[0, 2, 5, 7]].tolist() == [7.0] * 4     # no candidate: not written

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


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_particle_is_a_candidate_when_its_reach_covers_the_distance(backend):
    rng = np.random.default_rng(11)
    x = rng.uniform((-2.0, -1.0, -1.2), (2.2, 1.2, 1.2), (4000, 3))
    reach = rng.uniform(0.0, 0.3, len(x))
    take = [True, True, True, True]
    args = _arrays(take)
    out = np.zeros((len(COLLIDERS), len(x)), bool)
    table(backend).primitive_candidates(*args[:7], x, reach, args[7], out)
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
    table(backend).primitive_candidates(*args[:7], x, np.zeros(2), args[7], out)
    assert out[:, 0].tolist() == [True, True, False, True]  # rows 1, 3 untouched (were True)
    assert out[:, 1].tolist() == [False, True, False, True]

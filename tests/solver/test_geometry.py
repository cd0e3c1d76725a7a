"""The mesh measures shared by the Builder and the Blender side (solver/geometry.py), checked
against geometry worked out by hand."""

import math

import numpy as np
import pytest

from solver.geometry import (closed_edges, fan_triangles, polygon_areas, rigid_transform,
                             segment_distances,
                             signed_volume, strand_areas, strand_supports)
from solver.mesh import normalize_faces

CUBE_X = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                   [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], float)
CUBE_QUADS = np.array([[0, 3, 2, 1], [4, 5, 6, 7], [0, 1, 5, 4], [1, 2, 6, 5], [2, 3, 7, 6],
                       [3, 0, 4, 7]])


def test_polygon_areas_of_mixed_polygons():
    """A unit square, a right triangle with legs 2 and 3, and a regular hexagon of side 1
    (3 sqrt(3) / 2), in one mesh, in a tilted plane (areas do not depend on orientation)."""
    hexagon = [[math.cos(a), math.sin(a), 0.0] for a in np.arange(6) * math.pi / 3]
    x = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 0], [2, 0, 0], [0, 3, 0]]
                 + hexagon, float)
    tilt = np.array([[1, 0, 0], [0, math.cos(0.7), -math.sin(0.7)], [0, math.sin(0.7), math.cos(0.7)]])
    faces = [[0, 1, 2, 3], [4, 5, 6], list(range(7, 13))]
    areas = polygon_areas(x @ tilt.T + 5.0, *normalize_faces(faces, len(x)))
    assert areas == pytest.approx([1.0, 3.0, 3 * math.sqrt(3) / 2], rel=1e-12)


def test_cube_volume_closed_and_open():
    corners, start, size = normalize_faces(CUBE_QUADS, 8)
    tris = fan_triangles(corners, start, size)
    assert tris.shape == (12, 3)
    assert signed_volume(CUBE_X * [2.0, 3.0, 0.5], tris) == pytest.approx(3.0, rel=1e-12)
    assert signed_volume(CUBE_X, tris[:, ::-1]) == pytest.approx(-1.0, rel=1e-12)
    assert closed_edges(corners, start, size)
    assert not closed_edges(*normalize_faces(CUBE_QUADS[:5], 8))      # lid off


def test_rigid_transform_recovers_a_rotation_and_translation():
    rng = np.random.default_rng(3)
    rest = rng.normal(size=(20, 3))
    axis = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    rot = np.eye(3) + math.sin(2.0) * k + (1 - math.cos(2.0)) * k @ k
    current = rest @ rot.T + [0.3, -4.0, 2.0]
    m = rigid_transform(rest, current)
    assert np.allclose(m[:3, :3], rot, atol=1e-12)
    assert np.allclose(m[:3, 3], [0.3, -4.0, 2.0], atol=1e-12)
    mirrored = rest * [1.0, 1.0, -1.0]              # no rotation does this: still a rotation
    assert np.linalg.det(rigid_transform(rest, mirrored)[:3, :3]) == pytest.approx(1.0)


def test_strand_supports_of_a_forked_branch():
    """A trunk 0-1-2 forking at 2 into 3 and 4: the supports span every two edges meeting at a
    vertex: (0, 2) at 1; at 2 the pairs of {1, 3, 4}."""
    edges = np.array([[0, 1], [1, 2], [2, 3], [2, 4]])
    assert strand_supports(edges).tolist() == [[0, 2], [1, 3], [1, 4], [3, 4]]
    assert strand_supports(np.zeros((0, 2), int)).shape == (0, 2)
    assert strand_supports(np.array([[0, 1]])).shape == (0, 2)


def test_strand_areas_are_half_of_each_incident_edge_times_width():
    x = np.array([[0, 0, 0], [0, 0, 1.0], [0, 0, 3.0]])
    a = strand_areas(x, np.array([[0, 1], [1, 2]]), 0.01)
    assert a == pytest.approx([0.005, 0.015, 0.01])


def test_segment_distances_against_brute_force_sampling():
    """Closest distance between random segments (and degenerate ones) against a dense sampling
    of both: never above the sampled minimum, and within the sampling's resolution of it."""
    rng = np.random.default_rng(3)
    a0, a1, b0, b1 = (rng.normal(size=(200, 3)) for _ in range(4))
    a1[:10] = a0[:10]                      # points against segments
    b1[5:15] = b0[5:15]                    # and points against points
    b1[20:30] = b0[20:30] + (a1[20:30] - a0[20:30]) * 0.7      # parallel segments
    d = segment_distances(a0, a1, b0, b1)
    s = np.linspace(0.0, 1.0, 401)
    p = a0[:, None, :] + (a1 - a0)[:, None, :] * s[None, :, None]
    q = b0[:, None, :] + (b1 - b0)[:, None, :] * s[None, :, None]
    brute = np.linalg.norm(p[:, :, None, :] - q[:, None, :, :], axis=-1).min(axis=(1, 2))
    assert np.all(d <= brute + 1e-12)
    assert np.all(brute - d < 0.02)
    assert segment_distances(np.zeros((1, 3)), np.array([[1.0, 0, 0]]),
                             np.array([[0.5, -1, 1.0]]), np.array([[0.5, 1, 1.0]]))[0] \
        == pytest.approx(1.0)

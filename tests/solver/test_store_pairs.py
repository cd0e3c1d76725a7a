"""The kept pairs become the body contacts' arrays (the kernel table's store_pairs,
collision/pairs.py, and its compiled mirror in kernels/compiled_pairs.py): in the order
particle pairs, vertex-triangle, edge-edge, capsule pairs, each with its corners, kind, side,
contact distance (the sum of its two sides' radii or thicknesses) and friction (the geometric
mean of its two sides', a face's, an edge's or an axis's side the mean of its corners'), an
edge pair with its normal. By hand on a few pairs, both backends; the compiled one gives the
NumPy one's bits on random pairs."""

import numpy as np
import pytest

from solver import backend as _backend
from solver.kernels import table

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])


def _few():
    radius = np.array([0.01, 0.02, 0.03, 0.04, 0.005, 0.006, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    mu = np.array([0.2, 0.3, 0.8, 0.3, 0.3, 0.5, 0.3, 0.3, 0.3, 0.1, 0.0, 0.4])
    tris = np.array([[6, 7, 8], [9, 10, 11]], np.int64)
    tri_thick = np.array([0.001, 0.002])
    edges = np.array([[0, 1], [2, 3], [9, 11]], np.int64)
    edge_thick = np.array([0.003, 0.004, 0.005])
    segments = np.array([[0, 2], [1, 3]], np.int64)
    seg_radius = np.array([0.05, 0.06])
    i64 = lambda *v: np.array(v, np.int64)          # noqa: E731
    pairs = dict(
        pi=i64(0, 1), pj=i64(2, 3), tv=i64(4, 5), tt=i64(0, 0), ea=i64(0, 1), eb=i64(1, 2),
        near=np.array([True, False]), t_keep=np.array([True, True]),
        t_side=np.array([-1.0, 1.0]), e_keep=np.array([False, True]),
        e_side=np.array([1.0, -1.0]), e_normal=np.array([[1.0, 0, 0], [0, 0.6, 0.8]]),
        sa=i64(0), sb=i64(1))
    return pairs, (tris, edges, segments, radius, tri_thick, edge_thick, seg_radius, mu)


def _store(backend, pairs, model):
    p = pairs
    return table(backend).store_pairs(p["pi"], p["pj"], p["tv"], p["tt"], p["ea"], p["eb"],
                                      p["near"], p["t_keep"], p["t_side"], p["e_keep"],
                                      p["e_side"], p["e_normal"], p["sa"], p["sb"], *model)


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_kept_pair_becomes_a_contact_with_its_distance_side_and_friction(backend):
    pairs, model = _few()
    idx, kind, side, dist, mu, jit = _store(backend, pairs, model)
    assert idx.tolist() == [[0, 2, -1, -1], [4, 6, 7, 8], [5, 6, 7, 8], [2, 3, 9, 11],
                            [0, 2, 1, 3]]
    assert kind.tolist() == [0, 1, 1, 2, 3]          # PAIR, VERTEX_TRI x 2, EDGES, SEGMENTS
    assert side.tolist() == [0.0, -1.0, 1.0, -1.0, 0.0]
    assert dist == pytest.approx([0.04, 0.006, 0.007, 0.009, 0.11], abs=1e-15)
    # sqrt(0.2 x 0.8); a vertex of 0.3 on a face of 0.3: 0.3 to the bit; 0.5 on that face:
    # sqrt(0.5 x 0.3); edges (0.8 + 0.3) / 2 and (0.1 + 0.4) / 2; axes (0.2 + 0.8) / 2 and
    # (0.3 + 0.3) / 2
    assert mu[0] == pytest.approx(0.4, abs=1e-15)
    assert mu[1] == 0.3
    assert mu[2] == pytest.approx(np.sqrt(0.15), abs=1e-15)
    assert mu[3] == pytest.approx(np.sqrt(0.55 * 0.25), abs=1e-15)
    assert mu[4] == pytest.approx(np.sqrt(0.5 * 0.3), abs=1e-15)
    assert jit.tolist() == [[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0.6, 0.8], [0, 0, 0]]


@pytest.mark.skipif("numba" not in BACKENDS, reason="the compiled kernels are not available")
def test_the_compiled_store_gives_the_numpy_stores_bits():
    rng = np.random.default_rng(5)
    n, F, E, S = 300, 200, 250, 20
    model = (rng.integers(0, n, (F, 3)), rng.integers(0, n, (E, 2)), rng.integers(0, n, (S, 2)),
             rng.uniform(0, 0.02, n), rng.uniform(0, 0.01, F), rng.uniform(0, 0.01, E),
             rng.uniform(0, 0.1, S), rng.choice([0.0, 0.3, 0.3, 0.5, 1.0 / 3.0], n))
    k = 400
    normal = rng.normal(size=(k, 3))
    pairs = dict(pi=rng.integers(0, n, k), pj=rng.integers(0, n, k), tv=rng.integers(0, n, k),
                 tt=rng.integers(0, F, k), ea=rng.integers(0, E, k), eb=rng.integers(0, E, k),
                 near=rng.random(k) < 0.5, t_keep=rng.random(k) < 0.5,
                 t_side=rng.choice([-1.0, 1.0], k), e_keep=rng.random(k) < 0.5,
                 e_side=rng.choice([-1.0, 1.0], k),
                 e_normal=normal / np.linalg.norm(normal, axis=1)[:, None],
                 sa=rng.integers(0, S, 7), sb=rng.integers(0, S, 7))
    ours, theirs = _store("numba", pairs, model), _store("numpy", pairs, model)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)
    assert len(ours[0]) > 500

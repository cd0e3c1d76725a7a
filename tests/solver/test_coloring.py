"""Build-time colouring on both backends (solver/constraints/coloring.py, solver/kernels/build.py).

- The colours are first fit in constraint order, checked against an independent reference
  written here with Python sets (so a bug shared by the compiled kernel and the Python loop
  fails), on random stick graphs and ragged groups, including more than 64 colours (the
  compiled kernel's multi-word masks).
- No two constraints of one colour share a particle.
- A Model (cloth, sticks, clusters, a tetrahedral body) is bit-identical whichever backend
  built it: the simulation's cross-backend determinism starts here.
"""

import dataclasses

import numpy as np
import pytest

from solver import Builder, backend
from solver.constraints.coloring import greedy_colors

BACKENDS = ["numpy"] + (["numba"] if backend.numba_kernels() is not None else [])


def first_fit_reference(groups):
    """Each constraint takes the smallest colour not taken by an earlier constraint that
    shares a particle with it."""
    colours = []
    for k, g in enumerate(groups):
        taken = {colours[j] for j in range(k) if set(groups[j]) & set(g)}
        colours.append(next(c for c in range(len(taken) + 1) if c not in taken))
    return np.array(colours, dtype=np.int64)


def random_graphs():
    rng = np.random.default_rng(7)
    for _ in range(12):
        n = int(rng.integers(4, 50))
        pairs = rng.integers(0, n, size=(int(rng.integers(1, 150)), 2))
        yield n, pairs[pairs[:, 0] != pairs[:, 1]]
    # ragged clusters, one particle in all of them: 90 colours, past one 64-bit word
    groups = [[0] + list(1 + rng.choice(99, size=int(rng.integers(1, 5)), replace=False))
              for _ in range(90)]
    yield 100, groups
    yield 12, [[0, 1, 2], [2, 3], [4, 5, 6, 7], [1, 4], [8, 9], [0, 9, 5], [10], [11, 3]]


@pytest.mark.parametrize("name", BACKENDS)
def test_colours_are_first_fit_and_proper(name):
    for n, members in random_graphs():
        groups = [list(map(int, g)) for g in members]
        colours = greedy_colors(members, n, backend=name)
        assert colours.dtype == np.int64 and colours.shape == (len(groups),)
        assert np.array_equal(colours, first_fit_reference(groups))
        for c in np.unique(colours):
            shared = [p for g, k in zip(groups, colours) if k == c for p in g]
            assert len(set(shared)) == len(shared), f"colour {c} shares a particle"
    assert colours.max() < 12
    n, groups = list(random_graphs())[-2]
    assert greedy_colors(groups, n, backend=name).max() == 89      # one colour per cluster


def scene():
    b = Builder()
    n = 24
    u, v = np.meshgrid(np.linspace(-1, 1, n), np.linspace(-1, 1, n))
    x = np.column_stack([u.ravel(), v.ravel(), np.full(n * n, 2.0)])
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], -1).reshape(-1, 4)
    cloth = b.add_cloth(x, quads)
    b.pin(cloth[:n])
    rng = np.random.default_rng(1)
    extra = b.add_particles(rng.normal(size=(60, 3)))
    pairs = rng.choice(extra, size=(200, 2))
    b.add_sticks(pairs[pairs[:, 0] != pairs[:, 1]], kind="max")
    for _ in range(30):
        b.add_shape_match(rng.choice(extra, size=int(rng.integers(2, 12)), replace=False))
    tet = np.array([[0.0, 0.0, 0.3], [0.1, 0.0, 0.3], [0.0, 0.1, 0.3], [0.0, 0.0, 0.4]])
    b.add_tetra_body(tet, tet[:2] * 0.5 + 0.01)
    return b


@pytest.mark.skipif(len(BACKENDS) < 2, reason="Numba is not available")
def test_model_bit_identical_on_both_backends(monkeypatch):
    models = {}
    for name in BACKENDS:
        monkeypatch.setenv("VERLET_BACKEND", name)
        models[name] = scene().build()
    a, b = models["numpy"], models["numba"]
    assert len(a.stick_batch_offsets) > 8 and len(a.shape_color_offsets) > 3
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), f.name

"""Small rigs run the compiled kernels' serial loops, large ones their parallel loops, with the
same per-item helper (kernels/compiled.py SERIAL_CLUSTERS and _shape_one; compiled_joints.py
SERIAL_BODIES and _frame_of; compiled_rigid.py SERIAL_CANDIDATES and _collider_body): a body's
motion must not depend on which loop moved it.

The check is exact: one ragdoll falling onto the ground alone (12 bodies, a colour of 12
clusters: the serial loops of the shape and joint solves) and the same ragdoll beside five
far-away copies of itself (72 bodies, a colour of 72 clusters: their parallel loops) move bit
for bit the same; so does one rigid box landing on a corner alone (at most 4 collider
candidates: the collider pass's serial loop) and beside nineteen far-away copies (up to 80: its
parallel loop). The scene sizes are asserted against the thresholds, so a threshold moved past
them fails here instead of testing one loop twice. The NumPy kernels take the same scenes as
the reference.
"""

import os
import sys

import numpy as np
import pytest

from solver import Builder, Simulation, backend as _backend

from backend_scenarios import _turned_box  # noqa: E402  (tests/solver is on the path)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import ragdolls  # noqa: E402

KERNELS = _backend.numba_kernels()
pytestmark = pytest.mark.skipif(KERNELS is None, reason="the compiled kernels did not load")

QUIET = 128                        # particles of one ragdoll (benchmarks/ragdolls.py BONES)


def _run(copies, backend="numba", steps=12):
    """The first ragdoll's particles after ``steps`` frames, and the most collider candidates
    of a substep's pass seen on the way."""
    b = Builder()
    for k in range(copies):            # 20 m apart: no contact, no shared island
        ragdolls.add_ragdoll(b, np.array([0.0, 20.0 * k, 0.12]), tilt=0.5)
    b.add_collider("plane", friction=0.6)
    model = b.build()
    sim = Simulation(model, substeps=10, backend=backend)
    x = np.array(sim.x)
    v = np.zeros_like(x)
    for k in range(copies):           # the same slow turn for each: every copy falls the same way
        part = slice(QUIET * k, QUIET * (k + 1))
        v[part] = np.cross((0.0, 0.6, 0.3), x[part] - x[part].mean(axis=0))
    sim.set_velocities(np.arange(model.particle_count), v)
    candidates = 0
    for _ in range(steps):
        sim.step(1 / 24)
        candidates = max(candidates, sim.rigid.cand_by_body.shape[0])
    assert model.particle_count == QUIET * copies
    return np.array(sim.x[:QUIET]), sim, candidates


def test_one_ragdoll_moves_the_same_on_the_serial_and_the_parallel_paths():
    from solver.kernels import compiled, compiled_joints, compiled_rigid
    alone, sim1, cand1 = _run(1)
    beside, sim6, cand6 = _run(6)
    # each scene is on the side of each threshold the test says it is
    for sim, serial in ((sim1, True), (sim6, False)):
        bodies = sim.joints.bodies.shape[0]
        largest_colour = int(np.diff(sim.shapes.color_offsets).max())
        assert (bodies < compiled_joints.SERIAL_BODIES) == serial, bodies
        assert (largest_colour < compiled.SERIAL_CLUSTERS) == serial, largest_colour
    assert compiled_rigid.SERIAL_CANDIDATES <= cand6, cand6
    assert np.array_equal(alone, beside), \
        f"largest difference {np.abs(alone - beside).max():.3e} m"
    # it fell and met the ground: the collider pass did work, the joints held
    assert alone[:, 2].min() < 0.12
    gap, _ = sim6.joint_error()
    assert gap.max() < 2e-3


def _boxes(copies, backend="numba", steps=12):
    """The first of ``copies`` rigid boxes 20 m apart, each dropped tilted onto the ground,
    after ``steps`` frames, and the most collider candidates of a step seen on the way."""
    b = Builder()
    for k in range(copies):
        _turned_box(b, [20.0 * k, 0.0, 0.4], 0.3, 0.5)
    b.add_collider("plane", friction=0.6)
    sim = Simulation(b.build(), substeps=10, backend=backend)
    candidates = 0
    for _ in range(steps):
        sim.step(1 / 24)
        candidates = max(candidates, sim.rigid.cand_by_body.shape[0])
    return np.array(sim.x[:8]), candidates


def test_a_box_lands_the_same_on_the_serial_and_the_parallel_collider_pass():
    from solver.kernels import compiled_rigid
    alone, cand1 = _boxes(1)
    beside, cand20 = _boxes(20)
    assert 0 < cand1 < compiled_rigid.SERIAL_CANDIDATES <= cand20, (cand1, cand20)
    assert np.array_equal(alone, beside), \
        f"largest difference {np.abs(alone - beside).max():.3e} m"
    assert alone[:, 2].min() < 0.05           # it landed: the collider pass did work


@pytest.mark.parametrize("copies", [1, 6])
def test_the_numpy_kernels_agree_on_both_scenes(copies):
    a, _, _ = _run(copies, "numpy", steps=6)
    b, _, _ = _run(copies, "numba", steps=6)
    assert np.array_equal(a, b), f"largest difference {np.abs(a - b).max():.3e} m"


@pytest.mark.parametrize("copies", [1, 20])
def test_the_numpy_kernels_agree_on_both_box_scenes(copies):
    a, _ = _boxes(copies, "numpy", steps=6)
    b, _ = _boxes(copies, "numba", steps=6)
    assert np.array_equal(a, b), f"largest difference {np.abs(a - b).max():.3e} m"

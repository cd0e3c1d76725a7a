"""Contact iterations (Simulation(contact_iterations=...), the Blender scene's Contact
Iterations): the body contacts solved that many Jacobi passes in each iteration
(solver/loop.py, kernels/compiled_loop.py).

The pile is benchmarks/crates.py's: 100 crates dropped in four turned layers. With one pass a few
crates on top of stacks three and four high still creep after 5 s (Jacobi averaging is soft where
a corner rests on several faces); with two every crate rests, as the issue asks of a pile.
"""

import os
import sys

import numpy as np
import pytest

from solver import Builder, Simulation, backend as _backend

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import crates  # noqa: E402

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])


def _pile(count, contact_iterations, backend=None):
    centres, rotations = crates.crate_frames(count)
    b = Builder()
    for c in crates.crate_corners(centres, rotations):
        ids = b.add_particles(c, mass=crates.MASS / 8, friction=crates.FRICTION)
        b.add_shape_match(ids, stiffness=1.0, surface=ids[crates.FACES])
    b.add_collider("plane", friction=crates.FRICTION)
    return Simulation(b.build(), contact_iterations=contact_iterations, backend=backend)


def _resting(sim, count, frames):
    for _ in range(frames):
        before = sim.x.copy()
        sim.step(1.0 / crates.FPS)
    speed = np.linalg.norm((sim.x - before).reshape(count, 8, 3), axis=2).max(axis=1)
    return int(np.sum(speed * crates.FPS < crates.REST_SPEED))


def test_contact_iterations_must_be_a_positive_integer():
    b = Builder()
    b.add_particles(np.zeros((1, 3)))
    model = b.build()
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises((ValueError, TypeError), match="contact_iterations"):
            Simulation(model, contact_iterations=bad)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_second_pass_changes_a_pile_the_same_way_on_both_backends(backend):
    one = _pile(25, 1, backend)
    two = _pile(25, 2, backend)
    for _ in range(12):
        one.step(1 / 24)
        two.step(1 / 24)
    assert not np.array_equal(one.x, two.x)           # the passes are taken
    if backend == "numba":                            # and the compiled loop takes them alike
        ref = _pile(25, 2, "numpy")
        for _ in range(12):
            ref.step(1 / 24)
        assert np.array_equal(two.x, ref.x)


def test_every_crate_of_the_pile_rests_with_two_contact_passes():
    assert _resting(_pile(100, 2), 100, crates.FRAMES) == 100
    # the reason for the setting: one pass leaves some creeping (a pile is chaotic, so only
    # "not all" is asserted of it)
    assert _resting(_pile(100, 1), 100, crates.FRAMES) < 100

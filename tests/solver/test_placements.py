"""Simulation.set_collider_matrix remembers what it decomposed (collision/frames.Placements):
Blender sets every collider every frame, mostly to where it already is.

Checked: the same matrix again is not decomposed again; a collider set to where it is counts as
at rest (its target is its placement's own object, which the collide stage and the substeps
take as "not moving"), and stepping a scene whose static collider is set every frame gives the
same bits as never setting it; a collider that does move still moves, and bad matrices still get
their messages.
"""

import numpy as np
import pytest

from solver import Builder, Simulation
from solver.collision import frames


def _scene():
    b = Builder()
    b.add_particles(np.array([[0.0, 0.0, 0.3], [0.1, 0.0, 0.5], [0.0, 0.1, 0.8]]), radius=0.02)
    box = np.eye(4)
    box[:3, 3] = (0.0, 0.0, -0.5)
    b.add_collider("box", matrix=box, size=(2.0, 2.0, 1.0), friction=0.5)
    return b.build(), box


def test_the_same_matrix_is_decomposed_once(monkeypatch):
    model, box = _scene()
    sim = Simulation(model, substeps=4)
    calls = []
    real = frames.decompose
    monkeypatch.setattr(frames, "decompose", lambda *a: calls.append(1) or real(*a))
    moved = box.copy()
    moved[0, 3] = 0.25
    sim.set_collider_matrix(0, moved)
    first = sim.control.collider_target[0]
    sim.set_collider_matrix(0, moved.copy())
    assert len(calls) == 1 and sim.control.collider_target[0] is first
    assert first is not sim.control.collider_frame[0]             # it moves this step
    sim.step(1 / 24)
    np.testing.assert_array_equal(sim.control.collider_frame[0].translation, (0.25, 0.0, -0.5))
    sim.set_collider_matrix(0, moved)                              # now where it is: at rest
    assert sim.control.collider_target[0] is sim.control.collider_frame[0]
    assert len(calls) == 1


def test_a_static_collider_set_every_frame_gives_the_same_bits():
    model, box = _scene()
    a, b = Simulation(model, substeps=4), Simulation(model, substeps=4)
    for _ in range(20):
        b.set_collider_matrix(0, box)
        a.step(1 / 24)
        b.step(1 / 24)
        assert b.control.collider_target[0] is b.control.collider_frame[0]
    assert np.array_equal(np.array(a.x), np.array(b.x))
    assert np.array(a.x)[:, 2].min() > 0.0                         # they landed on the box


def test_bad_matrices_still_named():
    model, box = _scene()
    sim = Simulation(model, substeps=4)
    sim.set_collider_matrix(0, box)
    flat = box.copy()
    flat[2, 2] = 0.0
    with pytest.raises(ValueError, match="matrix: a scale is zero"):
        sim.set_collider_matrix(0, flat)
    bad = box.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="matrix: contains NaN"):
        sim.set_collider_matrix(0, bad)
    with pytest.raises(ValueError, match="matrix: expected a 4x4 matrix"):
        sim.set_collider_matrix(0, "not a matrix")

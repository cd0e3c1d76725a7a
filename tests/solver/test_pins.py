"""Soft pins (issue 10, item 9; constraints/pins.py): an XPBD attachment with a compliance per
pin, its targets and compliance in the Control. Analytic: a particle of mass m hanging from a
soft pin of compliance alpha settles m g alpha below its target (XPBD's static equilibrium),
at any substep count. Runs on the backend VERLET_BACKEND selects (scripts/test.sh runs both).
"""

import numpy as np
import pytest

from solver import Builder, Simulation
from solver.state import Checkpoint

G = 9.81
DT = 1.0 / 24.0


def _hanging(mass, compliance, substeps=20, damping=0.9999):
    b = Builder()
    ids = b.add_particles([[0.0, 0.0, 1.0]], mass=mass)
    b.pin(ids, compliance=compliance)
    return Simulation(b.build(), substeps=substeps, damping=damping, air_drag=0.0), ids


@pytest.mark.parametrize("mass, compliance, substeps", [(0.5, 1e-3, 20), (2.0, 1e-2, 20),
                                                        (2.0, 1e-2, 3), (0.1, 0.0, 20)])
def test_hanging_particle_sags_by_m_g_compliance(mass, compliance, substeps):
    """Settled (damped) for 5 s, the particle hangs m g alpha below its target, within 1e-6 of
    that sag (plus 1e-12 m): 4.9 mm at 0.5 kg and 1e-3 m/N, 19.6 cm at 2 kg and 1e-2, at 20 or
    3 substeps; a compliance of 0 holds it on its target."""
    sim, _ = _hanging(mass, compliance, substeps)
    for _ in range(120):
        sim.step(DT)
    sag = 1.0 - sim.x[0, 2]
    assert sag == pytest.approx(mass * G * compliance, rel=1e-6, abs=1e-12)
    assert np.linalg.norm(sim.v[0]) < 1e-6


def test_soft_pin_follows_its_moving_target():
    """The target moves 1 m sideways in 1 s (set_pin_targets, as for hard pins); once it stops
    and the particle settles, the particle hangs m g alpha below the new target."""
    sim, ids = _hanging(1.0, 1e-3)
    for frame in range(1, 121):
        sim.set_pin_targets(ids, [[min(frame * DT, 1.0), 0.0, 1.0]])
        sim.step(DT)
    assert sim.x[0] == pytest.approx([1.0, 0.0, 1.0 - G * 1e-3], abs=1e-9)


def test_infinite_compliance_releases_and_a_ramp_lets_go_gradually():
    """set_pin_compliance(inf) releases the particle: it then falls freely (v = g t, within
    a substep's mean). Ramping the compliance up over 1 s lowers it gradually: its height falls
    every frame, never by more than 5 cm in one frame while the pin still holds."""
    sim, ids = _hanging(1.0, 0.0, damping=0.0)
    heights = []
    for frame in range(1, 25):
        sim.set_pin_compliance(ids, 0.05 * (frame / 24) ** 2)
        sim.step(DT)
        heights.append(sim.x[0, 2])
    drops = -np.diff(heights)
    assert np.all(drops > -1e-3) and drops.max() < 0.05, drops
    sim.set_pin_compliance(ids, np.inf)
    sim.step(DT)
    v0 = sim.v[0, 2]
    for _ in range(12):
        sim.step(DT)
    assert sim.v[0, 2] - v0 == pytest.approx(-G * 12 * DT, rel=1e-9)


def _soft_cloth():
    b = Builder()
    n = 8
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n))
    x = np.column_stack([u.ravel(), np.zeros(n * n), 1.0 + v.ravel()])
    idx = np.arange(n * n).reshape(n, n)
    faces = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], -1).reshape(-1, 4)
    ids = b.add_cloth(x, faces)
    top = ids[-n:]
    b.pin(top[::2], compliance=np.linspace(0.0, 1e-2, len(top[::2])))
    b.pin(top[1::2])
    return Simulation(b.build(), substeps=10, air_drag=1.0), top


def test_checkpoint_resumes_soft_pins_bit_identically():
    """get_state / set_state and to_arrays / from_arrays carry the soft pins' targets and
    compliance: a resumed run equals an uninterrupted one bit for bit."""
    sim, top = _soft_cloth()

    def drive(s, frame):
        s.set_pin_targets(top, np.column_stack([np.linspace(0, 1, len(top)),
                                                np.full(len(top), 0.1 * frame), np.full(len(top), 2.0)]))
        s.set_pin_compliance(top[::2], 1e-3 * frame)
    for frame in range(6):
        drive(sim, frame)
        sim.step(DT)
    saved = Checkpoint.from_arrays(sim.get_state().to_arrays())
    for frame in range(6, 12):
        drive(sim, frame)
        sim.step(DT)
    again, _ = _soft_cloth()
    again.set_state(saved)
    for frame in range(6, 12):
        drive(again, frame)
        again.step(DT)
    assert np.array_equal(sim.x, again.x)


def test_soft_pin_errors_name_the_cause():
    b = Builder()
    ids = b.add_particles(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="compliance"):
        b.pin(ids[:1], compliance=-1.0)
    b.pin(ids[:1], compliance=1e-3)
    b.pin(ids[1:2])
    b.pin(ids[:1], compliance=1e-3)
    with pytest.raises(ValueError, match="particle 0 is pinned twice"):
        b.build()
    b = Builder()
    ids = b.add_particles(np.zeros((3, 3)))
    b.pin(ids[:1], compliance=1e-3)
    b.pin(ids[1:2])
    b.pin(ids[:1] + 1, compliance=1e-3)
    with pytest.raises(ValueError, match="particle 1 is pinned twice"):
        b.build()
    b = Builder()
    ids = b.add_particles(np.zeros((3, 3)))
    b.pin(ids[:1], compliance=1e-3)
    b.pin(ids[1:2])
    sim = Simulation(b.build())
    with pytest.raises(ValueError, match="particle 1 has no soft pin"):
        sim.set_pin_compliance(ids[1:2], 1.0)
    with pytest.raises(ValueError, match="compliance"):
        sim.set_pin_compliance(ids[:1], -1.0)
    with pytest.raises(ValueError, match="particle 2 is not pinned"):
        sim.set_pin_targets(ids[2:], [[0.0, 0.0, 0.0]])

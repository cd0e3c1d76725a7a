"""Settings changed between steps (solver/animated.py): they act from the next step on, with the
physics of their new value, and a checkpoint carries them (issue 10.4)."""

import numpy as np
import pytest

from solver import Builder, Simulation
from solver.geometry import signed_volume
from solver.state import Checkpoint

from backend_scenarios import CUBE_FACES, _grid, animated_scene  # noqa: E402 (on the path)

G = 9.81
DT = 1.0 / 24.0


def _block_sliding(mu, tan_theta=0.5):
    """A rigid 8-particle 0.2 m block on a horizontal plane of friction mu (static = kinetic),
    under gravity tilted by theta (tan theta = 0.5): a slope without a tilted plane. The block's
    own friction is mu too, so its contacts take mu (collision/project.combined_friction: the
    geometric mean of equal sides). Returns the simulation, the collider index and the unit
    down-slope direction."""
    theta = np.arctan(tan_theta)
    corners = np.array([[x, y, z] for x in (-0.1, 0.1) for y in (-0.1, 0.1)
                        for z in (1e-4, 0.2001)])
    b = Builder()
    ids = b.add_particles(corners, mass=0.25, friction=mu)
    b.add_shape_match(ids, stiffness=1.0)
    k = b.add_collider("plane", friction=mu)
    down = np.array([1.0, 0.0, 0.0])
    sim = Simulation(b.build(), substeps=20, iterations=1, damping=0.0, air_drag=0.0,
                     gravity=G * np.array([np.sin(theta), 0.0, -np.cos(theta)]))
    return sim, k, down, theta


def _along(sim, down):
    return float(sim.x.mean(axis=0) @ down)


def test_friction_raised_mid_run_stops_a_sliding_block():
    """Coulomb: on a slope with tan(theta) = 0.5 a block slides on friction 0.2 with acceleration
    g (sin - 0.2 cos). Friction raised to 0.8 > tan(theta) decelerates it at g (0.8 cos - sin)
    until it stops within v^2 / (2 a) and then holds it; raised to 0.4 < tan(theta) instead,
    it keeps accelerating at g (sin - 0.4 cos). (The block's own friction follows the plane's,
    Simulation.set_friction, so the contact takes the plane's value: _block_sliding.)"""
    t1 = 1.0
    sim, k, down, theta = _block_sliding(0.2)
    s0 = _along(sim, down)
    for _ in range(int(round(t1 / DT))):
        sim.step(DT)
    moved = _along(sim, down) - s0
    a1 = G * (np.sin(theta) - 0.2 * np.cos(theta))
    assert abs(moved / (0.5 * a1 * t1 * t1) - 1.0) < 0.02
    v1 = float(sim.v.mean(axis=0) @ down)
    assert abs(v1 / (a1 * t1) - 1.0) < 0.02
    # the second branch resumes the same first second (a resume is bit-identical)
    other = _block_sliding(0.2)[0]
    other.set_state(sim.get_state())
    ends = {}
    for mu2, branch in ((0.8, sim), (0.4, other)):
        branch.set_collider_friction(k, mu2)
        branch.set_friction(np.arange(8), mu2)
        s1 = _along(branch, down)
        for _ in range(int(round(2.0 / DT))):
            branch.step(DT)
        ends[mu2] = (branch, s1, v1, theta)
    sim, s1, v1, theta = ends[0.8]
    a2 = G * (0.8 * np.cos(theta) - np.sin(theta))          # deceleration
    stop = v1 * v1 / (2.0 * a2)
    assert abs((_along(sim, down) - s1) / stop - 1.0) < 0.05
    held = _along(sim, down)
    for _ in range(24):
        sim.step(DT)
    assert abs(_along(sim, down) - held) < 1e-4            # static friction holds it
    sim, s1, v1, theta = ends[0.4]
    a3 = G * (np.sin(theta) - 0.4 * np.cos(theta))
    expected = v1 * 2.0 + 0.5 * a3 * 4.0
    assert abs((_along(sim, down) - s1) / expected - 1.0) < 0.02


def test_static_friction_is_its_own_setting():
    sim, k, down, theta = _block_sliding(0.2)
    sim.set_collider_friction(k, 0.3, static_friction=0.9)
    assert sim.control.collider_friction[k] == 0.3
    assert sim.control.collider_static_friction[k] == 0.9
    with pytest.raises(ValueError, match="static_friction"):
        sim.set_collider_friction(k, 0.5, static_friction=0.4)
    with pytest.raises(ValueError, match="friction"):
        sim.set_collider_friction(k, float("nan"))
    with pytest.raises(ValueError, match="k: collider index"):
        sim.set_collider_friction(3, 0.5)


def _chain(n, mass, compliance):
    """n particles of ``mass`` hanging in a vertical line of 0.1 m sticks under a pinned one."""
    b = Builder()
    x = np.column_stack([np.zeros(n + 1), np.zeros(n + 1), 1.0 - 0.1 * np.arange(n + 1)])
    ids = b.add_particles(x, mass=mass)
    b.add_sticks(np.column_stack([ids[:-1], ids[1:]]), compliance=compliance)
    b.pin(ids[:1])
    sim = Simulation(b.build(), substeps=20, iterations=1, damping=0.9, air_drag=0.0)
    return sim, ids


def _stretch(sim, n):
    """Total extension [m] of the chain beyond its rest length 0.1 n."""
    return float(sim.x[0, 2] - sim.x[n, 2]) - 0.1 * n


def test_stick_compliance_changed_mid_run_gives_the_new_sag():
    """XPBD statics: stick k from the bottom carries k m g and stretches by alpha k m g, so the
    chain stretches alpha m g n (n + 1) / 2 in all. Settled at alpha = 2e-3 m/N, then set to
    6e-3 m/N, it settles at three times the stretch (within 1.5 %: one Gauss-Seidel sweep per
    substep of h leaves the discrete statics off by O(h^2 / (alpha m)), 0.8 % and 0.1 % here)."""
    n, mass = 5, 0.5
    sim, ids = _chain(n, mass, 2e-3)
    for _ in range(96):
        sim.step(DT)
    expected = 2e-3 * mass * G * n * (n + 1) / 2
    assert abs(_stretch(sim, n) / expected - 1.0) < 0.015
    sim.set_stick_compliance(ids, 6e-3)
    assert np.all(sim.control.stick_compliance == 6e-3)
    for _ in range(96):
        sim.step(DT)
    assert abs(_stretch(sim, n) / (3.0 * expected) - 1.0) < 0.015


def test_stick_compliance_selects_by_particles_and_source():
    b = Builder()
    x, faces = _grid(4)
    cloth = b.add_cloth(x, faces, stretch_compliance=0.0, shear_compliance=0.0)
    rope = b.add_particles(x[:3] + [0.0, 0.0, 1.0])
    b.add_sticks(np.column_stack([rope[:-1], rope[1:]]))
    sim = Simulation(b.build())
    shear = sim.sticks_among(cloth, "cloth shear")
    assert shear.size == 2 * 9                               # two diagonals per quad
    sim.set_stick_compliance(cloth, np.linspace(1e-3, 2e-3, shear.size), "cloth shear")
    c = sim.control.stick_compliance
    assert np.allclose(c[shear], np.linspace(1e-3, 2e-3, shear.size))
    others = np.setdiff1d(np.arange(len(c)), shear)
    assert np.array_equal(c[others], sim.model.stick_compliance[others])   # the others kept
    with pytest.raises(ValueError, match="source"):
        sim.set_stick_compliance(cloth, 1e-3, "cloth twist")
    with pytest.raises(ValueError, match="compliance"):
        sim.set_stick_compliance(cloth, -1.0, "cloth shear")
    with pytest.raises(ValueError, match="compliance: expected a number or 18"):
        sim.set_stick_compliance(cloth, [1e-3, 2e-3], "cloth shear")


def test_pressure_changed_mid_run_inflates_to_the_new_volume():
    """A closed 0.2 m cube held by its volume alone (no gravity): at pressure 1 it keeps
    0.008 m^3; set to pressure 2 it inflates to 0.016 m^3 (within 0.5 %) and stays there."""
    corners = np.array([[x, y, z] for x in (0.0, 0.2) for y in (0.0, 0.2) for z in (0.0, 0.2)])
    b = Builder()
    ids = b.add_particles(corners, mass=0.1)
    b.add_volume(ids[CUBE_FACES])
    b.add_shape_match(ids, compliance=1e-2)       # soft: shape matching keeps it a cube-ish
    sim = Simulation(b.build(), substeps=20, gravity=(0.0, 0.0, 0.0), damping=0.9, air_drag=0.0)
    tris = sim.model.volume_tris
    for _ in range(12):
        sim.step(DT)
    assert abs(signed_volume(np.array(sim.x), tris) / 0.008 - 1.0) < 0.005
    sim.set_volume_pressure(ids, 2.0)
    assert sim.control.volume_rest[0] == pytest.approx(0.016, rel=1e-12)
    for _ in range(48):
        sim.step(DT)
    assert abs(signed_volume(np.array(sim.x), tris) / 0.016 - 1.0) < 0.005
    with pytest.raises(ValueError, match="pressure"):
        sim.set_volume_pressure(ids, 0.0)


def _drive(sim, cloth, soft, k, t):
    sim.set_gravity((0.5 * t, 0.0, -9.81 * (1.0 + 0.2 * t)))
    sim.set_global_damping(min(0.1 * t, 1.0))
    sim.set_air_drag(1.0 + t)
    sim.set_stick_compliance(cloth, 1e-4 * t, "cloth stretch")
    sim.set_shape_compliance(soft, 1e-3 * (1.0 + t))
    sim.set_shape_damping(soft, min(0.2 * t, 1.0))
    sim.set_collider_friction(k, 0.3 + 0.2 * t, static_friction=0.5 + 0.2 * t)
    sim.set_collider_restitution(k, min(0.1 * t, 1.0))
    sim.set_volume_pressure(soft, 1.2 + 0.5 * t)
    sim.set_restitution(cloth, min(0.2 * t, 1.0))
    sim.set_friction(soft, 0.5 + 0.3 * t)


def test_checkpoint_resumes_changed_settings_bit_identically():
    """Settings changed before a checkpoint come back with it: a fresh simulation of the same
    model (built with the original values) resumed from the file's arrays continues exactly
    as the original does, with nothing set again."""
    b, cloth, soft, k = animated_scene(6)
    model = b.build()
    a = Simulation(model, substeps=8)
    for _ in range(12):
        _drive(a, cloth, soft, k, a.time + 0.5)
        a.step(DT)
    arrays = a.get_state().to_arrays()
    resumed = Simulation(model, substeps=8)
    resumed.set_state(Checkpoint.from_arrays({key: np.array(v) for key, v in arrays.items()}))
    for _ in range(12):
        a.step(DT)
        resumed.step(DT)
    assert np.array_equal(a.x, resumed.x)
    assert np.array_equal(a.gravity, resumed.gravity) and a.damping == resumed.damping


def test_checkpoint_without_the_settings_keeps_the_model_values():
    """A file written before the settings were animatable has none: resuming keeps the
    simulation's own (the model's), which is what that file's run used."""
    b, cloth, soft, k = animated_scene(6)
    model = b.build()
    a = Simulation(model, substeps=8)
    for _ in range(6):
        a.step(DT)
    arrays = {key: v for key, v in a.get_state().to_arrays().items()
              if key.rpartition(".")[2] not in ("gravity", "damping", "stick_compliance",
                                                "shape_compliance", "shape_damping",
                                                "collider_friction", "collider_static_friction",
                                                "collider_restitution", "volume_rest",
                                                "particle_restitution", "particle_friction")}
    resumed = Simulation(model, substeps=8)
    resumed.set_state(Checkpoint.from_arrays(arrays))
    for _ in range(6):
        a.step(DT)
        resumed.step(DT)
    assert np.array_equal(a.x, resumed.x)


def test_setters_refuse_bad_values_by_name():
    b, cloth, soft, k = animated_scene(6)
    sim = Simulation(b.build())
    with pytest.raises(ValueError, match="gravity"):
        sim.set_gravity((0.0, float("nan"), 0.0))
    with pytest.raises(ValueError, match="damping"):
        sim.set_global_damping(1.5)
    with pytest.raises(ValueError, match="drag"):
        sim.set_air_drag(-1.0)
    with pytest.raises(ValueError, match="compliance"):
        sim.set_shape_compliance(soft, float("inf"))
    with pytest.raises(ValueError, match="restitution"):
        sim.set_collider_restitution(k, 2.0)
    with pytest.raises(ValueError, match="ids"):
        sim.set_shape_damping([10**6], 0.5)

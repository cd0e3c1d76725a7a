"""Blender-style force fields (solver/fields.py) against their documented formulas: falloff, the
direction and size of each field type, effector weights, exact drag and flow decay, and a
keyframed Force spike's impulse. NumPy only; gravity, damping and air drag are set explicitly."""

import math

import numpy as np
import pytest

from solver import Builder, Simulation
from solver.fields import ForceFields

DT = 1.0 / 24.0


def _particles(x, mass=1.0, substeps=10, gravity=(0.0, 0.0, 0.0)):
    b = Builder()
    ids = b.add_particles(np.asarray(x, dtype=np.float64), mass=mass)
    return Simulation(b.build(), substeps=substeps, gravity=gravity, damping=0.0,
                      air_drag=0.0), ids


def _each_own(n, masses):
    """Group keywords putting each of n particles in its own object of the given mass."""
    return dict(particle_group=np.arange(n), group_mass=np.broadcast_to(masses, (n,)))


def _rotation_z_to(direction):
    """A 4x4 matrix whose local Z is ``direction`` (unit)."""
    z = np.asarray(direction, float) / np.linalg.norm(direction)
    a = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(a, z)
    x /= np.linalg.norm(x)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2] = x, np.cross(z, x), z
    return m


def _accel(fields, sim):
    a0, _, _ = fields.evaluate(np.array(sim.x), sim.v, sim.model, sim.gravity)
    return a0


# ---------------------------------------------------------------------------- Force
def test_force_point_falloff_power_two_is_blenders_inverse_square():
    """Force, Point shape, falloff power 2: a = s / (1 + r)^2 / M along d / r (the manual's
    1 / (r - min + 1)^power), so the accelerations at r = 1 and r = 3 are in the ratio 4; and one
    step from rest through the Simulation moves the particles by exactly a dt^2 / 2."""
    rng = np.random.default_rng(3)
    dirs = rng.normal(size=(2, 3))
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    centre = np.array([0.5, -1.0, 2.0])
    x = centre + dirs * np.array([[1.0], [3.0]])
    sim, _ = _particles(x, mass=0.5)
    m = np.eye(4)
    m[:3, 3] = centre
    ff = ForceFields("FORCE", m, strength=12.0, falloff_power=2.0, **_each_own(2, [2.0, 3.0]))
    a = _accel(ff, sim)
    np.testing.assert_allclose(a[0], 12.0 / 4.0 / 2.0 * dirs[0], rtol=1e-12)
    np.testing.assert_allclose(a[1], 12.0 / 16.0 / 3.0 * dirs[1], rtol=1e-12)
    ratio = (np.linalg.norm(a[0]) * 2.0) / (np.linalg.norm(a[1]) * 3.0)
    assert ratio == pytest.approx(4.0, rel=1e-12)
    sim.set_force_fields(ff)
    sim.step(DT)
    np.testing.assert_allclose(sim.x - x, 0.5 * a * DT * DT, rtol=1e-9, atol=1e-15)
    # negative strength attracts
    attract = ForceFields("FORCE", m, strength=-12.0, falloff_power=2.0, **_each_own(2, [2.0, 3.0]))
    np.testing.assert_allclose(_accel(attract, sim), -_accel(ff, sim), rtol=1e-12)


def test_force_gravitation_is_true_inverse_square_and_min_max_distance_apply():
    """use_gravity_falloff multiplies by 1/r^2 (ratio (r2/r1)^2 exactly); inside distance_min
    the falloff is 1, beyond distance_max 0, between (1 + r - min)^-power."""
    x = np.array([[1.0, 0, 0], [2.0, 0, 0], [0.2, 0, 0], [5.0, 0, 0], [3.0, 0, 0]])
    sim, _ = _particles(x)
    grav = ForceFields("FORCE", np.eye(4), strength=1.0, use_gravity_falloff=True,
                       **_each_own(5, 1.0))
    a = _accel(grav, sim)[:, 0]
    assert a[0] / a[1] == pytest.approx(4.0, rel=1e-12)
    ff = ForceFields("FORCE", np.eye(4), strength=1.0, falloff_power=3.0, use_min_distance=True,
                     distance_min=0.5, use_max_distance=True, distance_max=4.0, **_each_own(5, 1.0))
    a = _accel(ff, sim)[:, 0]
    assert a[2] == 1.0                                    # inside min: full strength
    assert a[3] == 0.0                                    # beyond max: nothing
    assert a[4] == pytest.approx((1.0 + 3.0 - 0.5) ** -3, rel=1e-12)


def test_tube_and_cone_falloff_shapes():
    """Tube: f(|z|) times the radial falloff of the distance to the axis, cut at radial_max;
    Cone: f(|z|) times the radial falloff of the angle to the axis in degrees, cut at
    radial_max (effector_falloff), here on a Wind of strength 1 acting on 1 kg."""
    x = np.array([[0.5, 0, 2.0], [1.5, 0, 2.0], [2 * math.tan(math.radians(20)), 0, 2.0],
                  [2 * math.tan(math.radians(40)), 0, 2.0]])
    sim, _ = _particles(x)
    tube = ForceFields("WIND", np.eye(4), shape="PLANE", falloff_type="TUBE", falloff_power=1.0,
                       radial_falloff=2.0, use_radial_max=True, radial_max=1.0,
                       **_each_own(4, 1.0))
    a = _accel(tube, sim)[:, 2]
    assert a[0] == pytest.approx(1 / 3 * 1.5 ** -2, rel=1e-12) and a[1] == 0.0
    cone = ForceFields("WIND", np.eye(4), shape="PLANE", falloff_type="CONE",
                       radial_falloff=1.0, use_radial_max=True, radial_max=30.0,
                       **_each_own(4, 1.0))
    a = _accel(cone, sim)[:, 2]
    assert a[2] == pytest.approx(1 / 21.0, rel=1e-9) and a[3] == 0.0


# ---------------------------------------------------------------------------- Wind
def test_wind_blows_along_the_field_local_z_uniformly_on_the_positive_side():
    """Wind (Plane shape): a = s / M along the field object's local Z wherever the particle is;
    with z_direction POSITIVE nothing behind the plane."""
    axis = np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5])
    m = _rotation_z_to(axis)
    rng = np.random.default_rng(0)
    x = rng.uniform(-5, 5, size=(50, 3))
    sim, _ = _particles(x)
    ff = ForceFields("WIND", m, strength=6.0, shape="PLANE", **_each_own(50, 3.0))
    np.testing.assert_allclose(_accel(ff, sim), np.tile(2.0 * axis, (50, 1)), rtol=1e-12)
    front = ForceFields("WIND", m, strength=6.0, shape="PLANE", z_direction="POSITIVE",
                        **_each_own(50, 3.0))
    a = _accel(front, sim)
    behind = x @ axis < 0
    assert behind.any() and (~behind).any()
    assert np.all(a[behind] == 0.0)
    np.testing.assert_allclose(a[~behind], np.tile(2.0 * axis, ((~behind).sum(), 1)), rtol=1e-12)


def test_wind_factor_acts_on_cloth_only_through_its_normal():
    """wind_factor 1: a cloth lying in the XY plane feels none of a wind along X and all of a
    wind along Z; a particle group that is not a sheet feels both in full."""
    n = 4
    u = np.linspace(0, 1, n)
    gx, gy = np.meshgrid(u, u)
    x = np.column_stack([gx.ravel(), gy.ravel(), np.zeros(n * n)])
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], -1).reshape(-1, 4)
    b = Builder()
    b.add_cloth(x, quads)
    b.add_particles([[5.0, 5.0, 5.0]])
    sim = Simulation(b.build(), gravity=(0, 0, 0), air_drag=0.0)
    groups = dict(particle_group=np.r_[np.zeros(n * n, int), 1], group_mass=[1.0, 1.0],
                  group_sheet=[True, False])
    along_x = ForceFields("WIND", _rotation_z_to([1, 0, 0]), strength=1.0, shape="PLANE",
                          wind_factor=1.0, **groups)
    a = _accel(along_x, sim)
    np.testing.assert_allclose(a[:-1], 0.0, atol=1e-12)
    np.testing.assert_allclose(a[-1], [1.0, 0, 0], rtol=1e-12)
    along_z = ForceFields("WIND", np.eye(4), strength=1.0, shape="PLANE", wind_factor=1.0, **groups)
    np.testing.assert_allclose(_accel(along_z, sim)[:-1], np.tile([0, 0, 1.0], (n * n, 1)),
                               rtol=1e-12)


# ---------------------------------------------------------------------------- Vortex
def test_point_vortex_is_tangential_and_grows_with_distance():
    """Vortex, Point shape: a = s w r (n x d) / |n x d| / M: perpendicular to the axis and to d,
    turning counter-clockwise about +Z for s > 0, of size s r / M."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, size=(40, 3))
    sim, _ = _particles(x)
    ff = ForceFields("VORTEX", np.eye(4), strength=2.0, shape="POINT", **_each_own(40, 4.0))
    a = _accel(ff, sim)
    r = np.linalg.norm(x, axis=1)
    assert np.allclose(a[:, 2], 0.0, atol=1e-12)
    assert np.allclose(np.einsum("ij,ij->i", a, x), 0.0, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 2.0 * r / 4.0, rtol=1e-12)
    assert np.all(np.cross(x, a)[:, 2] > 0)               # counter-clockwise about +Z


def test_plane_vortex_carries_a_body_round_a_circle():
    """Vortex, Plane shape (Blender's "new vortex", M = 1 kg): rotating air of angular velocity
    s plus the centripetal pull, so a particle moving with the air stays on its circle: after
    one turn (2 pi / s) it is back where it started, radius within 1 % all the way."""
    omega, radius = 1.5, 2.0
    sim, _ = _particles([[radius, 0.0, 0.3]], substeps=20)
    sim.set_velocities([0], [[0.0, omega * radius, 0.0]])
    ff = ForceFields("VORTEX", np.eye(4), strength=omega, shape="PLANE", group_mass=[1.0])
    radii = []
    steps = int(round(2 * math.pi / omega / DT))
    for _ in range(steps):
        sim.set_force_fields(ff)
        sim.step(DT)
        radii.append(np.hypot(*sim.x[0, :2]))
    assert np.max(np.abs(np.array(radii) - radius)) < 1e-2 * radius
    assert np.linalg.norm(sim.x[0, :2] - [radius, 0.0]) < 0.05 * radius
    assert sim.x[0, 2] == 0.3


# ---------------------------------------------------------------------------- Drag and flow
@pytest.mark.parametrize("mass", [1.0, 0.01])      # rate 2/s and 200/s (c dt = 8.3)
def test_linear_drag_decays_exactly_even_when_stiff(mass):
    """Drag, linear coefficient k: v(t) = v0 exp(-k t / M) at every frame end (to 1e-6, or 1e-9
    m/s once it is that small), also at a
    rate where a per-frame explicit force would reverse and grow the velocity (c dt = 8.3);
    positions follow v0 M (1 - exp(-k t / M)) / k within 1 % (stiff: between half and all of it)."""
    sim, _ = _particles([[0.0, 0.0, 0.0]], mass=mass)
    v0 = np.array([10.0, -4.0, 2.0])
    sim.set_velocities([0], [v0])
    sim.set_force_fields(ForceFields("DRAG", np.eye(4), strength=2.0, shape="PLANE",
                                     group_mass=[mass]))
    c = 2.0 / mass
    for k in range(1, 25):
        sim.step(DT)
        t = k * DT
        np.testing.assert_allclose(sim.v[0], v0 * math.exp(-c * t), rtol=1e-6, atol=1e-9)
    travel = v0 * (1 - math.exp(-c * 1.0)) / c
    if c * DT < 0.1:
        np.testing.assert_allclose(sim.x[0], travel, rtol=1e-2)
    else:       # a stiff rate: positions lag by O(c h) per substep, but never overshoot
        assert np.all((sim.x[0] / travel > 0.5) & (sim.x[0] / travel <= 1.0))


@pytest.mark.parametrize("quadratic, mass", [(0.5, 1.0), (2.0, 0.01)])   # q v0 dt / M = 0.2, 83
def test_quadratic_drag_follows_the_exact_solution(quadratic, mass):
    """Drag, quadratic coefficient q: |v|(t) = v0 / (1 + q v0 t / M) to 1e-9 at every frame end,
    direction unchanged, whatever the stiffness."""
    sim, _ = _particles([[0.0, 0.0, 0.0]], mass=mass)
    v0 = np.array([0.0, 6.0, 8.0])                        # |v0| = 10 m/s
    sim.set_velocities([0], [v0])
    sim.set_force_fields(ForceFields("DRAG", np.eye(4), strength=0.0, quadratic_drag=quadratic,
                                     group_mass=[mass]))
    for k in range(1, 25):
        sim.step(DT)
        expect = 10.0 / (1 + quadratic * 10.0 * k * DT / mass)
        np.testing.assert_allclose(sim.v[0], v0 / 10.0 * expect, rtol=1e-9)


@pytest.mark.parametrize("mass", [2.0, 1e-3])
def test_wind_flow_reaches_the_air_speed_strength_over_flow(mass):
    """Wind with flow k: the air moves at s / k; a body in it (and in gravity g) ends at the
    velocity (s n + M g) / k exactly, for a heavy body and for one so light (rate k / M = 5000/s)
    that an explicit force per frame would explode."""
    g = np.array([0.0, 0.0, -9.81])
    sim, _ = _particles([[0.0, 0.0, 0.0]], mass=mass, gravity=g)
    axis = np.array([0.0, 1.0, 0.0])
    sim.set_force_fields(ForceFields("WIND", _rotation_z_to(axis), strength=3.0, flow=5.0,
                                     shape="PLANE", group_mass=[mass]))
    for _ in range(24 * 20 if mass > 1 else 2):
        sim.step(DT)
    np.testing.assert_allclose(sim.v[0], (3.0 * axis + mass * g) / 5.0, rtol=1e-9, atol=1e-9)
    assert np.all(np.isfinite(sim.x))


# ---------------------------------------------------------------------------- weights
def test_effector_weights_scale_switch_off_and_weigh_gravity():
    """group_weight scales a field (0.5 halves it, 0 and negative switch it off, as Blender's
    effector_falloff); group_gravity multiplies gravity (0 floats, 2 falls at 2 g)."""
    x = np.zeros((5, 3))
    g = np.array([0.0, 0.0, -9.81])
    sim, _ = _particles(x, gravity=g)
    weights = np.array([[1.0], [0.5], [0.0], [-1.0], [1.0]])
    ff = ForceFields("WIND", np.eye(4), strength=4.0, shape="PLANE", group_weight=weights,
                     group_gravity=[1.0, 1.0, 1.0, 0.0, 2.0], **_each_own(5, 1.0))
    a = _accel(ff, sim)
    np.testing.assert_allclose(a[:3, 2], [4.0, 2.0, 0.0], rtol=1e-12)
    np.testing.assert_allclose(a[3], -g, rtol=1e-12)        # weight -1: no wind; gravity 0
    np.testing.assert_allclose(a[4], [0, 0, 4.0] + g, rtol=1e-12)
    sim.set_force_fields(ff)
    sim.step(DT)
    np.testing.assert_allclose(sim.x[3], 0.0, atol=1e-12)  # floats: gravity cancelled
    np.testing.assert_allclose(sim.x[4], ([0, 0, 4.0] + 2 * g) * DT * DT / 2, rtol=1e-9)


# ---------------------------------------------------------------------------- Turbulence, noise
def test_turbulence_is_bounded_smooth_varied_and_moves_with_its_field():
    """Turbulence: each component within s / M, the same on every evaluation, smooth at its size
    (points 1e-3 size apart differ by < 1 % of s), varied over many sizes (std > 0.1 s), and
    (without Global) the same pattern when the field and the points move together."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-10, 10, size=(2000, 3))
    size, s = 1.5, 3.0
    sim, _ = _particles(np.vstack([x, x + 1.5e-3]))
    ff = ForceFields("TURBULENCE", np.eye(4), strength=s, size=size, group_mass=[1.0],
                     particle_group=np.zeros(4000, int))
    a = _accel(ff, sim)
    assert np.all(np.abs(a) <= s + 1e-12)
    np.testing.assert_array_equal(a, _accel(ff, sim))
    assert np.max(np.abs(a[:2000] - a[2000:])) < 0.01 * s
    assert np.all(a[:2000].std(axis=0) > 0.1 * s)
    shift = np.eye(4)
    shift[:3, 3] = (3.3, -1.2, 0.7)
    moved, _ = _particles(np.vstack([x, x + 1.5e-3]) + shift[:3, 3])
    ff_moved = ForceFields("TURBULENCE", shift, strength=s, size=size, group_mass=[1.0],
                           particle_group=np.zeros(4000, int))
    np.testing.assert_allclose(_accel(ff_moved, moved), a, atol=1e-9)


def test_strength_noise_is_seeded_by_frame_and_bounded():
    """Noise: strength + Blender's wind_func value, within +-noise, the same for the same seed
    and frame, different on another frame."""
    x = np.zeros((500, 3))
    sim, _ = _particles(x)

    def accel(frame, seed=4):
        return _accel(ForceFields("WIND", np.eye(4), strength=2.0, shape="PLANE", noise=1.5,
                                  seed=seed, frame=frame, **_each_own(500, 1.0)), sim)[:, 2]

    a = accel(7)
    assert np.all(np.abs(a - 2.0) <= 1.5) and a.std() > 0.2
    np.testing.assert_array_equal(a, accel(7))
    assert not np.array_equal(a, accel(8))
    assert not np.array_equal(a, accel(7, seed=5))


# ---------------------------------------------------------------------------- impulse
def test_keyframed_force_spike_throws_cloth_and_rigid_body_by_the_impulse():
    """A Force field whose strength spikes for 2 frames (as keyframes read per frame) changes
    the momentum of a cloth and of a rigid block by exactly sum(F dt): each object's centre of
    mass velocity gains sum over the frames of s dt / M times its mass-weighted mean direction
    away from the field, evaluated (as the step does) at the middle of each frame."""
    n = 5
    u = np.linspace(-0.5, 0.5, n)
    gx, gy = np.meshgrid(u, u)
    cloth_x = np.column_stack([gx.ravel() + 4.0, gy.ravel(), np.zeros(n * n)])
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], -1).reshape(-1, 4)
    corners = np.array([[i, j, k] for i in (-.2, .2) for j in (-.2, .2) for k in (-.2, .2)])
    b = Builder()
    cloth = b.add_cloth(cloth_x, quads, density=0.4)
    block = b.add_particles(corners + [-3.0, 1.0, 0.0], mass=0.25)
    b.add_shape_match(block, stiffness=1.0)
    sim = Simulation(b.build(), substeps=20, gravity=(0, 0, 0), air_drag=0.0)
    mass = sim.model.particle_mass
    groups = [cloth, block]
    group = np.zeros(len(mass), int)
    group[block] = 1
    M = np.array([mass[cloth].sum(), mass[block].sum()])
    strengths = [0.0, 0.0, 40.0, 40.0, 0.0, 0.0, 0.0]
    expect = [np.zeros(3), np.zeros(3)]
    for s in strengths:
        ff = ForceFields("FORCE", np.eye(4), strength=s, particle_group=group, group_mass=M)
        sim.set_force_fields(ff)
        for g, ids in enumerate(groups):
            mid = sim.x[ids] + sim.v[ids] * (DT / 2)
            d = mid / np.linalg.norm(mid, axis=1)[:, None]
            expect[g] = expect[g] + s * DT / M[g] * (mass[ids, None] * d).sum(0) / M[g]
        sim.step(DT)
    for g, ids in enumerate(groups):
        v_cm = (mass[ids, None] * sim.v[ids]).sum(0) / M[g]
        np.testing.assert_allclose(v_cm, expect[g], rtol=1e-6, atol=1e-9)
        assert np.linalg.norm(expect[g]) > 0.9 * 80.0 * DT / M[g]     # away, nearly full size
    assert np.dot(expect[0], [1, 0, 0]) > 0 and np.dot(expect[1], [-1, 0.3, 0]) > 0


def test_a_force_field_blast_launches_a_body_without_the_runaway_check_stopping_it():
    """A strong Force field (2000 m/s^2 on a 1 kg particle, falloff 0) throws it at 2000 m/s
    per second of simulated time: far faster than gravity over that time allows, but what the
    scene's own forces produce is no runaway. After one second the speed along x is the
    field's a t, within the 1 % by which the velocity estimate lags a constant acceleration
    (the runaway bound counts the fields' acceleration as it counts gravity's)."""
    sim, _ = _particles([[1.0, 0.0, 0.0]], mass=1.0, gravity=(0.0, 0.0, -9.81))
    sim.set_force_fields(ForceFields("FORCE", np.eye(4), strength=2000.0, falloff_power=0.0,
                                     **_each_own(1, 1.0)))
    for _ in range(24):
        sim.step(DT)
    v = sim.v[0]
    assert v[0] == pytest.approx(2000.0, rel=0.01)      # a t over one second
    # the field is radial: as gravity lowers the particle, it pushes it down too (z / r of a)
    assert -9.81 * 4 < v[2] < -9.81 and abs(v[1]) < 1e-9


# ---------------------------------------------------------------------------- state, input
def test_checkpoint_resumes_bit_identically_with_fields():
    sim, _ = _particles(np.random.default_rng(2).uniform(-1, 1, (20, 3)),
                        gravity=(0, 0, -9.81))
    sim.set_force_fields(ForceFields(["FORCE", "DRAG", "TURBULENCE"], np.eye(4),
                                     strength=[3.0, 0.5, 2.0], quadratic_drag=[0, 0.3, 0],
                                     noise=[0.5, 0, 0], shape="POINT", group_mass=[2.0]))
    for _ in range(3):
        sim.step(DT)
    state = sim.get_state()
    for _ in range(3):
        sim.step(DT)
    first = np.array(sim.x)
    sim.set_force_fields(None)
    sim.set_state(state)
    for _ in range(3):
        sim.step(DT)
    np.testing.assert_array_equal(sim.x, first)


@pytest.mark.parametrize("kwargs, words", [
    (dict(kind="MAGNET"), "kind"),
    (dict(kind="DRAG", strength=-1.0, names=["Air"]), "Air: negative linear drag"),
    (dict(kind="WIND", strength=float("nan")), "strength"),
    (dict(kind="WIND", wind_factor=2.0, names=["Gust"]), "Gust: wind_factor"),
    (dict(kind="WIND", shape="SURFACE"), "shape"),
    (dict(kind="WIND", matrix=np.zeros((4, 4)), names=["Flat"]), "Flat: its matrix"),
])
def test_bad_fields_are_refused_by_name(kwargs, words):
    kwargs = dict(kwargs)
    kind = kwargs.pop("kind")
    matrix = kwargs.pop("matrix", np.eye(4))
    with pytest.raises(ValueError, match=words):
        ForceFields(kind, matrix, **kwargs)


def test_groups_that_do_not_fit_the_model_are_refused():
    sim, _ = _particles(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="particle_group"):
        sim.set_force_fields(ForceFields("WIND", np.eye(4), particle_group=[0, 1],
                                         group_mass=[1.0, 1.0]))

"""Analytic checks of the integrator and the stick solver: free fall, projectile, pendulum,
catenary, pins. NumPy only; every simulation here sets damping and air drag explicitly."""

import numpy as np
import pytest

from solver import Builder, Simulation

G = 9.81


def _free_particle(x0, substeps):
    b = Builder()
    ids = b.add_particles([x0], mass=0.7)
    sim = Simulation(b.build(), substeps=substeps, iterations=1, gravity=(0.0, 0.0, -G),
                     damping=0.0, air_drag=0.0)
    return sim, ids


# ---------------------------------------------------------------------------- free fall
@pytest.mark.parametrize("substeps", [1, 3, 16])
def test_free_fall_is_exact(substeps):
    """Verlet is exact for a constant acceleration from rest: z(t) = z0 - g t^2 / 2 at every
    step end, to 1e-9 relative to the distance fallen, at any substep count; x and y stay put."""
    z0, dt = 50.0, 1.0 / 24.0
    sim, _ = _free_particle((0.3, -0.2, z0), substeps)
    for k in range(1, 49):
        sim.step(dt)
        t = k * dt
        drop = 0.5 * G * t * t
        assert abs(sim.x[0, 2] - (z0 - drop)) <= 1e-9 * drop
        assert sim.x[0, 0] == 0.3 and sim.x[0, 1] == -0.2


@pytest.mark.parametrize("substeps", [1, 5])
def test_initial_velocity_follows_parabola(substeps):
    """A velocity set with set_velocities before the first step launches the particle on the
    parabola x0 + v0 t + g t^2 / 2 exactly (1e-9 relative to the distance travelled)."""
    x0, v0 = np.array([1.0, 2.0, 0.5]), np.array([3.0, -1.5, 8.0])
    g = np.array([0.0, 0.0, -G])
    sim, ids = _free_particle(x0, substeps)
    sim.set_velocities(ids, v0[None])
    dt = 1.0 / 30.0
    for k in range(1, 61):
        sim.step(dt)
        t = k * dt
        expect = x0 + v0 * t + 0.5 * g * t * t
        scale = np.linalg.norm(expect - x0)
        assert np.linalg.norm(sim.x[0] - expect) <= 1e-9 * scale


def test_velocity_set_mid_flight_follows_parabola():
    """set_velocities between steps sets what sim.v reads back (exactly), and the particle then
    follows the parabola from that state. Verlet keeps velocity as (x - x*) / h, the mean over
    the last substep, so the launch velocity is effectively v + g h / 2 (g the gravity vector,
    pointing down): the particle runs g h tau / 2 below the parabola after tau seconds (checked
    to 1 % of that offset), an offset that vanishes with the substep h."""
    substeps, dt = 4, 1.0 / 24.0
    h = dt / substeps
    sim, ids = _free_particle((0.0, 0.0, 10.0), substeps)
    for _ in range(5):
        sim.step(dt)
    v1 = np.array([[2.0, 0.5, 4.0]])
    sim.set_velocities(ids, v1)
    assert np.allclose(sim.v, v1, rtol=0, atol=1e-12)
    x1 = sim.x[0].copy()
    g = np.array([0.0, 0.0, -G])
    for k in range(1, 25):
        sim.step(dt)
        tau = k * dt
        err = sim.x[0] - (x1 + v1[0] * tau + 0.5 * g * tau * tau)
        assert abs(err[0]) < 1e-9 and abs(err[1]) < 1e-9           # no acceleration there
        assert abs(err[2] + 0.5 * G * h * tau) <= 0.01 * 0.5 * G * h * tau


# ---------------------------------------------------------------------------- pendulum
def test_stiff_pendulum_small_angle_period():
    """A pinned particle and a free one joined by a rigid stick (compliance 0, no damping, no
    drag), released at 5 degrees: the period measured from zero crossings over 10 s is within
    1 % of 2 pi sqrt(L / g) (the 5-degree amplitude correction, 0.05 %, is included), the
    stick keeps its length to 1e-6 and the amplitude does not grow."""
    length, theta0 = 1.3, np.radians(5.0)
    b = Builder()
    ids = b.add_particles([[0.0, 0.0, 2.0],
                           [length * np.sin(theta0), 0.0, 2.0 - length * np.cos(theta0)]])
    b.pin(ids[:1])
    b.add_sticks([[0, 1]], compliance=0.0)
    sim = Simulation(b.build(), substeps=20, iterations=1, damping=0.0, air_drag=0.0)
    dt = 1.0 / 60.0
    xs = np.empty(600)
    for k in range(xs.size):
        sim.step(dt)
        xs[k] = sim.x[1, 0]
    t = dt * np.arange(1, xs.size + 1)
    k = np.nonzero(np.sign(xs[:-1]) * np.sign(xs[1:]) < 0)[0]
    crossings = t[k] - xs[k] * dt / (xs[k + 1] - xs[k])
    period = 2.0 * np.mean(np.diff(crossings))
    expected = 2.0 * np.pi * np.sqrt(length / G) * (1.0 + theta0 ** 2 / 16.0)
    assert crossings.size >= 8
    assert abs(period / expected - 1.0) < 0.01
    assert sim.max_stick_strain() < 1e-6
    assert np.abs(xs).max() <= length * np.sin(theta0) * (1.0 + 1e-6)


# ---------------------------------------------------------------------------- catenary
def _catenary_parameter(span, length):
    """a with 2 a sinh(span / (2 a)) = length, by bisection on log a (the left side falls
    monotonically from infinity to span as a grows)."""
    lo, hi = np.log(1e-4 * span), np.log(1e4 * span)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        a = np.exp(mid)
        if 2.0 * a * np.sinh(span / (2.0 * a)) > length:
            lo = mid
        else:
            hi = mid
    return np.exp(0.5 * (lo + hi))


def test_hanging_chain_is_a_catenary():
    """40 rigid sticks (chain length 3 m) hung between two pins 2 m apart, started as a V and
    settled with damping: every node lies on y = a cosh(x / a) + c (a from the chain length
    and the span, c from the pins) within 2 % of the span."""
    n, span, length = 40, 2.0, 3.0
    a = _catenary_parameter(span, length)
    assert abs(2.0 * a * np.sinh(span / (2.0 * a)) - length) < 1e-9
    s = np.linspace(0.0, length, n + 1)
    half = 0.5 * length
    angle = np.arccos((0.5 * span) / half)                  # start as a V of two straight arms
    along = np.where(s <= half, s, s - length)               # signed distance from the near pin
    x = np.where(s <= half, -0.5 * span, 0.5 * span) + along * np.cos(angle)
    z = -np.abs(along) * np.sin(angle)
    b = Builder()
    ids = b.add_particles(np.column_stack([x, np.zeros_like(x), z]), mass=0.05)
    b.pin(ids[[0, -1]])
    b.add_sticks(np.column_stack([ids[:-1], ids[1:]]), compliance=0.0, rest_length=length / n)
    sim = Simulation(b.build(), substeps=40, iterations=1, damping=0.9, air_drag=0.0)
    for _ in range(24 * 8):
        sim.step(1.0 / 24.0)
    assert np.abs(sim.v).max() < 1e-3                        # settled
    c = -a * np.cosh(0.5 * span / a)                         # pins at z = 0
    err = np.abs(sim.x[:, 2] - (a * np.cosh(sim.x[:, 0] / a) + c)).max()
    assert err < 0.02 * span
    assert np.abs(sim.x[:, 1]).max() < 1e-12                 # stays in its plane


# ---------------------------------------------------------------------------- pins
def _pendulum_with_pin(substeps):
    b = Builder()
    ids = b.add_particles([[0.0, 0.0, 1.0], [0.5, 0.2, 0.6]], mass=[2.0, 0.3])
    b.pin(ids[:1])
    b.add_sticks([[0, 1]], compliance=1e-4)
    return Simulation(b.build(), substeps=substeps, iterations=2, damping=0.0, air_drag=0.0)


def test_pinned_particle_never_moves():
    """A pinned particle under gravity, pulled by a swinging particle through a stick, stays
    bit-exactly where it was built, with zero velocity, for 2 s."""
    sim = _pendulum_with_pin(8)
    p0 = sim.x[0].copy()
    for _ in range(48):
        sim.step(1.0 / 24.0)
        assert np.array_equal(sim.x[0], p0)
        assert np.array_equal(sim.v[0], np.zeros(3))
    assert np.linalg.norm(sim.x[1] - [0.5, 0.2, 0.6]) > 0.1  # the free one did swing


def test_pin_target_moves_along_straight_line():
    """set_pin_targets moves a pinned particle to its target within one step along the straight
    line, at constant speed over the substeps: it arrives exactly (1e-12 m), its velocity is
    (target - start) / dt, it stays at the target afterwards, and a particle hanging from it
    moves exactly as when the same line is fed one substep at a time (1e-10 m)."""
    substeps, dt = 6, 1.0 / 24.0
    start = np.array([0.0, 0.0, 1.0])
    target = np.array([0.3, -0.2, 1.4])
    a = _pendulum_with_pin(substeps)
    a.set_pin_targets([0], target[None])
    a.step(dt)
    assert np.allclose(a.x[0], target, rtol=0, atol=1e-12)
    assert np.allclose(a.v[0], (target - start) / dt, rtol=0, atol=1e-9)

    # the same motion as substeps single-substep steps, each to the next point of the line
    b = _pendulum_with_pin(1)
    for s in range(substeps):
        b.set_pin_targets([0], (start + (target - start) * ((s + 1) / substeps))[None])
        b.step(dt / substeps)
    assert np.allclose(b.x, a.x, rtol=0, atol=1e-10)

    for _ in range(3):
        a.step(dt)
        assert np.allclose(a.x[0], target, rtol=0, atol=1e-12)


@pytest.mark.parametrize("substeps", [1, 7, 40])
def test_damping_is_a_fraction_per_second_at_any_substep_count(substeps):
    """damping d removes the fraction d of the velocity per second: after T seconds with no
    other force v = v0 (1 - d)^T, whatever the substep count (per-particle set_damping on top
    of the global damping multiplies: (1 - d_global)(1 - d_particle)). Tolerance 1e-9."""
    b = Builder()
    ids = b.add_particles(np.zeros((3, 3)) + [[0, 0, 0], [1, 0, 0], [2, 0, 0]])
    sim = Simulation(b.build(), substeps=substeps, gravity=(0, 0, 0), damping=0.2, air_drag=0.0)
    sim.set_velocities(ids, np.tile([0.0, 1.0, 0.0], (3, 1)))
    sim.set_damping(ids[1], 0.5)
    sim.set_damping(ids[2], 1.0)
    for _ in range(48):
        sim.step(1 / 24)
    v = sim.v[:, 1]
    assert v[0] == pytest.approx(0.8 ** 2, rel=1e-9)
    assert v[1] == pytest.approx((0.8 * 0.5) ** 2, rel=1e-9)
    assert v[2] == 0.0
    with pytest.raises(ValueError, match="damping"):
        sim.set_damping(ids[0], 1.5)


def test_wind_pushes_a_strand_through_its_exposed_area():
    """A lone particle with exposed area A [m^2] in a steady wind u, no gravity: drag F =
    drag * A * (u - v) drives it to the wind's speed exponentially with rate drag * A / m
    (within 1 % after 1 s: the force is evaluated once per step); with no area the wind does
    nothing."""
    b = Builder()
    ids = b.add_particles([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]], mass=0.01, area=[0.002, 0.0])
    sim = Simulation(b.build(), substeps=40, gravity=(0, 0, 0), air_drag=1.0)
    sim.set_wind((3.0, 0.0, 0.0))
    for _ in range(24):
        sim.step(1 / 24)
    rate = 1.0 * 0.002 / 0.01
    assert sim.v[ids[0], 0] == pytest.approx(3.0 * (1 - np.exp(-rate * 1.0)), rel=1e-2)
    assert sim.v[ids[1], 0] == 0.0

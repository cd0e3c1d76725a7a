"""The colliders' broad-phase margin per particle (solver/collision/reach.py): each particle's
reach comes from the fastest motion among the islands joined to its own, not from the scene's
fastest particle.

Each test fails when the margin is wrong in the way it names: a slow body that takes the
scene's fastest speed (the work this saves), or a slow body struck during the step, or dragged
by a moving pin, that keeps its own small reach and so misses the collider it is driven into.
"""

import numpy as np
import pytest

from solver import Builder, Simulation, backend as _backend
from solver.collision.reach import particle_reach
from solver.sleep import Sleep

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])
CORNERS = np.array([[x, y, z] for x in (-.5, .5) for y in (-.5, .5) for z in (-.5, .5)])
FACES = np.array([[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4],
                  [1, 5, 7, 3]])
SIDE = 0.4      # [m] crate edge
DRAG = 1.0      # [kg/(m^2 s)] the air's drag coefficient (Simulation's default)


def _motion2(x, xp):
    """(n,) [m^2] |x - xp|^2 of (n, 3) positions: particle_reach's input."""
    d = x - xp
    return np.einsum("ij,ij->i", d, d)


def _crate(b, centre, mass):
    ids = b.add_particles(np.asarray(centre) + CORNERS * SIDE, mass=mass / 8, friction=0.3)
    b.add_shape_match(ids, stiffness=1.0, surface=ids[FACES])
    return ids


def _two_crates():
    b = Builder()
    slow = _crate(b, (0.0, 0.0, SIDE / 2), 10.0)
    fast = _crate(b, (-3.0, 0.0, SIDE / 2), 100.0)
    return b.build(), slow, fast


def test_a_slow_body_keeps_its_own_reach_beside_a_fast_one():
    model, slow, fast = _two_crates()
    x = model.particle_x0.copy()
    xp = x.copy()
    h, dt = 1 / 960, 1 / 24
    xp[fast, 0] -= 20.0 * h                       # 20 m/s toward the slow crate
    reach = particle_reach(_motion2(x, xp), h, dt, 9.81, 0.0, Sleep(model, True), [],
                           np.zeros((0, 4), np.int64), DRAG)
    gravity_term = 2 * 0.5 * 9.81 * dt * dt + 1e-3
    assert reach[slow] == pytest.approx(np.full(8, gravity_term))
    assert reach[fast] == pytest.approx(np.full(8, 2 * 20.0 * dt + gravity_term))


def test_a_contact_and_a_moving_pin_give_their_speed_to_the_island():
    model, slow, fast = _two_crates()
    x = model.particle_x0.copy()
    xp = x.copy()
    h, dt = 1 / 960, 1 / 24
    xp[fast, 0] -= 20.0 * h
    sleep = Sleep(model, True)
    contact = np.array([[slow[0], fast[1], fast[3], fast[5]]], np.int64)
    reach = particle_reach(_motion2(x, xp), h, dt, 9.81, 0.0, sleep, [], contact, DRAG)
    assert reach[slow] == pytest.approx(reach[fast])
    # a hard pin on one corner whose target moves 0.5 m in the step: 12 m/s for the whole crate
    target = x[slow[:1]] + [0.5, 0.0, 0.0]
    reach = particle_reach(_motion2(x, x), h, dt, 0.0, 0.0, sleep,
                           [(slow[:1], x[slow[:1]], target)], np.zeros((0, 4), np.int64), DRAG)
    assert reach[slow] == pytest.approx(np.full(8, 2 * 12.0 * dt + 1e-3))
    assert reach[fast] == pytest.approx(np.full(8, 1e-3))


def _sheet(b, density, z=1.0):
    """A flat 5 x 5 sheet, 1 m square, at height z: (n,) particle ids."""
    gx, gy = np.meshgrid(np.linspace(0, 1, 5), np.linspace(0, 1, 5), indexing="ij")
    grid = np.column_stack([gx.ravel() + 2.0, gy.ravel(), np.full(25, z)])
    q = (np.arange(4)[:, None] * 5 + np.arange(4)[None, :]).ravel()
    return b.add_cloth(grid, np.column_stack([q, q + 5, q + 6, q + 1]), density=density)


def _air_share(model, ids, dt, h, drag=DRAG):
    """min(1, k (dt + h) / 2) for the fastest drag rate k = drag A / m among particles ids,
    over a step of dt in substeps of h."""
    k = drag * np.max(model.particle_area[ids] * model.particle_inv_mass[ids])
    return min(1.0, k * (dt + h) / 2)


def test_the_wind_adds_to_the_reach_of_what_feels_the_air_only():
    """A crate (no area: the wind does not move it) keeps its own reach in a 5 m/s wind; a
    cloth beside it takes the share of the wind's speed its drag rate allows in a step, and so
    does the crate when a contact joins it to the cloth."""
    b = Builder()
    crate = _crate(b, (0, 0, 1), 10.0)
    cloth = _sheet(b, 0.3)
    model = b.build()
    x = model.particle_x0.copy()
    h, dt, wind = 1 / 960, 1 / 24, 5.0
    sleep = Sleep(model, True)
    none = np.zeros((0, 4), np.int64)
    share = _air_share(model, cloth, dt, h)
    assert 0.0 < share < 0.2                     # 0.3 kg/m^2: k = 3.3 / s, k dt / 2 = 0.07
    reach = particle_reach(_motion2(x, x), h, dt, 0.0, wind, sleep, [], none, DRAG)
    assert reach[crate] == pytest.approx(np.full(8, 1e-3))
    assert reach[cloth] == pytest.approx(np.full(25, 2 * wind * share * dt + 1e-3))
    contact = np.array([[crate[0], cloth[0], cloth[1], cloth[5]]], np.int64)
    reach = particle_reach(_motion2(x, x), h, dt, 0.0, wind, sleep, [], contact, DRAG)
    assert reach[crate] == pytest.approx(np.full(8, 2 * wind * share * dt + 1e-3))
    # without air (drag 0) the wind moves nothing
    reach = particle_reach(_motion2(x, x), h, dt, 0.0, wind, sleep, [], none, 0.0)
    assert reach[cloth] == pytest.approx(np.full(25, 1e-3))


@pytest.mark.parametrize("density", [0.45, 0.05, 0.005])
def test_the_reach_bounds_how_far_the_wind_carries_a_cloth(density):
    """A sheet at rest in a 10 m/s wind against its face (no gravity: the wind alone) travels
    u (dt - (1 - e^{-k dt}) / k) in a step (a little farther in substeps), which the reach's
    air term, u min(k (dt + h) / 2, 1) dt (before the factor 2), bounds within a third: a
    heavy linen (k dt / 2 = 0.05), a light voile (0.4) and a tissue (k dt / 2 = 4, the cap).
    It fails with the air term left out or halved (the sheet outruns its reach), or uncapped
    (the tissue's bound about five times its travel)."""
    b = Builder()
    cloth = _sheet(b, density)
    model = b.build()
    sim = Simulation(model, gravity=(0.0, 0.0, 0.0))
    wind, dt = 10.0, 1 / 24
    sim.set_wind(velocity=(0.0, 0.0, wind))
    x0 = sim.x.copy()
    sim.step(dt)
    travel = float(np.max(np.abs(sim.x[cloth] - x0[cloth])))
    reach = particle_reach(np.zeros(model.particle_count), dt / sim.substeps, dt, 0.0, wind,
                           Sleep(model, True), [], np.zeros((0, 4), np.int64), sim.air_drag)
    bound = (reach[cloth].max() - 1e-3) / 2          # the air term, without the factor 2
    k = np.max(model.particle_area[cloth] * model.particle_inv_mass[cloth])
    exact = wind * (dt - (1 - np.exp(-k * dt)) / k)
    assert travel == pytest.approx(exact, rel=0.06)  # the substeps' velocity per substep
    assert travel <= bound <= 1.34 * travel


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_struck_crate_is_stopped_by_the_wall_beside_it(backend):
    """A crate at 4 m/s strikes an equal crate resting 2 cm from a wall (a box collider 0.3 m
    thick). The struck crate is thrown into the wall within the step of the impact, so the
    contact must give it the striker's reach: with its own (resting) reach it is no candidate
    of the wall and ends that step 47 mm inside it (measured with the join left out)."""
    b = Builder()
    slow = _crate(b, (0.0, 0.0, SIDE / 2), 10.0)
    fast = _crate(b, (-0.6, 0.0, SIDE / 2), 10.0)
    b.add_collider("plane", friction=0.3)
    wall_x = SIDE / 2 + 0.02
    wall = np.eye(4)
    wall[:3, 3] = (wall_x + 0.15, 0.0, 0.5)
    b.add_collider("box", matrix=wall, size=(0.3, 2.0, 1.0))
    sim = Simulation(b.build(), backend=backend, gravity=(0.0, 0.0, 0.0))
    sim.set_velocities(fast, np.tile([4.0, 0.0, 0.0], (8, 1)))
    deepest = 0.0
    for _ in range(6):
        sim.step(1 / 24)
        deepest = max(deepest, float(sim.x[slow, 0].max() - wall_x))
    assert sim.x[fast, 0].max() > -0.25          # the strike happened
    assert deepest < 2e-3


# 1000 runs on the calling thread, 20000 in parallel (compiled_forces.SERIAL_BELOW)
@pytest.mark.parametrize("count", [1000, 20000])
@pytest.mark.parametrize("backend", BACKENDS)
def test_squared_motion_is_each_particles_squared_distance(backend, count):
    """The motion the reach, sleep and runaway checks read: |A_i - B_i|^2 per particle, inf
    where it overflows (a runaway particle), on either branch of the compiled kernel."""
    from solver.kernels import table
    rng = np.random.default_rng(5)
    A = rng.uniform(-3.0, 3.0, (3, count))
    B = A + rng.normal(0.0, 0.1, (3, count))
    A[0, 7] = 1e300                               # squares past the largest float
    out = np.full(count, -1.0)
    table(backend).squared_motion(A, B, out)
    d = A - B
    with np.errstate(over="ignore"):
        expect = d[0] ** 2 + d[1] ** 2 + d[2] ** 2
    assert out[7] == np.inf
    assert np.allclose(out, expect, rtol=1e-15, atol=0.0)
    assert np.all(out[np.arange(count) != 7] < 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sheet_blown_into_a_wall_in_its_first_step_stops_there(backend):
    """A light sheet (0.05 kg/m^2) at rest 10 cm below a 2 cm plate, in a 10 m/s wind up (no
    gravity), travels 14 cm in the first step: only the air term of its reach (18 cm before
    the factor 2) makes it a candidate of the plate, which then holds it. Without that term
    it is none and ends the step through the plate (fails so, checked)."""
    b = Builder()
    cloth = _sheet(b, 0.05)
    plate = np.eye(4)
    plate[:3, 3] = (2.5, 0.5, 1.11)
    b.add_collider("box", matrix=plate, size=(2.0, 2.0, 0.02))
    sim = Simulation(b.build(), backend=backend, gravity=(0.0, 0.0, 0.0))
    sim.set_wind(velocity=(0.0, 0.0, 10.0))
    for _ in range(3):
        sim.step(1 / 24)
        assert sim.x[cloth, 2].max() < 1.10 + 1e-3     # below the plate's underside
    assert sim.x[cloth, 2].min() > 1.09                 # it got there

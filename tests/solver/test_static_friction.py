"""Static friction of rigid bodies at its statics threshold (collision/rigid.py, "Normal
impulses first"): a box leaning on a wall, its foot on the floor, stands exactly where the
statics of its two contacts say it can. Every test runs on both backends (the ``backend``
fixture)."""

import numpy as np
import pytest

from solver import Builder, Simulation
from test_bodies import BACKENDS, CUBE, _box  # noqa: E402  (tests/solver is on the path)

LEAN = np.radians(25.0)        # from the vertical
HALF = np.array([0.1, 0.1, 0.5])   # [m] the leaning box: 0.2 x 0.2 x 1 m


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def _leaning_box():
    """(8, 3) [m] the corners of the box leaning LEAN on the wall's face x = 0, its foot on
    the floor z = 0 (0.1 mm off both)."""
    c, s = np.cos(LEAN), np.sin(LEAN)
    turn = np.array([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]])
    x = (CUBE * HALF) @ turn.T
    return x + [1e-4 - x[:, 0].min(), 0.0, 1e-4 - x[:, 2].min()]


def _threshold(x):
    """The least friction that holds the box, with the same friction at both contacts and
    both at their bound (a ladder's statics): the foot's normal N and friction mu N towards
    the wall, the wall's normal mu N and friction mu^2 N upwards balance the weight, and
    their moments about the centre, with r_f, r_w the foot and wall corners from it,
    r_wx mu^2 + (r_fz - r_wz) mu + r_fx = 0."""
    centre = x.mean(axis=0)
    foot = x[np.argmin(x[:, 2])] - centre
    wall = x[np.argmin(x[:, 0])] - centre
    roots = np.roots([wall[0], foot[2] - wall[2], foot[0]])
    return float(roots[roots > 0].min())


@pytest.mark.parametrize("wall, floor", [("body", "plane"), ("body", "slab"),
                                         ("collider", "plane")])
@pytest.mark.parametrize("margin", [0.9, 1.1])
def test_a_box_leaning_on_a_wall_stands_from_its_statics_threshold(backend, wall, floor,
                                                                   margin):
    """The box (10 kg) against the wall (a pinned box, or a box collider) and on the floor (a
    plane collider, or a pinned box: with the pinned wall, both its contacts are then between
    bodies; with the box collider, both are collider contacts), the same friction everywhere:
    10 % above the statics threshold (0.128 here) it stands still, 10 % below it slides down.
    With each contact's friction taken right after its own normal impulse, which turns the
    body and slides that very corner sideways, the friction spent its bound on that slide:
    10 % above the threshold the box crept 0.7 mm/s (each setting 1.2 to 1.35 mm in 2 s),
    0.2 mm/s at 25 % above. The threshold holds to within 2 % since every normal impulse of a
    pass comes first (collision/rigid.py, "Normal impulses first")."""
    x = _leaning_box()
    mu = margin * _threshold(x)
    b = Builder()
    if wall == "body":
        _box(b, np.array([-0.5, 0.0, 1.0]), np.array([0.5, 1.0, 1.0]), mass=50.0, pinned=True,
             friction=mu)
    else:
        at = np.eye(4)
        at[:3, 3] = (-0.5, 0.0, 1.0)
        b.add_collider("box", matrix=at, size=(1.0, 2.0, 2.0), friction=mu)
    if floor == "plane":
        b.add_collider("plane", friction=mu)
    else:
        _box(b, np.array([0.0, 0.0, -0.1]), np.array([1.0, 1.0, 0.1]), mass=50.0, pinned=True,
             friction=mu)
    ids = b.add_particles(x, mass=10.0 / 8, friction=mu)
    b.add_shape_match(ids, surface=ids[[[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1],
                                        [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]])
    sim = Simulation(b.build(), backend=backend, sleep=False, air_drag=0.0)
    for _ in range(12):                    # 0.5 s: the contacts settle
        sim.step(1 / 24)
    start = sim.x[ids].mean(axis=0)
    for _ in range(48):                    # 2 s
        sim.step(1 / 24)
    moved = sim.x[ids].mean(axis=0) - start
    if margin > 1:
        assert np.linalg.norm(moved) < 1e-4, moved
    else:
        assert moved[2] < -0.05, moved     # sliding down the wall, falling

"""A body's own friction at colliders (collision/project.combined_friction, and its scalar
mirror in kernels/compiled_contact.py): a contact with a collider takes the geometric mean of
the body's and the collider's kinetic coefficients, the collider's static coefficient scaled by
the same factor. Before, only the collider's counted: a crate of friction 0.1 slid on a floor
of 0.5 exactly as one of 0.5, and a cloth's friction did nothing against a character.

Every path that projects a body onto a collider is tested against Coulomb's numbers, on both
backends (the ``backend`` fixture): a free particle (the particle projection), a rigid box
(the contacts solved on the bodies, collision/rigid.py), a tetrahedral body (its embedded
points). Each test fails when the body's friction is ignored at colliders (the coefficients
then are the collider's alone) or combined another way (the mean).
"""

import numpy as np
import pytest

from solver import Builder, Simulation
from solver.collision.project import combined_friction
from test_bodies import BACKENDS, _box, _pushed  # noqa: E402  (tests/solver is on the path)

G = 9.81


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def _slide(v, mu):
    """How far [m] a body launched at v [m/s] on level ground slides under Coulomb friction mu."""
    return v * v / (2.0 * mu * G)


@pytest.mark.parametrize("mine", [0.1, 0.5, 2.0])
def test_a_particle_slides_by_the_geometric_mean_of_its_and_the_floors_friction(backend, mine):
    """A particle launched at 1 m/s along a floor of friction 0.5 stops after v^2 / (2 mu' g),
    mu' = sqrt(0.5 mine): 0.228 m at 0.1, 0.102 at 0.5 (the floor's own: unchanged), 0.051 at
    2.0 (the mean would give 0.170 and 0.041; the floor's alone 0.102)."""
    b = Builder()
    p = b.add_particles([[0.0, 0.0, 0.01]], mass=1.0, radius=0.01, friction=mine)
    b.add_collider("plane", friction=0.5)
    sim = Simulation(b.build(), backend=backend, air_drag=0.0, damping=0.0, sleep=False)
    sim.set_velocities(p, [[1.0, 0.0, 0.0]])
    for _ in range(24):
        sim.step(1 / 24)
    assert abs(sim.v[0]).max() < 1e-6                      # stopped
    assert sim.x[0, 0] == pytest.approx(_slide(1.0, np.sqrt(0.5 * mine)), rel=0.03)


def test_a_frictionless_particle_slides_on_a_rough_floor_and_a_frictionless_floor_stays_so(
        backend):
    """Either side at 0 makes the contact frictionless: a particle of friction 0 keeps its
    1 m/s on a floor of 0.8, and one of 2.0 keeps it on a floor of 0."""
    for mine, floor in ((0.0, 0.8), (2.0, 0.0)):
        b = Builder()
        p = b.add_particles([[0.0, 0.0, 0.01]], mass=1.0, radius=0.01, friction=mine)
        b.add_collider("plane", friction=floor)
        sim = Simulation(b.build(), backend=backend, air_drag=0.0, damping=0.0, sleep=False)
        sim.set_velocities(p, [[1.0, 0.0, 0.0]])
        for _ in range(24):
            sim.step(1 / 24)
        assert sim.v[0, 0] == pytest.approx(1.0, abs=1e-9), (mine, floor)
        assert sim.x[0, 0] == pytest.approx(1.0, abs=1e-6), (mine, floor)


def _particle_on_slope(backend, tan_theta, mine):
    """A particle on a plane tilted by theta about X of static friction 0.8 and kinetic 0.5,
    its own friction mine: (simulation, unit down-slope direction, theta [rad])."""
    theta = np.arctan(tan_theta)
    c, s = np.cos(theta), np.sin(theta)
    rot = np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    m = np.eye(4)
    m[:3, :3] = rot
    b = Builder()
    b.add_particles([rot @ [0.0, 0.0, 0.01]], mass=1.0, radius=0.01, friction=mine)
    b.add_collider("plane", matrix=m, friction=0.5, static_friction=0.8)
    sim = Simulation(b.build(), backend=backend, air_drag=0.0, damping=0.0, sleep=False)
    return sim, np.array([0.0, -c, -s]), theta


@pytest.mark.parametrize("tan_theta", [0.45, 0.56])
def test_the_colliders_static_friction_scales_with_the_bodys_friction(backend, tan_theta):
    """The collider's static / kinetic ratio stays: a particle of friction 0.2 on a slope of
    static 0.8 and kinetic 0.5 holds while tan(theta) < 0.8 sqrt(0.2 / 0.5) = 0.506 and
    slides above it with acceleration g (sin - mu_k' cos), mu_k' = sqrt(0.2 x 0.5) = 0.316
    (the collider's own coefficients would hold it at both angles)."""
    sim, down, theta = _particle_on_slope(backend, tan_theta, 0.2)
    for _ in range(6):
        sim.step(1 / 24)
    x0 = sim.x[0].copy()
    t = 1.0
    for _ in range(24):
        sim.step(1 / 24)
    moved = (sim.x[0] - x0) @ down
    if tan_theta < 0.506:
        assert abs(moved) < 1e-4, moved
    else:
        a = G * (np.sin(theta) - np.sqrt(0.2 * 0.5) * np.cos(theta))
        v0 = a * 0.25                                  # sliding from the first step on
        assert moved == pytest.approx(v0 * t + 0.5 * a * t * t, rel=0.05)


@pytest.mark.parametrize("mine", [0.1, 1.2])
def test_a_rigid_box_slides_by_its_own_friction_on_the_ground(backend, mine):
    """A rigid box (its contacts with the ground solved on the body, collision/rigid.py) of
    friction mine, at rest on a floor of 0.5 and pushed at 1 m/s, slides v^2 / (2 mu' g),
    mu' = sqrt(0.5 mine): 0.228 m at 0.1 (the mean would give 0.170, the floor's alone 0.102),
    0.066 at 1.2 (a taller mu' would tip it: half its width over half its height is 1)."""
    b = Builder()
    top = _box(b, np.array([0.0, 0.0, 0.25]), 0.25, mass=20.0, friction=mine)
    b.add_collider("plane", friction=0.5)
    sim = Simulation(b.build(), backend=backend, sleep=False, air_drag=0.0)
    assert _pushed(sim, top, 12) == pytest.approx(_slide(1.0, np.sqrt(0.5 * mine)), rel=0.1)


@pytest.mark.parametrize("mine", [0.1, 0.8])
def test_a_tetrahedral_body_slides_by_its_own_friction_on_the_ground(backend, mine):
    """A tetrahedral body resting on the embedded corners of a 0.4 m cube (only they touch the
    ground; a point's friction is its tetrahedron's corners' mean), launched at 1 m/s, slides
    v^2 / (2 mu' g), mu' = sqrt(0.5 mine): 0.228 m at 0.1 (the mean would give 0.170, the
    floor's alone 0.102), 0.081 at 0.8."""
    tet = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0],
                    [-1.0, -1.0, 1.0]]) * 0.1
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * 0.2
    lift = np.array([0.0, 0.0, 0.2])
    b = Builder()
    ids, _ = b.add_tetra_body(tet + lift, cube + lift, mass=2.0)
    b.add_collider("plane", friction=0.5)
    sim = Simulation(b.build(), backend=backend, sleep=False, air_drag=0.0, damping=0.0)
    sim.set_friction(ids, mine)
    assert _pushed(sim, ids, 6) == pytest.approx(_slide(1.0, np.sqrt(0.5 * mine)), rel=0.1)


def test_equal_sides_keep_their_friction_to_the_bit(backend):
    """A contact between two sides of the same friction takes exactly that value, whatever it
    is: a particle of friction 0.19 resting on a pinned triangle whose corners are 0.19 (where
    (f + f + f) / 3 is not f, and sqrt(f x that) is not f either: a triangle's side is its
    corners' value when they are equal, not their computed mean), and the collider rule."""
    b = Builder()
    tri = b.add_particles([[-1.0, -1.0, 0.0], [1.0, -1.0, 0.0], [0.0, 1.5, 0.0]], radius=0.01,
                          friction=0.19)
    b.pin(tri)
    b.add_contact_surface([[0, 1, 2]])
    b.add_particles([[0.1, 0.0, 0.03]], radius=0.02, friction=0.19)
    sim = Simulation(b.build(), backend=backend, sleep=False)
    sim.step(1 / 24)
    mu = sim.contacts.body_mu
    assert len(mu) and np.all(mu == 0.19), mu
    ms, mk = combined_friction(np.float64(0.3), np.float64(0.19), np.array([0.19]))
    assert ms[0] == 0.3 and mk[0] == 0.19

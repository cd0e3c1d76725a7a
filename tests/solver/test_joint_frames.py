"""The joints read a rigid body's frame from the shape solve that ran just before them
(constraints/joints.py, module docstring; shapes.ShapeSolver.origin, rot, exact) instead of a
second polar decomposition of its particles.

The shortcut is only right where the shape solve leaves every particle on its goal, so the tests
check (1) that the goal pose it stores is the particles' mass-weighted frame afterwards, to
rounding, also with contacts weighting the solve (the boost moves the goal's centre away from the
centre of mass), in both backends; (2) that clusters the solve cannot leave on their goals
(compliant, pinned, sharing a particle) are not marked exact; (3) that a jointed chain moves the
same, to rounding, with the shortcut turned off.
"""

import numpy as np
import pytest

from solver import Builder, Simulation, backend as _backend
from solver.constraints.joints import body_frames_of

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])


def _chain(ground=True):
    """Three capsule bones joined by ball joints, lying tilted on a plane."""
    b = Builder()
    bodies = []
    for i in range(3):
        head = np.array([0.3 * i, 0.0, 0.12 + 0.02 * i])
        _, body = b.add_capsule_body(head, head + (0.3, 0.0, 0.02), 0.05, mass=2.0)
        bodies.append(body)
    for i in range(2):
        b.add_joint(bodies[i], bodies[i + 1], (0.3 * (i + 1), 0.0, 0.12 + 0.02 * (i + 1)),
                    kind="ball", axis=(1.0, 0.0, 0.0), limits=(0.5, -0.3, 0.3))
    if ground:
        b.add_collider("plane", friction=0.6)
    return b


@pytest.mark.parametrize("backend", BACKENDS)
def test_goal_pose_is_the_particles_frame_after_the_shape_solve(backend):
    sim = Simulation(_chain().build(), substeps=4, backend=backend)
    rng = np.random.default_rng(3)
    for _ in range(3):
        sim.step(1 / 24)
    sh = sim.shapes
    X = np.array(sim.state.X)
    X += rng.normal(0.0, 0.01, X.shape)              # deformed: the solve has work to do
    contact = np.zeros(X.shape[1], bool)
    contact[sh.particles[::3]] = True                # boosted entries: goal centre != c.o.m.
    args = sh.kernel_args()
    (particles, rest_offset, start, color_offsets, mass, collider_boost, w, alpha, lam,
     body_boost) = args[:10]
    origin, rot = sh.origin, sh.rot
    origin[:] = 0.0
    rot[:] = 0.0
    # the contacts as particle contacts with another body (cloth, a soft body): shapes.BOOST
    # (a rigid body's collider contacts are solved on the body, and weigh 1 in the fit)
    assert (body_boost > 1).all()
    sim.kernels.solve_shapes(X, particles, rest_offset, start, color_offsets, mass,
                             collider_boost, w, alpha, lam.copy(), np.zeros_like(contact),
                             contact, body_boost, origin, rot, sh.basis,
                             np.zeros(len(start) - 1, bool))
    bodies = np.arange(len(start) - 1)
    entries = np.arange(len(particles))
    c, R = body_frames_of(X, particles, rest_offset, mass, entries, start.astype(np.int64),
                          bodies)
    assert sh.exact.all()
    assert np.abs(origin - c).max() < 1e-12
    assert np.abs(rot - R).max() < 1e-12
    # and the goal's centre really is off the plain centre of the deformed input: the test
    # would not notice a solve that stored the mass-weighted centre instead
    plain = body_frames_of(np.array(sim.state.X) + 0.0, particles, rest_offset, mass, entries,
                           start.astype(np.int64), bodies)[0]
    assert np.abs(plain - c).max() > 1e-4


def test_only_clusters_left_on_their_goals_are_exact():
    b = _chain(ground=False)
    ids = b.add_particles(np.array([[2.0, 0, 1], [2.1, 0, 1], [2.0, 0.1, 1], [2.0, 0, 1.1]]))
    b.add_shape_match(ids, stiffness=1.0)                             # rigid: exact
    soft = b.add_particles(np.array([[3.0, 0, 1], [3.1, 0, 1], [3.0, 0.1, 1], [3.0, 0, 1.1]]))
    b.add_shape_match(soft, stiffness=0.5)                            # compliant
    pinned = b.add_particles(np.array([[4.0, 0, 1], [4.1, 0, 1], [4.0, 0.1, 1], [4.0, 0, 1.1]]))
    b.add_shape_match(pinned, stiffness=1.0)
    b.pin(pinned[:1])                                                 # kinematic
    two = b.add_particles(np.array([[5.0, 0, 1], [5.1, 0, 1], [5.0, 0.1, 1], [5.0, 0, 1.1],
                                    [5.1, 0.1, 1]]))
    b.add_shape_match(two[:4], stiffness=1.0)                         # sharing particles
    b.add_shape_match(two[1:], stiffness=1.0)
    sim = Simulation(b.build(), substeps=2, backend="numpy")
    sim.step(1 / 24)
    assert sim.shapes.exact.tolist() == [True] * 4 + [False, False, False, False]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_jointed_chain_moves_the_same_without_the_shortcut(backend, monkeypatch):
    def run():
        sim = Simulation(_chain().build(), substeps=8, backend=backend)
        sim.set_velocities(np.arange(sim.model.particle_count),
                           np.tile((0.5, 1.5, 2.0), (sim.model.particle_count, 1)))
        for _ in range(12):
            sim.step(1 / 24)
        return np.array(sim.x)

    fast = run()
    from solver.constraints import shapes
    begin = shapes.ShapeSolver.begin_step

    def without(self, *a):
        begin(self, *a)
        self.exact[:] = False                  # every frame from a polar decomposition

    monkeypatch.setattr(shapes.ShapeSolver, "begin_step", without)
    slow = run()
    assert not np.array_equal(fast, slow)      # the shortcut was taken: rounding differs
    assert np.abs(fast - slow).max() < 1e-9


def test_body_frames_are_the_same_bits_on_both_backends():
    """Simulation.body_frames (the kernel table's body_frames: the add-on reads every bone and
    rigid body through it once a frame) gives the same centres and rotations on both backends,
    and they are the particles' frames: a turned, shifted rigid body's rotation and centre."""
    if len(BACKENDS) < 2:
        pytest.skip("compiled kernels only")
    from solver.kernels import table
    rng = np.random.default_rng(4)
    b = Builder()
    for i in range(30):
        b.add_capsule_body(rng.normal(size=3), rng.normal(size=3) + 0.5, 0.05, mass=1.0 + i)
    model = b.build()
    k = len(model.shape_cluster_start) - 1
    X = np.ascontiguousarray(model.particle_x0.T + rng.normal(0.0, 1e-3, model.particle_x0.T.shape))
    args = (X, model.shape_particles, model.shape_rest_offset,
            model.particle_mass[model.shape_particles], np.arange(len(model.shape_particles)),
            model.shape_cluster_start, np.arange(k))
    c0, r0 = table("numpy").body_frames(*args)
    c1, r1 = table("numba").body_frames(*args)
    assert np.array_equal(c0, c1) and np.array_equal(r0, r1)
    # a rigid motion of the build pose comes back exactly (to rounding)
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    X = np.ascontiguousarray((model.particle_x0 @ turn.T + (1.0, 2.0, 3.0)).T)
    c, r = table("numba").body_frames(X, *args[1:])
    assert np.allclose(r, turn, atol=1e-12)
    assert np.allclose(c, body_frames_of(np.ascontiguousarray(model.particle_x0.T), *args[1:])[0]
                       @ turn.T + (1.0, 2.0, 3.0), atol=1e-12)

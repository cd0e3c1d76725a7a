"""The scenarios test_backends.py runs on both backends (and test_thread_count_does_not_change_
results on one thread and all): each returns (Builder, Simulation keyword arguments, a control
called before every frame or None), and covers a part of the solver in ways that would expose an
operation done in another order on one backend."""

import numpy as np

from solver import Builder


def _grid(n, size=1.0, z=1.0):
    u, v = np.meshgrid(np.linspace(-size / 2, size / 2, n), np.linspace(-size / 2, size / 2, n))
    x = np.column_stack([u.ravel(), v.ravel(), np.full(n * n, z)])
    idx = np.arange(n * n).reshape(n, n)
    return x, np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], -1).reshape(-1, 4)


def _translate(x, y, z):
    m = np.eye(4)
    m[:3, 3] = x, y, z
    return m


def cloth_on_sphere_in_wind():
    b = Builder()
    x, f = _grid(16)
    b.add_cloth(x, f)
    b.add_collider("sphere", matrix=_translate(0, 0, 0.3), radius=0.3)
    b.add_collider("plane", restitution=0.3)
    return b, dict(substeps=10), lambda s: s.set_wind((2.0, 0.0, 0.0), turbulence=0.5, seed=3)


def pinned_cloth_speed_clamp():
    b = Builder()
    x, f = _grid(12)
    ids = b.add_cloth(x, f, stretch_compliance=1e-3)
    b.pin(ids[np.isclose(x[:, 0], x[:, 0].min())])
    return b, dict(substeps=8, iterations=2, damping=0.1, max_speed=3.0, over_relaxation=1.3), None


def ropes_and_limits():
    b = Builder()
    p = b.add_particles(np.column_stack([np.linspace(0, 2, 11), np.zeros(11), np.full(11, 2.0)]),
                        mass=np.linspace(0.5, 1.5, 11))
    b.add_sticks(np.column_stack([p[:-1], p[1:]]), kind="max")
    b.add_sticks(np.column_stack([p[:-2], p[2:]]), kind="min", rest_length=0.15)
    b.pin(p[:1])
    b.add_collider("box", matrix=_translate(1.0, 0, 0.5), size=(0.5, 0.5, 0.5))
    return b, dict(substeps=20, damping=0.0), None


def bodies_on_a_ramp():
    b = Builder()
    g = np.linspace(-0.1, 0.1, 3)
    lattice = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    rigid = b.add_particles(lattice + [0, 0, 0.6])
    b.add_shape_match(rigid, stiffness=1.0)
    soft = b.add_particles(lattice + [0.5, 0, 0.6])
    b.add_shape_match(soft[:14], stiffness=0.4)
    b.add_shape_match(soft[13:], stiffness=0.4)
    tet = np.array([[0.1, 0.1, 0.1], [-0.1, -0.1, 0.1], [-0.1, 0.1, -0.1], [0.1, -0.1, -0.1]])
    b.add_tetra_body(tet + [-0.5, 0, 0.8], 2 * tet + [-0.5, 0, 0.8])
    c, s = np.cos(0.3), np.sin(0.3)
    ramp = np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])
    b.add_collider("plane", matrix=ramp, friction=0.4, static_friction=0.6)
    b.add_collider("capsule", matrix=_translate(0, -0.6, 0.2), radius=0.1, depth=0.8)
    return b, dict(substeps=12), None


def balloon_and_moving_collider():
    b = Builder()
    oct_x = np.array([[0, 0, 1.2], [0.2, 0, 1.0], [0, 0.2, 1.0], [-0.2, 0, 1.0], [0, -0.2, 1.0],
                      [0, 0, 0.8]])
    ids = b.add_particles(oct_x, mass=0.1)
    faces = [[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 1], [5, 2, 1], [5, 3, 2], [5, 4, 3], [5, 1, 4]]
    edges = {tuple(sorted((f_[i], f_[(i + 1) % 3]))) for f_ in faces for i in range(3)}
    b.add_sticks(ids[np.array(sorted(edges))], compliance=1e-3)
    b.add_volume(ids[np.array(faces)], pressure=1.3)
    k = b.add_collider("box", matrix=_translate(0, 0, 0.3), size=(1, 1, 0.2), friction=0.8)

    def drive(sim):
        sim.set_collider_matrix(k, _translate(0.02 * sim.time, 0, 0.3 + 0.01 * sim.time))
    return b, dict(substeps=10), drive


def _placed(axis, angle, scale, translation):
    """4x4 matrix [R(axis, angle) diag(scale) | translation] (Rodrigues' rotation)."""
    a = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    m = np.eye(4)
    m[:3, :3] = (np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)) * scale
    m[:3, 3] = translation
    return m


def _tetra(b, centre, size, tilt):
    """A tetrahedral body (4 particles, edge ~2.8 size) carrying its cube's 8 corners and centre
    as embedded points, tilted about (1, 1, 0.3) by ``tilt`` [rad]."""
    rot = _placed((1.0, 1.0, 0.3), tilt, 1.0, (0, 0, 0))[:3, :3]
    tet = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])
    cube = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)] + [[0, 0, 0]],
                    dtype=np.float64)
    return b.add_tetra_body(tet * size @ rot.T + centre, cube * (2 * size) @ rot.T + centre)


def cloth_on_elliptic_colliders():
    """Non-exact SDFs at rest: a cloth (particle radius 1 cm) drapes over a rotated ellipsoid
    (scale (1, 0.6, 0.8)), an elliptic cylinder and an elliptic capsule (s_x != s_y), with
    friction; a dropped rope falls on the capsule."""
    b = Builder()
    x, f = _grid(14, size=1.6, z=1.2)
    b.add_cloth(x, f, radius=0.01)
    p = b.add_particles(np.column_stack([np.full(9, 0.6), np.linspace(-0.4, 0.4, 9),
                                         np.full(9, 0.9)]), mass=0.05)
    b.add_sticks(np.column_stack([p[:-1], p[1:]]))
    b.add_collider("sphere", matrix=_placed((0.2, 1.0, 0.1), 0.4, (1.0, 0.6, 0.8), (0, 0, 0.6)),
                   radius=0.4, friction=0.3, static_friction=0.5)
    b.add_collider("cylinder", matrix=_placed((1, 0, 0), 0.2, (1.3, 0.7, 1.0), (-0.5, 0.3, 0.2)),
                   radius=0.25, depth=0.6, friction=0.6)
    b.add_collider("capsule", matrix=_placed((1, 0, 0), 1.5708, (0.8, 1.4, 1.1), (0.6, 0, 0.5)),
                   radius=0.12, depth=1.2, friction=0.2, thickness=0.01)
    b.add_collider("plane", friction=0.5)
    return b, dict(substeps=10), None


def moving_elliptic_colliders():
    """Non-exact SDFs in motion (translation, rotation and scale change every frame, so friction
    sees the collider's motion): an ellipsoid rises and turns under a cloth while an elliptic
    cylinder and an elliptic capsule sweep through a hanging rope."""
    b = Builder()
    x, f = _grid(12, size=1.2, z=1.0)
    b.add_cloth(x, f)
    p = b.add_particles(np.column_stack([np.full(11, -0.9), np.zeros(11),
                                         np.linspace(1.2, 0.2, 11)]), mass=0.05, radius=0.005)
    b.add_sticks(np.column_stack([p[:-1], p[1:]]))
    b.pin(p[:1])
    e = b.add_collider("sphere", matrix=_placed((0, 0, 1), 0.0, (1.0, 0.6, 0.8), (0, 0, 0.3)),
                       radius=0.4, friction=0.5, static_friction=0.7)
    c = b.add_collider("cylinder", matrix=_placed((0, 1, 0), 1.5708, (1.2, 0.6, 1.0),
                                                  (-1.6, 0, 0.4)), radius=0.2, depth=0.8,
                       friction=0.4)
    k = b.add_collider("capsule", matrix=_placed((1, 0, 0), 0.3, (0.7, 1.3, 1.0),
                                                 (-0.9, -0.5, 0.9)), radius=0.1, depth=0.6,
                       friction=0.3)
    b.add_collider("plane", friction=0.5)

    def drive(sim):
        t = sim.time
        sim.set_collider_matrix(e, _placed((0, 0, 1), 0.8 * t, (1.0, 0.6 + 0.1 * t, 0.8),
                                           (0.1 * t, 0, 0.3 + 0.15 * t)))
        sim.set_collider_matrix(c, _placed((0, 1, 0), 1.5708, (1.2, 0.6, 1.0),
                                           (-1.6 + 0.5 * t, 0, 0.4)))
        sim.set_collider_matrix(k, _placed((1, 0, 0), 0.3 + 0.5 * t, (0.7, 1.3, 1.0),
                                           (-0.9, -0.5 + 0.5 * t, 0.9)))
    return b, dict(substeps=10), drive


def tetra_bodies_on_colliders():
    """Jakobsen's embedded points (tetrahedral bodies, several per rank) landing with friction
    on exact colliders (a tilted plane, a sphere, a box that slides) and non-exact ones (an
    ellipsoid, an elliptic cylinder, an elliptic capsule that turns)."""
    b = Builder()
    # one body over each collider, dropped from about 0.25 m above it (the tilted plane twice)
    for i, centre in enumerate([(-1.0, 0.0, 0.85), (0.0, 0.0, 1.0), (1.0, 0.0, 0.85),
                                (-1.0, 1.0, 0.65), (0.0, 1.0, 0.7), (1.0, 1.0, 0.5),
                                (0.0, -1.0, 0.1)]):
        _tetra(b, centre, 0.06, 0.2 + 0.15 * i)
    c, s = np.cos(0.2), np.sin(0.2)
    b.add_collider("plane", matrix=np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0],
                                             [0, 0, 0, 1.0]]), friction=0.4, static_friction=0.6)
    b.add_collider("sphere", matrix=_translate(-1.0, 0.0, 0.3), radius=0.3, friction=0.5)
    b.add_collider("sphere", matrix=_placed((0.3, 0.2, 1.0), 0.5, (1.0, 0.6, 0.8), (0.0, 0.0, 0.4)),
                   radius=0.4, friction=0.6, static_friction=0.8)
    b.add_collider("cylinder", matrix=_placed((1, 0, 0), 0.15, (1.4, 0.8, 1.0), (1.0, 0.0, 0.3)),
                   radius=0.3, depth=0.6, friction=0.3, thickness=0.01)
    k = b.add_collider("capsule", matrix=_placed((0, 1, 0), 1.5708, (0.7, 1.2, 1.0),
                                                 (0.0, 1.0, 0.3)), radius=0.15, depth=0.8,
                       friction=0.5)
    box = b.add_collider("box", matrix=_translate(-1.0, 1.0, 0.3), size=(1.0, 1.0, 0.2),
                         friction=0.7)

    def drive(sim):
        t = sim.time
        sim.set_collider_matrix(k, _placed((0, 1, 0), 1.5708 + 0.4 * t, (0.7, 1.2, 1.0),
                                           (0.0, 1.0, 0.3 + 0.05 * t)))
        sim.set_collider_matrix(box, _translate(-1.0 + 0.2 * t, 1.0, 0.3))
    return b, dict(substeps=10), drive


def damped_soft_bodies_and_odd_clusters():
    """Shape matching's corner cases on both backends: overlapping clusters with deformation
    damping, a collinear (rank-1) cluster, a planar (rank-2) one with a pinned particle, a
    rigid cluster in contact (the boosted, ill-conditioned fit), and two volumes sharing a
    collider; unequal masses throughout."""
    b = Builder()
    g = np.linspace(-0.1, 0.1, 4)
    lattice = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    jelly = b.add_particles(lattice + [0, 0, 0.5], mass=np.linspace(0.05, 0.2, 64))
    b.add_shape_match(jelly[:40], stiffness=0.3, damping=0.9)
    b.add_shape_match(jelly[24:], stiffness=0.5, damping=0.5)
    b.add_shape_match(jelly[::3], stiffness=0.2)
    rod = b.add_particles(np.array([[0.5, 0, 0.6], [0.7, 0, 0.6]]))
    b.add_shape_match(rod, stiffness=1.0, damping=0.3)
    u, v = np.meshgrid(g, g)
    plate = b.add_particles(np.column_stack([u.ravel() - 0.5, v.ravel(), np.full(16, 0.7)]))
    b.add_shape_match(plate, stiffness=1.0)
    b.pin(plate[:1])
    brick = b.add_particles(lattice * [1.0, 0.5, 0.25] + [0.5, 0.5, 0.3])
    b.add_shape_match(brick, stiffness=1.0)
    oct_x = np.array([[0, 0, 0.2], [0.2, 0, 0], [0, 0.2, 0], [-0.2, 0, 0], [0, -0.2, 0],
                      [0, 0, -0.2]])
    faces = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 1], [5, 2, 1], [5, 3, 2],
                      [5, 4, 3], [5, 1, 4]])
    for centre, pressure in (([-0.5, -0.5, 0.4], 0.8), ([0.0, -0.6, 0.5], 1.2)):
        ball = b.add_particles(oct_x + centre, mass=0.05)
        b.add_shape_match(ball, stiffness=0.1)
        b.add_volume(ball[faces], pressure=pressure, compliance=1e-4)
    b.add_collider("plane", friction=0.5, static_friction=0.7)
    b.add_collider("sphere", matrix=_translate(0.05, 0, 0.1), radius=0.15, restitution=0.2)
    return b, dict(substeps=10, iterations=2), None


def started_inside_colliders():
    """Overlaps resolved without speed (collision/project.py's lift): a cloth with thickness
    lying in the floor and partly inside a sphere, a rigid cube and a tetrahedral body started
    in the floor, and a box that jumps into a hanging rope (a strand: drag on all of its
    velocity) in a gusty wind with strong drag."""
    b = Builder()
    x, f = _grid(10, size=0.8, z=0.3)
    b.add_cloth(x, f, radius=0.01)
    g = np.linspace(-0.1, 0.1, 2)
    cube = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    b.add_shape_match(b.add_particles(cube + [0.8, 0, 0.05]), stiffness=1.0)
    _tetra(b, (-0.8, 0.0, 0.08), 0.06, 0.3)
    p = b.add_particles(np.column_stack([np.full(9, 0.0), np.full(9, 0.9),
                                         np.linspace(1.0, 0.2, 9)]), mass=0.05, area=0.01)
    b.add_sticks(np.column_stack([p[:-1], p[1:]]))
    b.pin(p[:1])
    b.add_collider("plane", friction=0.5)
    b.add_collider("sphere", matrix=_translate(0, 0, -0.5), radius=0.9, friction=0.3)
    box = b.add_collider("box", matrix=_translate(0, 2.0, 0.5), size=(0.3, 0.3, 0.3))

    def drive(sim):
        if sim.time == 0.0:
            sim.set_wind((3.0, 1.0, 0.0), turbulence=0.6, seed=5)
        if sim.time > 0.2:
            sim.set_collider_matrix(box, _translate(0, 0.9, 0.5))
    return b, dict(substeps=10, max_depenetration_speed=0.5, air_drag=6.0), drive


def soft_pinned_cloth():
    """Soft pins of unequal compliance (one rigid) and hard pins along a cloth's top edge; the
    targets sweep sideways, the compliances grow and one soft pin is released (inf)."""
    b = Builder()
    x, f = _grid(10, size=1.0, z=1.0)
    x[:, 2], x[:, 1] = 1.0 + x[:, 1], 0.0
    ids = b.add_cloth(x, f, stretch_compliance=1e-4)
    top = ids[np.isclose(x[:, 2], x[:, 2].max())]
    soft, hard = top[::2], top[1::2]
    b.pin(soft, compliance=np.linspace(0.0, 2e-2, len(soft)))
    b.pin(hard)
    b.add_collider("sphere", matrix=_translate(0.2, 0.3, 0.9), radius=0.3)
    x_top = x[top]

    def drive(sim):
        t = sim.time
        sim.set_pin_targets(top, x_top + [0.3 * t, 0.2 * t, 0.0])
        sim.set_pin_compliance(soft, np.linspace(0.0, 2e-2, len(soft)) * (1 + 3 * t))
        if t > 1.0:
            sim.set_pin_compliance(soft[:1], np.inf)
    return b, dict(substeps=10, iterations=2), drive


def tree_of_strands_in_wind():
    """Strands with frame particles and joint clusters (solver/strands.py): a trunk and two
    branches, rooted (so the root edge's frame is pinned), a taper of bend compliance, in gusty
    wind, falling branches hitting a box."""
    trunk = np.column_stack([np.zeros(6), np.zeros(6), np.linspace(0.0, 1.0, 6)])
    left = np.column_stack([np.linspace(-0.15, -0.6, 3), np.full(3, 0.1), np.linspace(0.7, 0.9, 3)])
    right = np.column_stack([np.linspace(0.15, 0.5, 3), np.full(3, -0.1), np.linspace(0.85, 1.1, 3)])
    x = np.vstack([trunk, left, right])
    e = np.array([(i, i + 1) for i in range(5)] + [(3, 6), (6, 7), (7, 8), (4, 9), (9, 10),
                                                   (10, 11)])
    b = Builder()
    ids, _ = b.add_strands(x, e, mass=0.05, area=0.004, stretch_compliance=1e-6,
                           bend_compliance=np.linspace(1e-5, 1e-3, len(x)))
    b.pin(ids[:2])
    b.add_collider("box", matrix=_translate(0.4, 0.0, 0.3), size=(0.4, 0.4, 0.4))
    return b, dict(substeps=10), lambda s: s.set_wind((8.0, 3.0, 0.0), turbulence=0.5, seed=2)


# the six quads of 8 corners numbered 4 ix + 2 iy + iz
CUBE_FACES = np.array([[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4],
                       [1, 5, 7, 3]])


def animated_scene(n):
    """A cloth of n x n particles, a soft cube with a volume and a plane, whose animatable
    settings a driver changes as time goes on: (builder, cloth ids, soft ids, collider)."""
    b = Builder()
    x, f = _grid(n, z=0.6)
    cloth = b.add_cloth(x, f, stretch_compliance=1e-5)
    corners = np.array([[x, y, z] for x in (0.6, 0.8) for y in (-0.1, 0.1) for z in (0.2, 0.4)])
    soft = b.add_particles(corners, mass=0.2)
    b.add_shape_match(soft, stiffness=0.5, damping=0.1)
    b.add_volume(soft[CUBE_FACES], pressure=1.2)
    k = b.add_collider("plane", friction=0.3, restitution=0.2)
    return b, cloth, soft, k


def animated_settings():
    """Every animatable setting (solver/animated.py) changed between steps."""
    b, cloth, soft, k = animated_scene(8)

    def drive(sim):
        t = sim.time
        sim.set_gravity((0.5 * t, 0.0, -9.81 * (1.0 + 0.2 * t)))
        sim.set_global_damping(min(0.1 * t, 1.0))
        sim.set_air_drag(1.0 + t)
        sim.set_stick_compliance(cloth, 1e-4 * t, "cloth stretch")
        sim.set_stick_compliance(cloth, np.linspace(0.0, 1e-2, len(sim.sticks_among(
            cloth, "cloth bend"))) * t, "cloth bend")
        sim.set_shape_compliance(soft, 1e-3 * (1.0 + t) if t < 1.5 else 0.0)
        sim.set_shape_damping(soft, min(0.2 * t, 1.0))
        sim.set_collider_friction(k, 0.3 + 0.2 * t, static_friction=0.5 + 0.2 * t)
        sim.set_collider_restitution(k, min(0.3 * t, 1.0))
        sim.set_volume_pressure(soft, 1.2 + 0.5 * t)
        sim.set_restitution(cloth, min(0.2 * t, 1.0))
        sim.set_friction(soft, 0.5 + 0.3 * t)
    return b, dict(substeps=8), drive


def fast_particles_plates_and_sleep():
    """The tunnelling guard and sleeping (issue 9): particles at up to 150 m/s against a 2 cm
    box plate and a thin capsule, a plate sweeping up at 60 m/s through resting particles, a
    rigid box that falls asleep on the ground and is woken by a sphere rolling into it."""
    b = Builder()
    x = np.column_stack([np.linspace(-0.4, 0.4, 9), np.linspace(-0.2, 0.2, 9), np.full(9, 1.5)])
    fast = b.add_particles(x, radius=np.linspace(0.0, 0.01, 9))
    b.add_particles(np.column_stack([np.linspace(-0.3, 0.3, 4), np.full(4, 1.5), np.full(4, 0.3)]))
    g = np.array([-0.1, 0.1])
    box = b.add_particles(np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
                          + [1.5, 0.0, 0.1])
    b.add_shape_match(box, stiffness=1.0)
    b.add_collider("box", matrix=_translate(0, 0, 0.8), size=(1.2, 1.2, 0.02), friction=0.3)
    b.add_collider("capsule", matrix=_translate(0.6, 0, 0.5), radius=0.01, depth=0.6)
    plate = b.add_collider("box", matrix=_translate(0, 1.5, 0.0), size=(1.0, 0.5, 0.02))
    ball = b.add_collider("sphere", matrix=_translate(3.0, 0.0, 0.15), radius=0.15)
    b.add_collider("plane", friction=0.5)

    def drive(sim):
        f = int(round(sim.time * 24))
        if f == 0:
            v = np.column_stack([np.linspace(-30, 30, 9), np.zeros(9), np.full(9, -150.0)])
            sim.set_velocities(fast, v)
        if f < 3:
            sim.set_collider_matrix(plate, _translate(0, 1.5, 2.5 * (f + 1)))
        if f >= 40:
            sim.set_collider_matrix(ball, _translate(3.0 - 3.0 * (f - 39) / 24, 0.0, 0.15))
    return b, dict(), drive


def contact_between_bodies():
    """Body contact (collision/bodies.py): a perturbed stack of rigid boxes, a self-colliding
    cloth dropped over them, balls (particles with a radius) and a coincident pair, capsules
    meeting as segments (parallel, crossed, end first) and the balls and the cloth."""
    b = Builder()
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    quads = np.array([[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4],
                      [1, 5, 7, 3]])
    for i in range(3):
        c, s = np.cos(0.2 * i), np.sin(0.2 * i)
        rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
        ids = b.add_particles((cube * 0.15) @ rot.T + [0.03 * i, 0, 0.16 + 0.31 * i],
                              mass=0.2, friction=0.6)
        b.add_shape_match(ids, surface=ids[quads])
    x, f = _grid(10, 0.8, 1.2)
    b.add_cloth(x, f, radius=0.01, self_collision=True)
    b.add_particles([[0.3, 0.3, 0.3], [0.3, 0.3, 0.3], [0.32, 0.28, 0.6]], radius=0.05)
    for head, tail in [((0.1, 0.3, 0.8), (0.5, 0.3, 0.8)), ((0.2, 0.3, 0.95), (0.45, 0.3, 0.95)),
                       ((0.3, 0.1, 1.05), (0.3, 0.5, 1.1)), ((0.35, 0.35, 1.2), (0.35, 0.35, 1.5))]:
        b.add_capsule_body(head, tail, 0.04, mass=0.5)
    b.add_collider("plane", friction=0.5)
    return b, dict(substeps=10), None


def pile_of_boxes():
    """Contacts between rigid bodies in parallel parts (collision/rigid._nested_order splits
    the bodies in contact once 16 touch, twice from 32): 36 boxes in four layers of 3 x 3,
    each turned a little, dropped onto the ground and onto each other, with friction."""
    b = Builder()
    for i in range(36):
        layer, row, col = i // 9, (i // 3) % 3, i % 3
        _turned_box(b, [0.45 * col + 0.04 * layer, 0.45 * row, 0.16 + 0.34 * layer], 0.3 * i,
                    0.05 * ((i % 5) - 2))
    b.add_collider("plane", friction=0.5)
    return b, dict(substeps=10), None


def _turned_box(b, centre, yaw, tilt, restitution=0.0):
    """A rigid 0.3 m box of 0.2 kg (8 corners, one cluster, its faces a contact surface),
    turned by yaw about z, then tilted by tilt about x. Returns its (8,) particle ids."""
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    quads = np.array([[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4],
                      [1, 5, 7, 3]])
    c, s = np.cos(yaw), np.sin(yaw)
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    rot = rot @ np.array([[1, 0, 0], [0, np.cos(tilt), -np.sin(tilt)],
                          [0, np.sin(tilt), np.cos(tilt)]])
    ids = b.add_particles((cube * 0.15) @ rot.T + centre, mass=0.2, friction=0.6,
                          restitution=restitution)
    b.add_shape_match(ids, surface=ids[quads])
    return ids


def bouncy_boxes():
    """Restitution of bodies (Simulation.set_restitution; collision/impacts.py): 18 boxes in
    two layers dropped from higher up, every other one bouncy (e = 0.7, set at the first step;
    one bounces from the build, add_particles(restitution=)), on a floor of restitution 0.3:
    the collider impacts' and the contacts between bodies' velocity passes."""
    b = Builder()
    bouncy = []
    for i in range(18):
        layer, row, col = i // 9, (i // 3) % 3, i % 3
        ids = _turned_box(b, [0.4 * col + 0.1 * layer, 0.4 * row, 0.5 + 0.45 * layer], 0.7 * i,
                          0.08 * ((i % 5) - 2), restitution=0.9 if i == 4 else 0.0)
        if i % 2:
            bouncy.append(ids)
    b.add_collider("plane", friction=0.5, restitution=0.3)
    bouncy = np.concatenate(bouncy)

    def drive(sim):
        if sim.state.step_index == 0:
            sim.set_restitution(bouncy, 0.7)
    return b, dict(substeps=10), drive


def ragdoll_on_stairs():
    """Rigid-body joints (solver/constraints/joints.py): capsule bodies joined by hinges with
    limits (knee, elbow) and ball joints with swing and twist limits, one body hard-pinned
    (kinematic), one hung from the world, pose drives changing strength and target, tumbling
    down box stairs with friction."""
    b = Builder()
    z = 1.2
    _, pelvis = b.add_capsule_body((-0.1, 0, z), (0.1, 0, z), 0.08, mass=8.0)
    _, chest = b.add_capsule_body((0, 0, z + 0.05), (0, 0, z + 0.45), 0.1, mass=12.0)
    _, thigh = b.add_capsule_body((0.1, 0, z - 0.05), (0.1, 0.05, z - 0.45), 0.06, mass=6.0)
    _, shin = b.add_capsule_body((0.1, 0.05, z - 0.45), (0.1, 0.0, z - 0.85), 0.05, mass=4.0)
    _, arm = b.add_capsule_body((0.15, 0, z + 0.4), (0.45, 0, z + 0.4), 0.04, mass=2.0,
                                up=(0, 0, 1))
    _, fore = b.add_capsule_body((0.45, 0, z + 0.4), (0.7, 0.1, z + 0.4), 0.035, mass=1.5)
    b.add_joint(pelvis, chest, (0, 0, z + 0.05), kind="ball", axis=(0, 0, 1),
                limits=(0.4, -0.3, 0.3))
    b.add_joint(pelvis, thigh, (0.1, 0, z - 0.05), kind="ball", axis=(0, 0, -1),
                limits=(1.0, None, None))
    b.add_joint(thigh, shin, (0.1, 0.05, z - 0.45), kind="hinge", axis=(1, 0, 0),
                limits=(-2.0, 0.0))
    b.add_joint(chest, arm, (0.15, 0, z + 0.4), kind="ball", axis=(1, 0, 0),
                limits=(1.2, -0.5, 0.5), compliance=1e-6)
    b.add_joint(arm, fore, (0.45, 0, z + 0.4), kind="hinge", axis=(0, 0, 1),
                limits=(0.0, 2.2))
    pinned, post = b.add_capsule_body((-1.0, 0, 1.5), (-1.0, 0, 1.8), 0.05)
    b.pin(pinned)
    _, hung = b.add_capsule_body((-1.0, 0, 1.5), (-0.7, 0.1, 1.5), 0.04)
    b.add_joint(post, hung, (-1.0, 0, 1.5), kind="hinge", axis=(0, 1, 0), limits=(-0.5, 0.8))
    _, lamp = b.add_capsule_body((-1.5, 0, 1.5), (-1.5, 0.3, 1.5), 0.04)
    b.add_joint(None, lamp, (-1.5, 0, 1.5))
    for i in range(4):
        b.add_collider("box", matrix=_translate(0.3 + 0.4 * i, 0, 0.6 - 0.2 * i),
                       size=(0.4, 2.0, 0.2 + 0.0 * i), friction=0.5)
    b.add_collider("plane", friction=0.6)

    def drive(sim):
        t = sim.time
        sim.set_joint_drive([0, 3], [min(t, 1.0), 0.5])
        sim.set_joint_targets([3], [[np.cos(0.3 * t), 0.0, np.sin(0.3 * t), 0.0]])
    return b, dict(substeps=10, iterations=2), drive


def cloth_and_bodies_on_deforming_meshes():
    """A closed torus whose vertices wave, an open sheet that turns and stretches (matrix) and
    a tetrahedral body: the BVH query and the brute force pick the same triangles."""
    from mesh_shapes import grid, torus
    b = Builder()
    x, f = _grid(10, size=1.6, z=0.7)
    b.add_cloth(x, f)
    tv, tf = torus(0.6, 0.2, 16, 8)
    b.add_collider("mesh", vertices=tv, triangles=tf, friction=0.6, restitution=0.2,
                   matrix=_translate(0, 0, 0.2))
    gv, gf = grid(3, 1.2)
    b.add_collider("mesh", vertices=gv, triangles=gf, thickness=0.02,
                   matrix=_translate(1.2, 0, 0.1))
    _tetra(b, (1.2, 0.0, 0.6), 0.15, 0.3)

    def drive(sim):
        i = sim.state.step_index
        wave = tv + 0.05 * np.sin(3 * tv[:, [1, 2, 0]] + 0.3 * i)
        sim.set_collider_vertices(0, wave)
        sim.set_collider_matrix(1, _placed((0, 1, 1), 0.02 * i, (1 + 0.01 * i, 1, 1),
                                           (1.2, 0, 0.1)))
    return b, dict(substeps=6), drive

"""The tunnelling guard (issue 9, seed 002; collision/project.py): at the product's default
substeps (40 per 1/24 s frame, 1 iteration) a particle at 150 m/s moves 15.6 cm per substep,
eight times a 2 cm plate's thickness, so a test of its end point alone lets it pass through. The
guard traces the segment from its position at the substep's start to its position now, in the
collider's frame (a moving collider's motion over the substep counts), and resolves the contact
at the first touch. Each scenario runs on both backends, which must agree bit for bit; each
passes straight through with the guard disabled (checked by hand, see the report of issue 9).
"""

import numpy as np
import pytest

from solver import Builder, Simulation, backend
from solver.collision import project

DT = 1.0 / 24.0
SPEED = 150.0          # [m/s]
HALF = 0.01            # [m] half the plate's thickness (2 cm)

BACKENDS = ["numpy"] + (["numba"] if (backend.numba_kernels() is not None) else [])


def _translate(x, y, z):
    m = np.eye(4)
    m[:3, 3] = x, y, z
    return m


def _falling(radius=0.0):
    """Particles 1 m above z = 0, falling at 150 m/s, spread 10 cm apart in x."""
    b = Builder()
    x = np.column_stack([np.linspace(-0.2, 0.2, 5), np.zeros(5), np.full(5, 1.0)])
    ids = b.add_particles(x, radius=radius)
    return b, ids


@pytest.mark.parametrize("kind", BACKENDS)
def test_fast_particle_stops_on_a_thin_box_plate(kind):
    """A 2 cm plate (box 2 x 2 x 0.02 m at z = 0.5): particles arriving at 150 m/s end on its
    top face (z = 0.51) and stay there; without the guard they pass it within one frame."""
    b, ids = _falling()
    b.add_collider("box", matrix=_translate(0, 0, 0.5), size=(2.0, 2.0, 2 * HALF))
    sim = Simulation(b.build(), backend=kind)
    sim.set_velocities(ids, np.tile([0.0, 0.0, -SPEED], (5, 1)))
    lowest = np.inf
    for _ in range(12):
        sim.step(DT)
        lowest = min(lowest, float(sim.x[:, 2].min()))
    assert lowest >= 0.5 + HALF - 1e-6
    assert np.allclose(sim.x[:, 2], 0.5 + HALF, atol=1e-6)
    assert np.allclose(sim.x[:, :2], np.column_stack([np.linspace(-0.2, 0.2, 5), np.zeros(5)]),
                       atol=1e-9)           # a head-on hit: no sideways motion


@pytest.mark.parametrize("kind", BACKENDS)
def test_fast_particle_with_radius_stops_on_a_thin_capsule(kind):
    """A thin horizontal capsule (radius 1 cm, along x) at z = 0.5, particles of radius 5 mm
    above its axis at 150 m/s: they end on it, their centres at z = 0.5 + 0.01 + 0.005."""
    b = Builder()
    x = np.column_stack([np.linspace(-0.2, 0.2, 5), np.zeros(5), np.full(5, 1.0)])
    ids = b.add_particles(x, radius=0.005)
    m = np.array([[0, 0, 1, 0], [0, 1, 0, 0], [-1, 0, 0, 0.5], [0, 0, 0, 1.0]])   # z -> x
    b.add_collider("capsule", matrix=m, radius=HALF, depth=1.0)
    sim = Simulation(b.build(), backend=kind)
    sim.set_velocities(ids, np.tile([0.0, 0.0, -SPEED], (5, 1)))
    sim.step(DT)
    assert np.allclose(sim.x[:, 2], 0.5 + HALF + 0.005, atol=1e-6)
    assert np.abs(sim.x[:, 1]).max() < 1e-9


@pytest.mark.parametrize("kind", BACKENDS)
def test_fast_particle_stops_on_a_small_sphere_and_a_plate_edge_on(kind):
    """A 1 cm sphere and a 2 cm plate met edge-on (a box 0.02 x 2 x 2 m whose thin edge faces
    the particle, hit moving in -x): both stop the particle at their surface."""
    b = Builder()
    p = b.add_particles([[0.0, 0.0, 1.0], [1.5, 0.3, 0.5]])
    b.add_collider("sphere", matrix=_translate(0, 0, 0.5), radius=HALF)
    b.add_collider("box", matrix=_translate(0.0, 0.3, 0.5), size=(2.0, 2 * HALF, 2.0))
    sim = Simulation(b.build(), backend=kind, gravity=(0, 0, 0))
    sim.set_velocities(p, [[0.0, 0.0, -SPEED], [-SPEED, 0.0, 0.0]])
    sim.step(DT)
    assert abs(sim.x[0, 2] - (0.5 + HALF)) < 1e-6
    assert abs(sim.x[1, 0] - 1.0) < 1e-6        # the plate's edge face at x = 1


@pytest.mark.parametrize("kind", BACKENDS)
def test_fast_plate_sweeps_a_resting_particle_along(kind):
    """A 2 cm plate below a resting particle moves up at 150 m/s (6.25 m in one frame): the
    particle is carried on its top face, not passed. Without the guard the plate jumps past it
    (15.6 cm a substep) and it stays at z = 1."""
    b = Builder()
    b.add_particles([[0.0, 0.0, 1.0], [0.3, 0.2, 1.0]])
    k = b.add_collider("box", matrix=_translate(0, 0, 0.0), size=(2.0, 2.0, 2 * HALF))
    sim = Simulation(b.build(), backend=kind, gravity=(0, 0, 0))
    sim.set_collider_matrix(k, _translate(0, 0, SPEED * DT))
    sim.step(DT)
    assert np.allclose(sim.x[:, 2], SPEED * DT + HALF, atol=1e-6)
    assert np.allclose(sim.x[:, :2], [[0.0, 0.0], [0.3, 0.2]], atol=1e-9)
    sim.set_collider_matrix(k, _translate(0, 0, 2 * SPEED * DT))      # and on: it carries them
    sim.step(DT)
    assert np.allclose(sim.x[:, 2], 2 * SPEED * DT + HALF, atol=1e-6)
    # the plate stops: the particles fly on at its speed (not a runaway: a collider gave it)
    sim.step(DT)
    assert np.allclose(sim.v[:, 2], SPEED, rtol=0.01)
    assert np.all(sim.x[:, 2] > 2 * SPEED * DT + HALF + 0.9 * SPEED * DT)


@pytest.mark.parametrize("kind", BACKENDS)
def test_guard_leaves_slow_contacts_alone(kind):
    """A particle dropped from 5 cm lands on the plate at about 1 m/s (1 mm a substep, at the
    guard's threshold): the guard does not change where it rests, and a particle sliding at
    3 m/s on the plate's top stays on it (z exactly the face) until it slides off the end."""
    b = Builder()
    p = b.add_particles([[0.0, 0.0, 0.56], [-0.9, 0.5, 0.51]])
    b.add_collider("box", matrix=_translate(0, 0, 0.5), size=(2.0, 2.0, 2 * HALF), friction=0.0)
    sim = Simulation(b.build(), backend=kind)
    sim.set_velocities(p[1:], [[3.0, 0.0, 0.0]])
    for _ in range(12):
        sim.step(DT)
    assert abs(sim.x[0, 2] - 0.51) < 1e-9
    assert abs(sim.x[1, 2] - 0.51) < 1e-9
    assert abs(sim.x[1, 0] - (-0.9 + 3.0 * 12 * DT)) < 1e-6


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("shape, thickness", [("box", 1e-3), ("box", 1e-6),
                                              ("cylinder", 1e-3)])
def test_slow_particles_stop_on_a_plate_under_two_millimetres(kind, shape, thickness):
    """Zero-radius particles dropped 30 cm on a plate (a box, or a disc: a cylinder along z)
    thinner than twice the guard's least motion (1 mm): the guard stops them on its top, they
    keep moving into it at up to a millimetre a substep (0.53 m/s after a 2.4 m/s arrival), and
    untraced below 1 mm a substep they ended past its middle and left by its bottom: a cloth
    fell through a 1 mm box. The guard traces motions down to half the plate's thickness
    (project.guard_motion)."""
    b, ids = _falling()
    size = dict(size=(2.0, 2.0, thickness)) if shape == "box" else \
        dict(radius=1.0, depth=thickness)
    b.add_collider(shape, matrix=_translate(0, 0, 0.7), **size)
    sim = Simulation(b.build(), backend=kind)
    for _ in range(18):                                # lands at frame 6, then rests
        sim.step(DT)
    top = 0.7 + thickness / 2
    assert np.allclose(sim.x[:, 2], top, atol=1e-6), sim.x[:, 2] - top


def test_guard_constants_agree():
    """The compiled kernels repeat the NumPy guard's constants."""
    if not (backend.numba_kernels() is not None):
        pytest.skip("no numba")
    from solver.kernels import compiled_contact as cc
    for name in ("GUARD_MIN_MOTION", "GUARD_TOLERANCE", "GUARD_STEPS"):
        assert getattr(cc, name) == getattr(project, name)


def test_backends_agree_on_the_guard():
    """The scenarios above, both backends: the same bits."""
    if not (backend.numba_kernels() is not None):
        pytest.skip("no numba")
    out = []
    for kind in ("numpy", "numba"):
        b = Builder()
        x = np.column_stack([np.linspace(-0.5, 0.5, 7), np.linspace(-0.3, 0.3, 7),
                             np.full(7, 1.0)])
        ids = b.add_particles(x, radius=np.linspace(0, 0.01, 7))
        b.add_collider("box", matrix=_translate(0.1, 0, 0.5), size=(2.0, 2.0, 2 * HALF))
        b.add_collider("capsule", matrix=_translate(0, 0, 0.2), radius=HALF, depth=0.5)
        k = b.add_collider("sphere", matrix=_translate(0, 0, -1.0), radius=0.3)
        sim = Simulation(b.build(), backend=kind)
        v = np.column_stack([np.linspace(-20, 20, 7), np.zeros(7), np.full(7, -SPEED)])
        sim.set_velocities(ids, v)
        for f in range(6):
            sim.set_collider_matrix(k, _translate(0.3 * f, 0, -1.0 + 2.0 * f))
            sim.step(DT)
        out.append(np.array(sim.x))
    assert np.array_equal(out[0], out[1])


@pytest.mark.parametrize("shape", ["plane", "sphere", "box", "cylinder", "capsule"])
def test_the_trace_skips_only_segments_that_cannot_touch(shape, monkeypatch):
    """The NumPy trace skips its march on segments whose bounds keep them clear of an exact
    primitive (project._clear_of_convex): 2,000 random segments, most of
    them grazing the surface (started within 8 mm of it, moving along it), against a turned
    and moved primitive: the same hits, depths and normals as the march run on every segment,
    and about half the segments skipped. Fails when the tangent's bound is taken without the
    slope's fall, or the march's steps' bound for one step instead of GUARD_STEPS."""
    from solver.collision import frames, sdf
    code = frames.SHAPE_CODES[shape]
    rng = np.random.default_rng(9 + code)
    a = rng.normal(size=3)
    a /= np.linalg.norm(a)
    c, s = np.cos(0.7), np.sin(0.7)
    R = c * np.eye(3) + s * np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]]) \
        + (1 - c) * np.outer(a, a)
    t = np.array([0.3, -0.2, 0.5])
    scale = np.ones(3)
    dims = np.array([0.4, 0.6, 0.3]) if shape == "box" else np.array([0.2, 0.6, 0.0])
    abc = sdf.exact_scaled_dims(code, dims, scale)
    now = project.Frame(R, t, scale)
    m = 2000
    # points on the surface: any point pushed along the normal onto it, then lifted 0 to 8 mm
    q = rng.normal(size=(m, 3)) * 0.3 @ R.T + t
    phi, n, _ = project._distance(code, False, abc, now, now, 0, None, *q.T, *q.T)
    n = np.array(n).T
    start = q - (phi - rng.uniform(0.0, 0.008, m))[:, None] * n
    phi, n, _ = project._distance(code, False, abc, now, now, 0, None, *start.T, *start.T)
    n = np.array(n).T
    # moving mostly along the surface, a little into it or away, 1 mm to 5 cm
    d = rng.normal(size=(m, 3))
    d -= np.sum(d * n, axis=1)[:, None] * n
    d /= np.linalg.norm(d, axis=1)[:, None]
    d += rng.uniform(-0.3, 0.3, m)[:, None] * n
    e = d * rng.uniform(0.001, 0.05, m)[:, None]
    end = start + e
    length = np.linalg.norm(e, axis=1)
    rad = np.full(m, 0.002)

    def trace():
        return project._trace(code, False, abc, now, now, 0, None, 0.001, rad, tuple(start.T),
                              tuple(e.T), length, tuple(end.T), tuple(start.T))

    hit, pen, n0, n1, n2, _ = trace()
    skipped = project._clear_of_convex(phi - 0.001 - rad, np.sum(n * e, axis=1), length)
    monkeypatch.setattr(project, "_clear_of_convex",
                        lambda gap, slope, length: np.zeros(gap.shape, bool))
    hit_all, pen_all, m0, m1, m2, _ = trace()
    assert np.array_equal(hit, hit_all)
    assert 0.1 * m < hit.sum() < 0.9 * m
    assert skipped.sum() > 0.25 * m and not (skipped & hit_all).any()   # the march agrees
    for got, want in ((pen, pen_all), (n0, m0), (n1, m1), (n2, m2)):
        assert np.array_equal(got[hit], want[hit])

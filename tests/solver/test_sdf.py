"""Signed distance functions of the collider primitives (solver/sdf.py), checked against shapes
defined independently here.

Every collider is placed by a 4x4 matrix M = [R diag(s) | t] built here from a known rotation R,
scale s and translation t; the tests work in the frame q = R^T (x - t) computed from those, never
through sdf's own decomposition. Each true shape is described twice, independently of sdf.py:

- an analytic inside test (the sign oracle), and
- a set of smooth parametric surface patches (cube-sphere patches for ellipsoids, so no poles)
  with analytic normals; the distance oracle is a brute-force search over a 32 x 32 sampling of
  every patch refined ten times around the nearest sample (distance error below 1e-7 m, checked
  against the analytic distances of the exact shapes in test_oracle_agrees_with_...).

Points within 5 % of the shape's size (its smallest half-extent) of the surface are made by
moving sampled surface points p along their outward normal n: for a convex body (every primitive
here is one) p + d n with d > 0 lies exactly at distance d, and p - d n is inside; its distance
comes from the oracle.

Tolerances (all lengths in metres, shapes of size ~1 m; measured worst in brackets):
  exact cases     sign exact, also 1e-6 m off the surface; |phi - d_true| <= 1e-12 against the
                  analytic formulas [1.2e-15] and <= 1e-7 against the oracle [8e-9]; normal vs.
                  central difference of phi (step 1e-6) away from edges and the medial axis:
                  |n - grad| <= 1e-6 [4e-10]
  approximate     (ellipsoid, elliptic cylinder, elliptic capsule) sign exact, also 1e-6 m off
                  the surface; |phi - d| <= 2 % of d for points 0.2 % .. 5 % of the smallest
                  half-extent from the surface [ellipsoid 0.62 %, elliptic cylinder 0.18 %,
                  elliptic capsule 0.16 %]; on the surface |phi| <= 1e-12 [7e-16], normal vs. the
                  analytic normal <= 1e-12 [1.4e-15] and vs. central differences <= 1e-6 [2.4e-10]
"""

import math

import numpy as np
import pytest

from solver import Builder, Simulation

import sdf_vectorised as sdf  # noqa: E402  (beside this file)

from sdf_reference import (  # noqa: E402  (reference shapes live beside this file)
    axis_rotation,
    placement,
    FRAMES,
    EXACT_HALF_TURN,
    to_local,
    to_world,
    world_normal,
    ellipsoid,
    box,
    cylinder,
    capsule,
    oracle_distance,
    surface_samples,
    near_surface,
    CASES,
    APPROX_CASES,
    APPROX_BOUND,
    frame_of,
    seed,
    fd_gradient,
    random_points)

# ----------------------------------------------------------------------------- the oracle itself


def test_oracle_agrees_with_analytic_distances():
    """The brute-force oracle is accurate to 1e-7 m where an analytic distance exists (so its
    use for the approximate shapes is trustworthy)."""
    rng = np.random.default_rng(1)
    worst = 0.0
    for name in CASES:
        shape = CASES[name][3]
        q = np.concatenate([near_surface(shape, rng, 60)[0], random_points(shape, rng, 60)])
        err = np.abs(oracle_distance(shape, q) - shape.exact(q))
        worst = max(worst, float(err.max()))
    assert worst < 1e-7, worst


# ----------------------------------------------------------------------------- exact cases


@pytest.mark.parametrize("frame", list(FRAMES))
@pytest.mark.parametrize("case", list(CASES))
def test_exact_sign_distance_normal(case, frame):
    rng = np.random.default_rng(seed(case, frame))
    code, dims, f, shape, _ = frame_of(case, frame)
    assert sdf.is_exact(code, f.scale)
    q_near, d_near, _, _ = near_surface(shape, rng, 200)
    q = np.concatenate([q_near, random_points(shape, rng, 300)])
    x = to_world(frame, q)
    phi, normal = sdf.evaluate(code, dims, f, x)

    # sign: analytic inside test, including points a micrometre off the surface
    p, n = surface_samples(shape, rng, 200)
    tiny = np.where(np.arange(len(p)) % 2, 1e-6, -1e-6)
    q_tiny = p + tiny[:, None] * n
    phi_tiny, _ = sdf.evaluate(code, dims, f, to_world(frame, q_tiny))
    assert np.array_equal(phi < 0, shape.inside(q))
    assert np.array_equal(phi_tiny < 0, shape.inside(q_tiny))
    assert np.array_equal(phi_tiny < 0, tiny < 0)

    # distance: analytic formula, the oracle, and (outside near points) the construction
    assert np.max(np.abs(phi - shape.exact(q))) <= 1e-12
    assert np.max(np.abs(phi[:200][d_near > 0] - d_near[d_near > 0])) <= 1e-12
    sub = np.concatenate([np.arange(0, 200, 4), np.arange(200, 500, 6)])
    assert np.max(np.abs(phi[sub] - oracle_distance(shape, q[sub]))) <= 1e-7

    # normal: unit, and the central-difference gradient of phi away from the medial axis
    assert np.allclose(np.linalg.norm(normal, axis=1), 1.0, atol=1e-12)
    ok = shape.smooth(q) & (np.abs(phi) > 1e-4)
    assert ok.sum() > 300
    grad = fd_gradient(code, dims, f, x[ok])
    assert np.max(np.linalg.norm(normal[ok] - grad, axis=1)) <= 1e-6


@pytest.mark.parametrize("frame", list(FRAMES))
def test_plane(frame):
    rng = np.random.default_rng(7)
    rot, t, mirror = FRAMES[frame]
    m = placement(rot, np.multiply((2.0, 0.5, 3.0), mirror), t)
    f = sdf.decompose(m)
    x = t + rng.uniform(-3, 3, (400, 3))
    phi, normal = sdf.evaluate(sdf.PLANE, np.zeros(3), f, x)
    # the normal is the matrix's local +Z axis, whatever the scale; phi the height above it
    n = m[:3, 2] / np.linalg.norm(m[:3, 2])
    assert np.max(np.abs(phi - (x - t) @ n)) <= 1e-12
    assert np.array_equal(phi < 0, (x - t) @ n < 0)
    assert np.max(np.abs(normal - n)) <= 1e-12
    assert np.max(np.abs(fd_gradient(sdf.PLANE, np.zeros(3), f, x) - n)) <= 1e-6


# ----------------------------------------------------------------------------- approximate cases

@pytest.mark.parametrize("frame", list(FRAMES))
@pytest.mark.parametrize("case", list(APPROX_CASES))
def test_approximate_sign_exact_distance_bounded(case, frame):
    rng = np.random.default_rng(seed(case, frame, 1))
    code, dims, f, shape, _ = frame_of(case, frame)
    assert not sdf.is_exact(code, f.scale)

    # sign: exact everywhere, also a micrometre off the surface
    q = random_points(shape, rng, 600)
    phi, _ = sdf.evaluate(code, dims, f, to_world(frame, q))
    assert np.array_equal(phi < 0, shape.inside(q))
    p, n = surface_samples(shape, rng, 300)
    tiny = np.where(np.arange(len(p)) % 2, 1e-6, -1e-6)
    phi_tiny, _ = sdf.evaluate(code, dims, f, to_world(frame, p + tiny[:, None] * n))
    assert np.array_equal(phi_tiny < 0, tiny < 0)
    assert np.array_equal(phi_tiny < 0, shape.inside(p + tiny[:, None] * n))

    # distance near the surface (0.2 % .. 5 % of the size): outside the true distance is the
    # offset (convex body), inside it comes from the oracle
    qn, d, _, _ = near_surface(shape, rng, 240)
    true = np.where(d > 0, d, oracle_distance(shape, qn))
    assert np.all(true[d < 0] < 0) and np.all(true[d < 0] >= d[d < 0] - 1e-8)
    phi_n, _ = sdf.evaluate(code, dims, f, to_world(frame, qn))
    rel = np.abs(phi_n - true) / np.abs(true)
    assert rel.max() <= APPROX_BOUND, (case, frame, rel.max())
    # and it is an estimate, not an identity: the error is really there (not a shape mix-up)
    assert rel.max() > 1e-6


@pytest.mark.parametrize("frame", list(FRAMES))
@pytest.mark.parametrize("case", list(APPROX_CASES))
def test_approximate_zero_set_and_normal_exact(case, frame):
    rng = np.random.default_rng(seed(case, frame, 2))
    code, dims, f, shape, _ = frame_of(case, frame)
    p, n = surface_samples(shape, rng, 200)
    x = to_world(frame, p)
    phi, normal = sdf.evaluate(code, dims, f, x)
    assert np.max(np.abs(phi)) <= 1e-12                       # on the zero set (rounding only)
    assert np.max(np.linalg.norm(normal - world_normal(frame, n), axis=1)) <= 1e-12
    assert np.max(np.linalg.norm(normal - fd_gradient(code, dims, f, x), axis=1)) <= 1e-6


def test_capsule_shape_continuous_in_scale():
    """A capsule whose X and Y scales differ by float32 rounding (every rotated Blender object)
    is the same capsule as with equal scales; before the fix its caps became radius * s_z tall."""
    rng = np.random.default_rng(3)
    rot = axis_rotation((0.2, 0.9, -0.4), 0.7)
    m = placement(rot, (0.5, 0.5, 2.0), (1.0, 2.0, 3.0))
    f_exact = sdf.decompose(m)
    f_32 = sdf.decompose(m.astype(np.float32))
    # float32 rounding counts as equal scales (exact branch, sdf.is_exact); the continuity of
    # the approximate branch is checked with scales that really differ, below
    assert sdf.is_exact(sdf.CAPSULE, f_32.scale)
    dims = np.array([0.5, 2.0, 0.0])                        # radius 0.25, depth 4 after scaling
    x = (rng.uniform(-1.0, 1.0, (500, 3)) * (0.5, 0.5, 2.5)) @ rot.T + m[:3, 3]
    a, _ = sdf.evaluate(sdf.CAPSULE, dims, f_exact, x)
    b, _ = sdf.evaluate(sdf.CAPSULE, dims, f_32, x)
    assert np.max(np.abs(a - b)) <= 1e-6
    # and scales that really differ deform it continuously
    for eps in (2e-6, 1e-3):
        f_e = sdf.decompose(placement(rot, (0.5, 0.5 * (1 + eps), 2.0), m[:3, 3]))
        c, _ = sdf.evaluate(sdf.CAPSULE, dims, f_e, x)
        assert not sdf.is_exact(sdf.CAPSULE, f_e.scale)
        assert np.max(np.abs(a - c)) <= 2 * eps * 0.25 * 2.5


def test_elliptic_cylinder_rim_pushes_out_through_the_nearest_face():
    """An oval table top (radius 1 scaled 1.2 x 0.9, depth 2 scaled 0.05): a point 1 mm under
    the top, 1 cm in from the rim, is 1 mm deep through the top (exact: the axial distance is
    exact) and its normal is the top's. Before the fix the radial and axial distances were
    compared in unscaled units and it was pushed out sideways, through the rim."""
    rot, t, _ = FRAMES["rotated"]
    m = placement(rot, (1.2, 0.9, 0.05), t)
    f = sdf.decompose(m)
    th = np.linspace(0, 2 * math.pi, 50, endpoint=False)
    ring = np.stack([1.2 * np.cos(th), 0.9 * np.sin(th)], axis=1)
    q = np.column_stack([ring * (1 - 0.01 / 0.9), np.full(50, 0.05 - 1e-3)])
    shape = cylinder(1.2, 0.9, 0.05)
    assert np.max(np.abs(oracle_distance(shape, q) + 1e-3)) <= 1e-8   # the top is nearest
    phi, normal = sdf.evaluate(sdf.CYLINDER, np.array([1.0, 2.0, 0.0]), f, to_world("rotated", q))
    assert np.max(np.abs(phi + 1e-3)) <= 1e-12
    assert np.max(np.abs(normal - rot[:, 2])) <= 1e-12


@pytest.mark.parametrize("code,dims", [(sdf.CYLINDER, (0.5, 1.5, 0.0)), (sdf.SPHERE, (0.5, 0, 0))],
                         ids=["cylinder", "sphere"])
def test_float32_matrix_same_shape(code, dims):
    """float32 matrices (Blender's) make equal scales differ by ~1e-7: that still counts as
    equal (the exact branch), and the distance agrees with the float64 matrix's to 1e-6 m."""
    rng = np.random.default_rng(4)
    rot, t, _ = FRAMES["rotated"]
    m = placement(rot, (0.8, 0.8, 0.8 if code == sdf.SPHERE else 2.5), t)
    f64, f32 = sdf.decompose(m), sdf.decompose(m.astype(np.float32))
    assert sdf.is_exact(code, f64.scale) and sdf.is_exact(code, f32.scale)
    assert not np.array_equal(f64.scale, f32.scale)          # the rounding really is there
    x = t + rng.uniform(-2, 2, (500, 3))
    a, na = sdf.evaluate(code, np.asarray(dims, float), f64, x)
    b, nb = sdf.evaluate(code, np.asarray(dims, float), f32, x)
    assert np.max(np.abs(a - b)) <= 1e-6
    assert np.max(np.abs(na - nb)[np.abs(a) > 0.05]) <= 1e-5


# ----------------------------------------------------------------------------- through Builder


BUILDER_CASES = [
    # shape, keywords, true shape (local, unit scale)
    ("sphere", {"radius": 0.7}, ellipsoid(0.7, 0.7, 0.7)),
    ("sphere", {}, ellipsoid(1.0, 1.0, 1.0)),
    ("box", {"size": (0.4, 1.0, 2.0)}, box((0.2, 0.5, 1.0))),
    ("box", {}, box((1.0, 1.0, 1.0))),
    ("cylinder", {"radius": 0.3, "depth": 1.2}, cylinder(0.3, 0.3, 0.6)),
    ("cylinder", {}, cylinder(1.0, 1.0, 1.0)),
    ("capsule", {"radius": 0.3, "depth": 1.6}, capsule(0.3, 0.3, 0.3, 0.5)),
    ("capsule", {}, capsule(0.5, 0.5, 0.5, 0.5)),
]


@pytest.mark.parametrize("shape_name,kw,shape", BUILDER_CASES,
                         ids=[f"{c[0]}-{'kw' if c[1] else 'default'}" for c in BUILDER_CASES])
def test_builder_size_keywords(shape_name, kw, shape):
    """add_collider's radius= / depth= / size= reach the SDF, scaled by the matrix (uniform
    scale 1.5 here, so the true shape is the keyword shape times 1.5)."""
    rng = np.random.default_rng(11)
    s = 1.5
    rot, t, _ = FRAMES["rotated"]
    m = placement(rot, (s, s, s), t)
    b = Builder()
    b.add_particles(np.zeros((1, 3)))
    k = b.add_collider(shape_name, matrix=m, **kw)
    model = b.build()
    f = sdf.decompose(model.collider_matrix[k])
    q = np.concatenate([near_surface(shape, rng, 100)[0], random_points(shape, rng, 200)]) * s
    phi, _ = sdf.evaluate(int(model.collider_shape[k]), model.collider_dims[k], f,
                          to_world("rotated", q))
    true = shape.exact(q / s) * s
    assert np.max(np.abs(phi - true)) <= 1e-12                 # measured 1.6e-15


@pytest.mark.parametrize("shape_name,kw,shape", BUILDER_CASES[::2],
                         ids=[c[0] for c in BUILDER_CASES[::2]])
def test_contact_projects_onto_the_keyword_surface(shape_name, kw, shape):
    """Particles started 3 % of the size inside a collider are on its surface after one step
    (no gravity): the size keywords reach the contact solve, |phi_true| <= 1e-12 m (measured
    1e-15)."""
    rng = np.random.default_rng(5)
    rot, t, _ = FRAMES["half_turn"]
    m = placement(rot, (1.0, 1.0, 1.0), t)
    p, n = surface_samples(shape, rng, 40)
    q = p - 0.03 * shape.size * n
    q = q[shape.smooth(q)]
    b = Builder()
    b.add_particles(to_world("half_turn", q))
    b.add_collider(shape_name, matrix=m, friction=0.0, **kw)
    sim = Simulation(b.build(), substeps=1, iterations=1, gravity=(0.0, 0.0, 0.0))
    sim.step(1.0 / 24)
    after = to_local("half_turn", sim.x)
    assert np.all(shape.inside(q))
    assert np.max(np.abs(shape.exact(after))) <= 1e-12


# ----------------------------------------------------------------------------- decompose, slerp


@pytest.mark.parametrize("frame", list(FRAMES))
def test_decompose(frame):
    rot, t, mirror = FRAMES[frame]
    scale = np.multiply((0.5, 2.0, 1.25), mirror)
    f = sdf.decompose(placement(rot, scale, t))
    assert np.allclose(f.scale, np.abs(scale), rtol=0, atol=1e-14)
    assert np.allclose(f.translation, t, rtol=0, atol=0)
    assert np.allclose(f.rotation.T @ f.rotation, np.eye(3), rtol=0, atol=1e-14)
    assert np.allclose(f.rotation * np.sign(scale), rot, rtol=0, atol=1e-14)


def _angle(r0, r1):
    return math.acos(np.clip((np.trace(r0.T @ r1) - 1) / 2, -1.0, 1.0))


INTERP_PAIRS = [
    ("identity", "rotated"),
    ("rotated", "half_turn"),
    ("half_turn", "identity"),
    ("exact_half_turn", "rotated"),
    ("identity", "exact_half_turn"),
    ("mirrored", "mirrored"),
]


@pytest.mark.parametrize("a,b", INTERP_PAIRS)
def test_interpolate(a, b):
    frames = {**FRAMES, "exact_half_turn": EXACT_HALF_TURN}
    ra, ta, ma = frames[a]
    rb, tb, mb = frames[b]
    if a == b:                                   # two different mirrored placements
        rb = axis_rotation((0.1, 0.3, 1.0), -2.0) @ ra
        tb = ta + (1.0, -2.0, 0.5)
    f0 = sdf.decompose(placement(ra, np.multiply((1.0, 2.0, 0.5), ma), ta))
    f1 = sdf.decompose(placement(rb, np.multiply((3.0, 1.0, 1.5), mb), tb))
    for s, want in ((0.0, f0), (1.0, f1)):
        g = sdf.interpolate(f0, f1, s)
        assert np.max(np.abs(g.rotation - want.rotation)) <= 1e-12
        assert np.max(np.abs(g.translation - want.translation)) <= 1e-12
        assert np.max(np.abs(g.scale - want.scale)) <= 1e-12
    total = _angle(f0.rotation, f1.rotation)
    for s in np.linspace(0.05, 0.95, 19):
        g = sdf.interpolate(f0, f1, s)
        r = g.rotation
        assert np.max(np.abs(r.T @ r - np.eye(3))) <= 1e-12
        assert abs(np.linalg.det(r) - np.linalg.det(f0.rotation)) <= 1e-12
        # slerp: constant angular speed along the shortest arc
        assert abs(_angle(f0.rotation, r) - s * total) <= 1e-7
        assert abs(_angle(r, f1.rotation) - (1 - s) * total) <= 1e-7
        assert np.allclose(g.translation, f0.translation + s * (f1.translation - f0.translation),
                           rtol=0, atol=1e-12)
        assert np.allclose(g.scale, f0.scale + s * (f1.scale - f0.scale), rtol=0, atol=1e-12)


def test_interpolate_equal_frames_is_exact():
    """Equal frames (even as different objects) interpolate to the first one itself, and an
    unchanged rotation stays bit-exact under a moving translation / scale."""
    rot, t, _ = FRAMES["rotated"]
    m = placement(rot, (1.0, 2.0, 0.5), t)
    f0, f0_again = sdf.decompose(m), sdf.decompose(m.copy())
    assert f0 is not f0_again
    m2 = m.copy()
    m2[:3, 3] += (1.0, 2.0, 3.0)
    m2[:3, 0] *= 2.0
    f1 = sdf.decompose(m2)
    assert np.array_equal(f1.rotation, f0.rotation)
    for s in (0.0, 0.3, 0.999):
        assert sdf.interpolate(f0, f0_again, s) is f0
        g = sdf.interpolate(f0, f1, s)
        assert np.array_equal(g.rotation, f0.rotation)
    assert np.array_equal(sdf.interpolate(f0, f1, 0.0).translation, f0.translation)


def test_quaternion_round_trip_near_half_turns():
    """to_quaternion / from_quaternion round-trip every rotation, including half turns about
    axes with mixed signs (the old copysign formula returned another rotation for those)."""
    rng = np.random.default_rng(9)
    worst = 0.0
    for i in range(400):
        axis = rng.normal(size=3)
        angle = (math.pi, math.pi - 1e-9, rng.uniform(0, math.pi), 1e-9)[i % 4]
        r = axis_rotation(axis, angle)
        for rr in (r, sdf.decompose(placement(r, (1.0, 0.3, 2.0), np.zeros(3))).rotation):
            q = sdf.to_quaternion(rr)
            assert abs(np.linalg.norm(q) - 1) <= 1e-15 * 4
            worst = max(worst, float(np.max(np.abs(sdf.from_quaternion(q) - rr))))
    assert worst <= 1e-14


@pytest.mark.parametrize("shape,dims,scale", [
    (sdf.SPHERE, (0.5, 0.0, 0.0), (1.0, 0.6, 0.8)),
    (sdf.CYLINDER, (0.3, 1.0, 0.0), (1.4, 0.7, 1.1)),
    (sdf.CAPSULE, (0.25, 1.2, 0.0), (0.9, 1.3, 0.8)),
    (sdf.SPHERE, (0.5, 0.0, 0.0), (1.0, 1.0, 1.0)),
    (sdf.BOX, (0.4, 0.6, 0.8), (1.5, 0.5, 2.0)),
    (sdf.CYLINDER, (0.3, 1.0, 0.0), (0.7, 0.7, 1.1)),
])
def test_column_forms_match_the_vectorised_sdf(shape, dims, scale):
    """The contact solve evaluates SDFs in column form (solver/collision/sdf.py, mirrored by
    the compiled kernels); sdf.evaluate_local is the vectorised reference. They are one geometry."""
    from solver.collision import sdf as columns
    frame = sdf.Frame(np.eye(3), np.zeros(3), np.array(scale, float))
    q = np.random.default_rng(5).uniform(-1.5, 1.5, size=(4000, 3))
    q[:50, :2] = 0.0                                   # on the axis, where guards kick in
    phi_ref, g_ref = sdf.evaluate_local(shape, np.array(dims), frame, q)
    approximate = not sdf.is_exact(shape, frame.scale)
    abc = (columns.approx_scaled_dims if approximate else columns.exact_scaled_dims)(
        shape, dims, frame.scale)
    phi, g0, g1, g2 = columns.collider_sdf(shape, approximate, abc, frame.scale, q[:, 0], q[:, 1],
                                         q[:, 2])
    assert np.abs(phi - phi_ref).max() < 1e-13
    assert np.abs(np.column_stack([g0, g1, g2]) - g_ref).max() < 1e-12

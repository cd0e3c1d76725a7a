"""Mesh colliders (solver/collision/mesh.py): the signed distance against analytic shapes, the
BVH query against the brute force, resting, solidity, open meshes' sides, deforming meshes,
non-manifold input, bad input and resume. The physics tests run on the backend the suite runs
with (VERLET_BACKEND); the distance tests check both backends directly."""

import numpy as np
import pytest

from mesh_shapes import box, grid, icosphere, torus
from solver import Builder, Simulation, backend
from solver.collision import mesh_query
from solver.collision.mesh_query import SKIN

_BACKENDS = ["numpy"] + (["numba"] if backend.numba_kernels() is not None else [])


def _translate(x, y, z):
    m = np.eye(4)
    m[:3, 3] = x, y, z
    return m


def _mesh_sim(v, f, matrix=None, points=np.zeros((1, 3)), **kw):
    b = Builder()
    b.add_particles(points)
    k = b.add_collider("mesh", matrix=matrix, vertices=v, triangles=f, **kw)
    return Simulation(b.build(), backend="numpy"), k


def _query(sim, k, q, which):
    """phi (p,), unit gradient (p, 3) and closest triangle of local points q, with the NumPy
    reference or the compiled kernel (one call per point)."""
    ms, ctl = sim.colliders.meshes, sim.control
    ms.prepare(ctl.mesh_vertices, ctl.mesh_target, ctl.collider_frame, ctl.collider_target,
               sim.kernels)
    group = ms.kernel_args(ctl.mesh_vertices, ctl.mesh_target)
    sc = np.array([[f.scale for f in ctl.collider_frame]])
    mesh_query.place_meshes(*group[:2], group[6], group[17], sc, sc, 0, 1, group[19], group[3],
                            group[4])
    if which == "numpy":
        phi, g0, g1, g2, tri, *_ = mesh_query.mesh_sdf(q[:, 0], q[:, 1], q[:, 2], q[:, 0],
                                                       q[:, 1], q[:, 2], k, group)
        return phi, np.column_stack([g0, g1, g2]), tri
    from solver.kernels.compiled_mesh import mesh_sdf
    out = np.array([mesh_sdf(p[0], p[1], p[2], p[0], p[1], p[2], k, group, -1)[:5] for p in q])
    return out[:, 0], out[:, 1:4], out[:, 4].astype(np.int64)


def _box_sdf(q, h):
    d = np.abs(q) - h
    return np.linalg.norm(np.maximum(d, 0), axis=1) + np.minimum(d.max(axis=1), 0)


@pytest.mark.parametrize("which", _BACKENDS)
def test_signed_distance_of_a_box_mesh_is_the_analytic_one(which):
    rng = np.random.default_rng(1)
    v, f = box((1.0, 2.0, 0.6))
    sim, k = _mesh_sim(v, f)
    q = rng.uniform(-1.5, 1.5, (400, 3))
    phi, g, _ = _query(sim, k, q, which)
    assert np.allclose(phi, _box_sdf(q, np.array([0.5, 1.0, 0.3])), atol=1e-12)
    assert np.allclose(np.linalg.norm(g, axis=1), 1.0)
    assert (phi < 0).sum() > 10                   # some points were inside: the sign works


@pytest.mark.parametrize("which", _BACKENDS)
def test_signed_distance_of_an_icosphere_is_the_sphere_within_the_mesh_error(which):
    rng = np.random.default_rng(2)
    v, f = icosphere(3, 0.8)
    sim, k = _mesh_sim(v, f, matrix=_translate(0.2, 0, 0))    # local points: frame-independent
    q = rng.uniform(-1.2, 1.2, (500, 3))
    phi, g, _ = _query(sim, k, q, which)
    exact = np.linalg.norm(q, axis=1) - 0.8
    edge = np.max(np.linalg.norm(v[f[:, 0]] - v[f[:, 1]], axis=1))
    chord = 0.8 - np.sqrt(0.8 ** 2 - (edge / np.sqrt(3)) ** 2)    # deepest face centre
    assert np.all(np.abs(phi - exact) <= chord + 1e-12)
    assert np.all(np.sign(phi[np.abs(exact) > chord]) == np.sign(exact[np.abs(exact) > chord]))
    far = np.abs(exact) > 0.05
    assert np.all(np.einsum("ij,ij->i", g[far], q[far] / np.linalg.norm(q[far], axis=1)[:, None])
                  > 0.9)                          # the gradient points outward


def test_inward_winding_is_made_outward():
    v, f = icosphere(1, 1.0)
    sim, k = _mesh_sim(v, f[:, ::-1])
    phi, _, _ = _query(sim, k, np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 2.0]]), "numpy")
    assert phi[0] < -0.7 and phi[1] > 0.9


@pytest.mark.skipif(len(_BACKENDS) < 2, reason="compiled kernels unavailable")
def test_bvh_query_finds_the_brute_force_triangle():
    """Ties included (a grid's shared edges and vertices): the lowest triangle index wins."""
    rng = np.random.default_rng(3)
    for v, f in (torus(1.0, 0.3, 24, 12), grid(6, 2.0), icosphere(2, 1.0)):
        sim, k = _mesh_sim(v, f)
        q = np.vstack([rng.uniform(-1.5, 1.5, (300, 3)), v[:20] + [0, 0, 0.1], v[:20]])
        a = _query(sim, k, q, "numpy")
        b = _query(sim, k, q, "numba")
        assert np.array_equal(a[2], b[2])
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def _drop(points, colliders, steps=72, substeps=10, radius=0.02, gravity=(0, 0, -9.81),
          velocities=None, drive=None):
    b = Builder()
    b.add_particles(np.atleast_2d(points), radius=radius)
    for c in colliders:
        b.add_collider("mesh", **c)
    sim = Simulation(b.build(), substeps=substeps, gravity=gravity)
    if velocities is not None:
        sim.set_velocities(np.arange(len(np.atleast_2d(points))), velocities)
    for i in range(steps):
        if drive is not None:
            drive(sim, i)
        sim.step(1 / 24)
    return sim


def test_particle_rests_on_a_mesh_plane_and_a_torus_at_radius_plus_thickness():
    gv, gf = grid(4, 4.0)
    tv, tf = torus(1.0, 0.3, 32, 16)
    sim = _drop([[-1.7, 0.3, 0.5], [1.0, 0.0, 1.0]],
                [dict(vertices=gv, triangles=gf, thickness=0.01),
                 dict(vertices=tv, triangles=tf, thickness=0.03, matrix=_translate(0, 0, 0.5))])
    assert sim.x[0, 2] == pytest.approx(0.02 + 0.01 + SKIN, abs=1e-6)   # open: + the skin
    assert sim.x[1, 2] == pytest.approx(0.5 + 0.3 + 0.02 + 0.03, abs=1e-6)   # the ring's top
    assert np.abs(sim.v).max() < 1e-3


def _torus_sdf(x, major, minor):
    return np.hypot(np.hypot(x[:, 0], x[:, 1]) - major, x[:, 2]) - minor


def test_cloth_dropped_on_a_closed_torus_ends_nowhere_inside():
    b = Builder()
    n = 11
    g = np.linspace(-1.4, 1.4, n)
    x, y = np.meshgrid(g, g, indexing="ij")
    pts = np.column_stack([x.ravel(), y.ravel(), np.full(n * n, 0.8)])
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
    b.add_cloth(pts, quads, radius=0.01) if "radius" in Builder.add_cloth.__code__.co_varnames \
        else b.add_cloth(pts, quads)
    tv, tf = torus(1.0, 0.3, 24, 12)
    k = b.add_collider("mesh", vertices=tv, triangles=tf, thickness=0.01)
    sim = Simulation(b.build(), substeps=8)
    for _ in range(36):
        sim.step(1 / 24)
    x = sim.x
    phi, _, _ = _query(sim, k, x, "numpy")
    assert phi.min() > 0.0                       # nothing inside the mesh
    chord = 0.3 * (1 - np.cos(np.pi / 12)) + 1.3 * (1 - np.cos(np.pi / 24))
    assert _torus_sdf(x, 1.0, 0.3).min() > -chord
    assert np.any(phi < 0.05)                    # and it did drape onto the torus


def test_open_mesh_is_two_sided_each_particle_keeps_its_side():
    gv, gf = grid(3, 2.0)
    sim = _drop([[0.1, 0.2, 0.3], [-0.3, 0.1, -0.3]], [dict(vertices=gv, triangles=gf)],
                steps=24, gravity=(0, 0, 0), velocities=[[0, 0, -4.0], [0, 0, 4.0]])
    assert sim.x[0, 2] >= 0.02 + SKIN - 1e-9
    assert sim.x[1, 2] <= -0.02 - SKIN + 1e-9
    assert sim.x[0, 2] < 0.05 and sim.x[1, 2] > -0.05      # both reached the sheet


@pytest.mark.parametrize("radius", [0.02, 0.0])
def test_deforming_mesh_pushes_a_resting_particle_up(radius):
    """The open sheet rises 2.6 mm per substep, far more than the skin: the side of x* is taken
    against the sheet where it was at the substep's start, so the particle is carried."""
    gv, gf = grid(4, 2.0)
    rise = 0.5 / 16

    def drive(sim, i):
        if 24 <= i < 40:
            sim.set_collider_vertices(0, gv + [0, 0, rise * (i - 23)])
    sim = _drop([[0.13, -0.2, 0.2]], [dict(vertices=gv, triangles=gf)], steps=48, drive=drive,
                substeps=12, radius=radius)
    assert sim.x[0, 2] == pytest.approx(0.5 + radius + SKIN, abs=1e-3)


def test_friction_carries_a_particle_on_a_sliding_deforming_mesh():
    gv, gf = grid(8, 4.0)
    speed = 0.5                                           # [m/s] the vertices slide along X

    def drive(sim, i):
        sim.set_collider_vertices(0, gv + [speed * (i + 1) / 24, 0, 0])
    sim = _drop([[0.0, 0.0, 0.021]], [dict(vertices=gv, triangles=gf, friction=1.0)],
                steps=24, drive=drive)
    assert sim.x[0, 0] == pytest.approx(speed * 1.0, abs=0.03)
    assert sim.v[0, 0] == pytest.approx(speed, abs=0.05)
    # without friction it stays behind
    sim = _drop([[0.0, 0.0, 0.021]], [dict(vertices=gv, triangles=gf, friction=0.0)],
                steps=24, drive=drive)
    assert abs(sim.x[0, 0]) < 0.01


def test_non_manifold_and_self_intersecting_meshes_still_work():
    v, f = box((1.0, 1.0, 1.0))
    fin = np.vstack([v, [[1.2, 1.2, 0.0]]])               # a fin on the edge (0.5, 0.5, z)
    e = np.nonzero(np.isclose(v[:, 0], 0.5) & np.isclose(v[:, 1], 0.5))[0]
    f_fin = np.vstack([f, [[e[0], e[1], 8]]])             # that edge now has 3 triangles
    v2, f2 = box((0.6, 0.6, 1.6))                         # a second box through the first
    both_v = np.vstack([v, v2 + [0.6, 0, 0]])
    both_f = np.vstack([f, f2 + 8])
    sim = _drop([[-0.3, -0.2, 1.5], [0.8, 0.1, 1.5], [-0.2, 0.3, 1.5]],
                [dict(vertices=fin, triangles=f_fin, matrix=_translate(0, 0, 0)),
                 dict(vertices=both_v, triangles=both_f, matrix=_translate(0, 3, 0))],
                steps=48, drive=None)
    m = sim.model
    assert not m.mesh_closed[0] and m.mesh_closed[1]
    assert sim.x[0, 2] == pytest.approx(0.5 + 0.02 + SKIN, abs=1e-6)      # open: the skin
    b = Builder()
    b.add_particles(np.array([[0.8, 3.1, 1.5], [-0.2, 3.1, 1.5]]), radius=0.02)
    b.add_collider("mesh", vertices=both_v, triangles=both_f, matrix=_translate(0, 3, 0))
    sim = Simulation(b.build(), substeps=10)
    for _ in range(48):
        sim.step(1 / 24)
    assert sim.x[0, 2] == pytest.approx(0.8 + 0.02, abs=1e-6)   # on the taller box
    assert sim.x[1, 2] == pytest.approx(0.5 + 0.02, abs=1e-6)


@pytest.mark.parametrize("tris, match", [
    (np.zeros((0, 3), int), "no triangles"),
    (np.array([[0, 1, 9]]), "out of range"),
    (np.array([[0, 1, 1], [0, 1, 2]])[:1], "degenerate"),
    (np.array([[0.0, 1.0, 2.0]]), "integer"),
])
def test_bad_meshes_are_refused_with_the_cause(tris, match):
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]])
    with pytest.raises(ValueError, match=match):
        Builder().add_collider("mesh", vertices=v, triangles=tris)


def test_non_finite_vertices_and_missing_arrays_are_refused():
    b = Builder()
    with pytest.raises(ValueError, match="NaN"):
        b.add_collider("mesh", vertices=[[0, 0, np.nan], [1, 0, 0], [0, 1, 0]],
                       triangles=[[0, 1, 2]])
    with pytest.raises(ValueError, match="needs vertices"):
        b.add_collider("mesh")
    with pytest.raises(ValueError, match="only a 'mesh'"):
        b.add_collider("sphere", vertices=np.zeros((3, 3)))


def test_degenerate_triangles_are_dropped_and_the_rest_used():
    v, f = grid(2, 2.0)                                   # 9 vertices, 8 triangles
    v = np.vstack([v, [[0, 0, 1.0], [1, 1, 2.0], [2, 2, 3.0]]])    # three on a line
    f = np.vstack([[[9, 10, 11], [3, 3, 4]], f])          # zero area, a repeated vertex
    b = Builder()
    b.add_particles(np.array([[0.1, 0.1, 0.5]]), radius=0.02)
    b.add_collider("mesh", vertices=v, triangles=f)
    m = b.build()
    assert len(m.mesh_triangles) == 8
    sim = Simulation(m)
    for _ in range(24):
        sim.step(1 / 24)
    assert sim.x[0, 2] == pytest.approx(0.02 + SKIN, abs=1e-6)


def test_set_collider_vertices_checks_its_input():
    v, f = grid(2, 2.0)
    b = Builder()
    b.add_particles(np.zeros((1, 3)))
    b.add_collider("mesh", vertices=v, triangles=f)
    b.add_collider("plane")
    sim = Simulation(b.build())
    with pytest.raises(ValueError, match=r"shape \(9, 3\)"):
        sim.set_collider_vertices(0, v[:4])
    with pytest.raises(ValueError, match="not a mesh"):
        sim.set_collider_vertices(1, v)
    with pytest.raises(ValueError, match="NaN"):
        sim.set_collider_vertices(0, v * np.nan)


def test_resume_with_a_deforming_mesh_is_bit_identical():
    from solver.state import Checkpoint
    tv, tf = torus(1.0, 0.3, 16, 8)

    def drive(sim, i):
        sim.set_collider_vertices(0, tv * (1.0 + 0.1 * np.sin(i / 3.0)) + [0, 0, 0.02 * i])
    b = Builder()
    g = np.linspace(-1, 1, 6)
    pts = np.array([[x, y, 0.6] for x in g for y in g])
    b.add_particles(pts, radius=0.02)
    b.add_collider("mesh", vertices=tv, triangles=tf, friction=0.6, restitution=0.3)
    sim = Simulation(b.build(), substeps=6)
    for i in range(10):
        drive(sim, i)
        sim.step(1 / 24)
    drive(sim, 10)
    saved = sim.get_state()
    from_file = Checkpoint.from_arrays(saved.to_arrays())
    runs = []
    for cp in (saved, from_file, saved):
        sim.set_state(cp)
        for i in range(11, 20):
            sim.step(1 / 24)
            drive(sim, i)
        runs.append(np.array(sim.x))
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])
    assert not np.allclose(runs[0], pts)


def test_zero_radius_particles_rest_on_an_open_sheet_and_stay_on_their_side():
    """At a zero contact offset a resting particle would sit exactly on the sheet, where the
    side of x* is rounding noise: the skin keeps it SKIN above."""
    gv, gf = grid(5, 2.0)
    rng = np.random.default_rng(4)
    pts = np.column_stack([rng.uniform(-0.8, 0.8, (30, 2)), np.full(30, 0.3)])
    sim = _drop(pts, [dict(vertices=gv, triangles=gf)], steps=48, radius=0.0)
    assert np.allclose(sim.x[:, 2], SKIN, atol=1e-7)


def _octahedron(h):
    v = np.array([[h, 0, 0], [-h, 0, 0], [0, h, 0], [0, -h, 0], [0, 0, h], [0, 0, -h]], float)
    f = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5],
                  [0, 3, 5]])
    return v, f


@pytest.mark.parametrize("which", _BACKENDS)
def test_a_mesh_moved_far_is_where_its_new_vertices_are(which):
    """The refit (boxes) and the pseudo-normals follow the vertices: an octahedron turned upside
    down (its bottom vertex becomes the apex, whose pseudo-normal pointed down) and moved 3 m,
    in six steps of 0.5 m and 30 degrees (the substeps interpolate the vertices linearly under
    the pseudo-normals of the step's end, so a step must not turn the mesh much). A particle
    dropped on the new apex rests on it at radius above; one dropped where the mesh was falls
    through the empty space. Stale boxes miss the new apex (the particle is no candidate, or
    the query prunes it); a stale apex normal puts the particle inside."""
    h, r = 0.5, 0.02
    v, f = _octahedron(h)
    b = Builder()
    b.add_particles([[3.0, 0.0, 2.0], [0.0, 0.0, 2.0]], radius=r)     # far from the move
    b.add_collider("mesh", vertices=v, triangles=f)
    sim = Simulation(b.build(), substeps=10, backend=which, gravity=(0, 0, 0))
    for _ in range(3):                              # boxes and normals made for the old place
        sim.step(1 / 24)
    for i in range(1, 7):                           # about X, the last one exactly upside down
        c, s = (np.cos(np.pi * i / 6), np.sin(np.pi * i / 6)) if i < 6 else (-1.0, 0.0)
        turned = np.column_stack([v[:, 0], c * v[:, 1] - s * v[:, 2], s * v[:, 1] + c * v[:, 2]])
        sim.set_collider_vertices(0, turned + [0.5 * i, 0.0, 0.0])
        sim.step(1 / 24)
    assert np.array_equal(sim.state.x, [[3.0, 0.0, 2.0], [0.0, 0.0, 2.0]])   # nothing touched
    sim.gravity = np.array([0.0, 0.0, -9.81])
    for _ in range(36):
        sim.step(1 / 24)
    assert sim.x[0, 0] == 3.0 and sim.x[0, 1] == 0.0
    assert sim.x[0, 2] == pytest.approx(h + r, abs=1e-9)
    assert sim.x[1, 2] < -2.0


@pytest.mark.parametrize("which", _BACKENDS)
def test_refit_boxes_hold_the_step_and_normals_are_angle_weighted(which):
    """The kernels refit_meshes and mesh_normals against a brute force: every BVH node's box
    holds its triangles at both ends of the step under both scales, and the vertex and edge
    pseudo-normals equal sums written out triangle by triangle (np.arccos here)."""
    from solver.collision import mesh as mesh_module
    from solver.kernels import table
    tv, tf = torus(1.0, 0.3, 12, 6)
    sim, k = _mesh_sim(tv, tf)
    ms, kern = sim.colliders.meshes, table(which)
    rng = np.random.default_rng(1)
    V0 = tv + rng.normal(0, 0.05, tv.shape)
    V1 = V0 * 1.5 + [2.0, -1.0, 0.5] + rng.normal(0, 0.05, tv.shape)
    s0, s1 = np.array([[1.0, 2.0, 0.5]]), np.array([[0.5, 1.0, 3.0]])
    kern.refit_meshes(V0, V1, ms.start, ms.ids, s0, s1, ms.tri, ms.node_start, ms.t0, ms.t1,
                      ms.right, ms.leaf, ms.inner, ms.inner_start, ms.vlo, ms.vhi, ms.lo, ms.hi)
    corners = np.stack([V0 * s0, V0 * s1, V1 * s0, V1 * s1])          # (4, V, 3)
    for i in range(len(ms.t0)):
        pts = corners[:, ms.tri[ms.t0[i]:ms.t1[i]].ravel()].reshape(-1, 3)
        assert np.all(ms.lo[i] < pts.min(0)) and np.all(pts.max(0) < ms.hi[i])
        assert np.all(ms.hi[i] - pts.max(0) < 1e-8)                      # tight: only the pad
    kern.mesh_normals(V1, ms.start, ms.ids, s1, ms.tri, ms.tri_edge, ms.W1, ms.face, ms.angle,
                      ms.edge_sum, ms.vert_normal, ms.edge_normal)
    W = V1 * s1
    vn = np.zeros_like(W)
    en = {}
    for t in ms.tri:
        p = W[t]
        n = np.cross(p[1] - p[0], p[2] - p[0])
        n /= np.linalg.norm(n)
        for j in range(3):
            a, b = p[(j + 1) % 3] - p[j], p[j - 1] - p[j]
            vn[t[j]] += n * np.arccos(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
            e = tuple(sorted((t[j], t[(j + 1) % 3])))
            en[e] = en.get(e, 0.0) + n
    assert np.allclose(ms.vert_normal, vn, rtol=0, atol=1e-12)
    for i, t in enumerate(ms.tri):
        for j in range(3):
            assert np.allclose(ms.edge_normal[i, j], en[tuple(sorted((t[j], t[(j + 1) % 3])))],
                               rtol=0, atol=1e-12)
    x = np.linspace(-1.0, 1.0, 20001)
    assert np.abs(mesh_module.acos(x) - np.arccos(x)).max() < 1e-15


@pytest.mark.parametrize("which", _BACKENDS)
def test_far_candidates_skip_their_queries_and_fast_ones_are_still_caught(which):
    """mesh_query.mesh_far skips a candidate whose distance at the step's start, less the
    surface's sweep, less how far it (and its guard segment's start) moved since, is beyond the
    contact offset + CLEAR_GAP, and only then. A particle fired at 30 m/s from 0.6 m above a
    closed box (it crosses the box in one step) still stops on its top: the skip ends before
    the particle gets near."""
    from solver.collision.mesh_query import CLEAR_GAP, mesh_far
    v, f = box((1.0, 1.0, 1.0))
    b = Builder()
    b.add_particles([[0.1, 0.0, 1.1], [0.2, 0.1, 0.8]], radius=0.01)
    b.add_collider("mesh", vertices=v, triangles=f)
    sim = Simulation(b.build(), substeps=8, backend=which, gravity=(0, 0, 0))
    sim.set_velocities([0], [[0.0, 0.0, -30.0]])
    for _ in range(12):
        sim.step(1 / 24)
    assert sim.x[0, 2] == pytest.approx(0.5 + 0.01, abs=1e-6)
    assert np.array_equal(sim.x[1], [0.2, 0.1, 0.8])
    # the bound itself: particle 1 rests 0.3 m above; clear 0.3, offset 0.01
    ms = sim.colliders.meshes
    group = ms.kernel_args(sim.control.mesh_vertices, sim.control.mesh_target)
    ms.x0[1] = [0.2, 0.1, 0.8]
    ms.clear[1, 0] = 0.3
    lim = 0.3 - 0.01 - CLEAR_GAP
    for rho, expect in ((0.0, True), (lim - 1e-9, True), (lim + 1e-9, False), (0.5, False)):
        x = np.array([0.2, 0.1, 0.8 + rho])
        if which == "numpy":
            got = bool(mesh_far(x[:1], x[1:2], x[2:], x[:1], x[1:2], x[2:] - rho,
                                np.array([1]), 0, np.array([0.01]), group)[0])
        else:
            from solver.kernels.compiled_mesh import mesh_far as compiled_far
            got = compiled_far(x[0], x[1], x[2], x[0], x[1], x[2] - rho, 1, 0, 0.01, group)
        assert got == expect, (rho, got)


def test_a_patch_answers_only_what_it_can_prove():
    """The compiled backend gives a particle near a mesh a patch at the step's start
    (compiled_patch._patch: every triangle within its patch margin of its hint's distance), and
    its queries in the substeps read the patch while every triangle outside it is provably
    farther (they were beyond patch_reach + the surface's sweep at the step's start; the
    particle moved ``moved`` since), else walk the BVH: the brute force's triangle either way.
    Checked: a patch holds every triangle within its reach and the surface's sweep (brute
    force from where the particle was, on a still and a swelling mesh), queries at points
    moved from 0 to 50 times that reach answer as the brute force does, and a patch whose reach
    is overstated gives its own wrong answer (so the queries do read it)."""
    if "numba" not in _BACKENDS:
        pytest.skip("no compiled backend")
    from solver.kernels.compiled_patch import mesh_sdf_near
    rng = np.random.default_rng(5)
    v, f = icosphere(3, 1.0)
    dirs = rng.normal(size=(80, 3))
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    b = Builder()
    b.add_particles(dirs * (1.0 + rng.uniform(0.0, 0.008, (80, 1))), radius=0.005)
    k = b.add_collider("mesh", vertices=v, triangles=f)
    sim = Simulation(b.build(), backend="numba", gravity=(0, 0, 0))
    sim.step(1 / 24)                       # the hints; the second step's collide: the patches
    sim.step(1 / 24)
    ms = sim.colliders.meshes
    group = ms.kernel_args(sim.control.mesh_vertices, sim.control.mesh_target)
    rows = ms.patch_row[:, ms.column[k]]
    patched = np.nonzero(rows >= 0)[0]
    assert len(patched) >= 20
    W, tri = group[3], group[2]                     # the mesh's own (BVH) triangle order

    def brute(q):
        out = mesh_query.mesh_sdf(q[:1], q[1:2], q[2:], q[:1], q[1:2], q[2:], k, group)
        return out[0][0], int(out[4][0])

    checked = 0
    for i in patched:
        r = rows[i]
        reach, members = ms.patch_reach[r], ms.patch_tri[r, :ms.patch_count[r]]
        a, b_, c = W[tri[:, 0]], W[tri[:, 1]], W[tri[:, 2]]
        d2 = mesh_query.tri_closest(*np.repeat(ms.x0[i][:, None], len(tri), axis=1), a[:, 0],
                                    a[:, 1], a[:, 2], b_[:, 0], b_[:, 1], b_[:, 2], c[:, 0],
                                    c[:, 1], c[:, 2])[0]
        assert set(np.nonzero(d2 < reach * reach)[0]) <= set(members.tolist())
        for scale in (0.0, 0.2, 0.45, 0.7, 1.5, 4.0, 50.0):
            step = rng.normal(size=3)
            step *= scale * reach / np.linalg.norm(step)
            q = ms.x0[i] + step
            got = mesh_sdf_near(q[0], q[1], q[2], q[0], q[1], q[2], k, group, i,
                                float(np.linalg.norm(step)))
            assert (got[0], got[4]) == brute(q), (i, scale)
            checked += 1
    # overstated: a query 0.5 m from where the particle was takes the patch's nearest
    lied = 0
    for i in patched:
        ms.patch_reach[rows[i]] = 1e9
        q = ms.x0[i] + 0.5 * np.cross(ms.x0[i], [0.0, 0.0, 1.0] if abs(ms.x0[i][2]) < 0.9 else
                                      [1.0, 0.0, 0.0])
        got = mesh_sdf_near(q[0], q[1], q[2], q[0], q[1], q[2], k, group, i, 0.5)
        lied += got[4] != brute(q)[1]
    assert checked >= 140 and lied == len(patched)
    # a swelling mesh (each vertex 4 mm out in the step, a sweep of 1.6 x that): the patch
    # holds every triangle within patch_reach + sweep at the step's start
    V0 = sim.control.mesh_vertices.copy()
    sim.set_collider_vertices(k, v * 1.004)
    sim.step(1 / 24)
    sweep, swollen = 1.6 * 0.004, 0
    a, b_, c = V0[tri[:, 0]], V0[tri[:, 1]], V0[tri[:, 2]]
    for i in np.nonzero(ms.patch_row[:, ms.column[k]] >= 0)[0]:
        r = ms.patch_row[i, ms.column[k]]
        reach, members = ms.patch_reach[r], ms.patch_tri[r, :ms.patch_count[r]]
        d2 = mesh_query.tri_closest(*np.repeat(ms.x0[i][:, None], len(tri), axis=1), a[:, 0],
                                    a[:, 1], a[:, 2], b_[:, 0], b_[:, 1], b_[:, 2], c[:, 0],
                                    c[:, 1], c[:, 2])[0]
        assert set(np.nonzero(d2 < (reach + sweep) ** 2)[0]) <= set(members.tolist())
        swollen += 1
    assert swollen >= 10

"""Cloth self-collision that holds up in a pile (solver/collision/bodies.py, body_stage.py).

Each test runs on both backends and fails when the feature is broken on both:
- an edge contact keeps its sense when its edges turn through parallel within a step (the
  cross product of the edges flips, the layers do not): without it the contact drags an edge
  through the other, and a three-layer fold landing on the ground tore itself apart;
- a Z-folded cloth dropped on the ground lands with its surface never crossing itself
  (checked with an exact edge-through-triangle test, geometry.self_intersections), no stretch
  and nothing faster than its fall;
- an edge contact between two flat stretches of cloth adds nothing to their vertices'
  contacts and is left out, while two sharp ridges crossing in an X, where no vertex is near
  a face, are still held apart by their edge contact;
- a pass over the body contacts conserves momentum whatever each particle's number of
  contacts (mass splitting), yet a particle pushed the same way by several contacts moves by
  one contact's depth, not their sum; and a Z fold at rest on frictionless ground does not
  slide: with each particle's corrections averaged over its own contacts it accelerated along
  x to 0.1 m/s in 2 s;
- an edge pair on its wrong side by more than its contact distance lets go (two-sided
  edges: the sign it reads flips without a crossing, and the push drove a crumpled flag's
  edges through each other), unless one of its edges is on a solid.
"""

import numpy as np
import pytest

from solver import Builder, Simulation, backend as _backend
from solver.collision.bodies import EDGES, PAIR, VERTEX_TRI
from solver.collision.contacts import Contacts
from solver.geometry import self_intersections
from solver.kernels import table

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def test_edge_contact_keeps_its_sense_through_parallel(backend):
    """Edge pq (fixed) along x at z = 0; edge uw 6 mm above it, contact distance 10 mm. At the
    step's start uw was turned +20 degrees about z (normal pq x uw = +z, uw above: side -1);
    now it is turned -20 degrees, so pq x uw = -z. The contact must still lift uw."""
    D, h = 0.01, 0.006
    phi = np.radians(-20.0)
    d = np.array([np.cos(phi), np.sin(phi), 0.0])
    x = np.array([[-1.0, 0, 0], [1.0, 0, 0], [0, 0, h] - 0.5 * d, [0, 0, h] + 0.5 * d])
    start_normal = np.array([0.0, 0.0, 1.0])
    c = Contacts(4, 0, 0)
    c.set_body_contacts(np.array([[0, 1, 2, 3]]), np.array([EDGES]), np.array([-1.0]),
                        np.array([D]), np.array([0.0]), start_normal[None, :])
    inv_mass = np.array([0.0, 0.0, 1.0, 1.0])
    X = np.ascontiguousarray(x.T)
    Xp = X.copy()
    args = c.body_args(inv_mass, 1.0)
    table(backend).solve_bodies(X, Xp, *args)
    lift = X[2, 2:] - h
    assert np.all(lift > 0)                                  # away from pq, not through it
    assert X[2, 2:].mean() == pytest.approx(D, abs=1e-9)     # to the contact distance


def _z_fold(n, size=0.6, gap=0.04, low=0.15):
    """A square cloth of n x n vertices folded twice into three layers gap apart (a Z fold),
    the lowest low above the ground."""
    f1 = (n - 1) // 3
    f2 = 2 * f1
    L = size * f1 / (n - 1)
    u = np.arange(n) * size / (n - 1)
    i = np.arange(n)
    layer = np.where(i <= f1, 0, np.where(i <= f2, 1, 2))
    xs = np.where(layer == 0, u, np.where(layer == 1, 2 * L - u, u - 2 * L))
    X, Y = np.meshgrid(xs, np.linspace(-size / 2, size / 2, n), indexing="ij")
    Z = np.repeat((low + gap * layer)[:, None], n, 1)
    pos = np.column_stack([X.ravel(), Y.ravel(), Z.ravel()])
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
    return pos, quads


def test_z_folded_cloth_lands_without_crossing_itself(backend):
    pos, quads = _z_fold(22)
    b = Builder()
    b.add_cloth(pos, quads, radius=0.004, self_collision=True)
    b.add_collider("plane")
    model = b.build()
    sim = Simulation(model, backend=backend)
    tris = model.contact_tris
    assert len(self_intersections(pos, tris)) == 0
    fall = np.sqrt(2 * 9.81 * pos[:, 2].max())
    worst_speed = worst_strain = 0.0
    for f in range(36):
        sim.step(1 / 24)
        assert len(self_intersections(sim.x, tris)) == 0, f"the cloth crossed itself, frame {f}"
        worst_speed = max(worst_speed, float(np.linalg.norm(sim.v, axis=1).max()))
        worst_strain = max(worst_strain, float(sim.max_stick_strain()))
    assert sim.x[:, 2].max() < 0.1                    # it landed and lies folded
    assert worst_speed < fall                        # nothing launched faster than the fall
    assert worst_strain < 0.1                        # and nothing tore it


def test_self_intersections_finds_a_crossing():
    pos, quads = _z_fold(10)
    b = Builder()
    b.add_cloth(pos, quads, self_collision=True)
    tris = b.build().contact_tris
    assert len(self_intersections(pos, tris)) == 0
    pushed = pos.copy()
    pushed[(pos[:, 2] > 0.17) & (pos[:, 2] < 0.2) & (pos[:, 0] < 0.1), 2] = 0.13   # through
    assert len(self_intersections(pushed, tris)) > 0


def _tent(axis, apex_z, half=0.3, depth=0.1, down=False):
    """Two triangles meeting along a ridge of length 2 half along axis 'x' or 'y' at height
    apex_z, sloping away by depth over half a metre (down=True: a V, ridge at the bottom)."""
    s = 1.0 if down else -1.0
    ridge = [(-half, 0.0), (half, 0.0)]
    pts = [(r, 0.0, apex_z) for r, _ in ridge] + [(r, -0.25, apex_z + s * depth) for r, _ in ridge] \
        + [(r, 0.25, apex_z + s * depth) for r, _ in ridge]
    pts = np.array(pts)
    if axis == "y":
        pts = pts[:, [1, 0, 2]]
    faces = np.array([[0, 1, 3, 2], [0, 4, 5, 1]])
    return pts, faces


def test_crossing_ridges_are_held_apart_by_their_edge_contact(backend):
    thick = 0.01
    low, low_faces = _tent("y", 0.0)                  # a roof ridge along y, pinned
    top, top_faces = _tent("x", 0.03, down=True)      # a V ridge along x above it, falling
    b = Builder()
    a = b.add_cloth(low, low_faces, radius=thick)
    b.pin(a)
    c = b.add_cloth(top, top_faces, radius=thick)
    sim = Simulation(b.build(), backend=backend)
    for _ in range(12):
        sim.step(1 / 24)
    x = sim.x
    ridge_top = x[c[:2], 2].mean()                    # the V's ridge, crossing the roof's
    assert ridge_top == pytest.approx(2 * thick, abs=2e-3)   # resting on the roof's ridge
    assert (sim.contacts.body_kind == EDGES).any()


def test_flat_layers_make_no_edge_contacts_between_their_interiors(backend):
    n = 12
    u = np.linspace(-0.3, 0.3, n)
    X, Y = np.meshgrid(u, u, indexing="ij")
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
    b = Builder()
    lower = b.add_cloth(np.column_stack([X.ravel(), Y.ravel(), np.zeros(n * n)]), quads,
                        radius=0.005)
    b.pin(lower)
    upper = b.add_cloth(np.column_stack([X.ravel() + 0.013, Y.ravel() + 0.007,
                                         np.full(n * n, 0.03)]), quads, radius=0.005)
    sim = Simulation(b.build(), backend=backend)
    for _ in range(12):
        sim.step(1 / 24)
    assert sim.x[upper, 2].min() == pytest.approx(0.01, abs=1e-3)   # resting a thickness up
    k = sim.contacts.body_kind
    idx_c = sim.contacts.body_idx[k == EDGES]
    border = np.zeros(2 * n * n, bool)
    for ids in (lower, upper):
        g = ids.reshape(n, n)
        border[np.r_[g[0], g[-1], g[:, 0], g[:, -1]]] = True
    # every edge pair has a border edge (both ends on the border) in it
    on_a = border[idx_c[:, 0]] & border[idx_c[:, 1]]
    on_b = border[idx_c[:, 2]] & border[idx_c[:, 3]]
    assert np.all(on_a | on_b)
    assert (k == 1).sum() > n * n // 2                # the vertices carry the layer


def test_a_resting_pile_is_not_pressed_into_the_ground(backend):
    """Three cloths stacked on the ground plane: the bottom one ends every substep on the
    ground, not pressed into it by the layers above (the collider acts after the body contacts
    in a sweep), so it reads no speed into the ground; the upper ones rest a contact distance
    apart. With the colliders first, the bottom layer sat 0.1 mm deep, read -0.1 m/s downward
    and never slept."""
    n, r = 10, 0.005
    u = np.linspace(-0.3, 0.3, n)
    X, Y = np.meshgrid(u, u, indexing="ij")
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]], -1).reshape(-1, 4)
    b = Builder()
    layers = [b.add_cloth(np.column_stack([X.ravel() + 0.011 * k, Y.ravel() + 0.007 * k,
                                           np.full(n * n, r + 0.012 * k)]), quads, radius=r)
              for k in range(3)]
    b.add_collider("plane")
    sim = Simulation(b.build(), backend=backend, sleep=False)
    worst_v = 0.0
    lowest = np.inf
    for f in range(60):
        sim.step(1 / 24)
        if f >= 36:
            worst_v = max(worst_v, float(np.abs(sim.v[layers[0], 2]).max()))
            lowest = min(lowest, float(sim.x[layers[0], 2].min()))
    assert worst_v < 1e-3                          # no speed into the ground
    assert lowest >= r - 1e-9                      # on it, not in it
    for k in (1, 2):
        assert np.median(sim.x[layers[k], 2] - sim.x[layers[k - 1], 2]) == \
            pytest.approx(2 * r, abs=1e-3)


def _one_pass(backend, x, idx, kind, side, dist, inv_mass, on_solid=None):
    """One pass of the body contacts over particles x (k, 3): the positions after it
    (on_solid (k,) bool the corners of solid faces, None: none)."""
    c = Contacts(len(x), 0, 0)
    K = len(kind)
    c.set_body_contacts(np.array(idx), np.array(kind), np.array(side, float),
                        np.array(dist, float), np.zeros(K), np.tile([0.0, 0.0, 1.0], (K, 1)))
    X = np.ascontiguousarray(np.array(x, float).T)
    table(backend).solve_bodies(X, X.copy(), *c.body_args(np.array(inv_mass, float), 1.0,
                                                          on_solid))
    return X.T


def test_a_pass_of_body_contacts_conserves_momentum(backend):
    """Particle 0 (1 kg) overlaps three others (2, 3 and 4 kg) and lies on a triangle (0.5 kg
    corners), particle 4 overlaps a fifth: every particle in a different number of contacts.
    The pass must move them by equal and opposite impulses (sum of m dx zero to rounding);
    dividing each particle's sum by its own count, it was 9 % of the pass's total."""
    x = [[0.0, 0.0, 0.003], [0.012, 0.003, 0.001], [-0.004, 0.011, 0.0], [0.002, -0.003, 0.013],
         [0.004, -0.008, 0.021], [-0.1, -0.1, 0.0], [0.1, -0.1, 0.0], [0.0, 0.1, 0.0]]
    inv_mass = [1.0, 0.5, 1 / 3, 0.25, 1.0, 2.0, 2.0, 2.0]
    idx = [[0, 1, -1, -1], [0, 2, -1, -1], [0, 3, -1, -1], [3, 4, -1, -1], [0, 5, 6, 7]]
    kind = [PAIR, PAIR, PAIR, PAIR, VERTEX_TRI]
    X = _one_pass(backend, x, idx, kind, [0, 0, 0, 0, 1], [0.02, 0.02, 0.02, 0.02, 0.01],
                  inv_mass)
    m_dx = (X - np.array(x)) / np.array(inv_mass)[:, None]
    assert np.abs(m_dx).sum() > 1e-3                          # the contacts acted
    assert np.abs(m_dx.sum(axis=0)).max() < 1e-12 * np.abs(m_dx).sum()


def test_a_particle_pushed_one_way_by_several_contacts_moves_by_one_depth(backend):
    """Particle 0 under three pinned particles at one place, each 4 mm too near: it must move
    4 mm away from them (the split of its three contacts), not 12 mm (their sum)."""
    x = [[0.0, 0.0, 0.0]] + [[0.0, 0.0, 0.016]] * 3
    idx = [[0, k, -1, -1] for k in (1, 2, 3)]
    X = _one_pass(backend, x, idx, [PAIR] * 3, [0.0] * 3, [0.02] * 3, [1.0, 0.0, 0.0, 0.0])
    assert X[0] == pytest.approx([0.0, 0.0, -0.004], abs=1e-12)
    assert np.array_equal(X[1:], np.array(x)[1:])


@pytest.mark.parametrize("below, solid, moves", [(0.5, False, True), (3.0, False, False),
                                                 (3.0, True, True)])
def test_an_edge_pair_far_on_its_wrong_side_lets_go_unless_solid(backend, below, solid, moves):
    """Edge pq (pinned) along x, edge uw along y ``below`` x D under it, its side above: within
    D on the wrong side the contact lifts uw to D above pq (it has just passed through); more
    than D below, two-sided edges are left alone (the lines' distance also changes sign where
    the four points pass through one plane with the lines meeting outside the segments: the
    corner of a crumpled flag, whose edges were pushed through each other), unless a corner
    is on a solid face, whose side is its outward one."""
    D = 0.01
    z = -below * D
    x = [[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, -1.0, z], [0.0, 1.0, z]]
    # side -1: (P - Q) . n = -(z of uw) with n = pq x uw = +z, so uw keeps above
    X = _one_pass(backend, x, [[0, 1, 2, 3]], [EDGES], [-1.0], [D], [0.0, 0.0, 1.0, 1.0],
                  np.full(4, solid))
    if moves:
        assert X[2:, 2] == pytest.approx([D, D], abs=1e-12)
    else:
        assert np.array_equal(X, np.array(x))


@pytest.mark.parametrize("solid", [False, True])
def test_a_vertex_round_a_faces_edge_keeps_the_side_it_came_to(backend, solid):
    """Vertex 0, found above face 1-2-3 (z = 0, pinned), passes below the face's plane beside
    it (outside its prism: round its edge, not through it), then comes under it within D: the
    contact holds it D below, on the side it came to, where it was pushed up through the face
    (a gusty flag's corner folding round its own hem crossed the flag so). A solid face keeps
    its outward side: the vertex under it is inside the body and leaves through it."""
    D = 0.01
    c = Contacts(4, 0, 0)
    c.set_body_contacts(np.array([[0, 1, 2, 3]]), np.array([VERTEX_TRI]), np.array([1.0]),
                        np.array([D]), np.zeros(1), np.zeros((1, 3)))
    args = c.body_args(np.array([1.0, 0.0, 0.0, 0.0]), 1.0, np.array([False] + 3 * [solid]))
    X = np.ascontiguousarray(np.array([[-0.5, -0.5, -0.004], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0],
                                       [0.0, 1.0, 0.0]]).T)
    table(backend).solve_bodies(X, X.copy(), *args)          # beside the face: no push
    assert X[:, 0].tolist() == [-0.5, -0.5, -0.004]
    assert c.solved[2][0] == (1.0 if solid else -1.0)
    X[:, 0] = (0.2, 0.2, -0.004)                               # now under the face
    table(backend).solve_bodies(X, X.copy(), *args)
    assert X[2, 0] == pytest.approx(D if solid else -D, abs=1e-12)


@pytest.mark.parametrize("solid", [False, True])
def test_an_edge_pair_beside_each_other_keeps_the_side_it_came_to(backend, solid):
    """Edge uw (along y, free), found above edge pq (along x, pinned), passes below pq's line
    beside pq (over its line's extension, x = 2: the lines' closest points outside pq), then
    comes over pq within D below it: the contact holds it D below, on the side it came to,
    where it was pushed up through pq. With a corner on a solid face the side stays the
    outward one."""
    D = 0.01
    c = Contacts(4, 0, 0)
    # side -1: (P - Q) . n = -(z of uw) with n = pq x uw = +z, so uw keeps above
    c.set_body_contacts(np.array([[0, 1, 2, 3]]), np.array([EDGES]), np.array([-1.0]),
                        np.array([D]), np.zeros(1), np.array([[0.0, 0.0, 1.0]]))
    args = c.body_args(np.array([0.0, 0.0, 1.0, 1.0]), 1.0, np.full(4, solid))
    X = np.ascontiguousarray(np.array([[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, -1.0, -0.004],
                                       [2.0, 1.0, -0.004]]).T)
    before = X.copy()
    table(backend).solve_bodies(X, X.copy(), *args)          # beside pq: no push
    assert np.array_equal(X, before)
    assert c.solved[2][0] == (-1.0 if solid else 1.0)
    X[0, 2:] = 0.0                                             # now over pq, below it
    table(backend).solve_bodies(X, X.copy(), *args)
    assert X[2, 2:] == pytest.approx([D, D] if solid else [-D, -D], abs=1e-12)


def test_a_z_fold_at_rest_on_frictionless_ground_does_not_slide(backend):
    """A Z-folded cloth without friction lands on the ground and lies there: nothing outside
    pushes it along the ground, so its momentum along it must stay near zero (at most what
    landing on its folds gives, 3.6 mm/s measured). With each particle's corrections averaged
    over its own contacts it slid ever faster: 25 mm/s at 0.75 s, 97 mm/s at 2 s."""
    pos, quads = _z_fold(22)
    b = Builder()
    b.add_cloth(pos, quads, radius=0.004, self_collision=True, friction=0.0)
    b.add_collider("plane")
    model = b.build()
    sim = Simulation(model, backend=backend)
    mass = 1.0 / model.particle_inv_mass
    worst = 0.0
    for f in range(48):
        sim.step(1 / 24)
        if f >= 12:
            worst = max(worst, float(np.abs((mass[:, None] * sim.v[:, :2]).sum(0)).max()
                                     / mass.sum()))
    assert worst < 0.01, worst                       # [m/s] the centre of mass's speed

"""Capsule bodies (solver/bodies.py add_capsule_body) meeting each other as axis segments, and
their frame particles left out of the colliders' broad phase (solver/collision/bodies.py
_solve_segments, segment_closest; body_stage.BodyContacts._segment_pairs).

Each test checks numbers against the geometry: the closest points of two segments against a
brute-force search, resting distances against the two radii summed (where the spheres along
an axis would leave a capsule sunk into the dip between two of them), a parallel pair against
its level, momentum against its initial value. Every test runs on both backends.
"""

import numpy as np
import pytest

from solver import Builder, Simulation, backend as _backend
from solver.collision.bodies import SEGMENTS, segment_closest

BACKENDS = ["numpy"] + (["numba"] if _backend.numba_kernels() is not None else [])
RA, RB = 0.05, 0.04


@pytest.mark.parametrize("backend", BACKENDS)
def test_body_touch_holds_this_steps_contacts_only(backend):
    """The shape solve weighs a particle that touched another body 1e4 times (shapes.BOOST):
    the flags must be this step's. Two capsules in contact, then one moved far away: a step
    with no contact between bodies leaves no particle marked (the loop cleared the flags only
    in steps that had such contacts, so the last contact's particles stayed marked)."""
    b = Builder()
    b.add_collider("plane", friction=0.6)
    low, _ = b.add_capsule_body((0, -0.2, RA), (0, 0.2, RA), RA, mass=2.0)
    high, _ = b.add_capsule_body((-0.2, 0, 2 * RA + RB), (0.2, 0, 2 * RA + RB), RB, mass=1.0)
    sim = Simulation(b.build(), substeps=4, backend=backend, sleep=False)
    for _ in range(3):                                   # resting crossed: pressed every substep
        sim.step(1 / 24)
    assert sim.contacts.body_touch[low].any() and sim.contacts.body_touch[high].any()
    sim.move_particles(high, np.array(sim.x)[high] + (0, 0, 5.0), keep_velocity=True)
    sim.step(1 / 24)
    assert len(sim.contacts.body_idx) == 0
    assert not sim.contacts.body_touch.any()


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def _segment_pairs(rng, k):
    """k random segment pairs (k, 4, 3) [m]: general, parallel (overlapping or apart along
    their line), collinear and crossing."""
    p = rng.uniform(-1, 1, (k, 4, 3))
    d = rng.normal(size=(k, 3))
    par = slice(0, k // 4)                       # parallel: uw a shifted, scaled copy of pq
    p[par, 1] = p[par, 0] + d[par]
    off = rng.uniform(-0.3, 0.3, (k // 4, 3))
    along = rng.uniform(-2, 2, (k // 4, 1))
    p[par, 2] = p[par, 0] + off + along * d[par]
    p[par, 3] = p[par, 2] + rng.uniform(0.2, 1.5, (k // 4, 1)) * d[par]
    col = slice(k // 4, k // 3)                  # collinear
    p[col, 2] = p[col, 0] + 1.7 * (p[col, 1] - p[col, 0])
    p[col, 3] = p[col, 0] + 2.5 * (p[col, 1] - p[col, 0])
    cross = slice(k // 3, k // 2)                # crossing at a shared interior point
    mid = 0.5 * (p[cross, 0] + p[cross, 1])
    p[cross, 2] = 2 * mid - p[cross, 3]
    return p


def _brute(seg):
    """The least distance between the two segments over a fine grid of (s, t), refined."""
    s = np.linspace(0, 1, 401)
    a = seg[0] + s[:, None] * (seg[1] - seg[0])
    b = seg[2] + s[:, None] * (seg[3] - seg[2])
    return np.min(np.linalg.norm(a[:, None] - b[None, :], axis=2))


def test_segment_closest_points_are_the_closest(backend):
    """|P - Q| at segment_closest's (s, t) is the segments' distance (no pair of points on them
    is nearer, checked on a 401 x 401 grid), for general, parallel, collinear and crossing
    pairs. Fails when the clamping or the parallel case picks points that are not closest."""
    rng = np.random.default_rng(7)
    segs = _segment_pairs(rng, 120)
    X = segs.reshape(-1, 3).T.copy()
    q = np.arange(len(segs)) * 4
    if backend == "numpy":
        s, t, *_ = segment_closest(X, q, q + 1, q + 2, q + 3)
    else:
        from solver.kernels.compiled_bodies import segment_closest as scalar
        st = []
        for g in segs:
            d1, d2, r = g[1] - g[0], g[3] - g[2], g[0] - g[2]
            st.append(scalar(d1 @ d1, d2 @ d2, d1 @ d2, d1 @ r, d2 @ r))
        s, t = np.array(st).T
    assert np.all((s >= 0) & (s <= 1) & (t >= 0) & (t <= 1))
    P = segs[:, 0] + s[:, None] * (segs[:, 1] - segs[:, 0])
    Q = segs[:, 2] + t[:, None] * (segs[:, 3] - segs[:, 2])
    got = np.linalg.norm(P - Q, axis=1)
    want = np.array([_brute(g) for g in segs])
    # the grid's spacing bounds how far its best pair can lie above the true distance
    step = np.maximum(np.linalg.norm(segs[:, 1] - segs[:, 0], axis=1),
                      np.linalg.norm(segs[:, 3] - segs[:, 2], axis=1)) / 400
    assert np.all(got <= want + 1e-12)
    assert np.all(got >= want - step)
    assert np.all(got[len(segs) // 3:len(segs) // 2] < 1e-9)     # the crossing pairs meet


def _pinned_capsule(b, z=0.5):
    """A capsule along x of radius RA and length 0.5 at height z, pinned: a static bone.
    Returns its particle ids."""
    ids, _ = b.add_capsule_body((-0.25, 0, z), (0.25, 0, z), RA, mass=2.0, up=(0, 0, 1))
    b.pin(ids)
    return ids


def _axis_height(sim, ids):
    """(z at the head, z at the tail) [m] of a capsule's axis: its first and last sphere."""
    r = sim.model.particle_radius[ids]
    spheres = ids[r > 0]
    x = np.array(sim.x)
    return x[spheres[0], 2], x[spheres[-1], 2]


def _settle(sim, seconds=2.0):
    """Step ``seconds``; returns whether any step had a capsule-capsule contact."""
    met = False
    for _ in range(int(seconds * 24)):
        sim.step(1 / 24)
        met |= bool((sim.contacts.body_kind == SEGMENTS).any())
    return met


def test_a_capsule_rests_across_another_at_the_two_radii(backend):
    """A capsule dropped crosswise onto a pinned one, over the middle of two of its spheres
    (25 mm apart along the axis): its axis rests RA + RB above the other's, as two capsules
    touch. The spheres alone would let it sink 6.7 mm into the dip between them."""
    b = Builder()
    lower = _pinned_capsule(b)
    upper, _ = b.add_capsule_body((0.025, -0.2, 0.62), (0.025, 0.2, 0.62), RB, mass=1.0,
                                  up=(0, 0, 1))
    sim = Simulation(b.build(), substeps=20, backend=backend)
    assert _settle(sim)
    za, zb = _axis_height(sim, upper)
    assert abs(0.5 * (za + zb) - (0.5 + RA + RB)) < 1e-3
    axis = upper[sim.model.particle_radius[upper] > 0]
    assert np.all(np.abs(np.array(sim.x)[axis, 0] - 0.025) < 2e-3)   # it stayed where it landed


def test_a_capsule_falls_end_first_onto_another(backend):
    """A vertical capsule dropped end-first onto a pinned horizontal one: the lower end of its
    axis (a clamped closest point) stops RA + RB above the other's axis and stays there."""
    b = Builder()
    _pinned_capsule(b)
    upright, _ = b.add_capsule_body((0.1, 0, 0.7), (0.1, 0, 1.0), RB, mass=1.0)
    sim = Simulation(b.build(), substeps=20, backend=backend)
    low = []
    for _ in range(14):
        sim.step(1 / 24)
        low.append(min(_axis_height(sim, upright)))
    assert min(low) > 0.5 + RA + RB - 1.5e-3       # never deeper than the contact distance
    # it lands within 4 frames and stands there, balanced on its end (nothing tips it)
    assert np.all(np.abs(np.array(low[4:]) - (0.5 + RA + RB)) < 5e-4)


def test_parallel_capsules_rest_level(backend):
    """A capsule dropped level onto a pinned parallel one, half over its end: the pair meets in
    the middle of their overlap, so it lands level and rests RA + RB above. A contact at one
    end of the overlap would tip it."""
    b = Builder()
    _pinned_capsule(b)
    upper, _ = b.add_capsule_body((0.0, 0, 0.6), (0.4, 0, 0.6), RB, mass=1.0, up=(0, 0, 1))
    sim = Simulation(b.build(), substeps=20, backend=backend)
    tilt = []
    for _ in range(36):
        sim.step(1 / 24)
        za, zb = _axis_height(sim, upper)
        tilt.append(abs(za - zb))
    assert max(tilt) < 2e-4
    assert 0.5 * (za + zb) == pytest.approx(0.5 + RA + RB, abs=1e-3)
    assert np.array(sim.x)[upper, 0].mean() == pytest.approx(0.2, abs=1e-3)


def test_momentum_is_conserved_when_two_capsules_collide(backend):
    """Two free capsules of different masses and particle counts meet crossed, with no
    gravity, and stop (contact has no restitution): the total momentum stays zero to 1e-3 of
    what each carried. Weighed by their particles' masses, not their bodies', the pair drifts
    off at 0.14 m/s (0.42 kg m/s)."""
    b = Builder()
    left, _ = b.add_capsule_body((-0.3, -0.2, 0), (-0.3, 0.2, 0), RA, mass=2.0)
    right, _ = b.add_capsule_body((0.3, 0, -0.2), (0.3, 0, 0.2), RB, mass=1.0)
    model = b.build()
    sim = Simulation(model, substeps=20, gravity=(0, 0, 0), damping=0.0, air_drag=0.0,
                     backend=backend)
    v = np.zeros((model.particle_count, 3))
    v[left, 0], v[right, 0] = 1.0, -2.0
    sim.set_velocities(np.arange(model.particle_count), v)
    m = model.particle_mass
    p0 = m @ v
    touched = False
    for _ in range(12):
        sim.step(1 / 24)
        touched |= bool((sim.contacts.body_kind == SEGMENTS).any())
    vel = np.array(sim.v)
    assert touched
    assert np.all(np.abs(m @ vel - p0) < 2e-3)
    assert abs(vel[left, 0].mean()) < 2e-3 and abs(vel[right, 0].mean()) < 2e-3


def test_frame_particles_meet_no_collider(backend):
    """A capsule lying on the ground: its frame particles (inside its spheres) are no
    collider candidates, and it rests with its axis one radius above the plane."""
    b = Builder()
    ids, _ = b.add_capsule_body((-0.2, 0, 0.3), (0.2, 0, 0.3), RA, mass=1.0, up=(0, 0, 1))
    b.add_collider("plane")
    sim = Simulation(b.build(), substeps=20, backend=backend)
    shielded = sim.model.particle_shielded
    assert shielded[ids].sum() == 4
    candidates = []
    for _ in range(24):
        sim.step(1 / 24)
        candidates.append(sim.contacts.pair_particle.copy())
    found = np.concatenate(candidates)
    assert len(found) and not shielded[found].any()
    za, zb = _axis_height(sim, ids)
    assert za == pytest.approx(RA, abs=5e-4) and zb == pytest.approx(RA, abs=5e-4)


def _on_rails(angle_deg, mu, backend, seconds):
    """A capsule lying across two pinned parallel capsules (rails) inclined at angle_deg, all
    with friction mu: how far it moved down the rails [m] in ``seconds``."""
    a = np.radians(angle_deg)
    down = np.array([np.cos(a), 0.0, -np.sin(a)])          # along the rails, downhill
    up = np.array([np.sin(a), 0.0, np.cos(a)])             # the rails' plane normal
    b = Builder()
    for y in (-0.15, 0.15):
        start = np.array([-0.5, y, 0.5])
        rail, _ = b.add_capsule_body(start, start + 1.2 * down, 0.03, mass=5.0)
        b.pin(rail)
    centre = np.array([-0.5, 0.0, 0.5]) + 0.2 * down + (0.03 + RB + 1e-3) * up
    rider, _ = b.add_capsule_body(centre - (0, 0.3, 0), centre + (0, 0.3, 0), RB, mass=1.0)
    model = b.build()
    model.particle_friction[:] = mu
    sim = Simulation(model, substeps=20, backend=backend)
    axis = rider[model.particle_radius[rider] > 0]
    x0 = np.array(sim.x)[axis].mean(axis=0)
    met = _settle(sim, seconds)
    assert met
    return float((np.array(sim.x)[axis].mean(axis=0) - x0) @ down)


@pytest.mark.parametrize("angle", [36.0, 45.0])
def test_a_capsule_slides_across_two_rails_with_kinetic_friction(backend, angle):
    """Coulomb friction between capsules (on the relative motion at the axes' closest points):
    a capsule across two rails inclined past tan(angle) = mu = 0.6 slides down them with the
    kinetic acceleration g (sin - mu cos) (36 deg: 0.50 m in 1 s; 45 deg: 1.39 m)."""
    mu, t = 0.6, 1.0
    a = np.radians(angle)
    want = 0.5 * 9.81 * (np.sin(a) - mu * np.cos(a)) * t * t
    assert want * 0.95 < _on_rails(angle, mu, backend, t) < want * 1.05


def test_a_capsule_across_two_rails_below_the_friction_angle_stays(backend):
    """Below the friction angle (25 deg: tan 0.47 < mu 0.6) a capsule across two rails stays:
    once it has landed it moves less than 0.1 mm in the next two seconds. When its two rail
    contacts acted on the same two axis ends as particle projections, their corrections added
    up to 1.6 times the friction each took and it crept uphill at about 1.7 mm/s (a strict
    xfail until its contacts were solved on the body, collision/rigid.py)."""
    landed = _on_rails(25.0, 0.6, backend, 1.0)
    assert abs(_on_rails(25.0, 0.6, backend, 3.0) - landed) < 1e-4


def test_contact_masses_follow_the_bodies_rigidity(backend):
    """Particle contacts (with cloth and soft bodies) weigh a rigid body's particles as the body
    (1 / its mass), and a soft one's as themselves, and the fit weighs a rigid body's contacts
    with those BOOST times; a rigid body's collider contacts are solved on the body
    (collision/rigid.py), so the fit weighs them as any particle (1). The weights follow
    set_shape_compliance both ways (they are worked out again only when the rigidity
    changes)."""
    b = Builder()
    ids, _ = b.add_capsule_body((0, 0, 1), (0.4, 0, 1), RA, mass=2.0)
    model = b.build()
    sim = Simulation(model, substeps=4, gravity=(0, 0, 0), backend=backend)
    sim.step(1 / 24)
    assert np.allclose(sim.shapes.contact_inv_mass[ids], 1 / 2.0, rtol=1e-12)
    from solver.constraints.shapes import BOOST
    entries = np.isin(sim.shapes.particles, ids)
    assert np.all(sim.shapes.body_boost[entries] == BOOST)       # the fit's contact weights too
    sim.set_shape_compliance(ids, 1e-3)
    sim.step(1 / 24)
    assert np.array_equal(sim.shapes.contact_inv_mass[ids], model.particle_inv_mass[ids])
    assert np.all(sim.shapes.body_boost[entries] == 1.0)
    assert np.all(sim.shapes.collider_boost[entries] == 1.0)
    sim.set_shape_compliance(ids, 0.0)
    sim.step(1 / 24)
    assert np.allclose(sim.shapes.contact_inv_mass[ids], 1 / 2.0, rtol=1e-12)
    assert np.all(sim.shapes.body_boost[entries] == BOOST)
    assert np.all(sim.shapes.collider_boost[entries] == 1.0)
    assert sim.shapes.rigid_body.all()


def test_fast_capsules_meet_within_a_step(backend):
    """A capsule pair is kept for a step when the capsules can come within their radii during
    it (body_stage.BodyContacts._segment_pairs: now d apart, each end at most its reach away
    by the end), not only when they touch at its start. Two thin crossed capsules 0.3 m
    apart, closing at 20 m/s (0.83 m in a step), in free space: they must meet and stay on
    their sides. Judged by the axes' reach alone (the ends' predicted motion left out), the
    pair was dropped and the capsules passed through each other in one step."""
    b = Builder()
    r = 0.02
    low, _ = b.add_capsule_body((-0.3, 0, 0.0), (0.3, 0, 0.0), r, mass=1.0)
    high, _ = b.add_capsule_body((0, -0.3, 0.3), (0, 0.3, 0.3), r, mass=1.0)
    sim = Simulation(b.build(), substeps=20, gravity=(0, 0, 0), backend=backend, sleep=False,
                     air_drag=0.0)
    v = np.zeros((sim.model.particle_count, 3))
    v[low, 2], v[high, 2] = 10.0, -10.0
    sim.set_velocities(np.arange(sim.model.particle_count), v)
    sim.step(1 / 24)
    x = np.array(sim.x)
    gap = x[high, 2].mean() - x[low, 2].mean()
    assert gap > 2 * r - 1e-3, gap                       # high is still above low

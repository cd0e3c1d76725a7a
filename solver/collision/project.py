"""The contact kernels in NumPy: projection with friction, column by column.

These are the NumPy entries of the kernel table (project_collider, project_points); their
compiled mirrors in kernels/compiled_contact.py take the same arguments and perform exactly these
operations per particle or point, in the same order (no matrix products, no norms, no einsum, no
hypot), so the NumPy and compiled backends agree bit for bit (tests/solver/test_backends.py).

With the collider's SDF phi and unit gradient g in its rotation-only frame (sdf.py), the world
normal n = R g, the offset (collider thickness + particle radius) and the penetration
d = offset - phi > 0, a contact at x with previous position x* (colliders.py's rule; (R, t, s) the
frame now, (R*, t*, s*) at the substep's start):

    m = z - (R* (R^T (z - t) / s * s*) + t*)      collider motion over the substep at the
                                                  surface point z = x + n d under x
    a = -(x - x* - m) . n                         how far the particle moved into the collider
    c = min(d, max(a + s_max, 0))                 the normal correction taken
    y = x + n c                                   projected position
    r = y - x* - m,  r_t = r - n (r . n)          relative displacement, tangential part
    D = depth + c                                 normal correction this substep
    take = |r_t|  if |r_t| + used <= mu_s D       (static)
           min(max(mu_k D - used, 0), |r_t|)      (kinetic)
    x <- y - r_t take / |r_t|,  used <- used + take

mu_s and mu_k are the collider's and the particle's friction combined (``combined_friction``):
the geometric mean of the collider's kinetic coefficient and the particle's own (Box2D's
b2MixFriction; Catto, Box2D), with the collider's static coefficient scaled by the same
factor, so its static / kinetic ratio stays. Equal sides keep their value to the bit
(sqrt(mu / mu) = 1), and either side at 0 makes the contact frictionless, as between two
bodies (collision/body_stage.py). An embedded point's own friction is the mean of its four
corners'.

Tunnelling guard (Jakobsen, section 8: "a segment test from the last position to the current
one"; conservative advancement / sphere tracing, Hart, "Sphere Tracing", 1996). A particle that
moved more than max(offset, GUARD_MIN_MOTION) in the substep relative to the collider (less
against a primitive under 2 mm thick: guard_motion), and
whose end point is within that distance of the offset surface, is traced along the segment
p(tau) = p* + tau (x - p*), tau in [0, 1], in the collider's frame now, where p* is its start x*
carried by the collider's own motion over the substep (``_carried``: the same place in the
collider's frame at the substep's start, so a fast collider sweeps what it meets):

    tau <- tau + (phi(p(tau)) - offset) / |x - p*|    until phi - offset <= GUARD_TOLERANCE

(phi is Lipschitz-1, so the steps never pass the first touch). At the touch q with normal n_q,
the end point's depth below the offset tangent plane, pen = (phi(q) - offset) + (x - q) . n_q,
replaces the end point's own penetration and normal, unless the end point is inside on the same
side (pen_end < 0 and n_end . n_q > 0: the ordinary contact is right, so resting and sliding
contacts are unchanged); then the contact resolves as above (projection, friction, restitution).
A segment that starts touching takes the start's tangent plane. The trace uses the collider's
one distance function (``_distance``), so every collider shape gets the guard, closed meshes
included. An open mesh is not traced: it keeps the side the particle's x* is on (collision/
mesh.py), which already stops a particle crossing it at any speed (tracing it with that side
fixed let cloth resting on Suzanne's open head through). Slow particles (motion below the
offset) skip it: its cost is one length per candidate.

Embedded points of tetrahedral bodies (Jakobsen, "Advanced Character Physics", section 5):
p = c0 x_a + c1 x_b + c2 x_c + c3 x_d (summed in that order) takes the same contact with
offset = collider thickness, giving the point's move delta = n d - r_t take / |r_t|; each of its
four particles moves by c_k delta / (c0^2 + c1^2 + c2^2 + c3^2), which puts p exactly at p + delta
(the smallest such move of the four).

Overlap that the particle did not move into (it started inside, or a collider or pin put it
there) is not turned into velocity, as rigid-body engines bound their depenetration velocity
("split impulse": Catto, Box2D; PhysX's maxDepenetrationVelocity): a contact corrects at most
a + s_max this substep, where a is the particle's own motion into the collider relative to the
collider and s_max = max_depenetration_speed * h [m] (``allowance``); and the part of c that a
does not explain, lift = c - min(c, max(a, 0)), is owed to x* as well (``lift`` (n, 3), applied
after the relaxation by Simulation._release_overlap), so resolving it moves the particle without
giving it speed. A particle arriving from outside has a >= d, so it is projected fully and
lift = 0: ordinary contacts are unchanged. An embedded point's lift is shared among its corners
as its move is.
"""


from types import SimpleNamespace

import numpy as np

from .frames import BOX, CAPSULE, CYLINDER, MESH, SPHERE, Frame
from .mesh_query import mesh_far, mesh_sdf, surface_motion
from .sdf import collider_sdf

# The tunnelling guard (module docstring): a particle that moved more than its contact offset
# (and at least GUARD_MIN_MOTION) in a substep is traced along its segment; the trace stops
# within GUARD_TOLERANCE of the offset surface or after GUARD_STEPS steps (a grazing segment:
# then the end point decides, as without the guard). kernels/compiled_contact.py repeats these.
GUARD_MIN_MOTION = 1e-3    # [m]
GUARD_TOLERANCE = 1e-6     # [m]
GUARD_STEPS = 32


def combined_friction(mu_s, mu_k, friction):
    """The static and kinetic coefficients of contacts between a collider of coefficients mu_s,
    mu_k and particles of Coulomb coefficient friction (scalars or arrays; module docstring):
    mu_k' = mu_k sqrt(friction / mu_k) = sqrt(mu_k friction), mu_s' = mu_s sqrt(friction /
    mu_k); the static ratio stands in for a collider whose kinetic coefficient is 0.
    kernels/compiled_contact._combined_friction performs the same operations."""
    ref = mu_k if mu_k > 0 else mu_s
    if not ref > 0:
        return mu_s, mu_k                         # a frictionless collider stays so
    f = np.sqrt(friction / ref)
    return mu_s * f, mu_k * f


def project_collider(X, Xp, idx, shape, approximate, a, b, c, thickness, radius, R, t, s, Rb, tb,
                     sb, moving, mu_s, mu_k, friction, k, depth, used, touching, normal, motion,
                     collider, allowance, lift, lifted, mesh):
    """Project candidates idx (unique ids) out of collider k, with friction. X, Xp (3, n) [m]
    positions (updated) and previous positions; (a, b, c) from sdf.placement; radius (n,) [m];
    mu_s, mu_k the collider's coefficients and friction (n,) the particles' own (a contact
    takes combined_friction of them); R, Rb (3, 3), t, tb (3,) [m], s, sb (3,) the frame at
    the end and start of the substep (moving: they differ); depth, used (n,) [m], touching
    (n,) bool, normal (n, 3), motion (n, 3) [m], collider (n,) int64: the contact state,
    written for the particles that touch;
    allowance [m] the depenetration s_max of this substep; lift (n, 3) [m] x* shift owed,
    added to, and lifted (n,) bool set, where the lift is positive; mesh the mesh group
    (collision/mesh_query.py) a mesh collider's geometry comes from."""
    cs = SimpleNamespace(depth=depth, used=used, touching=touching, normal=normal,
                         motion=motion, collider=collider, lift=lift, lifted=lifted)
    _project(X.T, Xp.T, idx, shape, (a, b, c), thickness, radius, Frame(R, t, s),
             Frame(Rb, tb, sb), moving, mu_s, mu_k, friction, k, cs, allowance, approximate,
             mesh)


def project_points(X, Xp, rank_start, rank_points, tet, weight, inv_c2, shape, thickness, mu_s,
                   mu_k, friction, approximate, abc, R, t, s, Rb, tb, sb, moving, point_depth,
                   point_used, allowance, lift, lifted, mesh):
    """Embedded points of tetrahedral bodies against every collider: rank after rank, and within
    a rank collider after collider (points of one rank belong to different bodies, so their
    particles are disjoint). rank_start (ranks + 1,), rank_points (P,) int64; tet (P, 4) int64
    corner particles, weight (P, 4) their weights, inv_c2 (P,) 1 / sum c^2; per collider (C,):
    shape, thickness, mu_s, mu_k, approximate, abc (C, 3), frames now R (C, 3, 3), t, s (C, 3)
    and at the substep's start Rb, tb, sb, moving (C,) bool; friction (n,) the particles'
    Coulomb coefficients (a point's: its corners' mean); point_depth, point_used (P,) [m];
    allowance, lift, lifted as project_collider's (a point's lift goes to its corners)."""
    cs = SimpleNamespace(point_depth=point_depth, point_used=point_used, lift=lift,
                         lifted=lifted)
    x, x_prev = X.T, Xp.T
    for r in range(len(rank_start) - 1):
        ids = rank_points[rank_start[r]:rank_start[r + 1]]
        corners = tuple(np.ascontiguousarray(tet[ids, j]) for j in range(4))
        weights = tuple(np.ascontiguousarray(weight[ids, j]) for j in range(4))
        inv = inv_c2[ids]
        for k in range(len(shape)):
            _project_points(x, x_prev, ids, corners, weights, inv, shape[k], abc[k],
                            thickness[k], Frame(R[k], t[k], s[k]), Frame(Rb[k], tb[k], sb[k]),
                            moving[k], mu_s[k], mu_k[k], friction, cs, allowance,
                            approximate[k], k, mesh)


def _to_local(R, t, x0, x1, x2):
    """Columns of R^T (x - t): world columns into the collider's rotation-only frame,
    q_i = d0 R[0, i] + d1 R[1, i] + d2 R[2, i] with d = x - t, summed left to right as the
    compiled kernel does; the three columns at once by broadcasting (a few NumPy calls, not
    eighteen: most calls take a few points)."""
    d = np.array((x0, x1, x2)) - t[:, None]
    p = R[:, :, None] * d[:, None, :]                 # p[j, i] = d_j R[j, i]
    q = (p[0] + p[1]) + p[2]
    return q[0], q[1], q[2]


def _distance(shape, approximate, abc, now, before, k, mesh, x0, x1, x2, xp0, xp1, xp2):
    """Signed distance (p,) [m] of world columns x to collider k placed at ``now``, its world
    unit normal columns, and for a mesh (frames.MESH) the closest triangle and its barycentric
    weights (tri, wa, wb, wc) (else None): the one distance function of the projection and the
    guard. A mesh is asked through mesh_query with x* (xp, in the frame of the substep's start,
    ``before``) choosing an open mesh's side."""
    R = now.rotation
    q0, q1, q2 = _to_local(R, now.translation, x0, x1, x2)
    if shape == MESH:
        r0, r1, r2 = _to_local(before.rotation, before.translation, xp0, xp1, xp2)
        phi, g0, g1, g2, tri, wa, wb, wc = mesh_sdf(q0, q1, q2, r0, r1, r2, k, mesh)
        surf = (tri, wa, wb, wc)
    else:
        phi, g0, g1, g2 = collider_sdf(shape, approximate, abc, now.scale, q0, q1, q2)
        surf = None
    return phi, _to_world(R, g0, g1, g2), surf


def _surface_motion(now, before, surf, hit, mesh):
    """A mesh's surface motion over the substep at the contacts hit (mesh_query.surface_motion),
    or None for a primitive (its frame's motion: _contact)."""
    if surf is None:
        return None
    tri, wa, wb, wc = surf
    return surface_motion(now.rotation, now.translation, before.rotation, before.translation,
                          tri[hit], wa[hit], wb[hit], wc[hit], mesh)


def _to_world(R, g0, g1, g2):
    """Columns of R g: a local direction into world space, n_i = R[i, 0] g0 + R[i, 1] g1 +
    R[i, 2] g2 summed left to right (broadcast as _to_local)."""
    p = R[:, :, None] * np.array((g0, g1, g2))[None, :, :]    # p[i, j] = R[i, j] g_j
    n = (p[:, 0] + p[:, 1]) + p[:, 2]
    return n[0], n[1], n[2]


def _contact(x0, x1, x2, xp0, xp1, xp2, n0, n1, n2, d, depth, used, now, before, moving, mu_s,
             mu_k, allowance, mesh_motion=None):
    """Projection and friction of contacts at columns x (k,) [m], previous positions xp, world
    normal n and penetration d (k,) [m], with depth and used (k,) [m] so far this substep.
    Returns the projected position y, the friction correction (subtract it from y), the
    collider motion, the new depth, the new used, the normal correction c and the lift (the
    module docstring's formulas). mesh_motion: a mesh's surface motion at the contacts
    (mesh_query.surface_motion) instead of the frame's at z."""
    z0 = x0 + n0 * d
    z1 = x1 + n1 * d
    z2 = x2 + n2 * d
    if mesh_motion is not None:
        m0, m1, m2 = mesh_motion
    elif moving:
        m0, m1, m2 = _motion(now, before, z0, z1, z2)
    else:
        m0 = m1 = m2 = np.zeros_like(z0)
    into = -((x0 - xp0 - m0) * n0 + (x1 - xp1 - m1) * n1 + (x2 - xp2 - m2) * n2)
    corr = np.minimum(d, np.maximum(into + allowance, 0.0))
    lift = corr - np.minimum(corr, np.maximum(into, 0.0))
    y0 = x0 + n0 * corr
    y1 = x1 + n1 * corr
    y2 = x2 + n2 * corr
    r0 = y0 - xp0 - m0
    r1 = y1 - xp1 - m1
    r2 = y2 - xp2 - m2
    depth = depth + corr
    rn = r0 * n0 + r1 * n1 + r2 * n2
    t0, t1, t2 = r0 - n0 * rn, r1 - n1 * rn, r2 - n2 * rn
    t_len = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    take, _ = coulomb(t_len, used, depth, mu_s, mu_k)
    big = t_len > 1e-300
    scale = np.where(big, take / np.where(big, t_len, 1.0), 0.0)
    return ((y0, y1, y2), (t0 * scale, t1 * scale, t2 * scale), (m0, m1, m2), depth,
            used + take, corr, lift)


def coulomb(need, used, depth, mu_s, mu_k):
    """Coulomb's bound on friction, in the units of need, used and depth (distances [m] for a
    particle's projection here, impulses [kg m] for a rigid body's, collision/rigid.py): (take,
    static) for need (k,) what stops the slip, used (k,) the friction taken and depth (k,) the
    normal correction summed over the same span: all of it while need + used <= mu_s depth
    (static), else what mu_k depth leaves, at most need. rigid_pairs.Pairs._friction takes
    the same rule on scalars, kernels/compiled_rigid_scalar._coulomb compiled."""
    static = need + used <= mu_s * depth
    return np.where(static, need, np.minimum(np.maximum(mu_k * depth - used, 0.0), need)), static


def _carried(now, before, x0, x1, x2):
    """Where the collider's material point at (x0, x1, x2) at the substep's start (before) is
    at its end (now): R (Rb^T (x - tb) / sb * s) + t, each product summed left to right
    (_to_local, _to_world), as the compiled kernel does."""
    q = _to_local(before.rotation, before.translation, x0, x1, x2)
    sb, s, t = before.scale, now.scale, now.translation
    n0, n1, n2 = _to_world(now.rotation, q[0] / sb[0] * s[0], q[1] / sb[1] * s[1],
                           q[2] / sb[2] * s[2])
    return n0 + t[0], n1 + t[1], n2 + t[2]


def _clear_of_convex(gap, slope, length):
    """(k,) bool the segments that cannot touch an exact primitive within _trace's march: gap
    (k,) [m] at their start, slope (k,) [m] the gap's rate along the whole segment there
    (n . e), length (k,) [m]. The exact primitives are convex, so their distance along a
    segment lies above each of its tangents, and its rate only grows along it. Hence over
    tau in [0, 1] gap(tau) >= gap + tau min(slope, 0) (the tangent at the start), and each of
    the march's steps (tau grows by gap_k / length) keeps at least the share r = 1 +
    min(slope, 0) / length of the gap, so its k-th point is at least gap r^k away. Where
    either bound stays above twice the tolerance (the margin takes the rounding of phi, of
    n . e and of the march's steps) the march cannot stop on a contact (it ends past tau = 1
    or out of steps: no hit either way), so it is skipped, and the result is the march's bit
    for bit (only a hit segment's values are read). It spares the NumPy reference
    its masked loop over segments that graze a surface (a block sliding on a plane: tau grows
    by gap / length a step, for all GUARD_STEPS steps); the compiled _trace, a scalar loop,
    does without it."""
    fall = np.minimum(slope, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = 1.0 + fall / length
    return (gap + fall > 2.0 * GUARD_TOLERANCE) | \
        ((keep > 0.0) & (gap * keep ** GUARD_STEPS > 2.0 * GUARD_TOLERANCE))


def _trace(shape, approximate, abc, now, before, k, mesh, thickness, rad, p, e, length, x, xp):
    """The guard's sphere tracing (module docstring), for k segments at once: start columns
    p, direction columns e (end - start), length (k,) [m], end columns x, radii rad (k,), x*
    columns xp (they pick an open mesh's side along the whole segment). Returns hit (k,) bool,
    pen (k,) [m] the end point's signed distance to the offset tangent plane at the first
    contact, the normal columns there and, for a mesh, the triangle and weights there (else
    None): defined on the rows that hit only (callers read no other row; the compiled _trace
    returns zeros there, and the segments _clear_of_convex skips keep their start's values).
    Each segment that is marched takes the compiled _trace's operations in its order (a masked
    loop over the steps)."""
    p0, p1, p2 = p
    phi, (n0, n1, n2), surf = _distance(shape, approximate, abc, now, before, k, mesh, p0, p1,
                                        p2, *xp)
    gap = phi - thickness - rad
    q0, q1, q2 = p0.copy(), p1.copy(), p2.copy()
    tau = np.zeros_like(gap)
    done = ~(gap > 0)                   # started touching: the contact plane is the start's
    ok = done.copy()
    if shape != MESH and not approximate:
        done |= _clear_of_convex(gap, n0 * e[0] + n1 * e[1] + n2 * e[2], length)
    for _ in range(GUARD_STEPS):
        live = np.nonzero(~done)[0]
        if not live.size:
            break
        tau[live] = tau[live] + gap[live] / length[live]
        out = ~(tau[live] < 1.0)
        done[live[out]] = True
        live = live[~out]
        q0[live] = p0[live] + e[0][live] * tau[live]
        q1[live] = p1[live] + e[1][live] * tau[live]
        q2[live] = p2[live] + e[2][live] * tau[live]
        f, (m0, m1, m2), sf = _distance(shape, approximate, abc, now, before, k, mesh, q0[live],
                                        q1[live], q2[live], xp[0][live], xp[1][live],
                                        xp[2][live])
        gap[live] = f - thickness - rad[live]
        n0[live], n1[live], n2[live] = m0, m1, m2
        if surf is not None:
            for whole, part in zip(surf, sf):
                whole[live] = part
        got = live[gap[live] <= GUARD_TOLERANCE]
        done[got] = ok[got] = True
    pen = gap + ((x[0] - q0) * n0 + (x[1] - q1) * n1 + (x[2] - q2) * n2)
    return ok & (pen < 0), pen, n0, n1, n2, surf


def guard_motion(shape, approximate, abc):
    """[m] the least motion in a substep the guard traces against a collider of that shape and
    placement (a, b, c) = abc: GUARD_MIN_MOTION, or half the thinnest extent of an exact
    primitive thinner than twice that (a box's least half extent, a cylinder's radius or half
    depth, a sphere's or capsule's radius). A particle that moved less, untraced, could end
    past the middle of a plate thinner than twice its motion and be pushed out of the far side
    (a cloth of zero thickness stopped on a 1 mm box by the guard kept 0.53 m/s into it, 0.55 mm
    a substep, and left through its bottom)."""
    if approximate or shape not in (SPHERE, BOX, CYLINDER, CAPSULE):
        return GUARD_MIN_MOTION
    a, b, c = abc
    half = min(a, b, c) if shape == BOX else min(a, b) if shape == CYLINDER else a
    return min(GUARD_MIN_MOTION, half)


def _guard(xc, xpc, idx, shape, approximate, abc, thickness, radius, now, before, moving, k,
           mesh, pen, n0, n1, n2, surf):
    """The tunnelling guard on one collider's candidates: where the segment from the substep's
    start (carried by the collider's motion into its frame now) to the position now first
    touches, replace the end point's penetration pen, normal and (a mesh) closest surface
    point (all updated in place) by the contact there, unless the end point is inside on the
    same side."""
    if shape == MESH and not mesh[14][k]:
        return          # an open mesh keeps the side of x* (mesh.py): that is its guard
    if moving:
        p0, p1, p2 = _carried(now, before, xpc[:, 0], xpc[:, 1], xpc[:, 2])
    else:
        p0, p1, p2 = xpc[:, 0], xpc[:, 1], xpc[:, 2]
    e0, e1, e2 = xc[:, 0] - p0, xc[:, 1] - p1, xc[:, 2] - p2
    with np.errstate(over="ignore", invalid="ignore"):    # a runaway is the step's to report
        length = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
    rad = radius[idx]
    sel = np.nonzero((length > np.maximum(thickness + rad,
                                          guard_motion(shape, approximate, abc)))
                     & (pen < length))[0]
    if not sel.size:
        return
    hit, pen_h, h0, h1, h2, hs = _trace(
        shape, approximate, abc, now, before, k, mesh, thickness, rad[sel],
        (p0[sel], p1[sel], p2[sel]), (e0[sel], e1[sel], e2[sel]), length[sel],
        (xc[sel, 0], xc[sel, 1], xc[sel, 2]), (xpc[sel, 0], xpc[sel, 1], xpc[sel, 2]))
    same = (pen[sel] < 0) & (n0[sel] * h0 + n1[sel] * h1 + n2[sel] * h2 > 0)
    use = hit & ~same
    u = sel[use]
    pen[u] = pen_h[use]
    n0[u], n1[u], n2[u] = h0[use], h1[use], h2[use]
    if surf is not None:
        for whole, part in zip(surf, hs):
            whole[u] = part[use]


def _project(x, x_prev, idx, shape, abc, thickness, radius, now, before, moving, mu_s, mu_k,
             friction, k, cs, allowance, approximate, mesh):
    """project_collider on (n, 3) views x, x_prev, with frames.Frame placements and the
    contact state's arrays as attributes of cs. A mesh skips the particles that cannot reach
    it in this substep (mesh_query.mesh_far)."""
    if shape == MESH and idx.size:
        xc, xpc = x[idx], x_prev[idx]
        if moving:
            p0, p1, p2 = _carried(now, before, xpc[:, 0], xpc[:, 1], xpc[:, 2])
        else:
            p0, p1, p2 = xpc[:, 0], xpc[:, 1], xpc[:, 2]
        with np.errstate(over="ignore", invalid="ignore"):    # a runaway is the step's to report
            far = mesh_far(xc[:, 0], xc[:, 1], xc[:, 2], p0, p1, p2, idx, k,
                           thickness + radius[idx], mesh)
        if far.any():
            idx = idx[~far]
    xc, xpc = x[idx], x_prev[idx]
    phi, (n0, n1, n2), surf = _distance(shape, approximate, abc, now, before, k, mesh, xc[:, 0],
                                        xc[:, 1], xc[:, 2], xpc[:, 0], xpc[:, 1], xpc[:, 2])
    pen = phi - thickness - radius[idx]
    _guard(xc, xpc, idx, shape, approximate, abc, thickness, radius, now, before, moving, k,
           mesh, pen, n0, n1, n2, surf)
    hit = pen < 0
    if not hit.any():
        return
    ids = idx[hit]
    d = -pen[hit]
    n0, n1, n2 = n0[hit], n1[hit], n2[hit]
    mu_s, mu_k = combined_friction(mu_s, mu_k, friction[ids])
    (y0, y1, y2), (f0, f1, f2), (m0, m1, m2), depth, used, _, lift = _contact(
        xc[hit, 0], xc[hit, 1], xc[hit, 2], xpc[hit, 0], xpc[hit, 1], xpc[hit, 2], n0, n1, n2, d,
        cs.depth[ids], cs.used[ids], now, before, moving, mu_s, mu_k, allowance,
        _surface_motion(now, before, surf, hit, mesh))
    x[ids, 0] = y0 - f0
    x[ids, 1] = y1 - f1
    x[ids, 2] = y2 - f2
    cs.depth[ids] = depth
    cs.used[ids] = used
    cs.touching[ids] = True
    cs.normal[ids, 0], cs.normal[ids, 1], cs.normal[ids, 2] = n0, n1, n2
    cs.motion[ids, 0], cs.motion[ids, 1], cs.motion[ids, 2] = m0, m1, m2
    cs.collider[ids] = k
    up = lift > 0
    if up.any():
        u = ids[up]
        cs.lift[u, 0] += n0[up] * lift[up]
        cs.lift[u, 1] += n1[up] * lift[up]
        cs.lift[u, 2] += n2[up] * lift[up]
        cs.lifted[u] = True


def _embedded(col, tet, c):
    """sum_k c_k col[tet_k] (p,): one coordinate of the embedded points, summed k = 0..3."""
    return c[0] * col[tet[0]] + c[1] * col[tet[1]] + c[2] * col[tet[2]] + c[3] * col[tet[3]]


def _project_points(x, x_prev, ids, tet, c, inv_c2, shape, abc, thickness, now, before, moving,
                    mu_s, mu_k, friction, cs, allowance, approximate, k, mesh):
    """Jakobsen's embedded-point contact (module docstring) of points ids (p,) of one rank
    against one collider: tet four (p,) int64 columns, their bodies' corner particles; c four
    (p,) float64 columns, their weights; inv_c2 (p,) float64 1 / sum_k c_k^2. Points of one
    rank belong to different bodies, so their particles are disjoint and the fancy-indexed
    updates never overlap. x (n, 3) [m] updated in place; cs.point_depth and cs.point_used
    updated for the points that touch."""
    cols = (x[:, 0], x[:, 1], x[:, 2])             # views: writes go through to x
    p0, p1, p2 = (_embedded(col, tet, c) for col in cols)
    pp0, pp1, pp2 = (_embedded(x_prev[:, a], tet, c) for a in range(3))
    phi, (g0, g1, g2), surf = _distance(shape, approximate, abc, now, before, k, mesh, p0, p1,
                                        p2, pp0, pp1, pp2)
    pen = phi - thickness
    hit = pen < 0
    if not hit.any():
        return
    ids, inv = ids[hit], inv_c2[hit]
    th, ch = [t[hit] for t in tet], [w[hit] for w in c]
    d = -pen[hit]
    n0, n1, n2 = g0[hit], g1[hit], g2[hit]
    own = (((friction[th[0]] + friction[th[1]]) + friction[th[2]]) + friction[th[3]]) * 0.25
    mu_s, mu_k = combined_friction(mu_s, mu_k, own)
    _, (f0, f1, f2), _, depth, used, corr, lift = _contact(
        p0[hit], p1[hit], p2[hit], pp0[hit], pp1[hit], pp2[hit], n0, n1, n2, d,
        cs.point_depth[ids], cs.point_used[ids], now, before, moving, mu_s, mu_k, allowance,
        _surface_motion(now, before, surf, hit, mesh))
    cs.point_depth[ids] = depth
    cs.point_used[ids] = used
    # the point's move n c - friction, then each corner's share c_k / sum c^2 of it
    w = ((n0 * corr - f0) * inv, (n1 * corr - f1) * inv, (n2 * corr - f2) * inv)
    for j in range(4):                    # the four corners: disjoint particles, fixed order
        for col, wa in zip(cols, w):
            col[th[j]] += ch[j] * wa
    up = lift > 0
    if up.any():                          # the lift, shared among the corners as the move is
        li = lift[up] * inv[up]
        wl = (n0[up] * li, n1[up] * li, n2[up] * li)
        for j in range(4):
            corner, cj = th[j][up], ch[j][up]
            for a in range(3):
                cs.lift[corner, a] += cj * wl[a]
            cs.lifted[corner] = True


def _motion(now, before, x0, x1, x2):
    """Displacement over the substep of the collider's material point now at (x0, x1, x2)."""
    R, t, s = now.rotation, now.translation, now.scale
    Rb, tb, sb = before.rotation, before.translation, before.scale
    d0, d1, d2 = x0 - t[0], x1 - t[1], x2 - t[2]
    w0 = (d0 * R[0, 0] + d1 * R[1, 0] + d2 * R[2, 0]) / s[0] * sb[0]
    w1 = (d0 * R[0, 1] + d1 * R[1, 1] + d2 * R[2, 1]) / s[1] * sb[1]
    w2 = (d0 * R[0, 2] + d1 * R[1, 2] + d2 * R[2, 2]) / s[2] * sb[2]
    p0 = Rb[0, 0] * w0 + Rb[0, 1] * w1 + Rb[0, 2] * w2 + tb[0]
    p1 = Rb[1, 0] * w0 + Rb[1, 1] * w1 + Rb[1, 2] * w2 + tb[1]
    p2 = Rb[2, 0] * w0 + Rb[2, 1] * w1 + Rb[2, 2] * w2 + tb[2]
    return x0 - p0, x1 - p1, x2 - p2


def restitution(X, Xp, X_pred, h, gravity_norm, e_restitution, e_particle, touching, collider,
                normal, motion, rigid_body):
    """The velocity pass after a substep (colliders.py's restitution): a contact that arrived
    faster than 2 |g| h gets normal velocity -e v_arrive relative to the collider, by moving x*,
    e the larger of the collider's and the particle's restitution.
    X, Xp, X_pred (3, n) [m] positions, positions a substep ago (updated) and positions right
    after integration; e_restitution (C,) per collider, e_particle (n,) per particle; touching
    (n,) bool, collider (n,) int64, normal (n, 3), motion (n, 3) [m]: this substep's contacts;
    rigid_body (n,) int64 >= 0 for a particle whose impacts the rigid bodies' velocity pass
    takes (collision/rigid.py RigidContacts.impact_body: a rigid body with no joint): its
    restitution is rigid_velocities', so it is left out here."""
    ids = np.nonzero(touching & (rigid_body < 0))[0]
    e = np.maximum(e_restitution[collider[ids]], e_particle[ids])
    ids, e = ids[e > 0], e[e > 0]
    n0, n1, n2 = normal[ids, 0], normal[ids, 1], normal[ids, 2]
    m0, m1, m2 = motion[ids, 0], motion[ids, 1], motion[ids, 2]
    p0, p1, p2 = Xp[0, ids], Xp[1, ids], Xp[2, ids]
    v_arrive = ((X_pred[0, ids] - p0 - m0) * n0 + (X_pred[1, ids] - p1 - m1) * n1
                + (X_pred[2, ids] - p2 - m2) * n2) / h
    v_now = ((X[0, ids] - p0 - m0) * n0 + (X[1, ids] - p1 - m1) * n1
             + (X[2, ids] - p2 - m2) * n2) / h
    bounce = v_arrive < -2.0 * gravity_norm * h
    ids = ids[bounce]
    dv = (-e[bounce] * v_arrive[bounce] - v_now[bounce]) * h
    Xp[0, ids] = p0[bounce] - n0[bounce] * dv
    Xp[1, ids] = p1[bounce] - n1[bounce] * dv
    Xp[2, ids] = p2[bounce] - n2[bounce] * dv


def release_overlap(Xp, lift, lifted):
    """The split impulse's second half, after a substep's relaxation: x* (Xp, (3, n) [m]) of
    every lifted particle moves by the overlap its contacts resolved without giving it speed
    (lift (n, 3) [m], lifted (n,) bool), which is then cleared."""
    ids = np.nonzero(lifted)[0]
    for c in range(3):
        Xp[c, ids] += lift[ids, c]
    lift[ids] = 0.0
    lifted[ids] = False

"""Edges against colliders: a cloth or a rope held by a collider thinner than its edges (a
towel rail, a clothesline, a flag pole, the edge of a table or a plank).

A particle meets a collider where the particle is (project.py); a cloth whose edges are longer
than a rail is thick falls through it between two vertices. Here every edge of a cloth and every
user stick (a rope's links) also meets the primitive colliders at its point
nearest to them, an embedded point p = (1 - t) x_a + t x_b as Jakobsen's tetrahedral bodies
have ("Advanced Character Physics", section 5), with t chosen afresh at every contact:

    t* = argmin over t in [0, 1] of phi(p(t)),    phi the collider's signed distance (sdf.py)
    C(x) = phi(p(t*)) - thickness - ((1 - t*) r_a + t* r_b) >= 0

The primitives' exact distances are convex (those of colliders scaled unevenly are first-order
approximations, sdf.py, nearly so), so t* is found by bisection on the sign of the slope
n(p) . (x_b - x_a) (EDGE_BISECTIONS halvings). An edge may dip a little into the contact
offset D = thickness + the larger radius between its ends: tol = max(EDGE_TOLERANCE,
EDGE_SKIN D), a quarter of that band (which is a skin: an edge a quarter into it stays three
quarters clear of the surface), at least half a millimetre; the constraint is C >= -tol.
Before the bisection, the tangent lines at the two ends (phi(a) + s_a t and phi(b) +
s_b (t - 1), s the slopes there) bound phi from below along the edge (a convex function lies
above its tangents): an edge whose bound is not tol inside the offset cannot meet the collider
between its ends, and one whose distance falls toward an end (s_a >= 0 or s_b <= 0) is least
at that end, where the particle's own contact acts: both are skipped at the cost of two
distances. So a cloth lying on a large sphere costs that test only (the lines' bound lies
L^2 / 4R under its ends there, twice the edges' sag L^2 / 8R: skipped while that is under
tol), and the edge contact acts where an edge passes over a thin or sharp collider.

A contact of depth d along the normal n at p moves p as a particle's contact does
(project.py: the bounded correction c, Coulomb friction against the collider's motion at the
contact with the geometric mean of the collider's friction and the edge's, its two particles'
mean; the overlap not moved into is owed to x*), and the move delta goes to the two particles
weighted by their inverse masses w (Mueller et al., "Position Based Dynamics", 2007):

    W = w_a (1 - t)^2 + w_b t^2,   dx_a = w_a (1 - t) delta / W,   dx_b = w_b t delta / W

which puts p exactly at p + delta, and leaves a pinned end where it is.

Which edges: sticks from "stick" and "cloth stretch" (model.STICK_SOURCES) that are not
"min" sticks, whose particles belong to no shape-matching cluster or tetrahedral body (those
meet colliders on their bodies: rigid.py, points.py) and are not shielded, with at least one
movable particle. Which colliders: the primitives other than planes (a plane's distance is
linear along an edge, least at an end). A mesh collider is met by particles only (its own
edges and vertices against the cloth's triangles are not tested).

The collide stage (Colliders.collide) keeps, per step, the edges that may reach each collider:
the edge's midpoint tested as a particle of reach half the edge's length plus the larger of its
ends' reach (kernels.edge_spheres, then kernels.primitive_candidates: an exact SDF is
1-Lipschitz, so no point of the edge is nearer than that). The first-order SDF of a collider
scaled unevenly (an oval rail) is not 1-Lipschitz and an edge tested so can be missed (10 of
3000 random edges near a flattened sphere, tests/solver/test_edges.py); such a collider is
tested by the exact primitive enclosing it at its reach divided by the ratio sdf.enclosing
proves. The candidates are sorted by (stick batch, collider, edge): the sticks of one batch
share no particle (constraints/partition.py), so the NumPy kernel solves a batch's candidates
of one collider as one vectorised group and the compiled one (kernels/compiled_edges.py) takes
them one after another in the same order, with the same operations: the same bits. The edges'
contacts run after the particles' in every iteration.

Tunnelling guard (the particles' of project.py, Jakobsen's segment test, for the edge's
nearest point): an edge thrown at a wire thinner than its motion in a substep (24 fps and 40
substeps: 1 m/s is 1 mm a substep) ends past it, where its distance is positive, or past the
wire's centre, where the normal pushes it out through the far side. So an edge whose ends
moved more than max(offset, EDGE_TOLERANCE) in the substep relative to the collider (x*
carried by the collider's motion, project._carried), and whose distance at the substep's start
fell from one end and rose to the other, with the tangent lines' bound there less the offset
under that motion, is traced: its nearest point t_s at the start (the same bisection), from
where it was to where that point of the edge is now (project._trace, sphere tracing). At the
first touch q of the surface tol inside the offset (where the contact now stops too), with
normal n_q, the depth pen = (phi(q) - offset + tol) + (p(t_s) - q) . n_q is the contact's,
unless the contact now is inside on the same side (n . n_q > 0), as a particle's guard. (The
guard's threshold of motion is the tolerance at least, not the particles' 1 mm: a point left
a tolerance inside a 1 mm wire that moves that far again passes its centre, where the normal
turns.) The ends themselves are the particles' guard's. No restitution (an edge bounces off
nothing).

An edge whose contact acted in a step's last substep holds its two
particles up for sleeping (ColliderEdges.touched: a cloth held by a rail alone falls asleep), and
a collider that moves wakes a sleeping island whose edge it may reach, the edge's midpoint tested
at the margin plus half its length (sleep.Sleep.wake_by_drivers), as a rail may hold a cloth
whose vertices are all farther from it than the particles' margin.

E = collider edges, q = this step's candidate pairs (edge, collider), G = their groups.
"""

import numpy as np

from ..model import STICK_MIN, STICK_SOURCES
from . import frames
from .frames import Frame
from .project import _carried, _contact, _distance, _trace, combined_friction

EDGE_BISECTIONS = 12       # halvings of t: the nearest point to within 1/4096 of the edge
# how far an edge may dip into a collider's contact offset between its ends: a quarter of the
# offset (thickness + the larger radius: the band is a skin, and an edge a quarter into it
# stays three quarters clear of the surface), at least EDGE_TOLERANCE
EDGE_TOLERANCE = 5e-4      # [m]
EDGE_SKIN = 0.25
_SOURCES = (STICK_SOURCES.index("stick"), STICK_SOURCES.index("cloth stretch"))


class ColliderEdges:
    """The edges that meet colliders (module docstring), and this step's candidates."""

    def __init__(self, model):
        n = len(model.particle_inv_mass)
        pairs = model.stick_particles
        bodied = np.zeros(n, bool)                        # (n,) on a body of its own
        bodied[model.shape_particles] = True
        bodied[model.tetra_particles.ravel()] = True
        bodied |= model.particle_shielded
        free = model.particle_inv_mass > 0
        a, b = pairs[:, 0], pairs[:, 1]
        take = (np.isin(model.stick_source, _SOURCES) & (model.stick_kind != STICK_MIN)
                & ~bodied[a] & ~bodied[b] & (free[a] | free[b]))
        self.stick = np.nonzero(take)[0].astype(np.int64)        # (E,) int64, batch order
        self.a = np.ascontiguousarray(a[self.stick])              # (E,) int64 particle ids
        self.b = np.ascontiguousarray(b[self.stick])              # (E,) int64
        # (E,) int64 the stick batch of each edge: edges of one batch share no particle
        self.batch = (np.searchsorted(model.stick_batch_offsets, self.stick, side="right")
                      - 1).astype(np.int64)
        self.count = len(self.stick)
        self.inv_mass = model.particle_inv_mass                   # (n,) [1/kg]
        self.set_candidates(np.zeros(0, np.int64), np.zeros(0, np.int64))

    def set_candidates(self, edge, collider):
        """Store this step's candidate pairs: edge, collider (q,) int64, sorted by (collider,
        edge) (find's order: edges ascending are batches ascending, self.stick); sorted here by
        (batch, collider, edge), with the groups of equal (batch, collider): a stable sort by
        batch keeps (collider, edge) within a batch, and one collider's list is in that order
        already (the drape's 32,000 candidates: 0.2 ms a step by lexsort)."""
        if not collider.size or collider[0] == collider[-1]:
            order = np.arange(edge.size)
        else:
            order = np.argsort(self.batch[edge], kind="stable")
        self.cand_edge = np.ascontiguousarray(edge[order], np.int64)         # (q,) int64
        self.cand_collider = np.ascontiguousarray(collider[order], np.int64)  # (q,) int64
        key = self.batch[self.cand_edge] * (int(collider.max()) + 1 if collider.size else 1) \
            + self.cand_collider
        first = np.r_[True, key[1:] != key[:-1]] if key.size else np.zeros(0, bool)
        # (G + 1,) int64 group g = candidates [group_start[g], group_start[g + 1])
        self.group_start = np.r_[np.nonzero(first)[0], key.size].astype(np.int64)
        self.depth = np.zeros(key.size)            # (q,) float64 [m] correction this substep
        self.used = np.zeros(key.size)             # (q,) float64 [m] friction spent

    def find(self, shape, take, turning, abc, ratio, R, t, s, extra, X, reach, free,
             kernels):
        """The collide stage's candidates (module docstring): shape (C,) int64; take (C,)
        bool the primitives tested by distance and turning (C,) bool those that take every
        edge (a primitive that rotates or scales in the step); abc (C, 3) the dimensions of
        each collider's exact SDF, or of the exact primitive enclosing a first-order one, and
        ratio (C,) the share of that distance the first-order one keeps (sdf.enclosing; 1 for
        an exact one); R, t, s, extra as Colliders.collide hands to primitive_candidates; X
        (3, n) [m]; reach (n,) [m] each particle's reach plus its radius; free (n,) bool the
        particles that collide this step (awake, movable)."""
        edges = shape != frames.PLANE
        take = take & edges
        turning = turning & edges
        if not self.count or not (take.any() or turning.any()):
            if self.cand_edge.size:
                self.set_candidates(np.zeros(0, np.int64), np.zeros(0, np.int64))
            return
        live, mid, half, end_reach = kernels.edge_spheres(X, self.a, self.b, free, reach)
        pairs_e, pairs_k = [], []
        if live.size and take.any():
            near = np.zeros((len(shape), live.size), bool)
            exact = np.zeros(len(shape), bool)
            round_ = take & (ratio == 1.0)
            kernels.primitive_candidates(shape, exact, abc, R, t, s, round_, mid,
                                         half + end_reach, extra, near)
            one = np.zeros(len(shape), bool)
            for k in np.nonzero(take & ~round_)[0]:
                # an oval: its enclosing primitive at the reach the ratio asks (sdf.enclosing)
                one[:] = False
                one[k] = True
                kernels.primitive_candidates(shape, exact, abc, R, t, s, one, mid,
                                             half + end_reach / ratio[k], extra / ratio[k],
                                             near)
        # by collider, then edge (set_candidates' order)
        for k in np.nonzero(take | turning)[0]:
            if turning[k] or live.size:
                e = live if turning[k] else live[near[k]]
                pairs_e.append(e)
                pairs_k.append(np.full(e.size, k, np.int64))
        if pairs_e:
            self.set_candidates(np.concatenate(pairs_e).astype(np.int64),
                                np.concatenate(pairs_k))
        else:
            self.set_candidates(np.zeros(0, np.int64), np.zeros(0, np.int64))

    def touched(self, supported):
        """Set supported (n,) bool for the particles of the edges whose contact acted in the
        step's last substep (a correction there: depth > 0; the depths restart every substep),
        the edges' share of the touching flags that let an island fall asleep (sleep.py)."""
        hit = self.cand_edge[self.depth > 0.0]
        supported[self.a[hit]] = True
        supported[self.b[hit]] = True

    def sleeping_ends(self, asleep):
        """(k,) int64 the edges whose ends sleep (asleep (n,) bool; an edge's two ends are one
        island, as a stick joins them), for the wake by a moving collider (sleep.py)."""
        return np.nonzero(asleep[self.a] & asleep[self.b])[0]

    def kernel_args(self):
        """The edges group of loop.run_substeps' arguments."""
        return (self.a, self.b, self.cand_edge, self.cand_collider, self.group_start,
                self.inv_mass, self.depth, self.used)


def edge_spheres(X, ea, eb, free, reach):
    """The collide stage's sphere around each edge that may move (the kernel table's; module
    docstring): X (3, n) [m]; ea, eb (E,) int64 the edges' particles; free (n,) bool the
    particles that collide this step; reach (n,) [m] each particle's reach plus its radius.
    Returns live (m,) int64 the edges with a free end, ascending; mid (3, m) [m] their
    midpoints; half (m,) [m] half their lengths; end_reach (m,) [m] the larger reach of their
    ends."""
    live = np.nonzero(free[ea] | free[eb])[0]
    a, b = ea[live], eb[live]
    d0, d1, d2 = X[0, b] - X[0, a], X[1, b] - X[1, a], X[2, b] - X[2, a]
    mid = np.ascontiguousarray(np.stack([X[0, a] + d0 * 0.5, X[1, a] + d1 * 0.5,
                                         X[2, a] + d2 * 0.5]))
    half = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) * 0.5
    return live, mid, half, np.maximum(reach[a], reach[b])


def project_edges(X, Xp, ea, eb, cand_edge, cand_collider, group_start, inv_mass, e_depth,
                  e_used, shape, thickness, mu_s, mu_k, friction, radius, approximate, abc, R,
                  t, s, Rb, tb, sb, moving, allowance, lift, lifted, mesh):
    """The edges' contacts of one iteration (module docstring), group after group. X, Xp
    (3, n) [m] positions (updated) and previous positions; ea, eb (E,) int64 the edges'
    particles; cand_edge, cand_collider (q,) int64 and group_start (G + 1,) int64 the
    candidates (ColliderEdges); inv_mass (n,) [1/kg]; e_depth, e_used (q,) [m] each
    candidate's correction and friction spent this substep (updated); per collider (C,):
    shape, thickness, mu_s, mu_k, approximate, abc (C, 3) and one substep's placements R, Rb
    (C, 3, 3), t, tb, s, sb (C, 3), moving (C,) bool; friction, radius (n,) the particles'
    Coulomb coefficients and radii [m]; allowance [m], lift (n, 3) [m], lifted (n,) bool as
    project.project_collider's; mesh the mesh group (unused: no mesh
    collider takes edges)."""
    for g in range(len(group_start) - 1):
        q = np.arange(group_start[g], group_start[g + 1])
        k = int(cand_collider[q[0]])
        now, before = Frame(R[k], t[k], s[k]), Frame(Rb[k], tb[k], sb[k])
        e = cand_edge[q]
        _edge_group(X, Xp, ea[e], eb[e], q, shape[k], approximate[k], abc[k], thickness[k],
                    now, before, moving[k], mu_s[k], mu_k[k], friction, radius, inv_mass,
                    e_depth, e_used, allowance, lift, lifted, k)


def _ends(shape, approximate, abc, now, before, k, a, b):
    """The end test's distances: phi at the edge's ends a and b (coordinate columns) and its
    slopes n . (b - a) there, (phi_a, slope_a, phi_b, slope_b)."""
    e0, e1, e2 = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    phi_a, (n0, n1, n2), _ = _distance(shape, approximate, abc, now, before, k, None, *a, *a)
    slope_a = n0 * e0 + n1 * e1 + n2 * e2
    phi_b, (n0, n1, n2), _ = _distance(shape, approximate, abc, now, before, k, None, *b, *b)
    slope_b = n0 * e0 + n1 * e1 + n2 * e2
    return phi_a, slope_a, phi_b, slope_b


def _lines(phi_a, slope_a, phi_b, slope_b):
    """The tangent lines' lower bound of a convex distance along the edge, where they meet
    (valid where it falls from a and rises to b: slope_a < 0 < slope_b)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return phi_a + slope_a * ((phi_b - slope_b - phi_a) / (slope_a - slope_b))


def _nearest(shape, approximate, abc, now, before, k, a, e):
    """t* (k,) in [0, 1]: the point of the edges a + t e (coordinate columns) where the
    distance stops falling, by EDGE_BISECTIONS halvings on the sign of its slope."""
    a0, a1, a2 = a
    e0, e1, e2 = e
    lo = np.zeros(a0.size)
    hi = np.ones(a0.size)
    for _ in range(EDGE_BISECTIONS):
        mid = (lo + hi) * 0.5
        m0, m1, m2 = a0 + e0 * mid, a1 + e1 * mid, a2 + e2 * mid
        _, (n0, n1, n2), _ = _distance(shape, approximate, abc, now, before, k, None, m0, m1,
                                       m2, m0, m1, m2)
        down = n0 * e0 + n1 * e1 + n2 * e2 < 0
        lo = np.where(down, mid, lo)
        hi = np.where(down, hi, mid)
    return (lo + hi) * 0.5


def _edge_group(X, Xp, ia, ib, q, shape, approximate, abc, thickness, now, before, moving,
                mu_s, mu_k, friction, radius, inv_mass, e_depth, e_used, allowance, lift,
                lifted, k):
    """One group's edges (disjoint particles) against collider k, vectorised: the contact at
    the nearest point now, or the tunnelling guard's at the first touch (module docstring)."""
    a0, a1, a2 = X[0, ia], X[1, ia], X[2, ia]
    b0, b1, b2 = X[0, ib], X[1, ib], X[2, ib]
    e0, e1, e2 = b0 - a0, b1 - a1, b2 - a2
    phi_a, slope_a, phi_b, slope_b = _ends(shape, approximate, abc, now, before, k,
                                           (a0, a1, a2), (b0, b1, b2))
    ra, rb = radius[ia], radius[ib]
    inside = (slope_a < 0) & (slope_b > 0)
    off = thickness + np.maximum(ra, rb)
    tol = np.maximum(EDGE_TOLERANCE, EDGE_SKIN * off)
    dips = inside & (_lines(phi_a, slope_a, phi_b, slope_b) - off < -tol)
    # the guard's candidates: edges whose ends moved more than the offset in the substep,
    # relative to the collider, and whose edge at the substep's start falls toward the
    # collider from one end and rises to the other near enough to touch on the way
    if moving:
        pa = _carried(now, before, Xp[0, ia], Xp[1, ia], Xp[2, ia])
        pb = _carried(now, before, Xp[0, ib], Xp[1, ib], Xp[2, ib])
    else:
        pa = (Xp[0, ia], Xp[1, ia], Xp[2, ia])
        pb = (Xp[0, ib], Xp[1, ib], Xp[2, ib])
    d0, d1, d2 = a0 - pa[0], a1 - pa[1], a2 - pa[2]
    c0, c1, c2 = b0 - pb[0], b1 - pb[1], b2 - pb[2]
    with np.errstate(over="ignore", invalid="ignore"):    # a runaway is the step's to report
        moved = np.maximum(np.sqrt(d0 * d0 + d1 * d1 + d2 * d2),
                           np.sqrt(c0 * c0 + c1 * c1 + c2 * c2))
    fast = np.nonzero(moved > np.maximum(off, EDGE_TOLERANCE))[0]
    swept = np.zeros(ia.size, bool)
    if fast.size:
        f = fast
        sa = (pa[0][f], pa[1][f], pa[2][f])
        sb = (pb[0][f], pb[1][f], pb[2][f])
        phi_sa, slope_sa, phi_sb, slope_sb = _ends(shape, approximate, abc, now, before, k,
                                                   sa, sb)
        swept[f] = ((slope_sa < 0) & (slope_sb > 0)
                    & (_lines(phi_sa, slope_sa, phi_sb, slope_sb) - off[f] < moved[f]))
    live = np.nonzero(dips | swept)[0]
    if not live.size:
        return
    ia, ib, q, ra, rb, tol = ia[live], ib[live], q[live], ra[live], rb[live], tol[live]
    a0, a1, a2, e0, e1, e2 = a0[live], a1[live], a2[live], e0[live], e1[live], e2[live]
    dips, swept = dips[live], swept[live]
    # the contact at the nearest point now (where the edge dips)
    tt = _nearest(shape, approximate, abc, now, before, k, (a0, a1, a2), (e0, e1, e2))
    p0, p1, p2 = a0 + e0 * tt, a1 + e1 * tt, a2 + e2 * tt
    phi, (n0, n1, n2), _ = _distance(shape, approximate, abc, now, before, k, None, p0, p1, p2,
                                     p0, p1, p2)
    pen = np.where(dips, phi - (thickness + (ra + (rb - ra) * tt)) + tol, np.inf)
    g = np.nonzero(swept)[0]
    if g.size:
        # the guard: the edge's nearest point at the substep's start, traced from there to
        # where it is now (project._trace, as a particle's); its contact there replaces the
        # one now, unless that one is inside on the same side
        sa = (pa[0][live[g]], pa[1][live[g]], pa[2][live[g]])
        se = (pb[0][live[g]] - sa[0], pb[1][live[g]] - sa[1], pb[2][live[g]] - sa[2])
        ts = _nearest(shape, approximate, abc, now, before, k, sa, se)
        s0, s1, s2 = sa[0] + se[0] * ts, sa[1] + se[1] * ts, sa[2] + se[2] * ts
        x0, x1, x2 = a0[g] + e0[g] * ts, a1[g] + e1[g] * ts, a2[g] + e2[g] * ts
        w0, w1, w2 = x0 - s0, x1 - s1, x2 - s2
        with np.errstate(over="ignore", invalid="ignore"):
            length = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        with np.errstate(divide="ignore", invalid="ignore"):
            hit_g, pen_g, h0, h1, h2, _ = _trace(
                shape, approximate, abc, now, before, k, None, thickness,
                ra[g] + (rb[g] - ra[g]) * ts - tol[g], (s0, s1, s2), (w0, w1, w2), length,
                (x0, x1, x2), (s0, s1, s2))
        same = (pen[g] < 0) & (n0[g] * h0 + n1[g] * h1 + n2[g] * h2 > 0)
        use = hit_g & (pen_g < 0) & ~same
        u = g[use]
        tt[u], pen[u] = ts[use], pen_g[use]
        n0[u], n1[u], n2[u] = h0[use], h1[use], h2[use]
        p0[u], p1[u], p2[u] = x0[use], x1[use], x2[use]
    hit = pen < 0
    if not hit.any():
        return
    ia, ib, q, tt = ia[hit], ib[hit], q[hit], tt[hit]
    p0, p1, p2, n0, n1, n2 = p0[hit], p1[hit], p2[hit], n0[hit], n1[hit], n2[hit]
    d = -pen[hit]
    pa0, pa1, pa2 = Xp[0, ia], Xp[1, ia], Xp[2, ia]
    pp0 = pa0 + (Xp[0, ib] - pa0) * tt
    pp1 = pa1 + (Xp[1, ib] - pa1) * tt
    pp2 = pa2 + (Xp[2, ib] - pa2) * tt
    ms, mk = combined_friction(mu_s, mu_k, (friction[ia] + friction[ib]) * 0.5)
    _, (f0, f1, f2), _, depth, used, corr, lf = _contact(
        p0, p1, p2, pp0, pp1, pp2, n0, n1, n2, d, e_depth[q], e_used[q], now, before, moving,
        ms, mk, allowance)
    e_depth[q] = depth
    e_used[q] = used
    ca = 1.0 - tt
    wa = inv_mass[ia] * ca
    wb = inv_mass[ib] * tt
    W = wa * ca + wb * tt
    ok = W > 0
    ga = np.where(ok, wa / np.where(ok, W, 1.0), 0.0)
    gb = np.where(ok, wb / np.where(ok, W, 1.0), 0.0)
    move = (n0 * corr - f0, n1 * corr - f1, n2 * corr - f2)
    for c in range(3):
        X[c, ia] += move[c] * ga
        X[c, ib] += move[c] * gb
    up = np.nonzero((lf > 0) & ok)[0]
    if up.size:                           # the lift, shared as the move is
        ln = (n0[up] * lf[up], n1[up] * lf[up], n2[up] * lf[up])
        for c in range(3):
            lift[ia[up], c] += ln[c] * ga[up]
            lift[ib[up], c] += ln[c] * gb[up]
        lifted[ia[up]] = True
        lifted[ib[up]] = True

"""Contact between simulated bodies: particle against particle and vertex against triangle,
with relative Coulomb friction, solved by Jacobi iteration with mass splitting.

Every simulated body collides with every other (Macklin, Mueller, Chentanez and Kim, "Unified
Particle Physics for Real-Time Applications", SIGGRAPH 2014: one particle system, contacts as
unilateral position constraints, Jacobi solve with averaging, section 4.2, here with mass
splitting in its place, below; friction at position level, section 6.1). Bodies are collision
groups (collision/groups.py); a cloth collides with itself only when its group self-collides.

Constraints (x = positions, r = particle radius, the contact distance D):

    particle i, particle j:   C = |x_i - x_j| - D >= 0,          D = r_i + r_j
    vertex v, triangle abc:   C = s (x_v - p) . n - D >= 0,     D = r_v + (r_a + r_b + r_c) / 3
                              p = a x_a + b x_b + c x_c, the projection of x_v on the
                              triangle's plane (barycentric a, b, c), n its unit normal

The vertex-triangle constraint acts only while x_v projects inside the triangle (barycentrics
>= -TOL). s is the side: which side of the triangle the vertex was on when the collide stage
found the pair at the step's start (Bridson, Fedkiw and Anderson, "Robust treatment of
collisions, contact and friction for cloth animation", SIGGRAPH 2002: proximity with thickness,
and a guard so that nothing passes through). Every substep the contact pushes the vertex back to
D on THAT side, also when it crossed the triangle during the substep, so a layer never passes
through another even at D = 0. Beside a two-sided face (outside its prism) s follows the side
the vertex is on (in place): it passes the plane there round the face's edge, not through it,
and held to its old side a flag's corner that came over the face was pushed through it. Faces
of a closed (solid) surface always have s = +1 (outward): nothing ends inside a solid; a vertex
behind a solid face by more than its contact band at the step's start (band = D + BAND +
|relative velocity| dt: it is beyond the body, e.g. under a thin slab, not in it) is not paired
with that face, unless it is less than half the body's depth behind the face (then it is
inside, nearer this face than the far side, and leaves through it). A vertex of a solid pairs
only with solid faces that face it (its outward normal opposes theirs): a stack's corners settle.

Edge pq against edge uw (_solve_edges): C = s (P - Q) . n - D >= 0 at the closest points P, Q of
the two segments, n = (q - p) x (w - u) / |.|, D the mean radii of the two edges summed. The cross
product flips sign when the edges turn through parallel, though neither edge has moved to the other
side, so n is turned into the half-space of the pair's normal at the step's start (stored with the
contact): without it a pile of cloth dragged edges through each other and tore. Edges cross at
zero distance, their lines' closest points inside both segments; the sign also flips, with no
crossing, where the lines meet outside a segment (neighbouring edges of a crumpled flag's
corner), and pushed back through each other those folded the corner through the flag
(docs/contact.md, "Side memory"). So, unless a corner is on a solid face (the side then is the
outward one), a pair beside each other (its lines' closest points outside a segment) takes the
side it is on, and one more than D on its wrong side lets go (a real crossing is met within D).
An edge pair is a candidate only where one of its edges is a feature: a border, or bent so that
the two edges' sags (half the length times tan(half the dihedral angle)) together exceed D / 2.
Between two surfaces flat across the pair, the vertex-triangle contacts hold the layers apart
(the distance of two planar patches is least at a vertex or at the patch's border) and the
pair would only cost; where it is left out the surfaces stay at least D / 2 apart.

Capsule against capsule (_solve_segments; two bones of ragdolls, builder add_capsule_body):
C = |P - Q| - D >= 0 at the closest points P = p + s (q - p), Q = u + t (w - u) of the two
capsules' axis segments pq and uw (their end particles), s and t clamped to [0, 1] (Ericson,
"Real-Time Collision Detection", 2005, section 5.1.9), D the two radii summed, n = (P - Q) /
|P - Q| (the pair's jitter direction where the axes meet); gradient weights (1 - s, s,
-(1 - t), -t), as for two edges: the exact distance of two capsules, where their spheres
(which still meet colliders, particles and faces) would meet in bumps, 49 pairs for one. A
capsule is a group of its own (BodyContacts.group_segment): no sphere pairs with another's.

The correction of one contact (inverse masses w, gradient weights 1 for the vertex and
-a, -b, -c for the triangle's corners, W = w_v + a^2 w_a + b^2 w_b + c^2 w_c; for two particles
W = w_i + w_j and n = (x_i - x_j) / |x_i - x_j|):

    pen = -C > 0,  u = relative displacement over the substep,  into = -u . n
    c = min(pen, max(into + s_max, 0))         the correction taken (s_max = allowance)
    r = u + n c,  r_t its tangential part
    take = min(mu c, |r_t|)          (static friction removes r_t whole when |r_t| <= mu c;
                                      beyond, kinetic friction shortens it by mu c)
    g = (n c - r_t take / |r_t|) / W,   dx_v = w_v g,  dx_k = -k w_k g
    l = c - min(c, max(into, 0)),   x*_v += w_v n l / W,  x*_k -= k w_k n l / W

As against colliders (collision/project.py), overlap the particles did not move into this
substep (they started inside: a late contact, a stack settling) is resolved at most at
max_depenetration_speed and without giving speed: its part l moves x* as well (split impulse).
The lift: a particle's x* follows the sum L of its contacts' split lifts (pass 4 below) only as
far as the particle moved along L in the substep, x* += f L with f = (x - x*) . L / |L|^2
clamped to [0, 1] (x after the pass's corrections, x* before them), so a lift that really
moves the particle gives it no speed, and one that other contacts undo gives none either.
Without the clamp the lift of an overlap left part-resolved moved x* with x while the layers
above pushed x straight back: a resting Z fold's layers kept 4 to 6 cm/s into each other,
which its folds turned sideways into a creep of 3 to 15 mm/s that never slept.

mu is the geometric mean of the two sides' friction, sqrt(mu_a mu_b) (a triangle's or an
edge's side is its corners' mean; Box2D's b2MixFriction; the same rule as against colliders,
project.combined_friction), the same static and kinetic, so a box on a slope slides iff
tan(angle) > mu as against colliders (collision/project.py). Coincident particles have no
normal: n is a direction drawn from a hash of (i, j) and the seed 2 (jitter_directions), so
they separate the same way every run.

Jacobi with mass splitting: solve_bodies computes every contact's corrections from the same
positions (pass 1, in parallel over contacts). A particle's share of a contact is the size of
its gradient weight (1 for a vertex or a particle of a pair, its barycentric weight for a
triangle's or an edge's corner); its split m = max(1, its shares summed over the contacts
acting on it) (pass 2, in parallel over particles). Each contact is then solved as if each
corner's inverse mass were w m (Tonge, Benevolenski and Voroshilov, "Mass splitting for
jitter-free parallel rigid body simulation", SIGGRAPH 2012): its rows times W / W', with
W = sum w k^2 and W' = sum w k^2 m over its corners (k their gradient weights; pass 3, over
contacts), and each particle adds the sum of its contacts' rows, in a fixed (contact, slot)
order (pass 4, over particles). A particle in m contacts that all push it one way moves by
about their average, as with Macklin et al.'s averaging (2014, section 4.2), but each contact
still moves its corners by equal and opposite impulses, so the pass conserves momentum (the
averaging it replaced did not: a Z fold at rest slid along the ground, docs/contact.md "Contact
between bodies"). Weighing by shares, not plain counts, keeps a corner far from where a contact
acts (weight ~0) from diluting the contacts that carry it (with counts a stack's corner resting
on the far corner of its neighbour's face sank). No two threads write one particle or one
contact's rows, so the result does not depend on the thread count; the compiled mirror
(kernels/compiled_bodies.py) does the same operations in the same order. Contacted particles
are marked touching, which weights them in rigid shape matching (constraints/shapes.py BOOST)
as collider contacts are.

The collide stage (body_stage.py, once per step): every particle's box swept from x to its
prediction x + v dt + a dt^2 / 2, grown by its radius and a slack (SLACK + |v| dt / 10); a
triangle's box is its corners' union. find_body_contacts (compiled: kernels/compiled_broad.py,
the same pairs) pairs each triangle (and each particle with a radius) through a grid with the
particles whose boxes overlap its own, after the group filter: different groups not disabled,
or one self-colliding group and a rest distance above the contact distance.
"""

import numpy as np

TOL = 1e-6          # barycentric tolerance of "projects inside the triangle"
SLACK = 1e-3        # [m] added to every box: motion the prediction does not foresee
BAND = 1e-3         # [m] depth behind a solid face that still counts as in contact
SEED = 2            # the jitter's seed (seed 002)
PAIR, VERTEX_TRI, EDGES, SEGMENTS = 0, 1, 2, 3       # contact kinds
# [m] a contact acts from this penetration on: contacts at rounding-error depth (a vertex on a
# coplanar face in a stack) would otherwise count in the splits and dilute those with load
ACTIVE = 1e-9
# edges closer to parallel than sin^2 = 1e-3 (1.8 degrees) make no edge contact: the closest
# points and the normal of near-parallel edges are ill-conditioned (a coplanar pair in a stack
# pushed sideways and toppled it); their vertex-triangle contacts hold them
PARALLEL = 1e-3
DEGENERATE = 1e-30  # squared... a triangle whose normal is shorter than this has no plane
# two capsule axes closer to parallel than sin^2 = 1e-9 meet at the middle of their overlap
# (the closest points of parallel segments are not unique)
SEGMENT_PARALLEL = 1e-9


# ----------------------------------------------------------------------------- broad phase
def cell_keys(lo, origin, cell, dims):
    """(k,) int64 keys of the grid cells that points lo (k, 3) [m] fall in (cell (3,) [m]
    the cell's size along each axis)."""
    c = np.floor((lo - origin) / cell).astype(np.int64)
    c = np.minimum(np.maximum(c, 0), dims - 1)
    return (c[:, 0] * dims[1] + c[:, 1]) * dims[2] + c[:, 2]


def _cells(lo, origin, cell, dims):
    c = np.floor((lo - origin) / cell).astype(np.int64)
    return np.minimum(np.maximum(c, 0), dims - 1)


def _query(qlo, qhi, key_sorted, start, end, origin, cell, dims):
    """For query boxes (q, 3): (pairs_query, particle slot in the sorted order) of every
    particle hashed in a cell the box covers."""
    if not len(key_sorted):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    clo = _cells(qlo, origin, cell, dims)
    chi = _cells(qhi, origin, cell, dims)
    span = chi - clo + 1
    count = span[:, 0] * span[:, 1] * span[:, 2]
    q = np.repeat(np.arange(len(qlo)), count)
    local = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    s1, s2 = span[q, 1], span[q, 2]
    cz = local % s2
    cy = (local // s2) % s1
    cx = local // (s1 * s2)
    key = ((clo[q, 0] + cx) * dims[1] + clo[q, 1] + cy) * dims[2] + clo[q, 2] + cz
    pos = np.searchsorted(key_sorted, key)
    pos = np.minimum(pos, len(key_sorted) - 1)
    hit = key_sorted[pos] == key
    q, pos = q[hit], pos[hit]
    n = end[pos] - start[pos]
    q2 = np.repeat(q, n)
    slot = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n) + np.repeat(start[pos], n)
    return q2, slot


def _allowed(ga, gb, same_ok, disabled, n_groups):
    """Group filter: different groups not disabled, or the same group where same_ok."""
    same = ga == gb
    lo, hi = np.minimum(ga, gb), np.maximum(ga, gb)
    key = lo * n_groups + hi
    if disabled.size:
        pos = np.minimum(np.searchsorted(disabled, key), disabled.size - 1)
        off = disabled[pos] == key
    else:
        off = np.zeros(key.shape, bool)
    return np.where(same, same_ok, ~off)


def _grid(lo, origin, cell, dims):
    """Items hashed by the cell of their box's low corner: (order, cell keys, start, end)."""
    keys = cell_keys(lo, origin, cell, dims)
    order = np.argsort(keys, kind="stable")
    ks = keys[order]
    first = np.r_[True, ks[1:] != ks[:-1]] if ks.size else np.zeros(0, bool)
    start = np.nonzero(first)[0]
    return order, ks[first], start, np.r_[start[1:], len(ks)].astype(np.int64)


def _overlap(lo_a, hi_a, lo_b, hi_b):
    return np.all(lo_a <= hi_b, axis=1) & np.all(hi_a >= lo_b, axis=1)


def find_body_contacts(lo, hi, radius, group, inv_mass, x0, tris, tri_thick, edges, edge_thick,
                       self_group, disabled, origin, cell, dims, reach, active, tri_active,
                       edge_active, edge_sag, pair_self, group_segment):
    """The broad phase in NumPy (the kernel table's find_body_contacts). lo, hi (n, 3) [m]
    particle boxes; radius (n,) [m]; group (n,) int64; inv_mass (n,); x0 (n, 3) [m] rest
    positions; tris (F, 3) int64 contact triangles, tri_thick (F,) [m]; edges (E, 2) int64
    their edges, edge_thick (E,) [m]; self_group (G,) bool; disabled (D,) int64 sorted keys;
    the grid: origin (3,) [m], cell (3,) [m] per axis, dims (3,) int64; reach (3,) [m] the
    largest box extent of any active particle along each axis; active (n,), tri_active (F,),
    edge_active (E,) bool: the items that may touch another group (body_stage.py), the only
    ones hashed and queried; edge_sag (E,) [m] how far each edge lies from its faces' plane
    (body_stage.BodyContacts._edge_sag): an edge pair is a candidate only when its sags
    together exceed half its contact distance, so only edges whose own sag exceeds half their
    thickness query; pair_self (G,) bool: the self-colliding groups whose particles also pair
    with each other (those without contact faces: a cloth's vertices meet its own faces and
    edges instead, and pairing them with their neighbours only costs); group_segment (G,) bool:
    the capsules' groups, whose spheres make no pair with each other's (their axes meet as
    segments, body_stage.py). Returns unsorted int64
    arrays (pp_i, pp_j, vt_v, vt_t, ee_a, ee_b): particle pairs i < j, vertex-triangle pairs
    and edge pairs a < b."""
    G = len(self_group)
    ids = np.nonzero(active)[0]
    sub, ukey, start, end = _grid(lo[ids], origin, cell, dims)
    order = ids[sub]
    # vertex-triangle
    a, b, c = tris[:, 0], tris[:, 1], tris[:, 2]
    tlo = np.minimum(np.minimum(lo[a], lo[b]), lo[c])
    thi = np.maximum(np.maximum(hi[a], hi[b]), hi[c])
    fa = np.nonzero(tri_active)[0]
    f, slot = _query(tlo[fa] - reach, thi[fa], ukey, start, end, origin, cell, dims)
    f = fa[f]
    v = order[slot]
    ok = (v != a[f]) & (v != b[f]) & (v != c[f])
    ok &= _overlap(lo[v], hi[v], tlo[f], thi[f])
    ok &= (inv_mass[v] > 0) | (inv_mass[a[f]] > 0) | (inv_mass[b[f]] > 0) | (inv_mass[c[f]] > 0)
    f, v = f[ok], v[ok]
    ga, gv = group[a[f]], group[v]
    dmin = np.minimum(np.minimum(_dist2(x0, v, a[f]), _dist2(x0, v, b[f])), _dist2(x0, v, c[f]))
    reach_rest = radius[v] + tri_thick[f]
    same_ok = self_group[gv] & (dmin > reach_rest * reach_rest)
    keep = _allowed(gv, ga, same_ok, disabled, G)
    vt_v, vt_t = v[keep], f[keep]
    # particle-particle (particles with a radius)
    big = np.nonzero((radius > 0) & active)[0]
    i, slot = _query(lo[big] - reach, hi[big], ukey, start, end, origin, cell, dims)
    i = big[i]
    j = order[slot]
    ok = (j > i) & (radius[j] > 0) & ~(group_segment[group[i]] & group_segment[group[j]])
    ok &= _overlap(lo[j], hi[j], lo[i], hi[i])
    ok &= (inv_mass[i] > 0) | (inv_mass[j] > 0)
    i, j = i[ok], j[ok]
    r = radius[i] + radius[j]
    same_ok = pair_self[group[i]] & (_dist2(x0, i, j) > r * r)
    keep = _allowed(group[i], group[j], same_ok, disabled, G)
    pp_i, pp_j = i[keep], j[keep]
    # edge-edge: edges hashed by their boxes
    e0, e1 = edges[:, 0], edges[:, 1]
    elo = np.minimum(lo[e0], lo[e1])
    ehi = np.maximum(hi[e0], hi[e1])
    ee = np.nonzero(edge_active)[0]
    asks = edge_active & (edge_sag > 0.5 * edge_thick)
    qe = np.nonzero(asks)[0]
    ereach = (ehi[ee] - elo[ee]).max(axis=0) if ee.size else np.zeros(3)
    esub, ekey, estart, eend = _grid(elo[ee], origin, cell, dims)
    eorder = ee[esub]
    ea, slot = _query(elo[qe] - ereach, ehi[qe], ekey, estart, eend, origin, cell, dims)
    ea = qe[ea]
    eb = eorder[slot]
    ok = (eb != ea) & (~asks[eb] | (eb > ea))        # a pair of two askers: from the lower
    ok &= edge_sag[ea] + edge_sag[eb] > 0.5 * (edge_thick[ea] + edge_thick[eb])
    ea, eb = np.minimum(ea[ok], eb[ok]), np.maximum(ea[ok], eb[ok])
    p, q, u, w = e0[ea], e1[ea], e0[eb], e1[eb]
    ok = (p != u) & (p != w) & (q != u) & (q != w)
    ok &= _overlap(elo[ea], ehi[ea], elo[eb], ehi[eb])
    ok &= (inv_mass[p] > 0) | (inv_mass[q] > 0) | (inv_mass[u] > 0) | (inv_mass[w] > 0)
    ea, eb, p, q, u, w = ea[ok], eb[ok], p[ok], q[ok], u[ok], w[ok]
    dmin = np.minimum(np.minimum(_dist2(x0, p, u), _dist2(x0, p, w)),
                      np.minimum(_dist2(x0, q, u), _dist2(x0, q, w)))
    reach_rest = edge_thick[ea] + edge_thick[eb]
    same_ok = self_group[group[p]] & (dmin > reach_rest * reach_rest)
    keep = _allowed(group[p], group[u], same_ok, disabled, G)
    return pp_i, pp_j, vt_v, vt_t, ea[keep], eb[keep]


def _dist2(x, i, j):
    d0 = x[i, 0] - x[j, 0]
    d1 = x[i, 1] - x[j, 1]
    d2 = x[i, 2] - x[j, 2]
    return d0 * d0 + d1 * d1 + d2 * d2


def jitter_directions(i, j):
    """(k, 3) unit directions drawn from a hash of particle pairs (i, j) and SEED: the normal
    of a contact between coincident particles (a splitmix64 hash; the same bits every run)."""
    with np.errstate(over="ignore"):
        z = (i.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             + j.astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9) + np.uint64(SEED))
        out = []
        for _ in range(2):
            z = z + np.uint64(0x9E3779B97F4A7C15)
            y = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            y = (y ^ (y >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            y = y ^ (y >> np.uint64(31))
            out.append((y >> np.uint64(11)).astype(np.float64) / float(1 << 53))
    zc = 2.0 * out[0] - 1.0                              # uniform on the sphere
    phi = 2.0 * np.pi * out[1]
    s = np.sqrt(np.maximum(1.0 - zc * zc, 0.0))
    return np.ascontiguousarray(np.column_stack([s * np.cos(phi), s * np.sin(phi), zc]))


# ----------------------------------------------------------------------------- the solve
def solve_bodies(X, Xp, c_idx, c_kind, c_side, c_dist, c_mu, c_jit, inv_mass, allowance, dx, dl,
                 share, g_particle, g_start, g_slot, touched, split, act, on_solid):
    """One Jacobi pass over all body contacts (module docstring), in place on X (3, n) [m]. Xp
    (3, n) [m] positions a substep ago; c_idx (K, 4) int64 contact particles (v, a, b, c), (p,
    q, u, w) for edges or capsule axes pq and uw, or (i, j, -1, -1); c_kind (K,) int64 PAIR,
    VERTEX_TRI, EDGES or SEGMENTS; c_side (K,) +-1 (0 for particle and capsule pairs); c_dist
    (K,) [m]; c_mu (K,); c_jit (K, 3) a pair's coincident normal (particles or capsule axes), an
    edge pair's unit normal at the step's start (the sense its normal keeps; 0 for
    vertex-triangle); inv_mass (n,) [1/kg]; allowance [m] the depenetration bound of this
    substep; dx, dl (K * 4, 3) [m] and share (K * 4,) scratch (each contact corner's correction
    of x and of x*, and its share of the contact: |its gradient weight|, 0 when the contact does
    not act); the gather: particles g_particle (u,), their slots (contact * 4 + corner)
    g_slot[g_start[q]: g_start[q + 1]] increasing; touched (n,) bool set for contacted
    particles; split (K * 4,) scratch, each slot's particle's split (module docstring, "Jacobi
    with mass splitting"); act (S,) int64 the compiled kernel's scratch, unused here; on_solid
    (n,) bool the corners of solid faces (an edge pair with one keeps its side at any depth, a
    face with three its outward side); c_side changes in place (module docstring: beside)."""
    dx.fill(0.0)
    dl.fill(0.0)
    share.fill(0.0)
    _solve_tris(X, Xp, c_idx, c_side, c_dist, c_mu, inv_mass, allowance, dx, dl, share,
                np.nonzero(c_kind == VERTEX_TRI)[0], on_solid)
    _solve_edges(X, Xp, c_idx, c_side, c_dist, c_mu, c_jit, inv_mass, allowance, dx, dl, share,
                 np.nonzero(c_kind == EDGES)[0], on_solid)
    _solve_pairs(X, Xp, c_idx, c_dist, c_mu, c_jit, inv_mass, allowance, dx, dl, share,
                 np.nonzero(c_kind == PAIR)[0])
    _solve_segments(X, Xp, c_idx, c_dist, c_mu, c_jit, inv_mass, allowance, dx, dl, share,
                    np.nonzero(c_kind == SEGMENTS)[0])
    # pass 2: each particle's share of the contacts acting on it, max(1, it), into its slots
    q = np.repeat(np.arange(len(g_particle)), np.diff(g_start))
    u = len(g_particle)
    cnt = np.bincount(q, weights=share[g_slot], minlength=u)
    split[g_slot] = np.maximum(cnt, 1.0)[q]
    # pass 3: each acting contact's rows times W / W', W' its corners' inverse masses times
    # their splits (module docstring, "Jacobi with mass splitting")
    K = len(c_kind)
    sh = share.reshape(K, 4)
    acting = sh > 0.0
    w = np.where(acting, inv_mass[np.maximum(c_idx, 0)], 0.0)
    m = np.where(acting, split.reshape(K, 4), 1.0)
    t = [w[:, j] * (sh[:, j] * sh[:, j]) for j in range(4)]
    W = ((t[0] + t[1]) + t[2]) + t[3]
    W2 = ((t[0] * m[:, 0] + t[1] * m[:, 1]) + t[2] * m[:, 2]) + t[3] * m[:, 3]
    f = np.where(W2 > 0.0, W / np.where(W2 > 0.0, W2, 1.0), 0.0)
    fs = f[g_slot // 4]
    # pass 4: per particle, the sum of its contacts' rows, in slot order
    has = cnt > 0
    p = g_particle[has]
    lift = []
    for a in range(3):
        s = np.bincount(q, weights=dx[g_slot, a] * fs, minlength=u)
        X[a, p] = X[a, p] + s[has]
        s = np.bincount(q, weights=dl[g_slot, a] * fs, minlength=u)
        lift.append(s[has])
    # x* follows a lift only as far as the particle moved that way in this substep
    # (module docstring, "the lift"): l . (x - x*) / |l|^2 clamped to [0, 1]
    l0, l1, l2 = lift
    ll = l0 * l0 + l1 * l1 + l2 * l2
    up = ll > 0.0
    p, l0, l1, l2, ll = p[up], l0[up], l1[up], l2[up], ll[up]
    f = ((X[0, p] - Xp[0, p]) * l0 + (X[1, p] - Xp[1, p]) * l1
         + (X[2, p] - Xp[2, p]) * l2) / ll
    f = np.minimum(np.maximum(f, 0.0), 1.0)
    Xp[0, p] = Xp[0, p] + l0 * f
    Xp[1, p] = Xp[1, p] + l1 * f
    Xp[2, p] = Xp[2, p] + l2 * f
    touched[g_particle[has]] = True


def _solve_tris(X, Xp, c_idx, c_side, c_dist, c_mu, inv_mass, allowance, dx, dl, share, k,
                on_solid):
    v, a, b, c = (c_idx[k, j] for j in range(4))
    s, D, mu = c_side[k], c_dist[k], c_mu[k]
    xv, xa, xb, xc = (X[:, p] for p in (v, a, b, c))
    e0 = [xb[i] - xa[i] for i in range(3)]
    e1 = [xc[i] - xa[i] for i in range(3)]
    nx = e0[1] * e1[2] - e0[2] * e1[1]
    ny = e0[2] * e1[0] - e0[0] * e1[2]
    nz = e0[0] * e1[1] - e0[1] * e1[0]
    ln2 = nx * nx + ny * ny + nz * nz
    ok = ln2 > DEGENERATE
    ln = np.sqrt(np.where(ok, ln2, 1.0))
    nx, ny, nz = nx / ln, ny / ln, nz / ln
    d = [xv[i] - xa[i] for i in range(3)]
    d00 = e0[0] * e0[0] + e0[1] * e0[1] + e0[2] * e0[2]
    d01 = e0[0] * e1[0] + e0[1] * e1[1] + e0[2] * e1[2]
    d11 = e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]
    d20 = d[0] * e0[0] + d[1] * e0[1] + d[2] * e0[2]
    d21 = d[0] * e1[0] + d[1] * e1[1] + d[2] * e1[2]
    den = d00 * d11 - d01 * d01
    den = np.where(ok, den, 1.0)
    bb = (d11 * d20 - d01 * d21) / den
    bc = (d00 * d21 - d01 * d20) / den
    ba = 1.0 - bb - bc
    inside = (ba >= -TOL) & (bb >= -TOL) & (bc >= -TOL)
    beside = ok & ~inside & ~(on_solid[a] & on_solid[b] & on_solid[c])   # takes its side
    c_side[k[beside]] = np.where((d[0] * nx + d[1] * ny + d[2] * nz)[beside] >= 0.0, 1.0, -1.0)
    ok &= inside
    mx, my, mz = s * nx, s * ny, s * nz
    dn = d[0] * mx + d[1] * my + d[2] * mz
    pen = D - dn
    wv, wa, wb, wc = (inv_mass[p] for p in (v, a, b, c))
    W = wv + ba * ba * wa + bb * bb * wb + bc * bc * wc
    ok &= (pen > ACTIVE) & (W > 0)
    if not ok.any():
        return
    sel = np.nonzero(ok)[0]
    k, v, a, b, c = k[sel], v[sel], a[sel], b[sel], c[sel]
    ba, bb, bc, pen, W, mu = ba[sel], bb[sel], bc[sel], pen[sel], W[sel], mu[sel]
    wv, wa, wb, wc = wv[sel], wa[sel], wb[sel], wc[sel]
    m = (mx[sel], my[sel], mz[sel])
    r = []
    for i in range(3):
        r.append((X[i, v] - Xp[i, v]) - (ba * (X[i, a] - Xp[i, a]) + bb * (X[i, b] - Xp[i, b])
                                         + bc * (X[i, c] - Xp[i, c])))
    g, lift = _friction_step(r, m, pen, mu, W, allowance)
    fa, fb, fc = -(ba * wa), -(bb * wb), -(bc * wc)
    for i in range(3):
        dx[4 * k, i] = wv * g[i]
        dx[4 * k + 1, i] = fa * g[i]
        dx[4 * k + 2, i] = fb * g[i]
        dx[4 * k + 3, i] = fc * g[i]
        dl[4 * k, i] = wv * lift[i]
        dl[4 * k + 1, i] = fa * lift[i]
        dl[4 * k + 2, i] = fb * lift[i]
        dl[4 * k + 3, i] = fc * lift[i]
    share[4 * k] = 1.0
    share[4 * k + 1] = np.abs(ba)
    share[4 * k + 2] = np.abs(bb)
    share[4 * k + 3] = np.abs(bc)


def _friction_step(r, m, pen, mu, W, allowance):
    """From the relative displacement r over the substep (before the correction), the normal
    m and the penetration pen: g = (m c - r_t take / |r_t|) / W and the lift m l / W per axis
    (module docstring: c the correction taken, l the part of it owed to x*)."""
    into = -(r[0] * m[0] + r[1] * m[1] + r[2] * m[2])
    c = np.minimum(pen, np.maximum(into + allowance, 0.0))
    lift = c - np.minimum(c, np.maximum(into, 0.0))
    r = [r[i] + m[i] * c for i in range(3)]
    pen = c
    rn = r[0] * m[0] + r[1] * m[1] + r[2] * m[2]
    t = [r[i] - m[i] * rn for i in range(3)]
    tl = np.sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2])
    take = np.minimum(mu * pen, tl)
    big = tl > 1e-300
    scale = np.where(big, take / np.where(big, tl, 1.0), 0.0)
    return [(m[i] * pen - t[i] * scale) / W for i in range(3)], \
        [m[i] * lift / W for i in range(3)]


def _solve_edges(X, Xp, c_idx, c_side, c_dist, c_mu, c_jit, inv_mass, allowance, dx, dl, share,
                 k, on_solid):
    """Edge pq against edge uw: their closest points P = p + s (q - p), Q = u + t (w - u) on the
    lines, inside both segments; normal m = side n, n = (q - p) x (w - u) / |.| turned to the
    half-space of the step's first normal (c_jit); C = (P - Q) . m - D; gradient weights
    (1 - s, s, -(1 - t), -t); on_solid (n,) bool the solids' corners (module docstring)."""
    p, q, u, w = (c_idx[k, j] for j in range(4))
    side, D, mu = c_side[k], c_dist[k], c_mu[k]
    d1, d2, r, a, e, b, c, f = _segment_dots(X, p, q, u, w)
    nx = d1[1] * d2[2] - d1[2] * d2[1]
    ny = d1[2] * d2[0] - d1[0] * d2[2]
    nz = d1[0] * d2[1] - d1[1] * d2[0]
    ln2 = nx * nx + ny * ny + nz * nz
    ok = ln2 > PARALLEL * (a * e)
    den = np.where(ok, a * e - b * b, 1.0)
    ln = np.sqrt(np.where(ok, ln2, 1.0))
    sp = (b * f - c * e) / den
    tp = (a * f - b * c) / den
    # the cross product flips when the edges turn through parallel, though neither has
    # moved to the other side: the step's first normal keeps its sense
    turn = np.where(nx * c_jit[k, 0] + ny * c_jit[k, 1] + nz * c_jit[k, 2] < 0.0, -side, side)
    m = [turn * (nx / ln), turn * (ny / ln), turn * (nz / ln)]
    dn = ((r[0] + sp * d1[0]) - tp * d2[0]) * m[0] + ((r[1] + sp * d1[1]) - tp * d2[1]) * m[1] \
        + ((r[2] + sp * d1[2]) - tp * d2[2]) * m[2]
    solid = on_solid[p] | on_solid[q] | on_solid[u] | on_solid[w]
    inside = (sp >= 0.0) & (sp <= 1.0) & (tp >= 0.0) & (tp <= 1.0)
    c_side[k[ok & ~inside & (dn < 0.0) & ~solid]] *= -1.0     # beside each other: their side
    ok &= inside & ((dn > -D) | solid)
    _four_corners(X, Xp, k, p, q, u, w, sp, tp, m, D - dn, mu, ok, inv_mass, allowance, dx, dl,
                  share)


def _four_corners(X, Xp, k, p, q, u, w, s, t, m, pen, mu, ok, inv_mass, allowance, dx, dl,
                  share):
    """The correction of contacts k between points s along pq and t along uw (gradient
    weights 1 - s, s, -(1 - t), -t) with normal m (3 lists of (k,)) and penetration pen, where
    ok (k,) and the contact acts: written to dx, dl and share (an edge pair, two capsules)."""
    c0, c1, c2, c3 = 1.0 - s, s, -(1.0 - t), -t
    w0, w1, w2, w3 = (inv_mass[j] for j in (p, q, u, w))
    W = c0 * c0 * w0 + c1 * c1 * w1 + c2 * c2 * w2 + c3 * c3 * w3
    ok &= (pen > ACTIVE) & (W > 0)
    if not ok.any():
        return
    sel = np.nonzero(ok)[0]
    k, p, q, u, w = k[sel], p[sel], q[sel], u[sel], w[sel]
    c0, c1, c2, c3, pen, W, mu = c0[sel], c1[sel], c2[sel], c3[sel], pen[sel], W[sel], mu[sel]
    w0, w1, w2, w3 = w0[sel], w1[sel], w2[sel], w3[sel]
    m = [mm[sel] for mm in m]
    rel = [(c0 * (X[i, p] - Xp[i, p]) + c1 * (X[i, q] - Xp[i, q]))
           + (c2 * (X[i, u] - Xp[i, u]) + c3 * (X[i, w] - Xp[i, w])) for i in range(3)]
    g, lift = _friction_step(rel, m, pen, mu, W, allowance)
    for j, (cj, wj) in enumerate(((c0, w0), (c1, w1), (c2, w2), (c3, w3))):
        fj = cj * wj
        for i in range(3):
            dx[4 * k + j, i] = fj * g[i]
            dl[4 * k + j, i] = fj * lift[i]
        share[4 * k + j] = np.abs(cj)


def _solve_pairs(X, Xp, c_idx, c_dist, c_mu, c_jit, inv_mass, allowance, dx, dl, share, k):
    i_, j_ = c_idx[k, 0], c_idx[k, 1]
    D, mu = c_dist[k], c_mu[k]
    d = [X[a, i_] - X[a, j_] for a in range(3)]
    l2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
    ln = np.sqrt(l2)
    far = ln > 1e-12
    lns = np.where(far, ln, 1.0)
    m = [np.where(far, d[a] / lns, c_jit[k, a]) for a in range(3)]
    pen = D - ln
    wi, wj = inv_mass[i_], inv_mass[j_]
    W = wi + wj
    ok = (pen > ACTIVE) & (W > 0)
    if not ok.any():
        return
    sel = np.nonzero(ok)[0]
    k, i_, j_, pen, W, mu, wi, wj = k[sel], i_[sel], j_[sel], pen[sel], W[sel], mu[sel], \
        wi[sel], wj[sel]
    m = [mm[sel] for mm in m]
    r = [(X[a, i_] - Xp[a, i_]) - (X[a, j_] - Xp[a, j_]) for a in range(3)]
    g, lift = _friction_step(r, m, pen, mu, W, allowance)
    for a in range(3):
        dx[4 * k, a] = wi * g[a]
        dx[4 * k + 1, a] = -wj * g[a]
        dl[4 * k, a] = wi * lift[a]
        dl[4 * k + 1, a] = -wj * lift[a]
    share[4 * k] = 1.0
    share[4 * k + 1] = 1.0


def _segment_dots(X, p, q, u, w):
    """For segments pq and uw (k,) int64 over X (3, n) [m]: d1 = q - p, d2 = w - u, r = p - u
    (lists of (k,) per axis) and a = d1.d1, e = d2.d2, b = d1.d2, c = d1.r, f = d2.r."""
    d1 = [X[i, q] - X[i, p] for i in range(3)]
    d2 = [X[i, w] - X[i, u] for i in range(3)]
    r = [X[i, p] - X[i, u] for i in range(3)]
    return (d1, d2, r, d1[0] * d1[0] + d1[1] * d1[1] + d1[2] * d1[2],
            d2[0] * d2[0] + d2[1] * d2[1] + d2[2] * d2[2],
            d1[0] * d2[0] + d1[1] * d2[1] + d1[2] * d2[2],
            d1[0] * r[0] + d1[1] * r[1] + d1[2] * r[2], d2[0] * r[0] + d2[1] * r[1] + d2[2] * r[2])


def segment_closest(X, p, q, u, w):
    """Closest points of the segments pq and uw (k,) int64 over X (3, n) [m] (Ericson 2005,
    5.1.9): (s, t) (k,) in [0, 1] and the lists d1 = q - p, d2 = w - u, r = p - u of (k,)
    per axis. Parallel axes take the middle of their overlap (SEGMENT_PARALLEL)."""
    d1, d2, r, a, e, b, c, f = _segment_dots(X, p, q, u, w)
    a = np.where(a > 0.0, a, 1.0)          # a capsule's axis has a length (builder); no 0 / 0
    e = np.where(e > 0.0, e, 1.0)
    den = a * e - b * b
    par = ~(den > SEGMENT_PARALLEL * (a * e))
    su = -c / a                             # the other segment's ends along this one
    sw = (b - c) / a
    mid = 0.5 * (np.maximum(np.minimum(su, sw), 0.0) + np.minimum(np.maximum(su, sw), 1.0))
    s = np.where(par, mid, (b * f - c * e) / np.where(par, 1.0, den))
    s = np.minimum(np.maximum(s, 0.0), 1.0)
    t = (b * s + f) / e
    s = np.where(t < 0.0, np.minimum(np.maximum(su, 0.0), 1.0),
                 np.where(t > 1.0, np.minimum(np.maximum(sw, 0.0), 1.0), s))
    t = np.minimum(np.maximum(t, 0.0), 1.0)
    return s, t, d1, d2, r


def _solve_segments(X, Xp, c_idx, c_dist, c_mu, c_jit, inv_mass, allowance, dx, dl, share, k):
    """Capsule axis pq against capsule axis uw (module docstring): C = |P - Q| - D."""
    p, q, u, w = (c_idx[k, j] for j in range(4))
    D, mu = c_dist[k], c_mu[k]
    s, t, d1, d2, r = segment_closest(X, p, q, u, w)
    d = [(r[i] + s * d1[i]) - t * d2[i] for i in range(3)]
    ln = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    far = ln > 1e-12
    lns = np.where(far, ln, 1.0)
    m = [np.where(far, d[i] / lns, c_jit[k, i]) for i in range(3)]
    _four_corners(X, Xp, k, p, q, u, w, s, t, m, D - ln, mu, np.ones(len(k), bool), inv_mass,
                  allowance, dx, dl, share)

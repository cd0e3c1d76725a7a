"""The collide stage of contact between bodies: BodyContacts finds this step's contacts
(collision/bodies.py's module docstring gives the constraints, the broad phase and the sides;
Macklin et al., "Unified Particle Physics for Real-Time Applications", SIGGRAPH 2014; Bridson,
Fedkiw and Anderson, "Robust treatment of collisions, contact and friction for cloth
animation", SIGGRAPH 2002), once per step, beside the colliders' broad phase
(colliders.Colliders.collide).

Per step: every particle's box swept over the step; the stage is skipped when no two groups'
boxes overlap and no group self-collides; otherwise the kernel table's find_body_contacts
gives the candidate pairs, which are sorted (so both backends store the same list), given a
side (vertex-triangle and edge-edge), a contact distance, a friction and, for particle pairs,
a jitter direction, and stored in the Contacts with the per-particle gather (contacts.py).
"""

import numpy as np

from .bodies import (BAND, EDGES, PAIR, PARALLEL, SLACK, VERTEX_TRI, jitter_directions)

# a particle's box grows by GROW |v| dt beside its predicted sweep: what the prediction may miss
GROW = 0.1
# a pair is kept when it can meet within the step: its gap at the step's start at most the
# contact distance + 2 SLACK + REACH (|relative velocity| + the faster's speed) dt + |a| dt^2
REACH = 1.5
# the active-item filter (BodyContacts._active) finds the overlapping pairs of group boxes; with
# more candidates than PAIRS_MAX every item takes part; items are tested against the boxes of
# the groups their own group meets, PAIR_CHUNK group pairs at a time
PAIRS_MAX = 1 << 22
PAIR_CHUNK = 1 << 14


def _bary_min(e0, e1, d, nrm, ln):
    """(k,) the smallest barycentric coordinate of points a + d projected on triangles
    (a, a + e0, a + e1) (rows (k, 3); 0 for degenerate ones)."""
    d00 = np.einsum("ij,ij->i", e0, e0)
    d01 = np.einsum("ij,ij->i", e0, e1)
    d11 = np.einsum("ij,ij->i", e1, e1)
    d20 = np.einsum("ij,ij->i", d, e0)
    d21 = np.einsum("ij,ij->i", d, e1)
    den = d00 * d11 - d01 * d01
    ok = den > 0
    den = np.where(ok, den, 1.0)
    bb = (d11 * d20 - d01 * d21) / den
    bc = (d00 * d21 - d01 * d20) / den
    return np.where(ok, np.minimum(np.minimum(bb, bc), 1.0 - bb - bc), 0.0)


def _solid_depth(x0, tris, solid, group, budget=20_000_000):
    """(F,) [m] for each solid face, how deep its body reaches behind it at rest (the largest
    distance of the body's particles behind the face's plane); 0 for two-sided faces. A vertex
    less than half that deep behind the face is nearer to it than to the body's far side, so it
    is inside and leaves through this face."""
    depth = np.zeros(len(tris))
    for g in np.unique(group[tris[solid, 0]]) if solid.any() else ():
        f = np.nonzero(solid & (group[tris[:, 0]] == g))[0]
        members = np.nonzero(group == g)[0]
        members = members[::max(1, len(f) * len(members) // budget)]
        a = x0[tris[f, 0]]
        n = np.cross(x0[tris[f, 1]] - a, x0[tris[f, 2]] - a)
        n /= np.maximum(np.linalg.norm(n, axis=1), 1e-300)[:, None]
        behind = np.einsum("fk,fk->f", a, n)[:, None] - n @ x0[members].T    # (f, members)
        depth[f] = behind.max(axis=1)
    return depth


def _runs(group, G):
    """Items sorted by group (stable) and (G,) where each group's run starts in that order."""
    by = np.argsort(group, kind="stable")
    return by, np.searchsorted(group[by], np.arange(G)).astype(np.int64)


# ----------------------------------------------------------------------------- the stage
class BodyContacts:
    """The collide stage of body contacts and their arrays (Contacts holds this step's pairs).
    Built once from the Model; collide() runs once per step."""

    def __init__(self, model):
        self.radius = model.particle_radius                   # (n,) [m]
        self.group = model.particle_group                     # (n,) int64
        self.inv_mass = model.particle_inv_mass               # (n,) [1/kg]
        self.friction = model.particle_friction               # (n,)
        self.x0 = np.ascontiguousarray(model.particle_x0)     # (n, 3) [m]
        self.tris = model.contact_tris                        # (F, 3) int64
        self.solid = model.contact_tri_solid                  # (F,) bool
        r = self.radius
        t = self.tris
        # (F,) [m] a triangle's thickness: its corners' mean radius
        self.tri_thick = (r[t[:, 0]] + r[t[:, 1]] + r[t[:, 2]]) / 3.0 if len(t) else np.zeros(0)
        f = self.friction
        self.tri_mu = (f[t[:, 0]] + f[t[:, 1]] + f[t[:, 2]]) / 3.0 if len(t) else np.zeros(0)
        # the triangles' edges, each once, with its (up to two) faces, for edge-edge contact
        # and for a solid edge's outward normal (the sum of its solid faces' normals)
        if len(t):
            e = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
            face = np.tile(np.arange(len(t)), 3)
            key, inv = np.unique(e, axis=0, return_inverse=True)
            inv = inv.ravel()
            order = np.argsort(inv, kind="stable")
            first = np.r_[True, inv[order][1:] != inv[order][:-1]]
            start = np.nonzero(first)[0]
            count = np.diff(np.r_[start, len(inv)])
            self.edges = np.ascontiguousarray(key.astype(np.int64))      # (E, 2) int64
            self.edge_face = np.full((len(key), 2), -1, np.int64)       # (E, 2) faces or -1
            self.edge_face[:, 0] = face[order[start]]
            two = count > 1
            self.edge_face[two, 1] = face[order[start[two] + 1]]
            # an edge inside a flat solid face (a quad's diagonal) is no feature of the body:
            # its edge contacts would only push along the face
            x0 = model.particle_x0
            nrm = np.cross(x0[t[:, 1]] - x0[t[:, 0]], x0[t[:, 2]] - x0[t[:, 0]])
            nrm /= np.maximum(np.linalg.norm(nrm, axis=1), 1e-300)[:, None]
            f0, f1 = self.edge_face[:, 0], self.edge_face[:, 1]
            flat = two & self.solid[f0] & self.solid[np.maximum(f1, 0)] & \
                (np.einsum("ij,ij->i", nrm[f0], nrm[np.maximum(f1, 0)]) > 1.0 - 1e-9)
            self.edges = np.ascontiguousarray(self.edges[~flat])
            self.edge_face = np.ascontiguousarray(self.edge_face[~flat])
            self.edge_thick = (r[self.edges[:, 0]] + r[self.edges[:, 1]]) / 2.0   # (E,) [m]
            self.edge_mu = (f[self.edges[:, 0]] + f[self.edges[:, 1]]) / 2.0
        else:
            self.edges = np.zeros((0, 2), np.int64)
            self.edge_face = np.zeros((0, 2), np.int64)
            self.edge_thick = np.zeros(0)
            self.edge_mu = np.zeros(0)
        self.tri_depth = _solid_depth(model.particle_x0, t, self.solid, self.group)  # (F,) [m]
        self.self_group = model.group_self_collision           # (G,) bool
        self.disabled = model.group_disabled                   # (D,) int64
        G = len(self.self_group)
        self.n_groups = G
        self.any_self = bool(np.any(self.self_group))
        # nothing can ever touch: no self-colliding group, and no two groups that could meet (a
        # vertex of one against a face of another, or two particles with radii). A lone cloth
        # without self-collision paid the whole stage every step (5 ms a frame at N = 128) to
        # find no pair.
        grouped = np.unique(self.group)
        faced_groups = np.unique(self.group[t[:, 0]]) if len(t) else grouped[:0]
        round_groups = np.unique(self.group[r > 0])
        self.never = not self.any_self and not (len(faced_groups) and len(grouped) > 1) \
            and len(round_groups) < 2
        # (G,) bool self-colliding groups whose particles pair with each other: those with no
        # contact faces (a cloth's vertices meet its own faces and edges instead)
        faced = np.zeros(G, bool)
        faced[self.group[t[:, 0]]] = True
        self.pair_self = self.self_group & ~faced
        self.by_group = np.argsort(self.group, kind="stable")   # particles sorted by group
        gs = self.group[self.by_group]
        self.group_start = np.nonzero(np.r_[True, gs[1:] != gs[:-1]])[0] if len(gs) else \
            np.zeros(0, np.int64)
        # triangles and edges by the group of their first corner, and where each group's run
        # starts (every group, empty runs included: the active filter indexes them by group)
        self.tri_group = self.group[t[:, 0]] if len(t) else np.zeros(0, np.int64)
        self.edge_group = self.group[self.edges[:, 0]] if len(self.edges) else \
            np.zeros(0, np.int64)
        self.tri_by_group, self.tri_group_start = _runs(self.tri_group, G)
        self.edge_by_group, self.edge_group_start = _runs(self.edge_group, G)

    def boxes(self, x, xp, h, dt, acc, pinned, pin_target):
        """(n, 3) lo, hi [m]: each particle's box over the step (module docstring)."""
        v = (x - xp) / h
        p = x + v * dt + acc * (0.5 * dt * dt)
        if len(pinned):
            p[pinned] = pin_target
        speed = np.sqrt(np.einsum("ij,ij->i", v, v))
        grow = (self.radius + SLACK + GROW * dt * speed)[:, None]
        return np.minimum(x, p) - grow, np.maximum(x, p) + grow

    def _group_boxes(self, lo, hi):
        """(G, 3) lo, hi [m]: each group's box (the union of its particles' boxes), or None
        when some group has no particle (then every item takes part)."""
        if len(self.group_start) != self.n_groups:
            return None
        return (np.minimum.reduceat(lo[self.by_group], self.group_start, axis=0),
                np.maximum.reduceat(hi[self.by_group], self.group_start, axis=0))

    def _group_pairs(self, glo, ghi):
        """(P,), (P,) int64 the pairs of different groups (ga < gb) whose boxes overlap and
        whose contact is not disabled (a joint's two bodies), or None when there are more than
        PAIRS_MAX candidates (then every item takes part). Sweep and prune along the axis the
        groups spread most on (Baraff 1992): sorted by their boxes' low ends, group i meets the
        following groups whose low end is at most its high end."""
        G = len(glo)
        if G < 2:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        ax = int(np.argmax(np.ptp(glo + ghi, axis=0)))
        order = np.argsort(glo[:, ax], kind="stable")
        end = np.searchsorted(glo[order, ax], ghi[order, ax], side="right")
        cnt = np.maximum(end - np.arange(1, G + 1), 0)
        total = int(cnt.sum())
        if total > PAIRS_MAX:
            return None
        first = np.repeat(np.arange(G), cnt)
        second = first + 1 + np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        a, b = order[first], order[second]
        ok = np.all((glo[a] <= ghi[b]) & (ghi[a] >= glo[b]), axis=1)
        a, b = np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok])
        if len(self.disabled):
            ok = ~np.isin(a * G + b, self.disabled)
            a, b = a[ok], b[ok]
        return a, b

    def _active(self, lo, hi, tlo, thi):
        """(n,), (F,), (E,) bool: the particles, triangles and edges whose step box overlaps the
        box of a group other than their own whose contact with theirs is not disabled, or that
        belong to a self-colliding group. Nothing else can be in a contact this step (a pair's
        boxes overlap, and each lies in its own group's box). Particles without a radius take part only as vertices against triangles: with no
        triangle taking part, they are left out (a ragdoll's frame particles)."""
        e = self.edges
        elo = np.minimum(lo[e[:, 0]], lo[e[:, 1]])
        ehi = np.maximum(hi[e[:, 0]], hi[e[:, 1]])
        items = ((lo, hi, self.by_group, self.group_start, self.group),
                 (tlo, thi, self.tri_by_group, self.tri_group_start, self.tri_group),
                 (elo, ehi, self.edge_by_group, self.edge_group_start, self.edge_group))
        boxes = self._group_boxes(lo, hi)
        pairs = None if boxes is None else self._group_pairs(*boxes)
        if pairs is None:                          # everything takes part
            out = [np.ones(len(g), bool) for *_, g in items]
        else:
            glo, ghi = boxes
            ga, gb = np.r_[pairs[0], pairs[1]], np.r_[pairs[1], pairs[0]]   # item's, other
            out = []
            for ilo, ihi, by, start, ig in items:
                act = self.self_group[ig].copy() if len(ig) else np.zeros(0, bool)
                if len(ig) and len(ga):
                    # each item of group ga tested against the box of group gb
                    stop = np.r_[start[1:], len(by)]
                    cnt = stop[ga] - start[ga]
                    for a in range(0, len(ga), PAIR_CHUNK):
                        sa, sb, c = ga[a:a + PAIR_CHUNK], gb[a:a + PAIR_CHUNK], \
                            cnt[a:a + PAIR_CHUNK]
                        k = int(c.sum())
                        it = by[np.repeat(start[sa] - np.cumsum(c) + c, c) + np.arange(k)]
                        other = np.repeat(sb, c)
                        hit = np.all((ilo[it] <= ghi[other]) & (ihi[it] >= glo[other]), axis=1)
                        act[it[hit]] = True
                out.append(act)
        if not out[1].any():
            out[0] &= self.radius > 0
        return tuple(out)

    def collide(self, kernels, x, xp, h, dt, acc, pinned, pin_target, contacts):
        """Find this step's body contacts into ``contacts`` (set_body_contacts)."""
        self.acc = acc                                        # (n, 3) [m/s^2]
        self.g_dt2 = 0.5 * float(np.sqrt(np.max(np.einsum("ij,ij->i", acc, acc)))) * dt * dt \
            if len(acc) else 0.0
        if self.never or len(x) == 0:
            contacts.clear_body_contacts()
            return
        lo, hi = self.boxes(x, xp, h, dt, acc, pinned, pin_target)
        # only what may touch another group (or its own, self-colliding) is hashed and queried:
        # a cloth that lies near a crate with one corner costs that corner, not the whole cloth
        t, e = self.tris, self.edges
        tlo = np.minimum(np.minimum(lo[t[:, 0]], lo[t[:, 1]]), lo[t[:, 2]])
        thi = np.maximum(np.maximum(hi[t[:, 0]], hi[t[:, 1]]), hi[t[:, 2]])
        active, tri_active, edge_active = self._active(lo, hi, tlo, thi)
        # a vertex against a face, two particles with radii, or two edges (two ridges crossing
        # in an X touch with no vertex near the other body)
        if not ((active.any() and (tri_active.any() or (active & (self.radius > 0)).any()))
                or edge_active.sum() > 1):
            contacts.clear_body_contacts()
            return
        # per axis: a falling cloth's boxes are tall and narrow, so its cells are too
        reach = (hi - lo)[active].max(axis=0) if active.any() else np.zeros(3)   # (3,) [m]
        tri_ext = (thi - tlo)[tri_active].max(axis=0) if tri_active.any() else np.zeros(3)
        elo = np.minimum(lo[e[:, 0]], lo[e[:, 1]])[edge_active]
        ehi = np.maximum(hi[e[:, 0]], hi[e[:, 1]])[edge_active]
        edge_ext = (ehi - elo).max(axis=0) if len(elo) else np.zeros(3)
        # the grid covers every hashed item: active particles and active edges
        origin = np.min(np.vstack([lo[active] - reach, elo - edge_ext]), axis=0)
        top = np.max(np.vstack([hi[active], ehi]), axis=0)
        # cells of half the largest box: a query scans little more than its own box
        cell = np.maximum(0.5 * np.maximum(np.maximum(tri_ext, reach), edge_ext),
                          np.maximum((top - origin) / 2 ** 20, 1e-9))
        dims = (np.floor((top - origin) / cell).astype(np.int64) + 1)
        pi, pj, tv, tt, ea, eb = kernels.find_body_contacts(
            np.ascontiguousarray(lo), np.ascontiguousarray(hi), self.radius, self.group,
            self.inv_mass, self.x0, t, self.tri_thick, self.edges, self.edge_thick,
            self.self_group, self.disabled, origin, cell, dims, reach, active, tri_active,
            edge_active, self._edge_sag(x), self.pair_self)
        self._store(x, xp, h, dt, pi, pj, tv, tt, ea, eb, contacts)

    def _edge_sides(self, x, vel, dt, ea, eb):
        """Side, keep mask and (k, 3) unit normal (q - p) x (w - u) of edge pairs at the step's
        start: solid edges push out along their outward normals; two two-sided edges keep the
        side they are on."""
        E = self.edges
        p, q, u, w = E[ea, 0], E[ea, 1], E[eb, 0], E[eb, 1]
        d1, d2, r = x[q] - x[p], x[w] - x[u], x[p] - x[u]
        n = np.cross(d1, d2)
        ln = np.sqrt(np.einsum("ij,ij->i", n, n))
        a, e = np.einsum("ij,ij->i", d1, d1), np.einsum("ij,ij->i", d2, d2)
        keep = ln * ln > PARALLEL * a * e
        n = n / np.where(ln > 0, ln, 1.0)[:, None]
        b = np.einsum("ij,ij->i", d1, d2)
        den = np.where(keep, a * e - b * b, 1.0)
        c, f = np.einsum("ij,ij->i", d1, r), np.einsum("ij,ij->i", d2, r)
        sp = np.clip((b * f - c * e) / den, 0.0, 1.0)
        tp = np.clip((a * f - b * c) / den, 0.0, 1.0)
        dn = np.einsum("ij,ij->i", r + sp[:, None] * d1 - tp[:, None] * d2, n)
        out_a, out_b = self._edge_out(x, ea), self._edge_out(x, eb)
        solid = np.any(out_a != 0, axis=1) | np.any(out_b != 0, axis=1)
        toward = np.einsum("ij,ij->i", out_b - out_a, n)      # direction from b to a, solids
        side = np.where(solid, np.where(toward >= 0, 1.0, -1.0), np.where(dn >= 0, 1.0, -1.0))
        dist = self.edge_thick[ea] + self.edge_thick[eb]
        rel = (vel[p] + vel[q] - vel[u] - vel[w]) * 0.5
        band = dist + BAND + np.sqrt(np.einsum("ij,ij->i", rel, rel)) * dt
        keep &= ~solid | ((np.abs(toward) > 1e-6) & (side * dn >= -band))
        # near enough to meet this step: the lines within reach, the closest points within
        # reach of both segments
        reach = dist + 2 * SLACK + self._speed_reach(vel, rel, (p, q, u, w), dt)
        sp_ = (b * f - c * e) / den
        tp_ = (a * f - b * c) / den
        # sideways (along the edges' common plane) only the relative motion in that plane
        side_reach = dist + 2 * SLACK + REACH * self._along(rel, n) * dt + self.g_dt2
        ma = side_reach / np.sqrt(np.maximum(a, 1e-300))
        mb = side_reach / np.sqrt(np.maximum(e, 1e-300))
        keep &= (np.abs(dn) <= reach) & (sp_ >= -ma) & (sp_ <= 1 + ma) & (tp_ >= -mb) & \
            (tp_ <= 1 + mb)
        # each solid edge faces the other: its outward normal against the push it gets
        m = side[:, None] * n
        solid_a, solid_b = np.any(out_a != 0, axis=1), np.any(out_b != 0, axis=1)
        keep &= ~solid_a | (np.einsum("ij,ij->i", out_a, m) < -1e-6)
        keep &= ~solid_b | (np.einsum("ij,ij->i", out_b, m) > 1e-6)
        return side, keep, n

    def _speed_reach(self, vel, rel, ids, dt):
        """(k,) [m] how far the particles of pairs may close in on each other this step: their
        relative speed, and the fastest one's speed (another contact may stop the other),
        times REACH dt, plus |a| dt^2 / 2 (one may be stopped while the other falls from
        rest)."""
        fastest = np.zeros(len(rel))
        for i in ids:
            fastest = np.maximum(fastest, np.einsum("ij,ij->i", vel[i], vel[i]))
        speed = np.sqrt(np.einsum("ij,ij->i", rel, rel)) + np.sqrt(fastest)
        return REACH * speed * dt + self.g_dt2

    @staticmethod
    def _along(acc, unit):
        """(k,) the size of vectors acc (k, 3) (accelerations, velocities) along the planes of
        unit normals (k, 3)."""
        t = acc - np.einsum("ij,ij->i", acc, unit)[:, None] * unit
        return np.sqrt(np.einsum("ij,ij->i", t, t))

    @staticmethod
    def _min_height(ln, e0, e1):
        """(k,) [m] smallest height of triangles with edges e0, e1 and |e0 x e1| = ln."""
        e2 = e1 - e0
        longest = np.sqrt(np.maximum(np.maximum(np.einsum("ij,ij->i", e0, e0),
                                                np.einsum("ij,ij->i", e1, e1)),
                                     np.einsum("ij,ij->i", e2, e2)))
        return np.maximum(ln / np.maximum(longest, 1e-300), 1e-300)

    def _vertex_out(self, x):
        """(n, 3) outward normal of each particle on a solid surface (the sum of its solid
        faces' unit normals; 0 elsewhere)."""
        t = self.tris[self.solid]
        out = np.zeros((len(x), 3))
        if len(t):
            nrm = np.cross(x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]])
            nrm /= np.maximum(np.sqrt(np.einsum("ij,ij->i", nrm, nrm)), 1e-300)[:, None]
            ids = t.ravel()
            for k in range(3):
                out[:, k] = np.bincount(ids, weights=np.repeat(nrm[:, k], 3),
                                        minlength=len(x))
        return out

    def _edge_sag(self, x):
        """(E,) [m] how far each edge lies from the plane of its faces' surface: half its
        length times tan(half its dihedral angle); inf for a border edge.

        Two surfaces that are flat across a pair of edges are held apart by their vertices'
        contacts with each other's faces (the distance of two planar patches is least at a
        vertex or at the patch's border): the pair's edge contact adds nothing but cost, and a
        pile of cloth layers has tens of such pairs per vertex. A pair is kept when the two
        edges' sags together exceed half its contact distance (module docstring of bodies.py),
        so the layers stay at least half of it apart wherever it was left out."""
        E = self.edges
        sag = np.full(len(E), np.inf)
        if not len(E):
            return sag
        t = self.tris
        nrm = np.cross(x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]])
        nrm /= np.maximum(np.sqrt(np.einsum("ij,ij->i", nrm, nrm)), 1e-300)[:, None]
        f0, f1 = self.edge_face[:, 0], self.edge_face[:, 1]
        two = f1 >= 0
        c = np.einsum("ij,ij->i", nrm[f0[two]], nrm[f1[two]])
        d = x[E[two, 1]] - x[E[two, 0]]
        half = 0.5 * np.sqrt(np.einsum("ij,ij->i", d, d))
        sag[two] = half * np.sqrt(np.maximum(1.0 - c, 0.0) / np.maximum(1.0 + c, 1e-12))
        return sag

    def _edge_out(self, x, e):
        """(k, 3) outward normal (sum of its solid faces' unit normals; 0 if none) of edges e."""
        out = np.zeros((len(e), 3))
        t = self.tris
        for j in range(2):
            fc = self.edge_face[e, j]
            ok = fc >= 0
            ok[ok] = self.solid[fc[ok]]
            fo = fc[ok]
            nrm = np.cross(x[t[fo, 1]] - x[t[fo, 0]], x[t[fo, 2]] - x[t[fo, 0]])
            ln = np.sqrt(np.einsum("ij,ij->i", nrm, nrm))
            out[ok] += nrm / np.where(ln > 0, ln, 1.0)[:, None]
        return out

    def _store(self, x, xp, h, dt, pi, pj, tv, tt, ea, eb, contacts):
        """Sort the pairs, give each its side, distance, friction and jitter, and store them."""
        o = np.lexsort((pj, pi))
        pi, pj = pi[o], pj[o]
        vel = (x - xp) / h
        rel = vel[pi] - vel[pj]
        gap = np.sqrt(np.einsum("ij,ij->i", x[pi] - x[pj], x[pi] - x[pj]))
        near = gap <= self.radius[pi] + self.radius[pj] + 2 * SLACK + \
            self._speed_reach(vel, rel, (pi, pj), dt)
        pi, pj = pi[near], pj[near]
        o = np.lexsort((tt, tv))
        tv, tt = tv[o], tt[o]
        r, t = self.radius, self.tris
        a, b, c = t[tt, 0], t[tt, 1], t[tt, 2]
        # the side at the step's start (two-sided faces), the band of solid faces
        e0, e1 = x[b] - x[a], x[c] - x[a]
        nrm = np.cross(e0, e1)
        d = x[tv] - x[a]
        dn = np.einsum("ij,ij->i", d, nrm)
        ln = np.sqrt(np.einsum("ij,ij->i", nrm, nrm))
        dn = np.where(ln > 0, dn / np.where(ln > 0, ln, 1.0), 0.0)
        dist = r[tv] + self.tri_thick[tt]
        solid = self.solid[tt]
        rel = vel[tv] - (vel[a] + vel[b] + vel[c]) / 3.0
        band = np.maximum(dist + BAND + np.sqrt(np.einsum("ij,ij->i", rel, rel)) * dt,
                          0.5 * self.tri_depth[tt])
        # near enough to meet this step: within the pair's reach of the face's plane and of
        # its prism (a triangle's barycentric of a point outside an edge by l is >= -l / h,
        # h its smallest height)
        reach = dist + 2 * SLACK + self._speed_reach(vel, rel, (tv, a, b, c), dt)
        keep = (dn <= reach) & (solid | (dn >= -reach))
        # sideways only their relative motion along the face counts (a stop changes the
        # approach, not that; a layer landing on another at 2 m/s closes 8 cm in a step at
        # 24 fps, but does not move sideways), and of the fall of one while the other is
        # stopped, its part along the face. The contact acts only inside the face's prism, so
        # its distance does not count sideways (layers of cloth resting on each other would
        # otherwise pair every vertex with the faces around it in its own layer)
        unit = nrm / np.where(ln > 0, ln, 1.0)[:, None]
        fall = np.maximum(self._along(self.acc[tv], unit),
                          self._along((self.acc[a] + self.acc[b] + self.acc[c]) / 3.0, unit))
        side_reach = 2 * SLACK + REACH * self._along(rel, unit) * dt \
            + 0.5 * fall * dt * dt
        keep &= _bary_min(e0, e1, d, nrm, ln) >= -(side_reach / self._min_height(ln, e0, e1))
        # a vertex behind a solid face by more than the band is beyond the body, not in it
        keep &= ~solid | (dn >= -band)
        # a vertex of a solid touches only solid faces that face it (its outward normal, the
        # sum of its faces', opposes the face's): a cube's corner on the rim of a coplanar
        # side face of its neighbour in a stack is no contact with that side face
        nv = self._vertex_out(x)
        facing = np.einsum("ij,ij->i", nv[tv], nrm)
        keep &= ~solid | (facing < 0) | ~np.any(nv[tv] != 0, axis=1)
        side = np.where(solid | (dn >= 0), 1.0, -1.0)[keep]
        tv, tt, a, b, c, dist = tv[keep], tt[keep], a[keep], b[keep], c[keep], dist[keep]
        mu_t = 0.5 * (self.friction[tv] + self.tri_mu[tt])
        o = np.lexsort((eb, ea))
        ea, eb = ea[o], eb[o]
        e_side, e_keep, e_nrm = self._edge_sides(x, vel, dt, ea, eb)
        ea, eb, e_side, e_nrm = ea[e_keep], eb[e_keep], e_side[e_keep], e_nrm[e_keep]
        P, T, E = len(pi), len(tv), len(ea)
        idx = np.full((P + T + E, 4), -1, np.int64)
        idx[:P, 0], idx[:P, 1] = pi, pj
        idx[P:P + T] = np.column_stack([tv, a, b, c])
        idx[P + T:] = np.column_stack([self.edges[ea], self.edges[eb]])
        kind = np.r_[np.full(P, PAIR), np.full(T, VERTEX_TRI), np.full(E, EDGES)].astype(np.int64)
        jit = np.zeros((P + T + E, 3))
        if P:
            jit[:P] = jitter_directions(pi, pj)
        jit[P + T:] = e_nrm          # an edge pair's normal at the step's start keeps its sense
        contacts.set_body_contacts(
            idx, kind, np.r_[np.zeros(P), side, e_side],
            np.r_[r[pi] + r[pj], dist, self.edge_thick[ea] + self.edge_thick[eb]],
            np.r_[0.5 * (self.friction[pi] + self.friction[pj]), mu_t,
                  0.5 * (self.edge_mu[ea] + self.edge_mu[eb])], jit)

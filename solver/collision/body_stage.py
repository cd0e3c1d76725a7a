"""The collide stage of contact between bodies: BodyContacts finds this step's contacts
(collision/bodies.py's module docstring gives the constraints, the broad phase and the sides;
Macklin et al., "Unified Particle Physics for Real-Time Applications", SIGGRAPH 2014; Bridson,
Fedkiw and Anderson, "Robust treatment of collisions, contact and friction for cloth
animation", SIGGRAPH 2002), once per step, beside the colliders' broad phase
(colliders.Colliders.collide).

Per step, in five kernels of the kernel table (each compiled, with its NumPy reference):
- sweep_pairs: the groups' boxes (each the union of its particles' boxes swept over the step)
  that overlap, by sweep and prune; a capsule body is a group of its own, and two capsules
  whose axes' boxes overlap and whose axes can come within their radii in the step are a
  segment pair (bodies.py: the capsules meet as segments, their spheres make no pair with
  each other);
- active_items: only the particles, triangles and edges whose box meets another group's box
  (or that self-collide) take part, and the stage is skipped when none can touch;
- find_body_contacts: the candidate pairs, from a grid of the active items (bodies.py);
- sort_pairs: the pairs sorted (so both backends store the same list; a radix sort compiled);
- filter_pairs: those that can meet this step, and their sides (vertex-triangle and
  edge-edge; pairs.py).
The kept pairs get a contact distance, a friction and, for particle pairs, a jitter direction,
and are stored in the Contacts with the per-particle gather (contacts.py). What Python does
between the kernels is a few array operations per step, none per item.

Surprises and rounds: a particle's box is its predicted sweep, and the pairs it may meet are
those whose boxes overlap its own. After each round of substeps, surprised() measures how far
the watched particles (the free corners of self-colliding cloth) ended outside their boxes;
one beyond its radius (a centre outside the box grown by its radius, which found its pairs)
makes Simulation run the step again in more rounds, and collide(only=groups) then finds again,
before each round and over its length, the contacts of the groups that strayed with anything
(every particle's box then covers the round; the pairs between other groups stay the step's).
"""

import numpy as np

from ..geometry import segment_distances
from .bodies import SLACK, jitter_directions
from .contacts import no_body_contacts
from .pairs import dot_rows, face_normals

# a particle's box grows by GROW |v| dt beside its predicted sweep: what the prediction may miss
GROW = 0.1
# and in a round of a step in rounds, by GROW_ROUND |v| dt (dt the round's length): a round's
# collide costs its groups' whole broad phase, so a box that holds more of a round's surprise
# saves rounds (the flag of tests/solver/test_rounds.py took 10 rounds a step on average at
# GROW, 6 at this). No more: the narrow filter (pairs.py) keeps a pair within REACH x (the
# relative speed + the fastest one's) dt, which holds a particle's motion |v| dt plus half of
# it astray, not more; a particle astray within its box but beyond that could lose a pair
GROW_ROUND = 0.5
# a watched particle (BodyContacts.watched) that ends a round more than max(SURPRISE x its
# radius, SURPRISE_FLOOR) outside the box the broad phase gave it has gone where its contacts
# were not looked for (BodyContacts.surprised; Simulation._step runs the step again in rounds)
SURPRISE = 1.0
SURPRISE_FLOOR = 0.5e-3   # [m]
# the active-item filter (BodyContacts._active) finds the overlapping pairs of group boxes; with
# more candidates than PAIRS_MAX every item takes part; items are tested against the boxes of
# the groups their own group meets, PAIR_CHUNK group pairs at a time
PAIRS_MAX = 1 << 22
PAIR_CHUNK = 1 << 14


def sort_pairs(a, b):
    """The kernel table's sort_pairs (compiled in kernels/compiled_order.py, a radix sort):
    pairs (a, b) (k,) non-negative int64 sorted by a, then b. An argsort of one key a * m +
    b, which NumPy sorts several times faster than lexsort's two passes (the same result:
    equal keys are equal pairs)."""
    m = int(b.max()) + 1 if len(b) else 1
    o = np.argsort(a * m + b)
    return a[o], b[o]


def sweep_pairs(lo, hi, limit):
    """The kernel table's sweep_pairs (compiled in kernels/compiled_broad.py): (P,), (P,) int64
    the pairs a < b of the boxes lo, hi (m, 3) [m] that overlap (exact comparisons), and True;
    or two empty arrays and False when more than ``limit`` candidates would be tested. Sweep
    and prune along the axis the boxes spread most on (Baraff 1992): sorted by their low ends,
    box i meets the following boxes whose low end is at most its high end. The pairs come in
    the order of that sweep."""
    m = len(lo)
    none = np.zeros(0, np.int64)
    if m < 2:
        return none, none, True
    spread = np.max(lo + hi, axis=0) - np.min(lo + hi, axis=0)
    ax = int(np.argmax(spread))
    order = np.argsort(lo[:, ax], kind="mergesort")
    end = np.searchsorted(lo[order, ax], hi[order, ax], side="right")
    cnt = np.maximum(end - np.arange(1, m + 1), 0)
    total = int(cnt.sum())
    if total > limit:
        return none, none, False
    first = np.repeat(np.arange(m), cnt)
    second = first + 1 + np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    a, b = order[first], order[second]
    ok = np.all((lo[a] <= hi[b]) & (hi[a] >= lo[b]), axis=1)
    return np.minimum(a[ok], b[ok]), np.maximum(a[ok], b[ok]), True


def _in_sorted(keys, table):
    """(k,) bool which of keys (k,) int64 are in the sorted (D,) int64 table."""
    if not len(table):
        return np.zeros(len(keys), bool)
    pos = np.minimum(np.searchsorted(table, keys), len(table) - 1)
    return table[pos] == keys


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


def active_items(lo, hi, tris, edges, radius, self_group, runs, ga, gb, glo, ghi, everything):
    """The active-item filter (the kernel table's active_items; compiled in
    kernels/compiled_broad.py): (n,), (F,), (E,) bool the particles, triangles and edges whose
    step box overlaps the box of a group other than their own whose contact with theirs is not
    disabled, or that belong to a self-colliding group; and (5, 3) [m] the grid's extents: the
    largest active particle box, triangle box and edge box per axis, the grid's origin (the
    lowest active particle box less the first, the lowest active edge box less the third) and
    its top. Nothing else can be in a contact this step (a pair's boxes overlap, and each lies
    in its own group's box). Particles without a radius take part only as vertices against
    triangles: with no triangle taking part, they are left out (a ragdoll's frame particles).

    lo, hi (n, 3) [m] the particles' boxes; tris (F, 3), edges (E, 2) int64; radius (n,) [m];
    self_group (G,) bool; runs the items by group (BodyContacts.runs); ga, gb (P,) int64 an
    item of group ga is tested against the box glo[gb], ghi[gb] (G, 3) [m] (both orders of
    every overlapping pair of groups); everything: every item takes part. Min and max are
    exact, so both backends give the same flags and extents."""
    tlo = np.minimum(np.minimum(lo[tris[:, 0]], lo[tris[:, 1]]), lo[tris[:, 2]])
    thi = np.maximum(np.maximum(hi[tris[:, 0]], hi[tris[:, 1]]), hi[tris[:, 2]])
    elo = np.minimum(lo[edges[:, 0]], lo[edges[:, 1]])
    ehi = np.maximum(hi[edges[:, 0]], hi[edges[:, 1]])
    items = ((lo, hi) + runs[0:3], (tlo, thi) + runs[3:6], (elo, ehi) + runs[6:9])
    out = []
    for ilo, ihi, by, start, ig in items:
        if everything:
            out.append(np.ones(len(ig), bool))
            continue
        act = self_group[ig].copy() if len(ig) else np.zeros(0, bool)
        if len(ig) and len(ga):
            # each item of group ga tested against the box of group gb
            stop = np.r_[start[1:], len(by)]
            cnt = stop[ga] - start[ga]
            for a in range(0, len(ga), PAIR_CHUNK):
                sa, sb, c = ga[a:a + PAIR_CHUNK], gb[a:a + PAIR_CHUNK], cnt[a:a + PAIR_CHUNK]
                k = int(c.sum())
                it = by[np.repeat(start[sa] - np.cumsum(c) + c, c) + np.arange(k)]
                other = np.repeat(sb, c)
                hit = np.all((ilo[it] <= ghi[other]) & (ihi[it] >= glo[other]), axis=1)
                act[it[hit]] = True
        out.append(act)
    active, tri_active, edge_active = out
    if not tri_active.any():
        active &= radius > 0
    zero = np.zeros((1, 3))
    reach = np.max(np.r_[zero, (hi - lo)[active]], axis=0)
    extents = np.array([reach, np.max(np.r_[zero, (thi - tlo)[tri_active]], axis=0),
                        np.max(np.r_[zero, (ehi - elo)[edge_active]], axis=0),
                        np.full(3, np.inf), np.full(3, -np.inf)])
    extents[3] = np.min(np.r_[extents[3:4], lo[active] - reach,
                              elo[edge_active] - extents[2]], axis=0)
    extents[4] = np.max(np.r_[extents[4:5], hi[active], ehi[edge_active]], axis=0)
    return active, tri_active, edge_active, extents


def edge_sag(x, tris, edges, edge_face, active):
    """(E,) [m] how far each active edge ((E,) bool) of edges (E, 2) int64 lies from the plane
    of its faces' surface (edge_face (E, 2) int64, -1 for none, into tris (F, 3) int64; x (n, 3)
    [m]): half its length times tan(half its dihedral angle); inf for a border edge and for
    the edges that take no part this step (the broad phase reads only active edges'). The
    kernel table's edge_sag (compiled in kernels/compiled_broad.py, the same operations).

    Two surfaces that are flat across a pair of edges are held apart by their vertices'
    contacts with each other's faces (the distance of two planar patches is least at a vertex
    or at the patch's border): the pair's edge contact adds nothing but cost, and a pile of
    cloth layers has tens of such pairs per vertex. A pair is kept when the two edges' sags
    together exceed half its contact distance (module docstring of bodies.py), so the layers
    stay at least half of it apart wherever it was left out."""
    sag = np.full(len(edges), np.inf)
    f0, f1 = edge_face[:, 0], edge_face[:, 1]
    two = np.nonzero(active & (f1 >= 0))[0]
    if not len(two):
        return sag
    n0, n1 = face_normals(x, tris[f0[two]]), face_normals(x, tris[f1[two]])
    c = dot_rows(n0, n1)
    d = x[edges[two, 1]] - x[edges[two, 0]]
    half = 0.5 * np.sqrt(dot_rows(d, d))
    sag[two] = half * np.sqrt(np.maximum(1.0 - c, 0.0) / np.maximum(1.0 + c, 1e-12))
    return sag


# ----------------------------------------------------------------------------- the stage

class BodyContacts:
    """The collide stage of body contacts and their arrays (Contacts holds this step's pairs).
    Built once from the Model; collide() runs once per step."""

    def __init__(self, model, kernels):
        self.kernels = kernels                                # the kernel table
        self.radius = model.particle_radius                   # (n,) [m]
        self.group = model.particle_group                     # (n,) int64
        self.inv_mass = model.particle_inv_mass               # (n,) [1/kg]
        # (n,) the model's Coulomb coefficients: collide takes the Control's (set_friction)
        self.friction = model.particle_friction
        self.x0 = np.ascontiguousarray(model.particle_x0)     # (n, 3) [m]
        self.tris = model.contact_tris                        # (F, 3) int64
        self.solid = model.contact_tri_solid                  # (F,) bool
        r = self.radius
        t = self.tris
        # (F,) [m] a triangle's thickness: its corners' mean radius
        self.tri_thick = (r[t[:, 0]] + r[t[:, 1]] + r[t[:, 2]]) / 3.0 if len(t) else np.zeros(0)
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
        else:
            self.edges = np.zeros((0, 2), np.int64)
            self.edge_face = np.zeros((0, 2), np.int64)
            self.edge_thick = np.zeros(0)
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
        # capsules (add_capsule_body) meet each other as axis segments (bodies.py): a group
        # holding exactly one capsule and no other particle with a radius is a capsule's own
        # (its spheres make no pair with another capsule's); any other capsule keeps its spheres
        caps = model.capsule_particles
        cap_group = self.group[caps[:, 0]]
        n_round = np.bincount(self.group[r > 0], minlength=G)
        n_caps = np.bincount(cap_group, minlength=G)
        n_axis = np.bincount(cap_group, weights=caps[:, 1] - caps[:, 0] + 1, minlength=G)
        self.group_segment = (n_caps == 1) & (n_axis == n_round)        # (G,) bool
        own = self.group_segment[cap_group]
        self.segments = np.ascontiguousarray(caps[own])                 # (S, 2) int64
        self.seg_group = cap_group[own]                                 # (S,) int64
        self.seg_radius = model.capsule_radius[own]                     # (S,) [m]
        self.segment_of_group = np.full(G, -1, np.int64)                # (G,) int64, -1
        self.segment_of_group[self.seg_group] = np.arange(len(self.segments))
        self.by_group = np.argsort(self.group, kind="stable")   # particles sorted by group
        gs = self.group[self.by_group]
        self.group_start = np.nonzero(np.r_[True, gs[1:] != gs[:-1]])[0] if len(gs) else \
            np.zeros(0, np.int64)
        # (G,) bool the groups that are one island of the constraint graph: a step in rounds
        # leaves the contacts within them to its rounds (collide's skip); a contact between
        # two islands of one group joins them, which sleep and the colliders' reach read
        isl, big = model.particle_island, np.iinfo(np.int64).max
        least, most = np.full(G, big, np.int64), np.full(G, -1, np.int64)
        np.minimum.at(least, self.group, isl)
        np.maximum.at(most, self.group, isl)
        self.one_island = least == most
        # triangles and edges by the group of their first corner, and where each group's run
        # starts (every group, empty runs included: the active filter indexes them by group)
        self.tri_group = self.group[t[:, 0]] if len(t) else np.zeros(0, np.int64)
        self.edge_group = self.group[self.edges[:, 0]] if len(self.edges) else \
            np.zeros(0, np.int64)
        self.tri_by_group, self.tri_group_start = _runs(self.tri_group, G)
        self.edge_by_group, self.edge_group_start = _runs(self.edge_group, G)
        # active_items' view of the items by group: (by, start, group) for the particles, the
        # triangles and the edges
        self.runs = (self.by_group, self.group_start, self.group, self.tri_by_group,
                     self.tri_group_start, self.tri_group, self.edge_by_group,
                     self.edge_group_start, self.edge_group)
        # (w,) int64 the watched particles (surprised()): the free corners of the two-sided
        # faces of self-colliding groups, cloth whose folds the wind and its own waves throw
        # far from any prediction (a flag's corner ends a step up to 18 times farther from its
        # prediction than its box allows) onto itself. Other groups are not watched: with a
        # cloth's contacts with other bodies watched too, the demo's tablecloth and grass
        # joined the flag's rounds and its step took 216 ms, not 95 (docs/contact.md, Known limits)
        two_sided = np.zeros(len(r), bool)
        two_sided[t[~self.solid].ravel()] = True
        # (n,) bool the corners of solid faces: an edge pair with one keeps its (outward) side
        # at any depth (collision/bodies.py, edge against edge)
        self.on_solid = np.zeros(len(r), bool)
        self.on_solid[t[self.solid].ravel()] = True
        self.watched = np.nonzero(two_sided & (model.particle_inv_mass > 0)
                                  & self.self_group[self.group])[0]
        # (w,) [m^2] the squares of their tolerances (surprised)
        self.watch_tolerance2 = np.maximum(SURPRISE * r[self.watched], SURPRISE_FLOOR) ** 2
        # (lo, hi) (w, 3) [m] the boxes of the watched particles' centres in the last collide
        self._box = None
        self._dormant = None    # (G,) bool the groups asleep in this collide, or None
        # (G,) bool or None: the running collide's round groups (only) and the groups whose
        # own contacts it leaves to the rounds (skip & one_island), read by _active
        self._only = self._skip = None

    def boxes(self, x, xp, h, dt, acc, pinned, pin_target, grow=GROW):
        """Each particle's box over the step (module docstring; the kernel table's step_boxes,
        collision/boxes.py): (n, 3) lo, hi [m], (n,) [m] its reach (how far from x it may get
        in the step, |p - x| to its prediction p plus the margin the box grows by; the box is
        that, grown by the particle's radius too), the groups' boxes (G, 3) glo, ghi [m] or
        None when some group has no particle (then every item takes part), and the watched
        particles' centre boxes (w, 3) [m] (surprised)."""
        lo, hi, reach, glo, ghi, wlo, whi = self.kernels.step_boxes(
            x, xp, h, dt, acc, pinned, pin_target, self.radius, SLACK, grow, self.by_group,
            self.group_start, self.watched)
        groups = (glo, ghi) if len(self.group_start) == self.n_groups else None
        return lo, hi, reach, groups, (wlo, whi)

    def surprised(self, x, clean):
        """How far the watched particles ended outside the boxes the last collide gave them
        (the step's, or in rounds the round's), with their radii taken off, in their
        tolerances: the largest ratio (0 when every one is inside),
        and (G,) bool the groups with a watched particle beyond ``clean`` of its tolerance
        (the kernel table's strays, collision/boxes.py).
        Above 1 the particle is surprised: it may have met, on its way, a face or an edge that
        was never its candidate, and a fold of cloth may have passed through another unseen
        (bodies.py: the pairs found keep their sides, the pairs never found keep nothing).
        Within its tolerance (SURPRISE x its radius, at least SURPRISE_FLOOR) a centre outside
        its box is still inside the box grown by its radius that found its pairs. The test
        reads where it ended, not its path between. x (n, 3) [m]."""
        if self._box is None or not len(self.watched):
            return 0.0, np.zeros(self.n_groups, bool)
        return self.kernels.strays(x, self.watched, *self._box, self.watch_tolerance2, self.group,
                                   clean * clean, self.n_groups)

    def _group_pairs(self, glo, ghi):
        """(P,), (P,) int64 the pairs of different groups (ga < gb) whose boxes glo, ghi (G, 3)
        [m] overlap and whose contact is not disabled (a joint's two bodies), or None when
        there are more than PAIRS_MAX candidates (then every item takes part)."""
        a, b, ok = self.kernels.sweep_pairs(glo, ghi, PAIRS_MAX)
        if not ok:
            return None
        if len(self.disabled):
            ok = ~_in_sorted(a * len(glo) + b, self.disabled)
            a, b = a[ok], b[ok]
        return a, b

    def _segment_pairs(self, x, lo, hi, reach, group_pairs):
        """(k,), (k,) int64 the capsule pairs (a < b, sorted) whose axes' boxes (their end
        particles' boxes, which hold the spheres between: a rigid body's velocity is affine
        along the axis) overlap, whose groups may touch, and whose axes can come within their
        radii this step. group_pairs: _group_pairs' result (a capsule's group box holds its
        axis's box, so only overlapping groups' capsules can meet), or None to sweep the
        capsules' boxes themselves.

        The last test: a point of a rigid body's axis lies between its two ends at any time,
        so it moves no farther than the farther end, and two axes that are now d apart stay
        at least d - R_a - R_b apart (R a capsule's larger end reach, boxes()). The boxes of two
        bones of one rig overlap far more often than the bones come near (the box of a slanted
        bone is mostly empty): 100 ragdolls tumbling down stairs through the add-on had about
        3,400 pairs a step by their boxes, 1,650 by this test (the solver benchmark's 100:
        1,040 and 820). A pair left out could not have acted (a pair acts only where its
        capsules overlap), so the result is the same to the bit (measured on both scenes)."""
        none = np.zeros(0, np.int64)
        if len(self.segments) < 2:
            return none, none
        s0, s1 = self.segments[:, 0], self.segments[:, 1]
        slo, shi = np.minimum(lo[s0], lo[s1]), np.maximum(hi[s0], hi[s1])
        if group_pairs is None:
            a, b, _ = self.kernels.sweep_pairs(slo, shi, len(slo) ** 2)
            ga, gb = self.seg_group[a], self.seg_group[b]
            ok = ~_in_sorted(np.minimum(ga, gb) * self.n_groups + np.maximum(ga, gb),
                             self.disabled)
        else:
            ga, gb = group_pairs
            both = self.group_segment[ga] & self.group_segment[gb]
            a, b = self.segment_of_group[ga[both]], self.segment_of_group[gb[both]]
            ok = np.all((slo[a] <= shi[b]) & (shi[a] >= slo[b]), axis=1)
        a, b = a[ok], b[ok]
        ea0, ea1 = self.segments[a, 0], self.segments[a, 1]
        eb0, eb1 = self.segments[b, 0], self.segments[b, 1]
        near = segment_distances(x[ea0], x[ea1], x[eb0], x[eb1]) \
            < (self.seg_radius[a] + self.seg_radius[b]
               + np.maximum(reach[ea0], reach[ea1]) + np.maximum(reach[eb0], reach[eb1]))
        a, b = a[near], b[near]
        return self.kernels.sort_pairs(np.minimum(a, b), np.maximum(a, b))

    def _active(self, lo, hi, boxes, pairs):
        """The kernel table's active_items for this step's boxes lo, hi (n, 3) [m], given the
        groups' boxes and overlapping pairs (boxes, _group_pairs; None: every item
        takes part): which particles, triangles and edges take part, and the grid's extents
        (active_items)."""
        if pairs is None:                          # everything takes part
            glo = ghi = np.zeros((0, 3))
            ga = gb = np.zeros(0, np.int64)
        else:
            glo, ghi = boxes
            a, b = pairs
            # two capsules meet as segments (_segment_pairs): their spheres take part only
            # where they may touch something else
            keep = ~(self.group_segment[a] & self.group_segment[b])
            a, b = a[keep], b[keep]
            ga, gb = np.r_[a, b], np.r_[b, a]   # item's, other
        self_group = self.self_group if self._only is None else self.self_group & self._only
        if self._dormant is not None:     # a sleeping cloth's folds touch only what sleeps
            self_group = self_group & ~self._dormant
        if self._skip is not None:
            self_group = self_group & ~self._skip
        return self.kernels.active_items(
            lo, hi, self.tris, self.edges, self.radius, self_group, self.runs, ga, gb,
            np.ascontiguousarray(glo), np.ascontiguousarray(ghi), pairs is None)

    def collide(self, x, xp, h, dt, acc, acc_max, pinned, pin_target, contacts, friction=None,
                asleep=None, only=None, skip=None):
        """Find this step's body contacts into ``contacts`` (set_body_contacts). acc (n, 3)
        [m/s^2] the step's acceleration, acc_max [m/s^2] its largest norm; friction (n,) the
        particles' Coulomb coefficients now (the Control's, Simulation.set_friction; None: the
        model's). asleep (n,) bool the sleeping particles, or None: two groups that both sleep
        are no pair, and a group that sleeps does not collide with itself (a contact between
        sleeping bodies moves nothing, and the sleep stage drops it; but it is what wakes a
        sleeping stack with the body a moving one touches, so Simulation finds the contacts
        again without this when something woke). A folded self-colliding cloth asleep cost
        11 ms a step (N = 64, its broad phase and pair filter) before it was left out.

        only (G,) bool, or None: a round's collide (Simulation._step), dt the round's length:
        only the contacts with a particle of these groups are found again, and they replace
        those of the step's first collide that have one (Contacts.set_round_contacts); the
        others stay as that collide found them (capsule pairs among them: no capsule is in a
        round's group).

        skip (G,) bool, or None: the groups in rounds, at the step's first collide: the
        contacts within each of them that is one island (one_island) are left out. The first
        round finds them again from these same positions, with the same sides (read from x
        alone: pairs.py), and replaces every contact they have, so they were never solved; the
        demo's flag and sheet, in rounds in most steps, spent 4 ms a step finding them (the
        contacts are the same to the bit). A group of several islands keeps them: they join
        its islands, which the sleep and the colliders' reach read before the rounds."""
        self.g_dt2 = 0.5 * acc_max * dt * dt                  # [m]
        self._mu = self.friction if friction is None else friction
        self._only = only
        self._skip = None if skip is None or not (skip & self.one_island).any() else \
            skip & self.one_island
        self._box = None
        if self.never or len(x) == 0:
            contacts.clear_body_contacts()
            return
        # (n, 3) [m/s^2] in C order: the step keeps acc as a view of coordinate rows, and the
        # compiled signatures of step_boxes and filter_pairs are those of a C-ordered array
        self.acc = acc = np.ascontiguousarray(acc)
        lo, hi, reach, boxes, self._box = self.boxes(x, xp, h, dt, acc, pinned, pin_target,
                                                     GROW if only is None else GROW_ROUND)
        pairs = None if boxes is None else self._group_pairs(*boxes)
        if pairs is not None and only is not None:
            keep = only[pairs[0]] | only[pairs[1]]
            pairs = pairs[0][keep], pairs[1][keep]
        self._dormant = None
        if asleep is not None and len(self.group_start) == self.n_groups:
            # (G,) bool groups whose every particle sleeps
            self._dormant = np.logical_and.reduceat(asleep[self.by_group], self.group_start)
        if pairs is not None and self._dormant is not None and len(pairs[0]):
            keep = ~(self._dormant[pairs[0]] & self._dormant[pairs[1]])
            pairs = pairs[0][keep], pairs[1][keep]
        segments = self._segment_pairs(x, lo, hi, reach, pairs) if only is None else \
            (np.zeros(0, np.int64), np.zeros(0, np.int64))
        # only what may touch another group (or its own, self-colliding) is hashed and queried:
        # a cloth that lies near a crate with one corner costs that corner, not the whole cloth
        active, tri_active, edge_active, extents = self._active(lo, hi, boxes, pairs)
        # a vertex against a face, two particles with radii, or two edges (two ridges crossing
        # in an X touch with no vertex near the other body)
        if not ((active.any() and (tri_active.any() or (active & (self.radius > 0)).any()))
                or edge_active.sum() > 1):
            none = np.zeros(0, np.int64)
            self._store(x, xp, h, dt, none, none, none, none, none, none, segments, contacts)
            return
        # per axis: a falling cloth's boxes are tall and narrow, so its cells are too
        reach, tri_ext, edge_ext, origin, top = extents
        # cells of half the largest box: a query scans little more than its own box
        cell = np.maximum(0.5 * np.maximum(np.maximum(tri_ext, reach), edge_ext),
                          np.maximum((top - origin) / 2 ** 20, 1e-9))
        dims = (np.floor((top - origin) / cell).astype(np.int64) + 1)
        kernels = self.kernels
        own, pair_self = self.self_group, self.pair_self
        if self._skip is not None:
            own, pair_self = own & ~self._skip, pair_self & ~self._skip
        pi, pj, tv, tt, ea, eb = kernels.find_body_contacts(
            lo, hi, self.radius, self.group, self.inv_mass, self.x0, self.tris, self.tri_thick,
            self.edges, self.edge_thick, own, self.disabled, origin, cell, dims,
            reach, active, tri_active, edge_active,
            kernels.edge_sag(x, self.tris, self.edges, self.edge_face, edge_active),
            pair_self, self.group_segment)
        self._store(x, xp, h, dt, pi, pj, tv, tt, ea, eb, segments, contacts)

    def _store(self, x, xp, h, dt, pi, pj, tv, tt, ea, eb, segments, contacts):
        """Sort the pairs, keep those that can meet this step (the kernel table's filter_pairs,
        collision/pairs.py), give each its side, distance and friction (store_pairs, there)
        and jitter, and store them, the capsule pairs ``segments`` (sorted) last."""
        if not (len(pi) or len(tv) or len(ea) or len(segments[0])):
            if self._only is None:
                contacts.clear_body_contacts()
            else:
                contacts.set_round_contacts(self._only[self.group], *no_body_contacts())
            return
        pi, pj = self.kernels.sort_pairs(pi, pj)
        tv, tt = self.kernels.sort_pairs(tv, tt)
        ea, eb = self.kernels.sort_pairs(ea, eb)
        near, t_keep, t_side, e_keep, e_side, e_nrm = self.kernels.filter_pairs(
            x, xp, h, dt, self.acc, self.g_dt2, self.radius, self.tris, self.solid,
            self.tri_thick, self.tri_depth, self.edges, self.edge_face, self.edge_thick, pi, pj,
            tv, tt, ea, eb)
        sa, sb = segments
        found = self.kernels.store_pairs(
            pi, pj, tv, tt, ea, eb, near, t_keep, t_side, e_keep, e_side, e_nrm, sa, sb,
            self.tris, self.edges, self.segments, self.radius, self.tri_thick,
            self.edge_thick, self.seg_radius, self._mu)
        # the particle and capsule pairs' normal where their particles coincide
        idx, jit = found[0], found[5]
        P, S = int(np.count_nonzero(near)), len(sa)
        if P:
            jit[:P] = jitter_directions(idx[:P, 0], idx[:P, 1])
        if S:
            jit[len(idx) - S:] = jitter_directions(self.segments[sa, 0], self.segments[sb, 0])
        if self._only is None:
            contacts.set_body_contacts(*found)
        else:
            contacts.set_round_contacts(self._only[self.group], *found)

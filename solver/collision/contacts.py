"""Contacts: what the collide stage found this step, and the contact state of the substep.

The collide stage (colliders.Colliders.collide) runs once per step and stores, for each
collider, the particles that may touch it during the step: the candidate pairs (particle,
collider), grouped by collider. The projection passes then write, per substep, how deep each
particle was pushed and along which normal (friction and restitution read that back). Nothing
here outlives a step, so a checkpoint does not hold it (state.py).

n = particles, P = embedded points of tetrahedral bodies, q = candidate pairs, C = colliders.
"""

import numpy as np


def gather_slots(idx):
    """The kernel table's gather_slots (compiled in kernels/compiled_order.py, a counting
    sort): the gather of the body contacts idx (K, 4) int64 (-1: no corner). Returns (u,)
    int64 the particles in them, rising, (u + 1,) int64 each one's run and (S,) int64 its
    slots (contact * 4 + corner), in increasing order within each run."""
    flat = idx.ravel()
    slots = np.nonzero(flat >= 0)[0]
    # by particle, each particle's slots in increasing order: one sort of unique keys is
    # the stable sort's result, at a third of its cost
    order = np.argsort(flat[slots] * max(len(flat), 1) + slots)
    p = flat[slots][order]
    first = np.r_[True, p[1:] != p[:-1]] if p.size else np.zeros(0, bool)
    return (p[first], np.r_[np.nonzero(first)[0], p.size].astype(np.int64),
            slots[order].astype(np.int64))


def _identities(*lists):
    """For lists of contacts (idx (K, 4) int64, -1: no corner; kind (K,) int64 in [0, 4)):
    one (K,) value per contact, equal where two contacts have the same particles and kind (a
    contact's identity from one round to the next). One int64 packing the five, exact while
    every particle id is below 2^15 - 1 (2 + 4 x 15 bits); beyond, the rows' bytes."""
    top = max(int(idx.max(initial=-1)) for idx, _ in lists) + 2
    out = []
    for idx, kind in lists:
        if top <= 1 << 15:
            key = kind.astype(np.int64)
            for c in range(4):
                key = (key << 15) + (idx[:, c] + 1)
        else:
            rows = np.ascontiguousarray(np.column_stack([idx, kind]).astype(np.int64))
            key = rows.view(np.dtype((np.void, 8 * rows.shape[1]))).ravel()
        out.append(key)
    return out


def merge_round(base, stay, fast, found, old):
    """The kernel table's merge_round (compiled in kernels/compiled_order.py): a round's body
    contacts merged into the step's (Contacts.set_round_contacts). base, found and old are
    set_body_contacts' six arrays (idx, kind, side, dist, mu, jit): the step's first solved
    list, what the round's collide found and the list solved until now. Returns the six of the
    contacts of base where stay (K,) bool, then those of found with a particle marked in fast
    (n,) bool; of the latter, each that old holds too (the same particles, corner by corner,
    and kind: _identities) takes old's side and jit."""
    idx = found[0]
    new = np.any((idx >= 0) & fast[np.maximum(idx, 0)], axis=1)
    found = [a[new] for a in found]
    _, at_new, at_old = np.intersect1d(*_identities(found[:2], old[:2]), return_indices=True)
    found[2][at_new] = old[2][at_old]
    found[5][at_new] = old[5][at_old]
    return tuple(np.ascontiguousarray(np.concatenate([a[stay], b])) for a, b in zip(base, found))


def no_body_contacts():
    """Contacts.set_body_contacts' arguments for no contact."""
    return (np.zeros((0, 4), np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0),
            np.zeros(0), np.zeros((0, 3)))


class Contacts:
    def __init__(self, n, n_points, n_colliders, kernels=None):
        # the kernel table whose gather_slots builds the body contacts' gather (None: NumPy's)
        self._gather_slots = gather_slots if kernels is None else kernels.gather_slots
        self._merge_round = merge_round if kernels is None else kernels.merge_round
        # --- pairs found by the collide stage this step, grouped by collider
        self.pair_particle = np.zeros(0, np.int64)         # (q,) int64 particle of each pair
        self.pair_start = np.zeros(n_colliders + 1, np.int64)   # (C + 1,) pairs of collider k
        # the pairs the particle projection takes (keep_candidates): (pair_particle, pair_start)
        # of those, and the same grouped by particle (the compiled loop's one pass over all
        # colliders): particle v of the u candidates is by_particle[v] (u,) int64, its
        # colliders (increasing) by_particle_collider[by_particle_start[v]:by_particle_start[v
        # + 1]] ((u + 1,) and (q,) int64)
        self._projected = (self.pair_particle, self.pair_start, np.zeros(0, np.int64),
                           np.zeros(1, np.int64), np.zeros(0, np.int64))
        self._candidate_keep = None
        # --- contact state of the current substep (allocated once, reset every substep)
        self.depth = np.zeros(n)                 # (n,) float64 [m] normal correction this substep
        self.used = np.zeros(n)                  # (n,) float64 [m] friction distance spent
        self.touching = np.zeros(n, bool)        # (n,) bool touched a collider this substep
        self.normal = np.zeros((n, 3))           # (n, 3) float64 last contact normal (unit)
        self.motion = np.zeros((n, 3))           # (n, 3) float64 [m] collider motion at contact
        self.collider = np.zeros(n, np.int64)    # (n,) int64 last collider touched
        self.point_depth = np.zeros(n_points)    # (P,) float64 [m] embedded points
        self.point_used = np.zeros(n_points)     # (P,) float64 [m]
        # (3, n) float64 [m] positions right after integration, before any constraint: the
        # arrival velocity restitution reflects
        self.X_pred = np.zeros((3, n))
        # overlap resolved this substep that the particle did not move into: owed to x* as well,
        # so that it moves the particle without speed (project.py); cleared by release_overlap
        self.lift = np.zeros((n, 3))             # (n, 3) float64 [m] shift owed to x*
        self.lifted = np.zeros(n, bool)          # (n,) bool lift is non-zero

        self.body_touch = np.zeros(n, bool)      # (n,) bool touched another body this substep
        # the body solve's scratch (solve_bodies' dx, dl, share, split), allocated once and grown
        # (doubled) when a step has more contacts: body_args hands out their first 4K rows
        self._scratch_dx = np.zeros((0, 3))      # (capacity, 3) float64 [m]
        self._scratch_dl = np.zeros((0, 3))      # (capacity, 3) float64 [m]
        self._scratch_share = np.zeros(0)        # (capacity,) float64
        self._scratch_split = np.ones(0)         # (capacity,) float64 a slot's particle's split
        self.clear_body_contacts()

    # ------------------------------------------------------------------ body contacts
    def clear_body_contacts(self):
        """No body contact this step."""
        self.set_body_contacts(*no_body_contacts())

    def set_body_contacts(self, idx, kind, side, dist, mu, jit):
        """Store the body contacts the collide stage found (collision/bodies.py), K of them:
        idx (K, 4) int64 particles (vertex, triangle corners), (edge, edge) or (i, j, -1, -1);
        kind (K,) int64 bodies.PAIR | VERTEX_TRI | EDGES; side (K,)
        +-1 (0 for particle pairs); dist (K,) [m] contact distance; mu (K,) friction; jit
        (K, 3) a pair's coincident-particle normal, an edge pair's normal at the step's start
        (0 for vertex-triangle). The particle solve takes all of them until
        keep_body_contacts says otherwise."""
        self.body_idx = np.ascontiguousarray(idx, np.int64)   # (K, 4) int64
        self.body_kind = np.ascontiguousarray(kind, np.int64)     # (K,) int64
        # (K,) float64 +-1 or 0; the solve turns a vertex beside its face, or an edge pair
        # beside each other, to the side it is on, in place (collision/bodies.py)
        self.body_side = np.ascontiguousarray(side, np.float64)
        self.body_dist = np.ascontiguousarray(dist, np.float64)   # (K,) float64 [m]
        self.body_mu = np.ascontiguousarray(mu, np.float64)       # (K,) float64
        self.body_jit = np.ascontiguousarray(jit, np.float64)     # (K, 3) float64 unit
        self._round_base = None     # the step's first solved list, once a round replaces it
        self._round_stay = None     # (fast, (K,) bool) which of them a round keeps
        self.keep_body_contacts(None)

    def set_round_contacts(self, fast, idx, kind, side, dist, mu, jit):
        """A round's body contacts (body_stage.BodyContacts.collide with ``only``): of the
        contacts the particle solve takes, those with a particle marked in fast (n,) bool are
        replaced by those of the arguments (set_body_contacts' arrays) that have one; the
        others stay as the step's first collide found and kept them. The contacts solved on
        the bodies (keep_body_contacts) and the full lists (sleep joins islands by them) stay
        the step's first. Those with a fast particle are never solved on the bodies: a fast
        particle is a free particle of a cloth or plant surface, not of a rigid body."""
        def touches(rows):
            return np.any((rows >= 0) & fast[np.maximum(rows, 0)], axis=1)

        if self._round_base is None:
            self._round_base = self.solved
        base, old = self._round_base, self.solved
        # which of the step's contacts stay: the same in every round of the step's run
        same = self._round_stay is not None and np.array_equal(self._round_stay[0], fast)
        if not same:
            self._round_stay = (fast, ~touches(base[0]))
        # a pair found again keeps the side (and an edge pair its normal) it had: its layers
        # may be pressed within the contact distance, a vertex a hair past the face's plane,
        # and its side read from there anew would push it through (Bridson et al. 2002 keep
        # a pair's history for the same reason)
        self._solved = self._merge_round(base, self._round_stay[1], fast,
                                         (idx, kind, side, dist, mu, jit), old)
        if same and old is not base:
            # the contacts that stay lead both lists, in order: they keep the sides the last
            # round's substeps left them (a vertex beside its face takes the side it is on,
            # collision/bodies.py), not the step's first
            stay = int(np.count_nonzero(self._round_stay[1]))
            self._solved[2][:stay] = old[2][:stay]
        self._gather_solved()

    def keep_body_contacts(self, keep):
        """The body contacts the particle solve (collision/bodies.py) takes: keep (K,) bool, or
        None for all of them; the others are solved on the bodies (collision/rigid.py). The
        full lists above stay (sleep joins islands by them). The kept lists and their gather
        are built when the substep loop's arguments are (body_args): the collide stage sets
        and narrows the contacts two or three times a step, and a gather per call was a tenth
        of a crate pile's Python (measured 2026-11-27)."""
        self._body_keep = keep
        self._solved = None

    @property
    def solved(self):
        """The kept body contacts: (idx, kind, side, dist, mu, jit), as set_body_contacts takes
        them (keep_body_contacts)."""
        if self._solved is None:
            self._gather()
        return self._solved

    def _gather(self):
        """The kept contacts (solved) and their gather: every particle's slots (contact * 4 +
        corner) in increasing order."""
        keep = self._body_keep
        if keep is None:
            self._solved = (self.body_idx, self.body_kind, self.body_side, self.body_dist,
                            self.body_mu, self.body_jit)
        else:
            self._solved = tuple(np.ascontiguousarray(a[keep]) for a in (
                self.body_idx, self.body_kind, self.body_side, self.body_dist, self.body_mu,
                self.body_jit))
        self._gather_solved()

    def _gather_solved(self):
        """The gather of the solved contacts (_gather)."""
        idx = self._solved[0]
        # (u,) the particles in a kept contact, (u + 1,) their runs, (S,) their slots
        self.body_particle, self.body_start, self.body_slot = self._gather_slots(idx)
        need = 4 * len(idx)
        if need > len(self._scratch_share):
            size = max(need, 2 * len(self._scratch_share))
            self._scratch_dx = np.zeros((size, 3))
            self._scratch_dl = np.zeros((size, 3))
            self._scratch_share = np.zeros(size)
            self._scratch_split = np.ones(size)
        self.body_dx = self._scratch_dx[:need]           # (4K, 3) scratch [m]
        self.body_dl = self._scratch_dl[:need]           # (4K, 3) scratch [m] x* shift
        self.body_share = self._scratch_share[:need]     # (4K,) scratch
        self.body_split = self._scratch_split[:need]     # (4K,) scratch: corner's split
        # (S,) int64 scratch: each particle's acting slots (kernels/compiled_bodies.py)
        self.body_act = np.empty(len(self.body_slot), np.int64)

    def body_args(self, inv_mass, allowance, on_solid=None):
        """The bodies group of loop.run_substeps' arguments (allowance [m]: the depenetration
        bound per substep; on_solid (n,) bool the corners of solid faces, None: none)."""
        if on_solid is None:
            on_solid = np.zeros(len(inv_mass), bool)
        return self.solved + (inv_mass, allowance, self.body_dx, self.body_dl, self.body_share,
                              self.body_particle, self.body_start, self.body_slot,
                              self.body_touch, self.body_split, self.body_act, on_solid)

    def set_candidates(self, per_collider):
        """Store the collide stage's result: per_collider, a list of C (k,) int64 particle
        ids (unique within each), one list entry per collider."""
        sizes = [len(ids) for ids in per_collider]
        self.pair_start = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))).astype(np.int64)
        self.pair_particle = np.concatenate(per_collider).astype(np.int64) if per_collider \
            else np.zeros(0, np.int64)
        self.keep_candidates(None)

    def keep_candidates(self, keep):
        """The candidate pairs the particle projection takes: keep (q,) bool, or None for all;
        the others (particles of rigid bodies) are solved on the bodies (collision/rigid.py).
        The full lists above stay. ``projected`` is built from it when the substep loop's
        arguments are (as the body contacts' gather)."""
        self._candidate_keep = keep
        self._projected = None

    @property
    def projected(self):
        """(pair_particle, pair_start, by_particle, by_particle_start, by_particle_collider)
        of the kept pairs (keep_candidates; the colliders group of loop.run_substeps reads
        them)."""
        if self._projected is None:
            keep = self._candidate_keep
            sizes = np.diff(self.pair_start)
            pair_collider = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
            pair_particle, pair_start = self.pair_particle, self.pair_start
            if keep is not None:
                pair_particle, pair_collider = pair_particle[keep], pair_collider[keep]
                pair_start = np.concatenate(([0], np.cumsum(np.bincount(
                    pair_collider, minlength=len(sizes))))).astype(np.int64)
            order = np.lexsort((pair_collider, pair_particle))      # by particle, then collider
            p = pair_particle[order]
            first = np.r_[True, p[1:] != p[:-1]] if p.size else np.zeros(0, bool)
            self._projected = (np.ascontiguousarray(pair_particle, np.int64), pair_start,
                               p[first], np.r_[np.nonzero(first)[0], p.size].astype(np.int64),
                               np.ascontiguousarray(pair_collider[order], np.int64))
        return self._projected

    def kernel_args(self):
        """The contacts group of loop.run_substeps' arguments (the loop resets them per
        substep)."""
        return (self.depth, self.used, self.touching, self.normal, self.motion, self.collider,
                self.point_depth, self.point_used, self.X_pred, self.lift, self.lifted)

"""Collision by projection, Coulomb friction and restitution against SDF colliders.

Projection (Jakobsen, section 3): a particle closer to a collider than its contact offset
(collider thickness + particle radius) is moved along the SDF normal n onto the offset surface,
phi(x) = offset. This runs inside the relaxation loop, every iteration of every substep.

Friction (Jakobsen section 8 / Mueller et al. 2007 / Macklin et al. 2014): within a substep, let
d be the total normal correction a particle received (its penetration depth, which is
proportional to the normal force: F_n = m d / h^2) and dx_t the tangential part of its
displacement relative to the collider's own motion at the contact point. If |dx_t| <= mu_s d the
particle sticks (dx_t is removed: static friction); otherwise dx_t is shortened by mu_k d but never
reversed (kinetic friction). On a slope this gives the exact Coulomb threshold tan(theta) = mu_s.
The same rule at velocity level is GAMES103's a = max(1 - mu_T (1 + mu_N) |v_N| / |v_T|, 0).

Restitution (GAMES103 impulse response, mu_N = e): projection leaves a contact with zero normal
velocity; after the substep a particle that arrived faster than 2 |g| h (a bounce, not resting
contact) gets normal velocity -e v_N(arrival) relative to the collider. Verlet stores velocity as
x - x*, so this moves x* (Jakobsen's way to change a velocity).

Moving colliders: the collider's frame is interpolated across the substeps of a step (sdf.py);
its motion at the contact point enters friction, which is what carries resting particles along.

Tetrahedral bodies (Jakobsen section 5): an embedded point p = sum c_k x_k that penetrates by d
along n moves its four particles by c_k d n / sum c_k^2, so p lands exactly on the surface and
contact works at any point of the body, not only at its particles; friction shortens the point's
move as above (delta = n d - friction correction, shared as c_k delta / sum c_k^2).

The arithmetic lives in exact.py, written column by column (exact SDFs there, first-order ones in
approx.py), and in its compiled mirrors kernels_contact.project_collider (both kinds of SDF) and
kernels_contact.project_points, which perform the same operations in the same order: the
NumPy and Numba backends give bit-identical contacts. Order: particles collider after collider;
embedded points rank after rank, and within a rank collider after collider.
"""

import numpy as np

from . import approx, exact, sdf


class Colliders:
    """Collider placement over time and the contact solve."""

    def __init__(self, model):
        self.shape = model.collider_shape                  # (C,) int64
        self.dims = model.collider_dims                    # (C, 3) float64 [m]
        self.mu_k = model.collider_friction                # (C,) float64
        self.mu_s = model.collider_static_friction         # (C,) float64
        # coefficient of restitution per collider; not named ``restitution``, which is the method
        # below (an attribute of that name shadowed it: every bouncy contact raised TypeError)
        self.e_restitution = model.collider_restitution    # (C,) float64
        self.thickness = model.collider_thickness          # (C,) float64 [m]
        self.count = len(self.shape)
        self.frame = [sdf.decompose(m) for m in model.collider_matrix]   # placement now
        self.target = list(self.frame)                     # placement at the end of next step
        self.candidates = [np.zeros(0, np.int64)] * self.count
        self.any_restitution = bool(np.any(self.e_restitution > 0))
        # per substep: frame at its start and end
        self.before = list(self.frame)
        self.now = list(self.frame)
        # project_points' per-substep arrays (see _packed) and the frames they were built from
        self._pack = None
        self._pack_key = None

    # ------------------------------------------------------------------ placement
    def set_matrix(self, k, matrix):
        if not 0 <= k < self.count:
            raise ValueError(f"k: collider index out of range 0..{self.count - 1}")
        self.target[k] = sdf.decompose(matrix, "matrix")

    def begin_step(self, x, free, radius_max, reach):
        """Broad phase once per step: the particles that may touch each collider during it.

        free (n,) bool particles that can move; reach [m] bounds how far any particle can travel
        in this step. A collider that rotates or scales during the step tests every particle."""
        ids_free = np.nonzero(free)[0]
        for k in range(self.count):
            f0, f1 = self.frame[k], self.target[k]
            turning = not (np.allclose(f0.rotation, f1.rotation, atol=1e-12)
                           and np.allclose(f0.scale, f1.scale, atol=1e-12))
            if turning:
                self.candidates[k] = ids_free
                continue
            sweep = float(np.linalg.norm(f1.translation - f0.translation))
            phi, _ = sdf.evaluate(self.shape[k], self.dims[k], f0, x[ids_free])
            margin = reach + sweep + self.thickness[k] + radius_max
            self.candidates[k] = ids_free[phi < margin]

    def begin_substep(self, s, substeps):
        for k in range(self.count):
            if self.target[k] is self.frame[k]:
                self.before[k] = self.now[k] = self.frame[k]      # at rest: no motion
                continue
            self.before[k] = self.now[k] if s else self.frame[k]
            self.now[k] = sdf.interpolate(self.frame[k], self.target[k], (s + 1) / substeps)

    def end_step(self):
        self.frame = list(self.target)
        self.now = list(self.frame)

    # ------------------------------------------------------------------ contact solve
    def _placement(self, k):
        """(approximate, abc) of collider k this substep: whether its SDF is the first-order one
        (approx.py) rather than exact (exact.py), and the scaled dimensions that SDF takes."""
        shape, scale = self.shape[k], self.now[k].scale
        if sdf.is_exact(shape, scale):
            return False, exact.scaled_dims(shape, self.dims[k], scale)
        return True, approx.scaled_dims(shape, self.dims[k], scale)

    def _packed(self):
        """Every collider's placement this substep as arrays, for the point contact:
        approximate (C,) bool first-order SDF; abc (C, 3) float64 its SDF's scaled dimensions
        (exact.scaled_dims or approx.scaled_dims); R (C, 3, 3) float64, t (C, 3) float64 [m],
        s (C, 3) float64 the frames now and the same three at the substep's start; moving (C,)
        bool. Rebuilt when a frame changes (compared by identity: frames are never modified,
        and the cache holds them, so an identity cannot be reused by a new frame)."""
        key = self._pack_key
        if key is not None and all(a is b for a, b in zip(key[0], self.now)) \
                and all(a is b for a, b in zip(key[1], self.before)):
            return self._pack
        C = self.count
        approximate = np.zeros(C, bool)
        abc = np.zeros((C, 3))
        for k in range(C):
            approximate[k], abc[k] = self._placement(k)
        now, before = self.now, self.before
        self._pack = (approximate, abc,
                      np.stack([f.rotation for f in now]), np.stack([f.translation for f in now]),
                      np.stack([f.scale for f in now]), np.stack([f.rotation for f in before]),
                      np.stack([f.translation for f in before]),
                      np.stack([f.scale for f in before]),
                      np.array([b is not f for b, f in zip(before, now)], bool))
        self._pack_key = (tuple(now), tuple(before))
        return self._pack

    def project(self, x, x_prev, radius, cs, rows=None, kernels=None):
        """Project candidate particles out of every collider, with friction. cs: ContactState.
        Column formulas of exact.project (exact SDF, or approx.py's first-order one), or their
        compiled mirrors when ``kernels`` is given, with ``rows`` = the (3, n) position and
        previous-position arrays behind x and x_prev."""
        for k in range(self.count):
            idx = self.candidates[k]
            if idx.size == 0:
                continue
            now, before = self.now[k], self.before[k]
            approximate, abc = self._placement(k)
            moving = before is not now
            if kernels is not None:
                X, Xp = rows
                kernels.project_collider(
                       X, Xp, idx, int(self.shape[k]), approximate, float(abc[0]), float(abc[1]),
                       float(abc[2]), float(self.thickness[k]), radius, now.rotation,
                       now.translation, now.scale, before.rotation, before.translation,
                       before.scale, moving, float(self.mu_s[k]), float(self.mu_k[k]), k,
                       cs.depth, cs.used, cs.touching, cs.normal, cs.motion, cs.collider)
            else:
                exact.project(x, x_prev, idx, self.shape[k], abc, self.thickness[k], radius,
                              now, before, moving, self.mu_s[k], self.mu_k[k], k, cs,
                              approximate)

    def project_points(self, x, x_prev, tetra, cs, rows=None, kernels=None):
        """Jakobsen's embedded-point contact for tetrahedral bodies (see module docstring): rank
        after rank, and within a rank collider after collider (exact.project_points, or the
        compiled kernels.project_points on the (3, n) ``rows`` behind x and x_prev)."""
        if self.count == 0:
            return
        approximate, abc, *_ = pack = self._packed()
        if kernels is not None:
            X, Xp = rows
            kernels.project_points(X, Xp, tetra.rank_start, tetra.rank_points, tetra.tet,
                                   tetra.weight, tetra.inv_c2, self.shape, self.thickness,
                                   self.mu_s, self.mu_k, *pack, cs.point_depth, cs.point_used)
            return
        for rank_ids, tet, c, inv in tetra.rank_columns:
            for k in range(self.count):
                now, before = self.now[k], self.before[k]
                exact.project_points(x, x_prev, rank_ids, tet, c, inv, self.shape[k], abc[k],
                                     self.thickness[k], now, before, before is not now,
                                     self.mu_s[k], self.mu_k[k], cs, approximate[k])

    def restitution(self, x, x_prev, x_pred, h, gravity_norm, cs):
        """Velocity pass after a substep: bounce contacts that arrived fast (see docstring)."""
        ids = np.nonzero(cs.touching)[0]
        if ids.size == 0:
            return
        e = self.e_restitution[cs.collider[ids]]
        keep = e > 0
        ids, e = ids[keep], e[keep]
        if ids.size == 0:
            return
        n, motion = cs.normal[ids], cs.motion[ids]
        v_arrive = np.einsum("ij,ij->i", x_pred[ids] - x_prev[ids] - motion, n) / h
        bounce = v_arrive < -2.0 * gravity_norm * h
        ids, e, n, motion, v_arrive = ids[bounce], e[bounce], n[bounce], motion[bounce], v_arrive[bounce]
        v_now = np.einsum("ij,ij->i", x[ids] - x_prev[ids] - motion, n) / h
        x_prev[ids] -= n * ((-e * v_arrive - v_now) * h)[:, None]


class ContactState:
    """Per-substep contact scratch, allocated once (n = particles, P = embedded points)."""

    def __init__(self, n, n_points):
        self.depth = np.zeros(n)                 # (n,) float64 [m] normal correction this substep
        self.used = np.zeros(n)                  # (n,) float64 [m] friction distance spent
        self.touching = np.zeros(n, bool)        # (n,) bool touched a collider this substep
        self.normal = np.zeros((n, 3))           # (n, 3) float64 last contact normal
        self.motion = np.zeros((n, 3))           # (n, 3) float64 [m] collider motion at contact
        self.collider = np.zeros(n, np.int64)    # (n,) int64 last collider touched
        self.point_depth = np.zeros(n_points)    # (P,) float64 [m] embedded points
        self.point_used = np.zeros(n_points)     # (P,) float64 [m]

    def reset(self):
        self.depth.fill(0.0)
        self.used.fill(0.0)
        self.touching.fill(False)
        self.point_depth.fill(0.0)
        self.point_used.fill(0.0)


class TetraPoints:
    """Embedded points of tetrahedral bodies grouped by rank within their body: points of one
    rank belong to different bodies, so their particle updates never collide."""

    def __init__(self, model):
        self.particles = model.tetra_particles                 # (B, 4) int64
        self.point_body = model.tetra_point_body               # (P,) int64
        self.weight = model.tetra_point_weight                 # (P, 4) float64
        self.tet = self.particles[self.point_body]             # (P, 4) int64 each point's corners
        c = self.weight
        # (P,) float64 1 / sum_k c_k^2, summed in the order k = 0..3: a point's move delta is
        # shared as c_k delta / sum c^2 by its corners (Jakobsen section 5)
        self.inv_c2 = 1.0 / (c[:, 0] * c[:, 0] + c[:, 1] * c[:, 1] + c[:, 2] * c[:, 2]
                             + c[:, 3] * c[:, 3])
        start = model.tetra_point_start
        rank = np.arange(len(self.point_body)) - start[self.point_body] if len(self.point_body) \
            else np.zeros(0, np.int64)
        self.ranks = [np.nonzero(rank == r)[0] for r in range(int(rank.max()) + 1)] \
            if rank.size else []
        # the ranks back to back for the compiled kernel, rank r = rank_points[start[r]:start[r+1]]
        self.rank_points = np.concatenate(self.ranks) if self.ranks \
            else np.zeros(0, np.int64)                          # (P,) int64 point ids
        self.rank_start = np.concatenate(
            ([0], np.cumsum([len(r) for r in self.ranks]))).astype(np.int64)   # (ranks + 1,) int64
        # per rank for the NumPy path: point ids (p,), the corners' particle ids and weights as
        # four contiguous (p,) columns each (int64, float64), 1 / sum c^2 (p,) float64
        self.rank_columns = [(r, tuple(np.ascontiguousarray(self.tet[r, j]) for j in range(4)),
                              tuple(np.ascontiguousarray(c[r, j]) for j in range(4)),
                              self.inv_c2[r]) for r in self.ranks]

    def positions(self, x, body=None):
        """(P, 3) embedded point positions [m] (all bodies, or one body's)."""
        sel = np.arange(len(self.point_body)) if body is None else \
            np.nonzero(self.point_body == body)[0]
        tet = self.particles[self.point_body[sel]]
        return np.einsum("pk,pkd->pd", self.weight[sel], x[tet])

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
contact works at any point of the body, not only at its particles.
"""

import numpy as np

from . import exact, sdf


def _friction(rel, n, depth_total, used, mu_s, mu_k):
    """Tangential correction (k, 3) to subtract and the friction distance now used (k,)."""
    rel_t = rel - n * np.einsum("ij,ij->i", rel, n)[:, None]
    t_len = np.sqrt(np.einsum("ij,ij->i", rel_t, rel_t))
    static = t_len + used <= mu_s * depth_total
    allowed = np.maximum(mu_k * depth_total - used, 0.0)
    take = np.where(static, t_len, np.minimum(allowed, t_len))
    scale = np.where(t_len > 1e-300, take / np.maximum(t_len, 1e-300), 0.0)
    return rel_t * scale[:, None], used + take


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
                self.before[k] = self.now[k] = self.frame[k]      # at rest: motion() is zero
                continue
            self.before[k] = self.now[k] if s else self.frame[k]
            self.now[k] = sdf.interpolate(self.frame[k], self.target[k], (s + 1) / substeps)

    def end_step(self):
        self.frame = list(self.target)
        self.now = list(self.frame)

    def motion(self, k, points):
        """Displacement [m] (k, 3) of the collider's material points now at ``points`` over the
        current substep (zero for a collider at rest)."""
        f0, f1 = self.before[k], self.now[k]
        if f0 is f1:
            return np.zeros_like(points)
        u = sdf.to_local(f1, points) / f1.scale
        return points - sdf.to_world_points(f0, u * f0.scale)

    # ------------------------------------------------------------------ contact solve
    def project(self, x, x_prev, radius, cs, rows=None, kernels=None):
        """Project candidate particles out of every collider, with friction. cs: ContactState.
        Colliders whose SDF is exact go through exact.py (or its compiled mirror when
        ``kernels`` is given, with ``rows`` = the (3, n) position and previous-position
        arrays behind x and x_prev); the first-order ones through sdf.evaluate below."""
        for k in range(self.count):
            idx = self.candidates[k]
            if idx.size == 0:
                continue
            now, before = self.now[k], self.before[k]
            if sdf.is_exact(self.shape[k], now.scale):
                abc = exact.scaled_dims(self.shape[k], self.dims[k], now.scale)
                moving = before is not now
                if kernels is not None:
                    X, Xp = rows
                    kernels.project_exact(
                        X, Xp, idx, int(self.shape[k]), float(abc[0]), float(abc[1]),
                        float(abc[2]), float(self.thickness[k]), radius, now.rotation,
                        now.translation, now.scale, before.rotation, before.translation,
                        before.scale, moving, float(self.mu_s[k]), float(self.mu_k[k]), k,
                        cs.depth, cs.used, cs.touching, cs.normal, cs.motion, cs.collider)
                else:
                    exact.project(x, x_prev, idx, self.shape[k], abc, self.thickness[k], radius,
                                  now, before, moving, self.mu_s[k], self.mu_k[k], k, cs)
                continue
            xc = x[idx]
            phi, n = sdf.evaluate(self.shape[k], self.dims[k], self.now[k], xc)
            pen = phi - self.thickness[k] - radius[idx]
            hit = pen < 0
            if not hit.any():
                continue
            ids, n, d = idx[hit], n[hit], -pen[hit]
            xn = xc[hit] + n * d[:, None]
            motion = self.motion(k, xn)
            depth = cs.depth[ids] + d
            corr, used = _friction(xn - x_prev[ids] - motion, n, depth, cs.used[ids],
                                   self.mu_s[k], self.mu_k[k])
            x[ids] = xn - corr
            cs.depth[ids] = depth
            cs.used[ids] = used
            cs.touching[ids] = True
            cs.normal[ids] = n
            cs.motion[ids] = motion
            cs.collider[ids] = k

    def project_points(self, x, x_prev, tetra, cs):
        """Jakobsen's embedded-point contact for tetrahedral bodies (see module docstring)."""
        for rank_ids in tetra.ranks:
            tet = tetra.particles[tetra.point_body[rank_ids]]            # (p, 4)
            c = tetra.weight[rank_ids]                                   # (p, 4)
            for k in range(self.count):
                p = np.einsum("pk,pkd->pd", c, x[tet])
                phi, n = sdf.evaluate(self.shape[k], self.dims[k], self.now[k], p)
                pen = phi - self.thickness[k]
                hit = pen < 0
                if not hit.any():
                    continue
                ids, n, d = rank_ids[hit], n[hit], -pen[hit]
                th, ch = tet[hit], c[hit]
                pn = p[hit] + n * d[:, None]
                motion = self.motion(k, pn)
                p_prev = np.einsum("pk,pkd->pd", ch, x_prev[th])
                depth = cs.point_depth[ids] + d
                corr, cs.point_used[ids] = _friction(pn - p_prev - motion, n, depth,
                                                     cs.point_used[ids], self.mu_s[k], self.mu_k[k])
                cs.point_depth[ids] = depth
                delta = n * d[:, None] - corr                            # move of the point
                scale = 1.0 / np.einsum("pk,pk->p", ch, ch)
                x[th] += ch[:, :, None] * (delta * scale[:, None])[:, None, :]

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
        start = model.tetra_point_start
        rank = np.arange(len(self.point_body)) - start[self.point_body] if len(self.point_body) \
            else np.zeros(0, np.int64)
        self.ranks = [np.nonzero(rank == r)[0] for r in range(int(rank.max()) + 1)] \
            if rank.size else []

    def positions(self, x, body=None):
        """(P, 3) embedded point positions [m] (all bodies, or one body's)."""
        sel = np.arange(len(self.point_body)) if body is None else \
            np.nonzero(self.point_body == body)[0]
        tet = self.particles[self.point_body[sel]]
        return np.einsum("pk,pkd->pd", self.weight[sel], x[tet])

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

Moving colliders: the collider's frame is interpolated across the substeps of a step
(frames.py); its motion at the contact point enters friction, which is what carries resting
particles along.

The collide stage (Colliders.collide) runs once per step: a broad phase that keeps, for each
collider, the particles that may reach it during the step, as contact candidates in a Contacts
(contacts.py). The projection then runs inside the relaxation loop over those candidates only.

Tetrahedral bodies (Jakobsen section 5): an embedded point p = sum c_k x_k that penetrates by d
along n moves its four particles by c_k d n / sum c_k^2, so p lands exactly on the surface and
contact works at any point of the body, not only at its particles; friction shortens the point's
move as above (delta = n d - friction correction, shared as c_k delta / sum c_k^2).

The arithmetic is the kernel table's project_collider and project_points (NumPy in project.py,
compiled in kernels/compiled_contact.py, the same operations in the same order: bit-identical
contacts). Order: particles collider after collider; embedded points rank after rank, and within
a rank collider after collider.
"""

import numpy as np

from . import frames, sdf


class Colliders:
    """The colliders' shapes and material (from the Model), where they are during each substep
    (from the Control's placements), and the contact passes (C = colliders)."""

    def __init__(self, model, kernels):
        self.kernels = kernels
        self.shape = model.collider_shape                  # (C,) int64 frames.PLANE..CAPSULE
        self.dims = model.collider_dims                    # (C, 3) float64 [m]
        self.mu_k = model.collider_friction                # (C,) float64
        self.mu_s = model.collider_static_friction         # (C,) float64
        # coefficient of restitution per collider; not named ``restitution``, which is the method
        # below (an attribute of that name shadowed it: every bouncy contact raised TypeError)
        self.e_restitution = model.collider_restitution    # (C,) float64
        self.thickness = model.collider_thickness          # (C,) float64 [m]
        self.count = len(self.shape)
        self.any_restitution = bool(np.any(self.e_restitution > 0))
        # this substep's placement of each collider at its start and end (frames.Frame)
        self.before = []
        self.now = []
        # project_points' per-substep arrays (see _packed) and the frames they were built from
        self._pack = None
        self._pack_key = None

    def initial_frames(self, model):
        """(C,) frames.Frame of the build-time placements (the Control starts with these)."""
        return [frames.decompose(m) for m in model.collider_matrix]

    # ------------------------------------------------------------------ the collide stage
    def collide(self, control, x, free, radius_max, reach, contacts):
        """Broad phase once per step: into ``contacts``, the particles that may touch each
        collider during it. x (n, 3) [m]; free (n,) bool particles that can move; reach [m]
        bounds how far any particle can travel in this step. A collider that rotates or scales
        during the step takes every free particle."""
        ids_free = np.nonzero(free)[0]
        found = []
        for k in range(self.count):
            f0, f1 = control.collider_frame[k], control.collider_target[k]
            turning = not (np.allclose(f0.rotation, f1.rotation, atol=1e-12)
                           and np.allclose(f0.scale, f1.scale, atol=1e-12))
            if turning:
                found.append(ids_free)
                continue
            sweep = float(np.linalg.norm(f1.translation - f0.translation))
            phi, _ = sdf.evaluate(self.shape[k], self.dims[k], f0, x[ids_free])
            margin = reach + sweep + self.thickness[k] + radius_max
            found.append(ids_free[phi < margin])
        contacts.set_candidates(found)

    # ------------------------------------------------------------------ placement per substep
    def begin_substep(self, control, s, substeps):
        """Placements at the start and end of substep s of ``substeps``: interpolated from the
        Control's placement now to its target."""
        if len(self.now) != self.count:
            self.before = list(control.collider_frame)
            self.now = list(control.collider_frame)
        for k in range(self.count):
            f0, f1 = control.collider_frame[k], control.collider_target[k]
            if f1 is f0:
                self.before[k] = self.now[k] = f0      # at rest: no motion
                continue
            self.before[k] = self.now[k] if s else f0
            self.now[k] = frames.interpolate(f0, f1, (s + 1) / substeps)

    def end_step(self, control):
        """The targets are reached: they become the placements now."""
        control.collider_frame = list(control.collider_target)
        self.now = list(control.collider_frame)

    # ------------------------------------------------------------------ contact passes
    def _packed(self):
        """Every collider's placement this substep as arrays, for the point contact:
        approximate (C,) bool first-order SDF; abc (C, 3) float64 its SDF's scaled dimensions
        (sdf.placement); R (C, 3, 3) float64, t (C, 3) float64 [m], s (C, 3) float64 the frames
        now and the same three at the substep's start; moving (C,) bool. Rebuilt when a frame
        changes (compared by identity: frames are never modified, and the cache holds them, so
        an identity cannot be reused by a new frame)."""
        key = self._pack_key
        if key is not None and all(a is b for a, b in zip(key[0], self.now)) \
                and all(a is b for a, b in zip(key[1], self.before)):
            return self._pack
        C = self.count
        approximate = np.zeros(C, bool)
        abc = np.zeros((C, 3))
        for k in range(C):
            approximate[k], abc[k] = sdf.placement(self.shape[k], self.dims[k], self.now[k].scale)
        now, before = self.now, self.before
        self._pack = (approximate, abc,
                      np.stack([f.rotation for f in now]), np.stack([f.translation for f in now]),
                      np.stack([f.scale for f in now]), np.stack([f.rotation for f in before]),
                      np.stack([f.translation for f in before]),
                      np.stack([f.scale for f in before]),
                      np.array([b is not f for b, f in zip(before, now)], bool))
        self._pack_key = (tuple(now), tuple(before))
        return self._pack

    def project(self, X, X_prev, radius, contacts, allowance):
        """Project the candidate particles out of every collider, with friction, in place on
        positions X (3, n) [m] (X_prev (3, n) the positions a substep ago); radius (n,) [m];
        allowance [m] the depenetration bound of this substep (project.py)."""
        for k in range(self.count):
            idx = contacts.candidates(k)
            if idx.size == 0:
                continue
            now, before = self.now[k], self.before[k]
            approximate, (a, b, c) = sdf.placement(self.shape[k], self.dims[k], now.scale)
            self.kernels.project_collider(
                X, X_prev, idx, int(self.shape[k]), approximate, float(a), float(b), float(c),
                float(self.thickness[k]), radius, now.rotation, now.translation, now.scale,
                before.rotation, before.translation, before.scale, before is not now,
                float(self.mu_s[k]), float(self.mu_k[k]), k, contacts.depth, contacts.used,
                contacts.touching, contacts.normal, contacts.motion, contacts.collider,
                allowance, contacts.lift, contacts.lifted)

    def project_points(self, X, X_prev, points, contacts, allowance):
        """Jakobsen's embedded-point contact for tetrahedral bodies (points: points.TetraPoints)."""
        if self.count == 0 or not points.count:
            return
        self.kernels.project_points(X, X_prev, points.rank_start, points.rank_points,
                                    points.tet, points.weight, points.inv_c2, self.shape,
                                    self.thickness, self.mu_s, self.mu_k, *self._packed(),
                                    contacts.point_depth, contacts.point_used, allowance,
                                    contacts.lift, contacts.lifted)

    def restitution(self, x, x_prev, x_pred, h, gravity_norm, contacts):
        """Velocity pass after a substep: bounce contacts that arrived fast (module docstring).
        x, x_prev, x_pred (n, 3) [m]: positions, positions a substep ago, and positions right
        after integration (before any constraint). Shared by both backends: it touches only
        the particles that bounced."""
        ids = np.nonzero(contacts.touching)[0]
        if ids.size == 0:
            return
        e = self.e_restitution[contacts.collider[ids]]
        keep = e > 0
        ids, e = ids[keep], e[keep]
        if ids.size == 0:
            return
        n, motion = contacts.normal[ids], contacts.motion[ids]
        v_arrive = np.einsum("ij,ij->i", x_pred[ids] - x_prev[ids] - motion, n) / h
        bounce = v_arrive < -2.0 * gravity_norm * h
        ids, e, n, motion, v_arrive = ids[bounce], e[bounce], n[bounce], motion[bounce], v_arrive[bounce]
        v_now = np.einsum("ij,ij->i", x[ids] - x_prev[ids] - motion, n) / h
        x_prev[ids] -= n * ((-e * v_arrive - v_now) * h)[:, None]

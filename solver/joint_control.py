"""Joint drives and read-outs as Simulation methods (Simulation inherits them): pose matching of
powered ragdolls and the body frames and joint errors that tests and the bake read.

The drive targets and strengths live in the Control (state.py), so a checkpoint carries them and
a resume after a change is bit-identical; they take effect from the next step on. The solve is
constraints/joints.py.
"""

import numpy as np

from .constraints.joints import KIND_HINGE


def quaternion_matrices(q):
    """(k, 3, 3) rotation matrices of (k, 4) quaternions (w, x, y, z), normalised."""
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], 1)


def _angle_out(phi, lo, hi):
    """[rad] how far the angles phi lie outside [lo, hi] on the circle (0 inside)."""
    m, w = 0.5 * (lo + hi), 0.5 * (hi - lo)
    off = np.abs(np.angle(np.exp(1j * (phi - m))))
    return np.maximum(off - w, 0.0)


class JointControl:
    """Joint methods of Simulation (which provides model, control, state and joints)."""

    def _joint_ids(self, ids):
        a = np.atleast_1d(np.asarray(ids))
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise ValueError("joint_ids: joint ids must be integers")
        a = a.astype(np.int64).ravel()
        j = self.model.joint_count
        if a.size and (a.min() < 0 or a.max() >= j):
            raise ValueError(f"joint_ids: joint id out of range 0..{j - 1}")
        return a

    def set_joint_targets(self, joint_ids, rotations):
        """The drive targets of joints ``joint_ids`` from the next step on: the rotation of
        body_b relative to body_a, R_a^T R_b, where R is each body's rotation from its build
        pose (body_frames; the world's is the identity), so the identity holds the build pose.
        rotations: (j, 4) quaternions (w, x, y, z) or (j, 3, 3) matrices."""
        ids = self._joint_ids(joint_ids)
        r = np.asarray(rotations, dtype=np.float64)
        if r.shape == (4,) or r.shape == (3, 3):
            r = r[None]
        if r.shape == (ids.size, 4):
            if not np.all(np.isfinite(r)) or np.any(np.linalg.norm(r, axis=1) < 1e-12):
                raise ValueError("rotations: quaternions must be finite and non-zero")
            r = quaternion_matrices(r)
        elif r.shape == (ids.size, 3, 3):
            if not np.all(np.isfinite(r)):
                raise ValueError("rotations: contains NaN or infinity")
            if np.abs(np.einsum("kij,kil->kjl", r, r) - np.eye(3)).max(initial=0) > 1e-3 \
                    or np.any(np.linalg.det(r) <= 0):
                raise ValueError("rotations: matrices must be rotations (orthonormal, det +1)")
            u, _, vt = np.linalg.svd(r)          # the nearest rotation (single-precision input)
            r = u @ vt
        else:
            raise ValueError(f"rotations: expected ({ids.size}, 4) quaternions or "
                             f"({ids.size}, 3, 3) matrices, got shape {r.shape}")
        self.control.joint_target[ids] = r

    def set_joint_drive(self, joint_ids, strength):
        """Pose-matching strength of joints ``joint_ids`` from the next step on (scalar or per
        joint, in [0, 1]): 0 = limp (no drive), 1 = holds the target rigidly (XPBD compliance 0;
        it still gives way to contacts and other joints within a substep's solve). Between, the
        drive's compliance is joints.DRIVE_COMPLIANCE (1/s - 1) [rad/(N m)]."""
        ids = self._joint_ids(joint_ids)
        s = np.broadcast_to(np.asarray(strength, dtype=np.float64), ids.shape)
        if not np.all(np.isfinite(s)) or np.any(s < 0) or np.any(s > 1):
            raise ValueError("strength: must be finite and in [0, 1]")
        self.control.joint_drive[ids] = s

    def body_frames(self):
        """Every body's (cluster's, in add_shape_match order) centre of mass (K, 3) [m] and
        rotation from its build pose (K, 3, 3) (polar decomposition, as the joints see it)."""
        c, R = self._model_frames()
        order = self.model.shape_body_cluster
        return c[order], R[order]

    def joint_error(self):
        """(gap (J,) [m] between each joint's two anchors, excursion (J,) [rad]: how far the
        joint lies outside its limits, a hinge's axis misalignment included; 0 inside)."""
        m = self.model
        j = m.joint_count
        if not j:
            return np.zeros(0), np.zeros(0)
        c, R = self._model_frames()
        k = len(c)
        c = np.vstack([c, np.zeros((1, 3))])
        R = np.concatenate([R, np.eye(3)[None]])
        body = np.where(m.joint_body >= 0, m.joint_body, k)
        Ra, Rb = R[body[:, 0]], R[body[:, 1]]
        pa = c[body[:, 0]] + np.einsum("kij,kj->ki", Ra, m.joint_anchor[:, 0])
        pb = c[body[:, 1]] + np.einsum("kij,kj->ki", Rb, m.joint_anchor[:, 1])
        gap = np.linalg.norm(pb - pa, axis=1)
        a_a = np.einsum("kij,kj->ki", Ra, m.joint_axis)
        a_b = np.einsum("kij,kj->ki", Rb, m.joint_axis)
        v_a = np.einsum("kij,kj->ki", Ra, m.joint_perp)
        v_b = np.einsum("kij,kj->ki", Rb, m.joint_perp)
        hinge = m.joint_kind == KIND_HINGE
        lim = m.joint_limits
        cos_ab = np.clip(np.einsum("ki,ki->k", a_a, a_b), -1.0, 1.0)
        tilt = np.arccos(cos_ab)
        n = np.where(hinge[:, None], a_a, a_a + a_b)
        n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
        pa_ = v_a - np.einsum("ki,ki->k", v_a, n)[:, None] * n
        pb_ = v_b - np.einsum("ki,ki->k", v_b, n)[:, None] * n
        phi = np.arctan2(np.einsum("ki,ki->k", np.cross(pa_, pb_), n),
                         np.einsum("ki,ki->k", pa_, pb_))
        lo = np.where(hinge, lim[:, 0], lim[:, 1])
        hi = np.where(hinge, lim[:, 1], lim[:, 2])
        ranged = ~np.isnan(lo)
        out = np.where(ranged, _angle_out(phi, np.where(ranged, lo, 0), np.where(ranged, hi, 0)),
                       0.0)
        swing = np.where(~hinge & ~np.isnan(lim[:, 0]),
                         np.maximum(tilt - np.nan_to_num(lim[:, 0]), 0.0), 0.0)
        exc = np.maximum(np.maximum(out, swing), np.where(hinge, tilt, 0.0))
        return gap, exc

    def _model_frames(self):
        """body_frames in model cluster order."""
        m = self.model
        k = len(m.shape_cluster_start) - 1
        if not k:
            return np.zeros((0, 3)), np.zeros((0, 3, 3))
        return self.kernels.body_frames(self.state.X, m.shape_particles, m.shape_rest_offset,
                                        m.particle_mass[m.shape_particles],
                                        np.arange(len(m.shape_particles)),
                                        m.shape_cluster_start, np.arange(k))

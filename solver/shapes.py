"""Shape matching (Mueller, Heidelberger, Teschner and Gross, "Meshless Deformations Based on
Shape Matching", SIGGRAPH 2005; GAMES103 lecture 4), as an XPBD goal constraint.

For a cluster with rest offsets q_i (from its rest centre of mass) and current positions x_i:

    c = sum m_i x_i / sum m_i,   A = sum m_i (x_i - c) q_i^T,   A = R S (polar decomposition),
    g_i = R q_i + c,             C_i(x) = x_i - g_i  (a vector constraint per particle)

R comes from the SVD A = U D V^T as U diag(1, 1, det(U V^T)) V^T, so a reflection is never
returned and planar or collinear clusters (rank-deficient A) still give a proper rotation. Each
particle moves toward its goal with XPBD compliance alpha (0 = rigid; Macklin et al. 2016):
dlambda_i = (-C_i - alpha~ lambda_i) / (w + alpha~), x_i += w dlambda_i, where w is the cluster's
mean inverse mass for every particle (0 for pinned ones). Using one w per cluster keeps
sum m_i dx_i = 0, so a free body's linear momentum is conserved exactly.

Contact: in rigid clusters (compliance 0), particles that touched a collider in this substep
count BOOST times heavier in c and A. A rigid cluster then turns about its contacts instead of
dragging them along, which is what lets a per-particle Coulomb friction hold a whole block still
on a slope (without it, static friction on the bottom particles is averaged away by the free ones
and the block creeps; the same idea as mass scaling in Macklin et al., "Unified Particle Physics
for Real-Time Applications", SIGGRAPH 2014). Soft clusters keep plain mass weights: their goals
follow the body's true centre of mass, and weighting contacts there pumped energy into them.

Clusters are coloured so that no two clusters of one colour share a particle (several
overlapping clusters per body are allowed); every colour is one batched NumPy solve.
"""

import numpy as np

BOOST = 1.0e4


def polar_rotation(a):
    """(K, 3, 3) rotations R of the polar decomposition A = R S, reflections removed."""
    u, _, vt = np.linalg.svd(a)
    det = np.linalg.det(u @ vt)
    u[:, :, 2] *= np.where(det < 0, -1.0, 1.0)[:, None]
    return u @ vt


class ShapeSolver:
    def __init__(self, model):
        self.particles = model.shape_particles                # (e,) int64
        self.rest_offset = model.shape_rest_offset            # (e, 3) float64 [m]
        self.cluster = model.shape_cluster                    # (e,) int64
        start = model.shape_cluster_start                     # (K + 1,) int64
        self.mass = model.particle_mass[self.particles]       # (e,) float64 [kg]
        k = len(start) - 1
        csize = np.diff(start)
        mean_mass = np.add.reduceat(self.mass, start[:-1]) / csize if k else np.zeros(0)
        pinned = model.particle_inv_mass[self.particles] == 0
        self.w = np.where(pinned, 0.0, 1.0 / mean_mass[self.cluster]) if k else np.zeros(0)
        self.compliance = model.shape_compliance[self.cluster]  # (e,) float64 [m/N]
        self.rigid = self.compliance == 0.0                     # (e,) bool entry of a rigid cluster
        self.lam = np.zeros((len(self.particles), 3))          # (e, 3) float64 accumulated
        self.alpha = np.zeros(len(self.particles))             # (e,) alpha / h^2
        self._h = None
        self.colors = []
        self._damped = []          # colours with damped clusters: (slice, seg, local, keep(h))
        offs = model.shape_color_offsets
        for c0, c1 in zip(offs[:-1], offs[1:]):
            es, ee = int(start[c0]), int(start[c1])
            seg = (start[c0:c1] - es).astype(np.int64)         # cluster starts within the colour
            local = self.cluster[es:ee] - c0
            self.colors.append((slice(es, ee), seg, local))
            damping = model.shape_damping[c0:c1]
            if np.any(damping > 0):
                self._damped.append((slice(es, ee), seg, local,
                                     lambda h, d=damping: (1.0 - d) ** h))

    def damp(self, x, x_prev, h):
        """Remove the fraction ``damping`` per second of each damped cluster's deformation
        velocity: the part of the substep's displacement u = x - x* that is not the cluster's
        rigid motion u_cm + w x r (w = I^-1 L from its mass-weighted angular momentum). Linear
        and angular momentum are unchanged (Mueller et al., "Position Based Dynamics", 2007,
        section 3.5). Writes x* only, so positions stay where the constraints put them."""
        for s, seg, local, keep_of in self._damped:
            keep = keep_of(h)
            pid = self.particles[s]
            xs = x[pid]
            u = xs - x_prev[pid]
            m = self.mass[s][:, None]
            msum = np.add.reduceat(self.mass[s], seg)[:, None]
            c = np.add.reduceat(xs * m, seg, axis=0) / msum
            u_cm = np.add.reduceat(u * m, seg, axis=0) / msum
            r = xs - c[local]
            ang = np.add.reduceat(np.cross(r, u) * m, seg, axis=0)
            rr = np.einsum("ij,ij->i", r, r)
            outer = r[:, :, None] * r[:, None, :]
            inertia = np.add.reduceat((rr[:, None, None] * np.eye(3) - outer) * m[:, :, None], seg,
                                      axis=0)
            omega = np.einsum("kij,kj->ki", np.linalg.pinv(inertia), ang)
            rigid = u_cm[local] + np.cross(omega[local], r)
            x_prev[pid] = xs - (rigid + (u - rigid) * keep[local][:, None])

    @property
    def empty(self):
        return len(self.particles) == 0

    def begin_substep(self, h):
        if h != self._h:
            self.alpha[:] = self.compliance / (h * h)
            self._h = h
        self.lam.fill(0.0)

    def solve(self, x, contact):
        """One pass over all clusters, in place on x (n, 3) [m]; contact (n,) bool."""
        for s, seg, local in self.colors:
            pid = self.particles[s]
            xs = x[pid]
            q = self.rest_offset[s]
            wgt = self.mass[s] * np.where(contact[pid] & self.rigid[s], BOOST, 1.0)
            wsum = np.add.reduceat(wgt, seg)
            centre = np.add.reduceat(xs * wgt[:, None], seg, axis=0) / wsum[:, None]
            qbar = np.add.reduceat(q * wgt[:, None], seg, axis=0) / wsum[:, None]
            qc = q - qbar[local]
            a = np.add.reduceat((xs - centre[local])[:, :, None] * (wgt[:, None] * qc)[:, None, :],
                                seg, axis=0)
            rot = polar_rotation(a)
            goal = np.einsum("eij,ej->ei", rot[local], qc) + centre[local]
            w = self.w[s][:, None]
            alpha = self.alpha[s][:, None]
            lam = self.lam[s]
            dlam = (goal - xs - alpha * lam) / (w + alpha + 1e-300)
            self.lam[s] = lam + dlam
            x[pid] = xs + w * dlam

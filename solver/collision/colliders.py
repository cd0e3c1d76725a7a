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
mu_s and mu_k combine the collider's coefficients with the particle's own friction
(project.combined_friction: their geometric mean).
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
(contacts.py). Mesh colliders (mesh.py) are asked the same way: a distance, a normal and, for
their motion, the closest surface point, per particle and substep. The projection then runs inside the relaxation loop over those candidates only.

Tetrahedral bodies (Jakobsen section 5): an embedded point p = sum c_k x_k that penetrates by d
along n moves its four particles by c_k d n / sum c_k^2, so p lands exactly on the surface and
contact works at any point of the body, not only at its particles; friction shortens the point's
move as above (delta = n d - friction correction, shared as c_k delta / sum c_k^2).

The arithmetic is the kernel table's project_collider and project_points (NumPy in project.py,
compiled in kernels/compiled_contact.py, the same operations in the same order: bit-identical
contacts). Order: particles collider after collider; then the edges of cloths and ropes against
the primitives (edges.py: a rail thinner than a cloth's edges holds it), group after group;
embedded points rank after rank, and within a rank collider after collider.
"""

import numpy as np

from . import frames, sdf
from .edges import ColliderEdges
from .mesh import MeshSet


def _close(a, b):
    """np.allclose(a, b, atol=1e-12) for finite arrays, at a quarter of its cost (it runs per
    collider per step)."""
    return bool(np.all(np.abs(a - b) <= 1e-12 + 1e-5 * np.abs(b)))


class Colliders:
    """The colliders' shapes and material (from the Model), where they are during each substep
    (from the Control's placements), and the contact passes (C = colliders)."""

    def __init__(self, model):
        self.shape = model.collider_shape                  # (C,) int64 frames.PLANE..CAPSULE
        self.dims = model.collider_dims                    # (C, 3) float64 [m]
        # the material (friction, static friction, restitution) is the Control's: it may change
        # between steps (Simulation.set_collider_friction / set_collider_restitution)
        self.thickness = model.collider_thickness          # (C,) float64 [m]
        self.count = len(self.shape)
        self.meshes = MeshSet(model)                       # the mesh colliders (mesh.py)
        self.edges = ColliderEdges(model)                  # edges against them (edges.py)

    def initial_frames(self, model):
        """(C,) frames.Frame of the build-time placements (the Control starts with these)."""
        return [frames.decompose(m) for m in model.collider_matrix]

    # ------------------------------------------------------------------ the collide stage
    def collide(self, control, x, free, reach, contacts, kernels):
        """Broad phase once per step: into ``contacts``, the particles that may touch each
        collider during it. x (n, 3) [m]; free (n,) bool particles that can move; reach (n,) [m]
        how far each particle can travel in this step (reach.particle_reach) plus its radius;
        kernels the kernel table (a mesh's distances). A primitive that rotates or scales during
        the step takes every free particle; a mesh takes the particles near its surface
        (_mesh_candidates). The edges' candidates (edges.ColliderEdges.find) come from the
        same placements."""
        ids_free = np.nonzero(free)[0]
        X = x.T                                                # (3, n) [m]
        if ids_free.size == len(x):      # every particle collides (none sleeps, none is pinned
            #                              or shielded): no gathering copies
            X_free, reach_free = X, reach
        else:
            X_free, reach_free = X[:, ids_free], reach[ids_free]      # (3, m) [m], (m,) [m]
        x_free = X_free.T                                      # (m, 3) [m]
        found = [None] * self.count
        self.meshes.prepare(control.mesh_vertices, control.mesh_target, control.collider_frame,
                            control.collider_target, kernels)
        C = self.count
        take = np.zeros(C, bool)                   # (C,) the primitives tested below
        approximate = np.zeros(C, bool)            # (C,) first-order SDF
        abc = np.zeros((C, 3))                     # (C, 3) sdf.placement's dimensions [m]
        R = np.zeros((C, 3, 3))                    # (C, 3, 3) the frame at the step's start
        t = np.zeros((C, 3))                       # (C, 3) [m]
        s = np.ones((C, 3))                        # (C, 3)
        extra = np.zeros(C)                        # (C,) [m] sweep + thickness
        turns = np.zeros(C, bool)                  # (C,) primitives that turn or scale
        # (C, 3) and (C,) the exact primitive enclosing a first-order one, and the ratio its
        # distance takes (sdf.enclosing): the edges' broad phase (edges.py)
        enclosing_abc, ratio = np.zeros((C, 3)), np.ones(C)
        for k in range(C):
            f0, f1 = control.collider_frame[k], control.collider_target[k]
            if self.shape[k] == frames.MESH:
                found[k] = self._mesh_candidates(k, control, x, ids_free, x_free, reach_free,
                                                 kernels)
                continue
            turning = f1 is not f0 and not (_close(f0.rotation, f1.rotation)
                                            and _close(f0.scale, f1.scale))
            if turning:
                found[k] = ids_free
                turns[k] = True
                continue
            take[k] = True
            R[k], t[k], s[k] = f0.rotation, f0.translation, f0.scale
            approximate[k], abc[k] = sdf.placement(self.shape[k], self.dims[k], f0.scale)
            enclosing_abc[k], ratio[k] = (sdf.enclosing(self.shape[k], self.dims[k], f0.scale)
                                          if approximate[k] else (abc[k], 1.0))
            extra[k] = float(np.linalg.norm(f1.translation - f0.translation)) \
                + self.thickness[k]
        if take.any():
            near = np.zeros((C, len(ids_free)), bool)
            kernels.primitive_candidates(self.shape, approximate, abc, R, t, s, take,
                                         np.ascontiguousarray(X_free), reach_free, extra, near)
            for k in np.nonzero(take)[0]:
                found[k] = ids_free[near[k]]
        contacts.set_candidates(found)
        self.edges.find(self.shape, take, turns, enclosing_abc, ratio, R, t, s, extra, X,
                        reach, free, kernels)

    def surface_speed(self, control, x, dt):
        """[m/s] the fastest any collider's surface moves during the next step of dt [s], at
        most as far from its origin as the farthest of the points x (n, 3) [m]:
        (|t1 - t0| + ||A1 - A0||_2 reach) / dt (A = R S); the runaway check's bound."""
        fastest = 0.0
        for f0, f1 in zip(control.collider_frame, control.collider_target):
            if f1 is f0:
                continue
            a0 = f0.rotation * f0.scale
            a1 = f1.rotation * f1.scale
            off = x - f0.translation
            reach = float(np.sqrt(np.max(np.einsum("ij,ij->i", off, off)))) if len(x) else 0.0
            move = float(np.linalg.norm(f1.translation - f0.translation)) \
                + float(np.linalg.norm(a1 - a0, 2)) * reach
            fastest = max(fastest, move / dt)
        if len(control.mesh_vertices):      # a deforming mesh: its fastest vertex, scaled
            moves = control.mesh_target - control.mesh_vertices
            start = self.meshes.start
            for k in np.nonzero(np.diff(start) > 0)[0]:
                a, b = start[k], start[k + 1]
                if not np.array_equal(control.mesh_target[a:b], control.mesh_vertices[a:b]):
                    s = max(float(np.max(control.collider_frame[k].scale)),
                            float(np.max(control.collider_target[k].scale)))
                    fastest = max(fastest, s * float(np.sqrt(np.max(np.einsum(
                        "ij,ij->i", moves[a:b], moves[a:b])))) / dt)
        return fastest

    def edges_moving(self, control):
        """Whether a collider that edges meet (a primitive other than a plane: edges.py) moves
        during the next step."""
        return any(self.shape[k] not in (frames.PLANE, frames.MESH)
                   and not frames.same(control.collider_frame[k], control.collider_target[k])
                   for k in range(self.count))

    def near_moving(self, control, x, margin):
        """(k,) bool: which of the points x (k, 3) [m] a collider that moves during the next
        step may come within ``margin`` [m] (+ its thickness) of: the nearer of its distances at
        the step's start and end, less the farthest any of its points travels on the way there
        (|t1 - t0| + ||A1 - A0||_2 |x - t0|, A = R S); margin a scalar or (k,) [m], one per
        point. Wakes sleeping bodies (sleep.py)."""
        near = np.zeros(len(x), bool)
        for k in range(self.count):
            f0, f1 = control.collider_frame[k], control.collider_target[k]
            if self.shape[k] == frames.MESH:
                # a mesh (moved or deformed): the distance to the world box of its vertices at
                # both ends of the step, which bounds the surface during it
                sweep = self.meshes.surface_sweep(k, control, f0, f1)
                if sweep == 0.0 or not len(x):
                    continue
                a, b = self.meshes.start[k], self.meshes.start[k + 1]
                w = np.concatenate([
                    (control.mesh_vertices[a:b] * f0.scale) @ f0.rotation.T + f0.translation,
                    (control.mesh_target[a:b] * f1.scale) @ f1.rotation.T + f1.translation])
                out = np.maximum(np.maximum(w.min(axis=0) - x, x - w.max(axis=0)), 0.0)
                near |= np.sqrt(np.einsum("ij,ij->i", out, out)) < margin + self.thickness[k]
                continue
            if frames.same(f0, f1) or not len(x):
                continue
            # a collider scaled unevenly: the exact primitive enclosing it (sdf.lower_bound),
            # as its first-order distance is not 1-Lipschitz
            d0, ratio0 = sdf.lower_bound(self.shape[k], self.dims[k], f0, x)
            d1, ratio1 = sdf.lower_bound(self.shape[k], self.dims[k], f1, x)
            turn = float(np.linalg.norm(f1.rotation * f1.scale - f0.rotation * f0.scale, 2))
            sweep = float(np.linalg.norm(f1.translation - f0.translation)) \
                + turn * np.linalg.norm(x - f0.translation, axis=1)
            reach = margin + self.thickness[k] + sweep
            near |= (d0 < reach / ratio0) | (d1 < reach / ratio1)
        return near

    def _mesh_candidates(self, k, control, x, ids_free, x_free, reach_free, kernels):
        """The free particles that may touch mesh collider k during the step: near the box that
        holds the mesh during the whole step (refitted by MeshSet.prepare), then near its surface
        at the step's start (one query per particle and step), the margin widened by how far
        any surface point moves in the step (mesh.py MeshSet.surface_sweep: deformation and
        the frame's motion, rotation included). x_free (m, 3) [m] and reach_free (m,) [m]: the
        positions and reaches of the particles ids_free (m,)."""
        f0 = control.collider_frame[k]
        sweep = self.meshes.surface_sweep(k, control, f0, control.collider_target[k])
        margin = reach_free + sweep + self.thickness[k]
        lo, hi = self.meshes.root_boxes(k)
        q = frames.to_local(f0, x_free)
        out = np.maximum(np.maximum(lo - q, q - hi), 0.0)
        near = np.nonzero(np.einsum("ij,ij->i", out, out) < margin * margin)[0]
        if not near.size:
            return ids_free[:0]
        margin = margin[near]
        phi = self.meshes.distances(kernels, k, control, f0, np.ascontiguousarray(q[near]),
                                    ids_free[near], float(margin.max()), sweep,
                                    float(self.thickness[k]), x)
        keep = phi < margin
        found = ids_free[near[keep]]
        # what lets the substeps skip the candidates that stay out of reach (mesh_query.mesh_far)
        self.meshes.clearance(k, x, found, phi[keep], sweep)
        return found

    # ------------------------------------------------------------------ placement per substep
    def placements(self, control, substeps):
        """Every collider's placement in every substep of the next step, as arrays
        (S = substeps, C = colliders): approximate (S, C) bool first-order SDF; abc (S, C, 3) its
        scaled dimensions (sdf.placement); R (S, C, 3, 3), t (S, C, 3) [m], sc (S, C, 3) the
        frame at the substep's end and Rb, tb, sb the same at its start; moving (S, C) bool.
        A collider moves from the Control's placement now to its target, interpolated
        (frames.interpolate); one whose target is its placement (the same object) is at rest."""
        S, C = substeps, self.count
        approximate, moving = np.zeros((S, C), bool), np.zeros((S, C), bool)
        abc, t, sc, tb, sb = (np.zeros((S, C, 3)) for _ in range(5))
        R, Rb = np.zeros((S, C, 3, 3)), np.zeros((S, C, 3, 3))
        for k in range(C):
            f0, f1 = control.collider_frame[k], control.collider_target[k]
            if f1 is f0:                               # at rest: every substep the same
                R[:, k], t[:, k], sc[:, k] = f0
                moving_k = False
            else:
                R[:, k], t[:, k], sc[:, k], moving_k = frames.interpolate_steps(f0, f1, S)
            Rb[0, k], tb[0, k], sb[0, k] = f0              # a substep starts where the last ended
            Rb[1:, k], tb[1:, k], sb[1:, k] = R[:-1, k], t[:-1, k], sc[:-1, k]
            moving[:, k] = moving_k
            if moving_k and not np.array_equal(f0.scale, f1.scale):
                for s in range(S):                     # the SDF's dimensions follow the scale
                    approximate[s, k], abc[s, k] = sdf.placement(self.shape[k], self.dims[k],
                                                                 sc[s, k])
            else:
                approximate[:, k], abc[:, k] = sdf.placement(self.shape[k], self.dims[k],
                                                             sc[0, k])
        return approximate, abc, R, t, sc, Rb, tb, sb, moving

    def kernel_args(self, control, substeps, radius, contacts):
        """The colliders group of loop.run_substeps' arguments: material per collider (the
        Control's), each particle's restitution (n,) (the Control's: a contact bounces by the
        larger of its particle's and its collider's) and friction (n,) (the Control's: a
        contact takes project.combined_friction of its particle's and its collider's), the
        particle radii (n,) [m], the collide stage's candidates that the particle projection
        takes (contacts.projected: not those of rigid bodies' particles, collision/rigid.py)
        and the placements."""
        return (self.shape, self.thickness, control.collider_static_friction,
                control.collider_friction, control.collider_restitution,
                control.particle_restitution, control.particle_friction, radius) \
            + contacts.projected \
            + self.placements(control, substeps) \
            + (self.meshes.kernel_args(control.mesh_vertices, control.mesh_target),)

    def end_step(self, control):
        """The targets are reached: they become the placements now (mesh vertices too)."""
        control.collider_frame = list(control.collider_target)
        control.mesh_vertices[:] = control.mesh_target


def primitive_candidates(shape, approximate, abc, R, t, s, take, X, reach, extra, out):
    """The NumPy kernel of the collide stage's broad phase against primitives: out[k, i] =
    phi_k(x_i) < reach_i + extra_k for every collider k in ``take``, phi_k the signed distance
    the projection uses (sdf.collider_sdf, the same operations as sdf.evaluate). shape (C,)
    int64, approximate (C,) bool and abc (C, 3) from sdf.placement, R (C, 3, 3), t (C, 3) [m],
    s (C, 3) each collider's frame, take (C,) bool, X (3, m) [m] the positions' coordinate
    rows, reach (m,) [m], extra (C,) [m]; out (C, m) bool, written for the rows in take only."""
    for k in np.nonzero(take)[0]:
        Rk, tk = R[k], t[k]
        d0, d1, d2 = X[0] - tk[0], X[1] - tk[1], X[2] - tk[2]
        q0 = d0 * Rk[0, 0] + d1 * Rk[1, 0] + d2 * Rk[2, 0]
        q1 = d0 * Rk[0, 1] + d1 * Rk[1, 1] + d2 * Rk[2, 1]
        q2 = d0 * Rk[0, 2] + d1 * Rk[1, 2] + d2 * Rk[2, 2]
        phi = sdf.collider_sdf(shape[k], approximate[k], abc[k], s[k], q0, q1, q2)[0]
        np.less(phi, reach + extra[k], out=out[k])

"""The substep loop, in NumPy: the kernel table's run_substeps (kernels/compiled_loop.py is its
compiled mirror, which runs a whole step in one call, so Python runs once per frame).

Jakobsen's loop ("Advanced Character Physics", section 2), ``substeps`` times per step:

    drag        exact exponential air drag and wind, on x* (forces.apply_drag)
    integrate   x' = x + (x - x*) k + a h^2 (integrator.predict); pinned particles on the line
                from their position at the step's start to their target; the mesh colliders'
                vertices at the substep's start and end (collision/mesh_query.place_meshes)
    relax       ``iterations`` sweeps: sticks, soft pins, volumes, contacts between bodies
                (Jacobi, mass splitting), colliders (projection with friction, depenetration
                bounded by ``allowance``; after the bodies, so nothing ends a substep pressed
                into one), embedded points of tetrahedral bodies, shape matching, the
                contacts of rigid bodies solved on the bodies (collision/rigid.py: Gauss-Seidel,
                2 x contact_iterations passes), joints between rigid bodies
    velocity    rigid bodies' impacts on colliders made plastic or bouncing by restitution
                (collision/impacts.py rigid_velocities), their bouncing impacts on each other
                (rigid_pair_velocities), shape-matching damping, restitution, and the overlap
                resolved without speed moved into x* (collision/project.release_overlap); all
                on x* only

then a check that every position is finite. The Simulation prepares what the loop reads once
per step (simulation.py): accelerations, the collide stage's candidates, each collider's
placement in every substep. The arguments come in groups, as tuples, so the compiled mirror takes
exactly the same ones:

    state      (X, X_prev)                     (3, n) float64 [m] positions, positions a substep ago
    integrate  (a_h2, keep, lim)               (3, n) [m], (n,), (n,) [m] or empty: predict's
    drag       forces.drag_terms(...)          apply_drag's arrays (q = 0: no drag)
    pins       (ids, start, target)            (p,) int64, (p, 3) [m] at the step's start,
                                               (p, 3) [m]
    soft_pins  constraints/pins.SoftPinSolver.kernel_args(control, h)
    sticks     constraints/sticks.StickSolver.kernel_args(omega)
    volumes    constraints/volume.VolumeSolver.kernel_args(rest)
    shapes     constraints/shapes.ShapeSolver.kernel_args()
    joints     constraints/joints.JointSolver.kernel_args(target): rigid-body joints between
               clusters, solved after shape matching in every iteration
    colliders  collision/colliders.Colliders.kernel_args(...): per collider and per substep,
               and last the mesh group (collision/mesh_query.py lists it)
    points     collision/points.TetraPoints.kernel_args()
    contacts   collision/contacts.Contacts.kernel_args()
    bodies     collision/contacts.Contacts.body_args(inv_mass, allowance, on_solid): the body
               contacts of this step
               (collision/bodies.py solve_bodies' arrays)
    rigid      collision/rigid.RigidContacts.kernel_args(contact_iterations): this step's
               contacts of rigid bodies, solved on the bodies, and the velocity pass's bodies
    counts     (substeps, iterations, contact_iterations, first, last)   int: the body
               contacts are solved contact_iterations times in each iteration (Jacobi passes:
               less overlap); the call runs the step's substeps first to last - 1 of
               ``substeps`` (0 and substeps: the whole step; a step in rounds calls it once a
               round with the body contacts found again in between, simulation.py)
    scalars    (h, gravity_norm, allowance)    [s], [m/s^2], [m] the depenetration bound per
                                               substep (max_depenetration_speed h)

Returns the index of the first substep after which a position was not finite, or -1.
"""

import math

import numpy as np

from .collision.bodies import solve_bodies
from .collision.edges import project_edges
from .collision.mesh_query import place_meshes
from .collision.project import project_collider, project_points, release_overlap, restitution
from .collision.impacts import rigid_pair_velocities, rigid_velocities
from .collision.rigid import solve_rigid
from .constraints.joints import solve_joints
from .constraints.pins import solve_soft_pins
from .constraints.shapes import damp_shapes, solve_shapes
from .constraints.sticks import solve_sticks
from .constraints.volume import solve_volumes
from .forces import apply_drag
from .integrator import predict


def run_substeps(state, integrate, drag, pins, soft_pins, sticks, volumes, shapes, joints,
                 colliders, points, contacts, bodies, rigid, counts, scalars, edges):
    X, Xp = state
    a_h2, keep, lim = integrate
    d_ids, d_drift, d_normal, d_along, d_decay, d_g_h2 = drag
    pin_ids, pin_start, pin_target = pins
    q_ids, q_anchor, q_target, q_inv_mass, q_alpha, q_lam = soft_pins
    (si, sj, rest, inv_mass, s_alpha, s_denom, s_lam, kind, batch_offsets,
     group_task_start, task_range_start, range_lo, range_hi, omega, one_sided) = sticks
    v_particles, v_particle_start, v_tris, v_tri_start, v_w, v_rest, v_alpha, v_lam = volumes
    (m_particles, m_rest_offset, m_start, m_color_offsets, m_mass, m_collider_boost, m_w,
     m_alpha, m_lam, m_body_boost, m_damping, m_keep, m_any_damped, m_origin, m_rot, m_exact,
     m_basis, m_skip_early, m_skip_late) = shapes
    (j_bodies, j_entries, j_entry_start, j_inv_mass, j_inv_inertia, j_free, j_c0, j_R0, j_c, j_R,
     j_moved, j_body, j_anchor, j_axis, j_perp, j_kind, j_swing, j_range, j_alpha, j_drive_on,
     j_drive_alpha, j_target, j_lam, j_order, j_color_offsets, j_island, j_island_done,
     j_island_order, j_island_start, j_passes, j_tolerance,
     j_disjoint) = joints
    (c_shape, c_thickness, c_mu_s, c_mu_k, c_restitution, p_restitution, p_friction, radius,
     pair_particle, pair_start,
     by_particle, by_particle_start, by_particle_collider, approximate, abc, R, t, sc, Rb, tb, sb,
     moving, mesh) = colliders
    mesh_ids = mesh[17]
    rank_start, rank_points, tet, weight, inv_c2 = points
    (depth, used, touching, normal, motion, collider, point_depth, point_used, X_pred, lift,
     lifted) = contacts
    (b_idx, b_kind, b_side, b_dist, b_mu, b_jit, b_inv_mass, b_allowance, b_dx, b_dl, b_share,
     b_particle, b_start, b_slot, b_touch, b_split, b_act, b_solid) = bodies
    any_bodies = b_idx.shape[0] > 0
    r_bodies, r_touch = rigid[4], rigid[20]
    substeps, iterations, contact_iterations, first, last = counts
    h, gravity_norm, allowance = scalars
    e_a, e_b, e_cand, e_collider, e_group_start, e_inv_mass, e_depth, e_used = edges
    n_colliders = c_shape.shape[0]
    any_bounce = bool(np.any(p_restitution > 0))          # a particle's own restitution
    any_restitution = bool(np.any(c_restitution > 0)) or any_bounce
    keep_pred = any_restitution or bool(r_bodies.size)
    # the shape solve weighs body contacts by these flags: none may be left from a step before
    # that had contacts between bodies, when this one has none (then it never clears them)
    b_touch.fill(False)
    for s in range(first, last):
        # drag, then integrate
        if d_ids.size:
            apply_drag(X, Xp, d_ids, d_drift, d_normal, d_along, d_decay, d_g_h2)
        predict(X, Xp, a_h2, keep, lim)
        if pin_ids.size:
            X[:, pin_ids] = (pin_start + (pin_target - pin_start) * ((s + 1) / substeps)).T
            Xp[:, pin_ids] = (pin_start + (pin_target - pin_start) * (s / substeps)).T
        if keep_pred:
            X_pred[:] = X
        if mesh_ids.size:                      # the mesh colliders' vertices in this substep
            place_meshes(mesh[0], mesh[1], mesh[6], mesh_ids, sc, sb, s, substeps, mesh[19],
                         mesh[3], mesh[4])
        for a in (depth, used, point_depth, point_used, e_depth, e_used):
            a.fill(0.0)
        touching.fill(False)
        if any_bodies:
            b_touch.fill(False)
        if r_bodies.size:
            r_touch.fill(False)
        v_lam.fill(0.0)
        m_lam.fill(0.0)
        if r_bodies.size:
            rigid[30][~rigid[28]] = 0.0         # the body contacts' friction sums: a held
            #                                     contact's run on while it holds
        j_lam.fill(0.0)
        # relax
        for it in range(iterations):
            solve_sticks(X, si, sj, rest, inv_mass, s_alpha, s_denom, s_lam, kind,
                         batch_offsets, group_task_start, task_range_start, range_lo, range_hi,
                         omega, one_sided, it > 0, it < iterations - 1)
            if q_ids.size:
                solve_soft_pins(X, q_ids, q_anchor, q_target, (s + 1) / substeps, q_inv_mass,
                                q_alpha, q_lam, it > 0)
            solve_volumes(X, v_particles, v_particle_start, v_tris, v_tri_start, v_w, v_rest,
                          v_alpha, v_lam)
            # bodies against bodies (collision/bodies.py), then the colliders: an immovable
            # collider has the last word, so a pile's bottom layer ends each substep on the
            # ground, not pressed into it by the layers above
            for _ in range(contact_iterations if any_bodies else 0):
                solve_bodies(X, Xp, b_idx, b_kind, b_side, b_dist, b_mu, b_jit, b_inv_mass,
                             b_allowance, b_dx, b_dl, b_share, b_particle, b_start, b_slot,
                             b_touch, b_split, b_act, b_solid)
            # the clusters whose fit weighs no collider contact, before the contacts, which
            # then have the last word over their goals (constraints/shapes.py, "Order")
            if m_particles.size:
                solve_shapes(X, m_particles, m_rest_offset, m_start, m_color_offsets, m_mass,
                             m_collider_boost, m_w, m_alpha, m_lam, touching, b_touch,
                             m_body_boost, m_origin, m_rot, m_basis, m_skip_early)
            for k in range(n_colliders):
                idx = pair_particle[pair_start[k]:pair_start[k + 1]]
                if idx.size == 0:
                    continue
                a, b, c = abc[s, k]
                project_collider(X, Xp, idx, c_shape[k], approximate[s, k], a, b, c,
                                 c_thickness[k], radius, R[s, k], t[s, k], sc[s, k], Rb[s, k],
                                 tb[s, k], sb[s, k], moving[s, k], c_mu_s[k], c_mu_k[k],
                                 p_friction, k, depth, used, touching, normal, motion, collider,
                                 allowance, lift, lifted, mesh)
            if e_cand.size:
                project_edges(X, Xp, e_a, e_b, e_cand, e_collider, e_group_start, e_inv_mass,
                              e_depth, e_used, c_shape, c_thickness, c_mu_s, c_mu_k, p_friction,
                              radius, approximate[s], abc[s], R[s], t[s], sc[s], Rb[s], tb[s],
                              sb[s], moving[s], allowance, lift, lifted, mesh)
            if rank_points.size and n_colliders:
                project_points(X, Xp, rank_start, rank_points, tet, weight, inv_c2, c_shape,
                               c_thickness, c_mu_s, c_mu_k, p_friction, approximate[s], abc[s],
                               R[s], t[s], sc[s], Rb[s], tb[s], sb[s], moving[s], point_depth,
                               point_used, allowance, lift, lifted, mesh)
            # the rigid clusters whose fit weighs this substep's collider contacts
            if m_particles.size:
                solve_shapes(X, m_particles, m_rest_offset, m_start, m_color_offsets, m_mass,
                             m_collider_boost, m_w, m_alpha, m_lam, touching, b_touch,
                             m_body_boost, m_origin, m_rot, m_basis, m_skip_late)
            # contacts of rigid bodies, on the bodies (collision/rigid.py): after the fit, which
            # gives their poses, and before the joints, which read them
            if r_bodies.size:
                solve_rigid(X, Xp, m_particles, m_rest_offset, m_origin, m_rot, rigid, c_shape,
                            approximate[s], abc[s], c_thickness, radius, R[s], t[s], sc[s],
                            Rb[s], tb[s], sb[s], moving[s], c_mu_s, c_mu_k, p_friction, mesh,
                            depth, used, touching, normal, motion, collider, allowance, None,
                            None)
            if j_order.size:
                solve_joints(X, m_particles, m_rest_offset, m_mass, m_origin, m_rot, m_exact,
                             j_bodies, j_entries, j_entry_start, j_inv_mass, j_inv_inertia,
                             j_free, j_c0, j_R0, j_c, j_R, j_moved, j_body, j_anchor, j_axis,
                             j_perp, j_kind, j_swing, j_range, j_alpha, j_drive_on,
                             j_drive_alpha, j_target, j_lam, j_order, j_color_offsets, j_island,
                             j_island_done, j_island_order, j_island_start, j_passes,
                             j_tolerance, j_disjoint)
        # velocity pass
        if r_bodies.size:
            # the contacts between bodies measure their arrival on x* as it was before the
            # collider impacts' impulses (a crate bouncing off the ground would otherwise
            # bring that bounce into its arrival at the crate above it)
            Xp0 = Xp.copy() if any_bounce else None
            rigid_velocities(X, Xp, X_pred, m_particles, m_start, m_origin, m_rot, rigid,
                             touching, collider, normal, motion, c_restitution, p_restitution,
                             2.0 * gravity_norm * h * h)
            if any_bounce:
                rigid_pair_velocities(X, Xp, X_pred, Xp0, m_particles, m_start, m_origin,
                                      m_rot, rigid, (touching, collider, normal, motion),
                                      p_restitution, 2.0 * gravity_norm * h * h)
        if m_any_damped:
            damp_shapes(X, Xp, m_particles, m_start, m_color_offsets, m_mass, m_damping, m_keep)
        if any_restitution:
            restitution(X, Xp, X_pred, h, gravity_norm, c_restitution, p_restitution, touching,
                        collider, normal, motion, rigid[22])
        release_overlap(Xp, lift, lifted)       # last: restitution measured the true arrival
        # (rigid_velocities measured its own before moving x*)
        # one reduction per substep; the sum can overflow with finite entries, so confirm
        if not math.isfinite(float(X.sum())) and not np.isfinite(X).all():
            return s
    return -1


# the position of each argument group in run_substeps' arguments (Simulation._loop_args builds
# them in this order; a step in rounds replaces the bodies and counts groups between rounds)
ARG = {name: k for k, name in enumerate(run_substeps.__code__.co_varnames[
    :run_substeps.__code__.co_argcount])}

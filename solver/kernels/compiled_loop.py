"""The substep loop compiled: the mirror of loop.run_substeps (its docstring gives the loop and
the argument groups), so a whole step is one call from Python and Python runs once per frame.

It calls the compiled kernels (compiled.py, compiled_contact.py) in loop.py's order with the same
arguments, so the two backends agree bit for bit. What loop.py does in NumPy around the kernels
(clearing the contact scratch, copying x' for restitution, releasing the overlap, the finiteness
check) rides on two parallel passes over the particles, one opening each substep and one
closing it (compiled_forces.drag_and_predict and close_substep): as serial loops they were a
tenth of a 65k-particle cloth's one-thread time, work no extra thread could share. One thing
the NumPy loop does not do: a collider's candidate pair whose particle is still too near where
the step started to reach the collider is skipped (compiled_candidates.candidate_clearance, from
the SDF's 1-Lipschitz bound), which changes no bit, since its projection would have changed
nothing (tests/solver/test_backends.py: skipping with half that margin breaks the identity).
Importing this module requires Numba.
"""

import numpy as np
from numba import njit

from .compiled import damp_shapes, solve_shapes, solve_soft_pins, solve_volumes
from .compiled_sticks import solve_sticks
from .compiled_forces import close_substep, drag_and_predict, restitution
from .compiled_bodies import solve_bodies
from .compiled_joints import solve_joints
from .compiled_impacts import rigid_pair_velocities, rigid_velocities
from .compiled_rigid import solve_rigid
from .compiled_mesh import place_meshes
from .compiled_candidates import candidate_clearance, least_clearance
from .compiled_contact import project_colliders, project_points
from .compiled_edges import edge_clearance, project_edges_clear


@njit(cache=True, fastmath=False)
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
    any_restitution = False
    for k in range(n_colliders):
        if c_restitution[k] > 0:
            any_restitution = True
    any_bounce = False                        # a particle's own restitution
    for i in range(p_restitution.shape[0]):
        if p_restitution[i] > 0:
            any_restitution = True
            any_bounce = True
            break
    keep_pred = any_restitution or r_bodies.shape[0] > 0
    n = X.shape[1]
    # (3, n) [m] x* before the collider impacts' pass, when bodies bounce off each other
    Xp0 = np.empty((3, n) if any_bounce and r_bodies.shape[0] > 0 else (3, 0))
    drag_slot = np.full(n, -1, np.int64)      # (n,) each particle's drag entry, -1 for none
    for q in range(d_ids.shape[0]):
        drag_slot[d_ids[q]] = q
    # the colliders' candidate pairs that stay clear until their particle has moved far
    # enough from where the step starts (compiled_candidates.candidate_clearance)
    X0 = X.copy()                                          # (3, n) [m] the step's start
    clear = np.empty(by_particle_collider.shape[0])        # (q,) [m] per candidate pair
    least2 = np.empty(n if by_particle.shape[0] else 0)     # (n,) [m^2] least clearance^2
    slot = np.empty(n if by_particle.shape[0] else 0, np.int64)   # (n,) index in by_particle
    act = np.empty(n if by_particle.shape[0] else 0, np.bool_)    # (n,) project_colliders'
    if by_particle.shape[0]:
        candidate_clearance(X0, by_particle, by_particle_start, by_particle_collider, c_shape,
                            approximate, abc, c_thickness, radius, R, t, sc, moving, mesh, clear)
        least_clearance(by_particle, by_particle_start, clear, least2, slot)
    # and the edges' candidates (compiled_edges.edge_clearance)
    e_clear = np.empty(e_cand.shape[0])                    # (qe,) [m] per edge candidate
    e_maybe = np.empty(e_cand.shape[0], np.bool_)         # (qe,) project_edges' scratch
    e_moved = np.zeros(n if e_cand.shape[0] else 0, np.bool_)   # (n,) its scratch
    e_moved2 = np.zeros(n if e_cand.shape[0] else 0)      # (n,) [m^2] its scratch
    # (p,) the edge candidates' particles, each once (e_moved marks them, then is cleared)
    e_parts = np.empty(2 * e_cand.shape[0], np.int64)
    n_parts = 0
    for q in range(e_cand.shape[0]):
        for i in (e_a[e_cand[q]], e_b[e_cand[q]]):
            if not e_moved[i]:
                e_moved[i] = True
                e_parts[n_parts] = i
                n_parts += 1
    e_parts = e_parts[:n_parts]
    for j in range(n_parts):
        e_moved[e_parts[j]] = False
    if e_cand.shape[0]:
        edge_clearance(X0, e_a, e_b, e_cand, e_collider, c_shape, abc, c_thickness, radius, R,
                       t, sc, approximate, moving, mesh, e_clear)
    # and those of the rigid bodies' candidates, solved on the bodies (compiled_rigid)
    r_particle, r_collider = rigid[17], rigid[18]
    r_clear = np.empty(r_particle.shape[0])                # (Qc,) [m] per rigid candidate
    if r_particle.shape[0]:
        candidate_clearance(X0, r_particle, np.arange(r_particle.shape[0] + 1), r_collider,
                            c_shape, approximate, abc, c_thickness, radius, R, t, sc, moving,
                            mesh, r_clear)
        # and each particle's least clearance over its candidates (compiled_rigid's skip of a
        # clear particle's candidates at once)
        r_pclear = rigid[26]
        for jj in range(r_particle.shape[0]):
            r_pclear[r_particle[jj]] = np.inf
        for jj in range(r_particle.shape[0]):
            cl = r_clear[jj]
            # a NaN clearance (a degenerate collider) keeps its candidates tested
            r_pclear[r_particle[jj]] = min(r_pclear[r_particle[jj]], cl) if cl == cl \
                else -np.inf
    # the shape solve weighs body contacts by these flags: none may be left from a step before
    # that had contacts between bodies, when this one has none (then it never clears them)
    b_touch[:] = False
    for s in range(first, last):
        # drag, then integrate (one pass; loop.py makes two calls: the same bits per
        # particle), copying x' for restitution and clearing the contact scratch on the way
        drag_and_predict(X, Xp, drag_slot, d_drift, d_normal, d_along, d_decay, d_g_h2, a_h2,
                         keep, lim, X_pred, keep_pred, depth, used, touching)
        f1 = (s + 1) / substeps
        f0 = s / substeps
        for q in range(pin_ids.shape[0]):
            p = pin_ids[q]
            for c in range(3):
                X[c, p] = pin_start[q, c] + (pin_target[q, c] - pin_start[q, c]) * f1
                Xp[c, p] = pin_start[q, c] + (pin_target[q, c] - pin_start[q, c]) * f0
                if keep_pred:
                    X_pred[c, p] = X[c, p]
        if mesh_ids.shape[0]:
            place_meshes(mesh[0], mesh[1], mesh[6], mesh_ids, sc, sb, s, substeps, mesh[19],
                         mesh[3], mesh[4])
        if any_bodies:
            b_touch[:] = False
        if r_bodies.shape[0]:
            r_touch[:] = False
            # the body contacts' friction sums: a held contact's run on while it holds
            r_held, r_sums = rigid[28], rigid[30]
            for q in range(r_held.shape[0]):
                if not r_held[q]:
                    r_sums[q, 0] = 0.0
                    r_sums[q, 1] = 0.0
        point_depth[:] = 0.0
        point_used[:] = 0.0
        e_depth[:] = 0.0
        e_used[:] = 0.0
        v_lam[:] = 0.0
        m_lam[:, :] = 0.0
        j_lam[:, :] = 0.0
        # relax
        for it in range(iterations):
            solve_sticks(X, si, sj, rest, inv_mass, s_alpha, s_denom, s_lam, kind,
                         batch_offsets, group_task_start, task_range_start, range_lo, range_hi,
                         omega, one_sided, it > 0, it < iterations - 1)
            if q_ids.shape[0]:
                solve_soft_pins(X, q_ids, q_anchor, q_target, f1, q_inv_mass, q_alpha, q_lam,
                                it > 0)
            if v_rest.shape[0]:
                solve_volumes(X, v_particles, v_particle_start, v_tris, v_tri_start, v_w, v_rest,
                              v_alpha, v_lam)
            # bodies against bodies, then the colliders: an immovable collider has the last
            # word, so a pile's bottom layer ends each substep on the ground, not pressed into
            # it by the layers above (which made a resting pile creep and never sleep)
            for _ in range(contact_iterations if any_bodies else 0):
                solve_bodies(X, Xp, b_idx, b_kind, b_side, b_dist, b_mu, b_jit, b_inv_mass,
                             b_allowance, b_dx, b_dl, b_share, b_particle, b_start, b_slot,
                             b_touch, b_split, b_act, b_solid)
            # the clusters whose fit weighs no collider contact, before the contacts (loop.py)
            if m_particles.shape[0]:
                solve_shapes(X, m_particles, m_rest_offset, m_start, m_color_offsets, m_mass,
                             m_collider_boost, m_w, m_alpha, m_lam, touching, b_touch,
                             m_body_boost, m_origin, m_rot, m_basis, m_skip_early)
            # every collider in one pass (loop.py goes collider by collider: the same bits,
            # since a contact touches its own particle only)
            if by_particle.shape[0]:
                project_colliders(X, Xp, by_particle, by_particle_start, by_particle_collider,
                                  c_shape, approximate[s], abc[s], c_thickness, radius, R[s],
                                  t[s], sc[s], Rb[s], tb[s], sb[s], moving[s], c_mu_s, c_mu_k,
                                  p_friction, depth, used, touching, normal, motion, collider,
                                  allowance, lift, lifted, mesh, X0, clear, least2, slot,
                                  act)
            if e_cand.shape[0]:
                project_edges_clear(X, Xp, e_a, e_b, e_cand, e_collider, e_group_start,
                                    e_inv_mass, e_depth, e_used, c_shape, c_thickness, c_mu_s,
                                    c_mu_k, p_friction, radius, approximate[s], abc[s], R[s],
                                    t[s], sc[s], Rb[s], tb[s], sb[s], moving[s], allowance,
                                    lift, lifted, mesh, X0, e_clear, e_maybe, e_moved,
                                    e_parts, e_moved2)
            if rank_points.shape[0] and n_colliders:
                project_points(X, Xp, rank_start, rank_points, tet, weight, inv_c2, c_shape,
                               c_thickness, c_mu_s, c_mu_k, p_friction, approximate[s], abc[s],
                               R[s], t[s], sc[s], Rb[s], tb[s], sb[s], moving[s], point_depth,
                               point_used, allowance, lift, lifted, mesh)
            # the rigid clusters whose fit weighs this substep's collider contacts
            if m_particles.shape[0]:
                solve_shapes(X, m_particles, m_rest_offset, m_start, m_color_offsets, m_mass,
                             m_collider_boost, m_w, m_alpha, m_lam, touching, b_touch,
                             m_body_boost, m_origin, m_rot, m_basis, m_skip_late)
            # contacts of rigid bodies, on the bodies (collision/rigid.py): after the fit, which
            # gives their poses, and before the joints, which read them
            if r_bodies.shape[0]:
                solve_rigid(X, Xp, m_particles, m_rest_offset, m_origin, m_rot, rigid, c_shape,
                            approximate[s], abc[s], c_thickness, radius, R[s], t[s], sc[s],
                            Rb[s], tb[s], sb[s], moving[s], c_mu_s, c_mu_k, p_friction, mesh,
                            depth, used, touching, normal, motion, collider, allowance, X0,
                            r_clear)
            if j_order.shape[0]:
                solve_joints(X, m_particles, m_rest_offset, m_mass, m_origin, m_rot, m_exact,
                             j_bodies, j_entries, j_entry_start, j_inv_mass, j_inv_inertia,
                             j_free, j_c0, j_R0, j_c, j_R, j_moved, j_body, j_anchor, j_axis,
                             j_perp, j_kind, j_swing, j_range, j_alpha, j_drive_on,
                             j_drive_alpha, j_target, j_lam, j_order, j_color_offsets, j_island,
                             j_island_done, j_island_order, j_island_start, j_passes,
                             j_tolerance, j_disjoint)
        # velocity pass
        if r_bodies.shape[0]:
            if any_bounce:              # x* before the collider impacts' impulses (loop.py)
                for c in range(3):
                    for i in range(n):
                        Xp0[c, i] = Xp[c, i]
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
        # the overlap released into x*, and every position checked finite, in one pass
        if close_substep(X, Xp, lift, lifted):
            return s
    return -1

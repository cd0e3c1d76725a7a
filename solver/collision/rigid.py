"""Contact of rigid bodies solved on the bodies: mass and inertia at the contact point.

A rigid body is a shape-matching cluster at compliance 0 with nothing pinned and no particle
shared with another cluster (constraints/shapes.py: ShapeSolver.rigid_body). Its contacts with
colliders and with other such bodies (or with anything immovable) are not projections of its
particles followed by a weighted fit; they are contacts between bodies, solved on the bodies'
poses after the fit, as the joints are (Mueller, Macklin, Chentanez, Jeschke and Kim,
"Detailed Rigid Body Simulation with Extended Position Based Dynamics", SCA 2020, section
3.5). The particle projection turned a body about its contacts (the fit weighed a touched
particle 1e4 times), so a cube with a corner over another's edge tipped off and stacks in a
pile crept and slid off; benchmarks/prototype_rigid/README.md measured the difference.

For a contact between bodies a and b with normal n (from b to a) at points P_a, P_b (the
contact's corners on each side, by their gradient weights: collision/bodies.py gives the
constraints C of every kind, vertex-triangle, edge-edge, particle pair and capsule axes), and
against a collider (its signed distance, the tunnelling guard and its surface motion as
collision/project.py computes them, at the particle's place on its body):

    w_b(P, n) = 1 / M_b + (r x n) . I_b^-1 (r x n),   r = P - c_b, I_b^-1 = R I0^-1 R^T
    into = -(u . n)              u: the contact points' relative motion over the substep
    c = min(pen, max(into + s_max, 0))        (as project.py, without its lift: below)
    lambda_n = c / (w_a + w_b)       c_b += p / M, R_b turned by I^-1 (r x p)
    then, once every contact of the pass has its lambda_n (below), from the contact points'
    relative motion u' now, t = u' - n (u' . n):
    lambda_t = |t| / (w_a(t^) + w_b(t^))       the impulse that stops the slip
    friction taken: static when lambda_t + used <= mu_s depth, else min(max(mu_k depth - used,
    0), lambda_t), with depth and used the sums of lambda_n and of friction taken over the
    substep so far (per contact between bodies, where mu_s = mu_k = the contact's mu; per
    particle against colliders; the particle projection's rule, in impulses [kg m] instead of
    distances: Coulomb bounds the impulses; bounded in distance it held a box past its
    friction angle wherever the body's response is not the same in every direction).

Normal impulses first (2026-11-29): each pass applies every contact's lambda_n (the contacts
between bodies, then the colliders'), then every contact's friction, as a sequential impulse
solver takes its normal rows before its friction rows (Bullet's default order). Before, each
contact took its friction right after its own normal impulse: that impulse, at a corner away
from the centre of mass, turns the body and slides that very corner sideways (a box leaning 25
degrees on a wall, its foot corner pushed up 10.6 um slid 2.3 um along x and 2.2 um along y),
the friction spent its bound stopping that slide, and the next corner's normal impulse turned
the body back. So friction held less than its coefficient near its limit: that box, whose
statics hold it from friction 0.128, crept 0.7 mm/s at 0.14 and 0.2 mm/s at 0.16 (a steady
creep whose speed fell as friction rose: viscous, not Coulomb), 8 % of the foot's friction
spent off the line of its slide. Neither more passes (4, 8, 32: the same creep) nor friction
accumulated as a vector (projected Gauss-Seidel: 0.67 mm/s) nor the substep before's normal
impulse as the bound's floor (unchanged) mended it, and a coupled 3 x 3 solve of each contact
halved it at best, a box then sliding 35 % too far on a slab (measured 2026-11-29). Normal
impulses first: the box stands still from 0.14 (at 0.13, 2 % above its threshold, it creeps
0.11 mm/s) and slides at 0.125 (tests/solver/test_static_friction.py: on a plane or a pinned
slab, against a pinned box or a box collider). The friction phase of the contacts between
bodies runs in the opposite order to the pass's normal phase (forward normals, reversed
friction, then the reverse): in the same order the box on a slab, where both its contacts are
between bodies, slid sideways along the wall, 2.2 mm in 2 s at 1.3 x its threshold (the wall
contacts' friction spent pushing sideways, not up); 0.006 mm so. In the 100-crate pile
(benchmarks/crates.py --drops; docs/performance.md has the figures) more crates sleep sooner: its
drop 7, where a crate tilted on a corner slid down another on kinetic contacts at 1.5 cm/s from
frame 104 to 200, sleeps whole from frame 99. A contact still being pushed out of an overlap
deeper than one substep's push (its c held to into + s_max below pen) takes no friction in that
pass: it carries no load, and its friction, taken after every push, lifted a cube started 5 mm
in the floor out at 1.05 m/s, above the depenetration speed (1 m/s;
tests/solver/test_depenetration.py).

Static friction (anchors; the friction anchors of persistent contact manifolds, as in Box2D and
PhysX, applied to position-based friction): u' measures the slip of one substep, and the
contacts' Gauss-Seidel leaves a little of it in every substep, always the same way for a body
at rest (a corner's normal impulse turns the body, which moves the other corners sideways, and
each contact can take back only what its share of the load allows), so resting stacks crept:
two boxes turned on each other drifted 2.4 mm/s (the upper) and 0.5 mm/s (the lower, on the
ground), without end (4 passes: 0.8, 8 passes: 0.2 mm/s), and most drops of the 100-crate pile
never fell asleep. So a resting contact that holds (static, and closing by at most ``resting``
= 2 |g| h^2 as the pass that takes the anchor measures it: not an impact) anchors its two
material points: a vertex-triangle or edge-edge contact between bodies keeps its gradient
weights on its four corners (the vertex and the face point, the two edge points), which name
the same material points wherever the corners go, on a body or on pinned particles that move
(anchored in world space, a box on a moving pinned platform kept slipping, 0.7 mm in 0.5 s); a
collider contact on a primitive collider at rest keeps the particle's place. From then on its
slip is the anchors' gap, the slip since the anchor was set, and its Coulomb sums run over the
same span (depth and used are not reset each substep while it holds: the load that arrives at
one contact in one substep and at another in the next holds both). It lets go when the bound is
exceeded (kinetic: the slip of each substep again), when the contact is apart at the first pass
of a solve (of each relaxation iteration; a contact between bodies: by more than ``resting``,
below), or on an impact; a step's contacts are new, so anchors last a step at most. The same
boxes: 0.07 and 0.02 mm/s. The pile: every crate asleep by 10 s in 8 of drops 1 to 12 and 20 of
drops 13 to 36 (4 and 5 before), 86 and 72 of 100 asleep at 5 s (61 and 53). Two choices were
measured there (with the earlier world-space anchors: 10 and 17 drops asleep by 10 s): a contact
between bodies that lets go keeps its sums until the substep ends (the next starts them again;
separate sums for the substep: 8 and 13); and the approach tested is the anchoring pass's own,
after the earlier passes' corrections, so an impact's substep may anchor in a later pass with
the impact's normal impulse in its sums (the largest approach of any pass of the substep
instead, with separate sums too: 7 of drops 1 to 12). Either way the stored friction lasts a
step at most. Not anchored: particle pairs and capsule axes, whose contact points roll over the
bodies rather than staying on one material point; a contact in the pass that measures an impact
(anchored through landings, a tilted crate dropped on another took up to 60 % longer to settle,
in one drop of ten sliding at 10 to 15 cm/s first); a collider contact on a moving collider or a
mesh.

Apart by up to ``resting`` at a solve's start, a contact between bodies keeps its anchor
(2026-11-29; before, any gap let it go): a resting contact reads just apart there (both bodies
fell by the same g h^2 in the prediction, and the substep before left it touching or a hair
off), so the anchor was taken again at every substep where the body had slipped to, and a
steady load sideways crept: a box on another under gravity tilted 11.3 degrees (a slope of
0.2, friction 0.5) slid 4.2 mm in 2 s, 0.18 mm now; in drop 3 of the 100-crate pile a crate
wedged between two towers pushed one along at 1 cm/s, the tower's bottom crate sliding on the
crate under it with all its contacts "anchored" at each substep's end. Over drops 1 to 72 of
the pile the sleep changed within the drops' spread (every crate asleep by 5 s in 22 of 72
drops, 21 before; 73.9 of 100 asleep at 5 s on average, 71.4 before). Collider contacts keep
the rule of before (any gap lets go): a body resting on a floor is pressed into it by the
prediction (the slope's lower box moved 0.07 mm in the 2 s); one pressed on a wall by another
body was not measured. ``resting`` scales with |g|: without gravity (a stack held by joints
or pushes) any gap lets go again.

Without the particle projection's split impulse (project.py: the overlap a particle did not
move into owed to x* as well, so it leaves without speed): moved onto a rigid body's previous
pose, it kept the 100-crate pile from ever resting (5 of 100 asleep after 10 s, crates rocking
at 1 to 5 cm/s; without it every crate sleeps by 5 s; measured 2026-11-26). Without it, a
body pushed out of an overlap leaves at most at max_depenetration_speed: the bound on c above
keeps the correction beyond the approach to s_max per substep.

Gauss-Seidel: contact after contact, each reading the poses the earlier ones left, PASSES
times per solve, each pass in two phases (normal impulses, then friction: above), every other
pass in reverse order of the contacts between bodies (one order only left a pile creeping
sideways) and the friction phase in the order opposite to its pass's normals, the colliders'
contacts after them in each phase (an immovable collider has the last word, as in the
particle loop). Deterministic and parallel:
the contacts between bodies are ordered once per step by nested parts of space
(_nested_order: the bodies in contact halved at the median of their longest extent, up to
four times; a contact belongs to the smallest part holding all its movable bodies, and the
levels are solved smallest parts first), so the parts of one level share no movable body and
run in parallel in the compiled kernel; a body's collider candidates (by particle, then
collider) are coloured by their rank among its own. The NumPy kernel below solves a colour of
collider candidates as one batch and the contacts between bodies one after another in plain floats
(collision/rigid_pairs.py); the compiled mirror (kernels/compiled_rigid.py) solves the parts
of a level, and the bodies' collider contacts, in parallel. The same operations in the same
order on each body: bit for bit. The spatial order replaced a greedy colouring, whose
colours took a parallel region each (slower than none on two threads). The same quality over
twelve drops of the 100-crate pile (99.75 of 100 resting at 5 s on average, 99.58 before;
the benchmark's drop now all asleep by 6 s, where 53 were at 7 s), its first 48 frames 8.26
to 7.85 ms a frame on two threads (measured 2026-11-26). Bodies are read from the fit's
pose (ShapeSolver.origin, rot: c_b = origin, the rest offsets being from the centre of mass), a
corner's position is c_b + R_b q_e while the solve runs, and the particles of the bodies that
moved are put on their poses once at the end, where the joints read them.

A body's corners that meet the ground in one substep, solved one after another and pushed
only, leave it lifted at a corner (a 0.4 m cube dropped 2 m flat: corners +3.3, +1.6, +1.6,
0 mm above the ground after the solve; more passes change nothing, every constraint being
met), and that becomes speed through x*: the velocity pass below takes it out. Letting a
contact pull its particle back within the substep (projected Gauss-Seidel on the substep's
sum) was measured and left out: it made a block sliding on a slope take 23 % too much
friction (the pulled corner kept the friction it had taken, its neighbours took more).

The velocity pass (collision/impacts.rigid_velocities, after a substep's relaxation; Mueller et
al. 2020, section 3.6): every collider contact of the substep that arrived faster than 2 |g| h
(an impact; its arrival measured from x' before any correction) gets the impulse that sets its
normal speed to its restitution target (e the larger of the collider's and the body's
particle's, Simulation.set_restitution), whatever its sign after the position solve,

    v_n = (x - x* - m) . n   [m per substep]   x* the position a substep ago, m the collider
                                                surface's motion over the substep
    target = -e v_arrive >= 0,   lambda = (target - v_n) / w_b(x, n),
    x* of each particle j of the body -= lambda n / M + (I^-1 (r x lambda n)) x (x_j - c_b)

(its velocity changes, not x), impacts.VELOCITY_SWEEPS Gauss-Seidel sweeps over the impacts in
the candidates' order. The restitution of a rigid body's collider contacts is this, not the
particle pass (project.restitution leaves its particles out). Why: a position solve stops only
the part of a substep's approach that went below the surface, and its corrections of several
corners leave the body turning; a crate dropped on an edge onto an 18 degree ramp at 20
substeps kept enough turn to tip over the next edge and tumbled down it (0.3 to 0.8 m/s after 3
s), and a cube dropped flat from 1 to 2 m tilted 6 to 90 degrees. Only the approaching impacts,
one sweep: the ramp held, the flat drops did not; every impact, one sweep: 1 m still tilted 6
degrees; four sweeps: every flat drop lands flat (tests/solver/test_bodies.py; 0.0 to 0.1
degrees). Resting contacts are left alone: zeroing their approach too kept 62 of the 100-crate
pile rocking at 1 to 3 cm/s. Bodies that carry a joint are left to the particle restitution
(RigidContacts.impact_body; with the pass a ragdoll dropped face down took 7 s to rest instead
of 1.25) (measured 2026-11-26). Contacts between bodies take a velocity pass only where the
contact bounces (impacts.rigid_pair_velocities: e, the largest restitution of the contact's
particles, above 0; 2026-11-27), so they are not made plastic: a 0.4 m box dropped flat 1 m
onto a pinned box rises 6.6 cm at e = 0, the position solve's own rebound (at e = 0.5, 0.25 m:
e^2 of the drop). Making every impact between bodies plastic, as at colliders, would change
every pile that lands; not measured yet.

Contacts with cloth, soft bodies and loose particles stay particle projections
(collision/bodies.py, project.py), with the rigid side carried by the fit's contact weights.
"""

import numpy as np

from .frames import Frame
from ..constraints.joints import _iw, _mul, _rotate
from . import rigid_colliders
from .rigid_pairs import Pairs

PASSES = 2


class RigidContacts:
    """Which contacts of this step are solved on the bodies, their order (parts of space for
    the contacts between bodies, colours for the collider candidates), and the solve's arrays
    (n = particles, K = clusters, e = cluster entries, B = bodies in the solve, Q the contacts
    between bodies, Qc the collider candidates, S parts, L levels)."""

    def __init__(self, model, shapes, joints):
        n = model.particle_count
        k = len(shapes.start) - 1
        self._shapes, self._k = shapes, k
        # (n,) int64 each particle's cluster entry when it is in exactly one cluster, else -1
        self.entry = np.full(n, -1, np.int64)
        count = np.bincount(shapes.particles, minlength=n)
        single = count[shapes.particles] == 1
        self.entry[shapes.particles[single]] = np.nonzero(single)[0]
        # (K,) int64 each cluster's first particle: where its part of space is (_nested_order)
        self._first_particle = shapes.particles[shapes.start[:-1]]
        self._cluster = shapes.cluster
        self._inv_particle = model.particle_inv_mass   # (n,) [1/kg] 0 = pinned
        self.inv_mass = joints.inv_mass           # (K + 1,) [1/kg] per cluster (joints.py)
        self.inv_inertia = joints.inv_inertia     # (K + 1, 3, 3) rest frame [1/(kg m^2)]
        # (n,) int64 the movable rigid body (cluster) of each particle this step, -1 for none
        self.body = np.full(n, -1, np.int64)
        # (n,) int64 the same where the body carries no joint, else -1: the particles whose
        # impacts the velocity pass takes (rigid_velocities; a jointed body's stay the particle
        # restitution's: the joints move it after the poses were taken, and with the pass a
        # ragdoll dropped face down took 7 s to rest, 1.25 s without, measured 2026-11-26)
        self.impact_body = np.full(n, -1, np.int64)
        self._jointed = np.zeros(k, bool)         # (K,) bool the clusters that carry a joint
        self._jointed[np.asarray(joints.bodies, np.int64)] = True
        self.c = np.zeros((k, 3))                 # (K, 3) [m] scratch: centres while solving
        self.R = np.zeros((k, 3, 3))              # (K, 3, 3) scratch: rotations
        self.moved = np.zeros(k, bool)            # (K,) bool scratch: moved this solve
        self.touch = np.zeros(n, bool)            # (n,) bool touched another body (substep)
        # for the compiled kernel's skip of a clear particle's collider candidates at once
        # (kernels/compiled_rigid._collider_pass; the NumPy kernel takes every candidate):
        # (n,) [m] scratch, the least clearance of each particle's candidates this step, and
        # (Qc,) int64 for each position in cand_by_body where the next particle's run starts
        self.particle_clear = np.zeros(n)
        self.cand_run_next = np.zeros(0, np.int64)
        self.resting = np.zeros(1)                # (1,) [m] kernel_args' resting
        self.clear()

    def clear(self):
        """Nothing solved on the bodies this step."""
        z = np.zeros(0, np.int64)
        self.bodies = z                           # (B,) int64 bodies with a contact
        self.entries = z                          # (E,) int64 their entries, body by body
        self.entry_body = z                       # (E,) int64 the body of each
        self.idx = np.zeros((0, 4), np.int64)     # (Q, 4) int64 corners, part by part
        self.kind = z                             # (Q,) int64 bodies.PAIR ... SEGMENTS
        self.side = np.zeros(0)                   # (Q,) +-1 or 0
        self.dist = np.zeros(0)                   # (Q,) [m] contact distance
        self.mu = np.zeros(0)                     # (Q,) friction
        self.jit = np.zeros((0, 3))               # (Q, 3) unit: pairs' and edges' sense
        self.part_start = np.zeros(2, np.int64)   # (S + 1,) into the Q contacts per part
        self._friction_state(0)
        self._candidate_friction_state(0)
        self.level_start = np.array([0, 1], np.int64)   # (L + 2,) into the S parts per level
        self.cand_particle = z                    # (Qc,) int64 collider candidates' particle
        self.cand_collider = z                    # (Qc,) int64 and collider
        self.cand_start = np.zeros(1, np.int64)   # (colours + 1,) into the Qc candidates
        # the same candidates body by body, each body's in their order above: the compiled
        # kernel solves the bodies in parallel (a collider contact moves its own body only)
        self.cand_by_body = z                     # (Qc,) int64 candidate indices, by body
        self.cand_body_start = np.zeros(1, np.int64)   # (G + 1,) into cand_by_body per body
        self.cand_run_next = z                    # (Qc,) int64 (__init__)
        # (I,) int64 the candidates whose particle's impacts the velocity pass takes (its body
        # carries no joint: impact_body), rising: the compiled pass visits these alone
        self.cand_impact = z

    def select(self, contacts, awake, x, kernels):
        """Take this step's contacts with a movable rigid body out of the particle solves
        (contacts.keep_body_contacts, keep_candidates) and order them (the kernel table's
        order_rigid, collision/rigid_order.py): the contacts between bodies by parts of space
        (_nested_order), the collider candidates by colour. awake (n,) bool the particles not
        asleep (a sleeping body is immovable in a contact); x (n, 3) [m] positions (where the
        parts lie)."""
        sh = self._shapes
        body = self.body
        body.fill(-1)
        self.impact_body.fill(-1)
        self.touch.fill(False)
        if not self._k or not sh.rigid_body.any():
            self.clear()
            return
        e = self.entry
        ok = (e >= 0) & awake
        ok[ok] = sh.rigid_body[self._cluster[e[ok]]]
        body[ok] = self._cluster[e[ok]]
        mine = np.nonzero(body >= 0)[0]
        self.impact_body[mine] = np.where(self._jointed[body[mine]], -1, body[mine])
        (on, q, self.part_start, self.level_start, mine, self.cand_particle,
         self.cand_collider, self.cand_start, self.cand_impact, self.cand_by_body,
         self.cand_body_start, self.cand_run_next, self.bodies, self.entries,
         self.entry_body) = kernels.order_rigid(
            contacts.body_idx, body, awake & (self._inv_particle > 0),
            np.ascontiguousarray(x[self._first_particle]), contacts.pair_particle,
            contacts.pair_start, self.impact_body, sh.start)
        # contacts between bodies: every corner on a movable rigid body or immovable
        contacts.keep_body_contacts(~on)
        self.idx = contacts.body_idx[q]
        self.kind = contacts.body_kind[q]
        self.side = contacts.body_side[q]
        self.dist = contacts.body_dist[q]
        self.mu = contacts.body_mu[q]
        self.jit = contacts.body_jit[q]
        self._friction_state(len(q))
        # collider candidates of rigid bodies' particles, coloured by rank within the body
        contacts.keep_candidates(~mine)
        self._candidate_friction_state(len(self.cand_particle))

    def _friction_state(self, q):
        """The static friction state of this step's Q contacts between bodies (Pairs)."""
        self.anchor_on = np.zeros(q, bool)        # (Q,) bool the contact holds an anchor
        # (Q, 4) the contact's gradient weights on its four corners when it was anchored
        # (bodies.py): the same material points, wherever the corners are now
        self.anchor = np.zeros((q, 4))
        # (Q, 2) [kg m] the normal impulse and the friction taken: this substep's, or since
        # the anchor was set while it holds
        self.fr_sums = np.zeros((q, 2))
        # (Q, 8) scratch: what a pass's normal phase leaves its friction phase (solve_rigid):
        # the contact's normal m (3, unit), its corners' weights w (4) and its approach into
        # [m] over the substep; (Q,) bool the contacts whose normal impulse was applied
        self.pair_saved = np.zeros((q, 8))
        self.pair_acted = np.zeros(q, bool)

    def _candidate_friction_state(self, q):
        """The static friction state of this step's Qc collider candidates."""
        self.cand_held = np.zeros(q, bool)        # (Qc,) bool the candidate holds an anchor
        self.cand_anchor = np.zeros((q, 3))       # (Qc, 3) [m] where, in world space
        # (Qc, 2) [kg m] the normal impulse and the friction taken since the anchor was set
        self.cand_sums = np.zeros((q, 2))
        # (Qc, 8) scratch, as pair_saved: the normal n (3, unit), the collider surface's motion
        # over the substep at the contact (3) [m], the approach into [m] and the normal
        # impulse lam [kg m] of this pass; (Qc,) bool the candidates that touched
        self.cand_saved = np.zeros((q, 8))
        self.cand_acted = np.zeros(q, bool)

    def kernel_args(self, contact_iterations=1, resting=0.0):
        """The rigid group of loop.run_substeps' arguments: PASSES per contact iteration
        (Simulation(contact_iterations=...), as the particle contacts take that many passes);
        resting [m] the most a contact may close in a substep and still take an anchor, and
        the most a held contact between bodies may be apart at a solve's start and keep it (2
        |g| h^2, the velocity pass's line between resting contact and impact)."""
        self.resting[0] = resting
        return (self.body, self.entry, self.inv_mass, self.inv_inertia, self.bodies, self.entries,
                self.entry_body, self.c, self.R, self.moved, self.idx, self.kind, self.side,
                self.dist, self.mu, self.jit, self.part_start, self.cand_particle,
                self.cand_collider, self.cand_start, self.touch, PASSES * contact_iterations,
                self.impact_body, self.cand_by_body, self.cand_body_start, self.level_start,
                self.particle_clear, self.cand_run_next, self.anchor_on, self.anchor,
                self.fr_sums, self.cand_held, self.cand_anchor, self.cand_sums, self.resting,
                self.cand_impact, self.pair_saved, self.pair_acted, self.cand_saved,
                self.cand_acted)


# ------------------------------------------------------------------ the kernel (NumPy)
def solve_rigid(X, Xp, particles, rest_offset, origin, rot, rigid, shape, approximate, abc,
                thickness, radius, R, t, s, Rb, tb, sb, moving, mu_s, mu_k, friction, mesh, depth,
                used, touching, normal, motion, collider, allowance, X0, clear):
    """One solve of the rigid contacts (module docstring), in place on X (3, n) [m], and on the
    fit's poses origin (K, 3) [m], rot (K, 3, 3) of the bodies that moved. Xp (3, n) [m]
    positions a substep ago; particles (e,) int64 and rest_offset (e, 3) [m] the clusters'
    entries and rest offsets (ShapeSolver's); rigid: RigidContacts.kernel_args(); per collider
    (C,) for this substep: shape, approximate, abc (C, 3), thickness [m], frames R (C, 3, 3),
    t, s (C, 3) and Rb, tb, sb at the substep's start, moving, mu_s, mu_k; radius (n,) [m];
    friction (n,) the particles' Coulomb coefficients (a contact's: project.combined_friction
    of the collider's and the particle's); mesh the mesh group; the contact state depth, used
    (n,) (impulses [kg m] at a rigid body's particles), touching, normal, motion, collider as
    project.py's; allowance [m] the depenetration bound. X0, clear: the compiled kernel's skip
    of candidates still clear of their collider (kernels/compiled_rigid.py); unused here, where
    every candidate is taken (the same bits). Each pass applies every contact's normal impulse,
    then every contact's friction (module docstring)."""
    (body, entry, inv_mass, inv_inertia, bodies, entries, entry_body, c, Rm, moved, idx, kind,
     side, dist, mu, jit, part_start, cand_particle, cand_collider, cand_start, touch,
     passes) = rigid[:22]
    level_start = rigid[25]
    if not bodies.size:
        return
    c[bodies] = origin[bodies]
    Rm[bodies] = rot[bodies]
    moved[bodies] = False
    st = _Solve(X, Xp, rest_offset, body, entry, inv_mass, inv_inertia, c, Rm, moved)
    pairs = Pairs(st, idx, kind, side, dist, mu, jit) if len(kind) else None
    for p in range(passes):
        # every contact's normal impulse, then every contact's friction (module docstring)
        for phase in (0, 1):
            if pairs is not None:
                pairs.solve(st, part_start, level_start, (p + phase) % 2 == 1, allowance,
                            touch, p == 0, rigid[28], rigid[29], rigid[30], rigid[34][0], phase,
                            rigid[36], rigid[37])
            for col in range(len(cand_start) - 1):
                lo, hi = cand_start[col], cand_start[col + 1]
                for k in np.unique(cand_collider[lo:hi]):
                    sel = np.arange(lo, hi)[cand_collider[lo:hi] == k]
                    if phase == 0:
                        rigid_colliders.normal_phase(
                            st, cand_particle[sel], k, shape[k], approximate[k], abc[k],
                            thickness[k], radius, Frame(R[k], t[k], s[k]),
                            Frame(Rb[k], tb[k], sb[k]), moving[k], mesh, depth, touching,
                            normal, motion, collider, allowance, sel, p == 0, rigid[31],
                            rigid[38], rigid[39])
                        continue
                    sel = sel[rigid[39][sel]]
                    if sel.size:
                        rigid_colliders.friction_phase(
                            st, cand_particle[sel], sel, shape[k], moving[k], mu_s[k], mu_k[k],
                            friction, depth, used, rigid[31], rigid[32], rigid[33],
                            rigid[34][0], rigid[38])
    _place(st, particles, bodies, entries, entry_body, origin, rot)


class _Solve:
    """The arrays one solve reads and writes (solve_rigid's)."""

    def __init__(self, X, Xp, q, body, entry, inv_mass, inv_inertia, c, R, moved):
        self.X, self.Xp, self.q, self.body, self.entry = X, Xp, q, body, entry
        self.inv_mass, self.inv_inertia = inv_mass, inv_inertia
        self.c, self.R, self.moved = c, R, moved

    def positions(self, ids):
        """(3 lists of (m,)) [m] particles ids (m,) where they are now: on their body's pose
        c + R q, or (not on a movable body, or -1: then 0) in X."""
        ids = np.asarray(ids)
        if ids.size and ids.min() >= 0:
            b = self.body[ids]
            if b.min() >= 0:            # the usual call: every point on a body
                return list(self.c[b].T + _rotated(self.R[b], self.q[self.entry[ids]]))
        real = ids >= 0
        safe = np.where(real, ids, 0)
        b = np.where(real, self.body[safe], -1)
        out = self.X[:, safe]                   # (3, m) copies: X, and 0 for -1 below
        out[:, ~real] = 0.0
        on = np.nonzero(b >= 0)[0]
        if on.size:
            bb = b[on]
            q = self.q[self.entry[ids[on]]]
            out[:, on] = self.c[bb].T + _rotated(self.R[bb], q)
        return list(out)

    def before(self, ids):
        """(3 lists of (m,)) [m] positions a substep ago (0 for -1)."""
        ids = np.asarray(ids)
        if ids.size and ids.min() >= 0:
            return list(self.Xp[:, ids])
        real = ids >= 0
        out = self.Xp[:, np.where(real, ids, 0)]
        out[:, ~real] = 0.0
        return list(out)

    def response(self, b, P, n):
        """(m,) w_b(P, n) [1/kg]: generalized inverse mass of bodies b (m,) at points P along
        unit n (3 lists of (m,)); 0 where b < 0."""
        on = b >= 0
        w = np.zeros(len(b))
        if on.any():
            bb = b[on]
            r = [P[i][on] - self.c[bb, i] for i in range(3)]
            x = _cross(r, [n[i][on] for i in range(3)])
            a = _iw(self.R[bb], self.inv_inertia[bb], x)
            w[on] = self.inv_mass[bb] + (x[0] * a[0] + x[1] * a[1] + x[2] * a[2])
        return w

    def push(self, b, P, p, sign):
        """Apply the impulses sign p (3 lists of (m,)) [kg m] at points P to bodies b (m,)
        (skipping b < 0; no body twice)."""
        on = b >= 0
        if not on.any():
            return
        bb = b[on]
        pp = [p[i][on] * sign for i in range(3)]
        r = [P[i][on] - self.c[bb, i] for i in range(3)]
        self.c[bb] = self.c[bb] + np.array(pp).T * self.inv_mass[bb, None]
        th = _iw(self.R[bb], self.inv_inertia[bb], _cross(r, pp))
        self.R[bb] = _rotate(self.R[bb], th)
        self.moved[bb] = True


def _cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _rotated(R, q):
    """(3, m) R q for R (m, 3, 3) and rest offsets q (m, 3): joints._mul on q's columns (each
    row's sum left to right, the compiled kernel's)."""
    return np.array(_mul(R, list(q.T)))


def _place(st, particles, bodies, entries, entry_body, origin, rot):
    """Put the particles of the bodies that moved on their poses, and store the poses for the
    joints."""
    mv = st.moved[entry_body]
    if not mv.any():
        return
    moved = bodies[st.moved[bodies]]
    origin[moved] = st.c[moved]
    rot[moved] = st.R[moved]
    e, b = entries[mv], entry_body[mv]
    pid = particles[e]
    q, Rb, cb = st.q[e], st.R[b], st.c[b]
    for i in range(3):
        st.X[i, pid] = cb[:, i] + (Rb[:, i, 0] * q[:, 0] + Rb[:, i, 1] * q[:, 1]
                                   + Rb[:, i, 2] * q[:, 2])

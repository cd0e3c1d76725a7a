"""Sleeping bodies (Jakobsen, "Advanced Character Physics", section 8, the seed's "sleeping
bodies"; the islands of Box2D and Bullet, Catto 2005): a body at rest stops being simulated, so
it costs little and does not creep, until something touches or drives it.

Islands: the connected components of the constraint graph (sticks, shape-matching clusters,
volume triangles, tetrahedral bodies), found at build time by ``islands`` (vectorised
hook-and-shortcut label propagation, Shiloach and Vishkin 1982: no loop over particles) and kept
as Model.particle_island. Particles joined by no constraint are islands of one. Nothing but a
contact acts between two islands, so freezing one never pulls on another.

Falling asleep: after every step, an island that rests on something (one of its particles
touched a collider or another body in the step's last substep, or one of its edges met a
collider there, collision/edges.py, or it is hard-pinned) and whose
fastest particle moves slower than SLEEP_SPEED (its displacement over the step / dt) for
SLEEP_TIME of simulated time in a row goes to sleep. A body drifting slowly in free flight does
not, nor one hanging on soft pins only: a spring approaches its rest exponentially, and
freezing it at 1 cm/s would leave it visibly short of it (a contact or a hard pin stops the
motion it resists within a substep). Asleep, an island is paused: its x and x* are restored
exactly after every step (it does not creep; Simulation.v reads 0 for it), and waking resumes
it from that state, so a stack whose contacts hold it with a steady x - x* (split impulse)
wakes without a jolt. Inside the step it is still too: no acceleration, drag or velocity in
the substeps (x* = x), no collider candidates, no shape solve of its clusters (but those of a
joint's bodies, whose frames the joint solve reads from it), no search for contacts with
another sleeping body or within one (Simulation._loop_args, _collide). Waking (Simulation): a
collider that moves near it, a pin whose target moves, another body coming into contact, a
changed force setting (gravity, wind, air drag, damping, force fields, compliance, friction,
restitution, pressure), a kick (explode, set_velocities),
a hand move (move_particles), or Simulation.wake(). The sleep state (the island clocks and
flags) lives in the State, so checkpoints carry it and a resume is bit-identical.
"""

import numpy as np

SLEEP_SPEED = 0.01       # [m/s] an island whose every particle is slower than this is still
SLEEP_TIME = 0.5         # [s] still this long in a row: it sleeps


def islands(n, edges):
    """(n,) int64 island of each particle, numbered 0..I-1 in order of their smallest particle:
    the connected components of the graph on n particles with edges (k, 2) int64.
    Hook-and-shortcut: every root takes the smallest root among its edges' ends, then every
    particle jumps to its root; O(log n) rounds of vectorised work."""
    lab = np.arange(n, dtype=np.int64)
    if not len(edges):
        return lab
    i = np.ascontiguousarray(edges[:, 0], dtype=np.int64)
    j = np.ascontiguousarray(edges[:, 1], dtype=np.int64)
    while True:
        li, lj = lab[i], lab[j]
        differ = li != lj
        if not differ.any():
            break
        li, lj = li[differ], lj[differ]
        low = np.minimum(li, lj)
        np.minimum.at(lab, li, low)          # roots only (lab is flat): a forest, links go down
        np.minimum.at(lab, lj, low)
        while True:                          # shortcut: every particle to its root
            nxt = lab[lab]
            if np.array_equal(nxt, lab):
                break
            lab = nxt
    _, island = np.unique(lab, return_inverse=True)
    return island.astype(np.int64).reshape(n)


def constraint_edges(stick_pairs, shape_particles, shape_cluster, volume_tris, tetra_particles):
    """(k, 2) int64 edges of the constraint graph: every stick, consecutive members of each
    shape-matching cluster, two edges of each volume triangle, three of each tetrahedron."""
    sp, sc = shape_particles, shape_cluster
    same = sc[1:] == sc[:-1]
    parts = [np.asarray(stick_pairs, np.int64).reshape(-1, 2),
             np.column_stack([sp[:-1][same], sp[1:][same]]).astype(np.int64).reshape(-1, 2),
             np.asarray(volume_tris, np.int64)[:, [0, 1]].reshape(-1, 2),
             np.asarray(volume_tris, np.int64)[:, [1, 2]].reshape(-1, 2)]
    tp = np.asarray(tetra_particles, np.int64).reshape(-1, 4)
    parts += [tp[:, [0, k]] for k in (1, 2, 3)]
    return np.concatenate(parts)


class Sleep:
    """The islands of a Model and the per-step sleep bookkeeping on a State (I = islands)."""

    def __init__(self, model, enabled, components=islands):
        self.enabled = bool(enabled)
        # the connected components of a graph (islands, or the kernel table's compiled mirror)
        self.components = components
        self.island = model.particle_island                       # (n,) int64
        self.count = int(self.island.max()) + 1 if self.island.size else 0
        # particles sorted by island, and where each island's run starts: per-island maxima by
        # one reduceat
        self.order = np.argsort(self.island, kind="stable")       # (n,) int64
        self.start = np.searchsorted(self.island[self.order], np.arange(self.count))   # (I,)
        # (I,) [m^2/kg] each island's largest exposed area per mass, A / m: times the drag
        # coefficient, its fastest drag rate k (forces.drag_particles), which bounds what the
        # wind adds to its reach (reach.py); 0 where nothing feels the air
        rate = model.particle_area * model.particle_inv_mass
        self.air_rate = np.maximum.reduceat(rate[self.order], self.start) if self.count else \
            np.zeros(0)

    def asleep(self, state):
        """(n,) bool particles of sleeping islands."""
        return state.island_asleep[self.island]

    def wake_particles(self, state, ids):
        """Wake the islands of particles ids (k,) int64 (their clocks restart)."""
        if ids.size and state.island_asleep.any():
            isl = self.island[ids]
            state.island_asleep[isl] = False
            state.island_still[isl] = 0.0

    def wake_all(self, state):
        state.island_asleep[:] = False
        state.island_still[:] = 0.0

    def update(self, state, dt, supported, step_motion2, body_idx):
        """After a step of dt [s], in which each particle moved step_motion2 (n,) [m^2] (its
        squared distance from where the step started: integrator.squared_motion): advance the
        still clock of each awake island that is supported (one of its particles touched
        something in the last substep or is hard-pinned: ``supported`` (n,) bool) and whose
        fastest particle moved slower than SLEEP_SPEED over the step (|x - x_start| / dt: the
        motion itself, not the last substep's x - x*, which contact corrections can leave
        non-zero in a body that does not move); restart the others'. Put to sleep those still
        for SLEEP_TIME (x and x* are then kept as they are: a pause). A body in free flight
        never sleeps. Islands joined by this step's body contacts (body_idx (K, 4) int64
        particles, -1 for none: collision/bodies.py) fall asleep together, when the least still
        of them has been still for SLEEP_TIME (Box2D's islands include contacts): a stack
        sleeps as one, so no resting body ever leans on a frozen one."""
        if not self.enabled or not self.count:
            return
        fastest = np.maximum.reduceat(step_motion2[self.order], self.start)
        held = np.logical_or.reduceat(supported[self.order], self.start)
        limit = (SLEEP_SPEED * dt) ** 2
        awake = ~state.island_asleep
        still = held & (fastest < limit)
        state.island_still[awake & ~still] = 0.0
        state.island_still[awake & still] += dt
        clock = state.island_still
        if len(body_idx):
            group = self.joined(body_idx)
            least = np.full(int(group.max()) + 1, np.inf)
            np.minimum.at(least, group, clock)
            clock = least[group]
        state.island_asleep |= awake & (clock >= SLEEP_TIME)

    def joined(self, body_idx):
        """(I,) int64 a label per island, the same for islands that the body contacts body_idx
        (K, 4) int64 (particles, -1 for none; slot 0 always valid) join, directly or through
        others: the islands of the constraint graph plus this step's contacts."""
        if self.count < 2:       # one island joins nothing (a lone cloth's 0.23 ms, twice a step)
            return np.arange(self.count, dtype=np.int64)
        valid = body_idx >= 0
        isl = self.island[np.where(valid, body_idx, body_idx[:, :1])]
        # (K, 3) a corner on another island than slot 0's: the only pairs that join, taken
        # without building the others (a lone cloth colliding with itself has none: building
        # the pairs of its 12,000 contacts cost 0.3 ms a call at N = 64, twice a step)
        cross = isl[:, 1:] != isl[:, :1]
        pairs = np.column_stack([np.broadcast_to(isl[:, :1], cross.shape)[cross],
                                 isl[:, 1:][cross]])
        return self.components(self.count, np.ascontiguousarray(pairs))

    def wake_by_drivers(self, state, control, pinned, soft, colliders, margin):
        """Before a step: wake the sleeping islands whose pins' targets move (pinned (p,),
        soft (s,) int64 the hard- and soft-pinned particles), or that a moving collider may
        reach within ``margin`` [m] (colliders.Colliders.near_moving)."""
        if not state.island_asleep.any():
            return
        if pinned.size:
            self.wake_particles(state, pinned[np.any(control.pin_target != state.x[pinned],
                                                     axis=1)])
        if soft.size:
            moved = np.any(control.soft_pin_target != control.soft_pin_anchor, axis=1)
            self.wake_particles(state, soft[moved])
        ids = np.nonzero(self.asleep(state))[0]
        if ids.size:
            self.wake_particles(state, ids[colliders.near_moving(control, state.x[ids], margin)])
        # a cloth asleep on a rail: its vertices may all lie farther from the rail than the
        # margin, its edges do not (collision/edges.py)
        edges = colliders.edges
        if ids.size and edges.count and colliders.edges_moving(control):
            e = edges.sleeping_ends(self.asleep(state))
            if e.size:
                xa, xb = state.x[edges.a[e]], state.x[edges.b[e]]
                half = 0.5 * np.sqrt(np.einsum("ij,ij->i", xb - xa, xb - xa))
                near = colliders.near_moving(control, 0.5 * (xa + xb), margin + half)
                self.wake_particles(state, edges.a[e[near]])

    def asleep_ids(self, state):
        """(k,) int64 particles of sleeping islands, or None when none sleeps."""
        if not state.island_asleep.any():
            return None
        ids = np.nonzero(self.asleep(state))[0]
        return ids if ids.size else None

    def wake_by_contacts(self, state, contacts):
        """After the collide stage found this step's body contacts (contacts.body_idx (K, 4)
        int64 particles, -1 for none; collision/bodies.py): wake every sleeping island that a
        contact joins to a moving one (awake, and not still in the last step: its still clock
        is 0), repeatedly, so a body woken this way wakes the sleeping bodies it touches; then
        drop the contacts between sleeping particles only (they would move nothing). A body
        that is awake but resting does not wake its sleeping neighbours: they would otherwise
        wake each other in turn and never sleep. Returns whether an island woke."""
        idx = contacts.body_idx
        if not len(idx) or not state.island_asleep.any():
            return False
        valid = idx >= 0
        isl = self.island[np.where(valid, idx, 0)]
        woke = False
        while True:
            asleep = valid & state.island_asleep[isl]
            moving = valid & ~asleep & (state.island_still[isl] == 0.0)
            mixed = asleep.any(axis=1) & moving.any(axis=1)
            if not mixed.any():
                break
            self.wake_particles(state, idx[mixed][asleep[mixed]])
            woke = True
        keep = (valid & ~asleep).any(axis=1)
        if not keep.all():
            contacts.set_body_contacts(idx[keep], contacts.body_kind[keep],
                                       contacts.body_side[keep], contacts.body_dist[keep],
                                       contacts.body_mu[keep], contacts.body_jit[keep])
        return woke


def same_fields(a, b):
    """Whether force fields a and b (fields.ForceFields or None) act the same: the add-on sets
    a new, often equal, one every frame, which must not wake sleeping bodies."""
    if a is b:
        return True
    if a is None or b is None or type(a) is not type(b):
        return False
    va, vb = vars(a), vars(b)
    if va.keys() != vb.keys():
        return False
    # the frame only seeds the fields' noise (fields.py): without noise it changes nothing
    noisy = np.any(np.asarray(va.get("noise", 0.0)) != 0)
    for key, x in va.items():
        y = vb[key]
        if key == "frame" and not noisy:
            continue
        try:
            if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
                if not (np.shape(x) == np.shape(y) and np.array_equal(x, y)):
                    return False
            elif not bool(x == y):
                return False
        except (TypeError, ValueError):         # not comparable: count it as a change
            return False
    return True

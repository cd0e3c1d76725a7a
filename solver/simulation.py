"""The Simulation: the loop that ties Model, State, Control and Contacts together.

One step of dt seconds is ``substeps`` substeps of h = dt / substeps (Jakobsen's loop, section 2
of "Advanced Character Physics", with Macklin et al.'s "Small Steps in Physics Simulation", SCA
2019: many one-iteration substeps stretch far less than few of many iterations; see README):

    accelerate once per step: gravity, air drag and wind (forces.py)
    collide    once per step: sleeping islands woken or kept (sleep.py); the broad phases find
               the body contacts (collision/body_stage.py) and collider candidates (collision/)
    in rounds  one call from Python, or, where a self-colliding cloth went where its contacts
               were not looked for, again from the step's start in rounds (rounds.py)
    for each substep of a round (loop.py; compiled, a round is one call from Python):
      drag        exact exponential air drag and wind on x* (forces.py)
      integrate   Verlet: x' = x + (x - x*) k + a h^2 (integrator.py); pins follow their targets
      relax       ``iterations`` times: sticks (block by block, colour by colour), soft pins,
                  volumes, contacts between bodies (``contact_iterations`` Jacobi passes),
                  colliders (tunnelling guard; last: loop.py says why), shape matching, joints
      velocity    shape-matching damping, restitution, overlap resolved without speed

Velocity is (x - x*) / h. Kernels come from the kernel table (kernels/__init__.py). A non-finite
position or a runaway particle (guard.py: RUNAWAY_FACTOR) restores the state and raises
SolverError naming the step, particle and cause. Results are bit-identical at any thread count
and on resume.
"""

import numpy as np

from . import backend as _backend
from .animated import AnimatedSettings, _check_int, _vec3
from .checks import _scalar
from .collision import frames
from .collision.body_stage import BodyContacts
from .collision.colliders import Colliders
from .collision.contacts import Contacts
from .collision.points import TetraPoints
from .collision.reach import particle_reach, scene_reach
from .collision.rigid import RigidContacts
from .constraints.joints import JointSolver
from .constraints.pins import SoftPinSolver
from .constraints.shapes import ShapeSolver
from .constraints.sticks import StickSolver
from .constraints.volume import VolumeSolver
from .forces import DragInputs, Wind, explosion_kick
from .guard import StepGuard
from .joint_control import JointControl
from .kernels import table
from .rounds import ROUNDS_GROWTH, Rounds
from .sleep import Sleep, same_fields
from .state import Checkpoint, Control, State

DEFAULT_SUBSTEPS = 40
DEFAULT_ITERATIONS = 1
# Jacobi passes over the body contacts per iteration (more: less overlap, not a resting pile)
DEFAULT_CONTACT_ITERATIONS = 1
DEFAULT_DAMPING = 0.0
# bodies at rest go to sleep (sleep.py): frozen exactly, skipped by most of the step
DEFAULT_SLEEP = True
# [kg/(m^2 s)] linear air drag on surfaces: a 150 g/m^2 cloth falls at about 1.5 m/s, as cotton
DEFAULT_AIR_DRAG = 1.0
# [m/s] the fastest a contact resolves an overlap the particle did not move into (it started
# inside, or a collider or pin put it there), without giving it speed (collision/project.py):
# 1 cm clears in 10 ms; a rigid body pushed out so hops at most v^2 / 2g = 5 cm
DEFAULT_MAX_DEPENETRATION_SPEED = 1.0


# the drag group of loop.run_substeps' arguments when no particle feels the air
_NO_DRAG = (np.zeros(0, np.int64), np.zeros((3, 0)), np.zeros((3, 0)), np.zeros(0, bool),
            np.zeros(0), np.zeros(3))


def _read_only(a):
    """A view of a that cannot be written through."""
    v = a.view()
    v.flags.writeable = False
    return v


class Simulation(AnimatedSettings, JointControl, StepGuard, Rounds):
    """Steps a Model. See the module docstring for the algorithm and the README for the API."""

    def __init__(self, model, substeps=DEFAULT_SUBSTEPS, iterations=DEFAULT_ITERATIONS,
                 gravity=(0.0, 0.0, -9.81), damping=DEFAULT_DAMPING, over_relaxation=1.0,
                 max_speed=None, air_drag=DEFAULT_AIR_DRAG, backend=None,
                 max_depenetration_speed=DEFAULT_MAX_DEPENETRATION_SPEED, sleep=DEFAULT_SLEEP,
                 contact_iterations=DEFAULT_CONTACT_ITERATIONS):
        self.model = model
        self.substeps = _check_int(substeps, "substeps", 1)
        self.iterations = _check_int(iterations, "iterations", 1)
        self.contact_iterations = _check_int(contact_iterations, "contact_iterations", 1)
        gravity = _vec3(gravity, "gravity")
        damping = _scalar(damping, "damping", 0.0, 1.0)
        self.over_relaxation = _scalar(over_relaxation, "over_relaxation", 0.1, 1.99)
        self.max_depenetration_speed = _scalar(max_depenetration_speed,
                                               "max_depenetration_speed", 0.0)   # [m/s]
        n = model.particle_count
        if max_speed is None:
            self.max_speed = None
        else:
            ms = np.asarray(max_speed, dtype=np.float64)
            ms = np.broadcast_to(ms, (n,)).copy() if ms.ndim == 0 else ms
            if ms.shape != (n,) or not np.all(np.isfinite(ms)) or np.any(ms <= 0):
                raise ValueError("max_speed: expected a positive number or (n,) array [m/s]")
            self.max_speed = ms                                       # (n,) [m/s]
        # "numba" (compiled kernels) or "numpy"; None = VERLET_BACKEND, else the fastest
        self.backend = _backend.choose(backend)
        self.kernels = table(self.backend)

        self._free = model.particle_inv_mass > 0    # (n,) bool
        self._pinned = np.nonzero(~self._free)[0]   # (p,) int64
        self._pin_slot = np.full(n, -1, np.int64)   # (n,) index into _pinned or -1
        self._pin_slot[self._pinned] = np.arange(self._pinned.size)
        self._radius = model.particle_radius        # (n,) float64 [m]
        self._radius_max = float(self._radius.max()) if n else 0.0
        self._collidable = self._free & ~model.particle_shielded   # (n,) bool collider reach

        self._soft = model.soft_pin_particles         # (s,) int64 soft-pinned particles
        self._soft_slot = np.full(n, -1, np.int64)    # (n,) index into _soft or -1
        self._soft_slot[self._soft] = np.arange(self._soft.size)

        self.sticks = StickSolver(model)
        self.soft_pins = SoftPinSolver(model)
        self.shapes = ShapeSolver(model)
        self.joints = JointSolver(model)
        self.volumes = VolumeSolver(model)
        self.points = TetraPoints(model)
        self.colliders = Colliders(model)
        self.contacts = Contacts(n, self.points.count, self.colliders.count, self.kernels)
        self.bodies = BodyContacts(model, self.kernels)
        # contacts of rigid bodies, solved on the bodies (after the fit, before the joints)
        self.rigid = RigidContacts(model, self.shapes, self.joints)
        self._awake = np.ones(n, bool)                  # (n,) bool all awake
        self.sleep = Sleep(model, sleep, self.kernels.islands)   # at rest: frozen till woken
        self.state = State.at_rest(model.particle_x0, self.sleep.count, self.bodies.n_groups)
        placed = self.colliders.initial_frames(model)
        self._placements = frames.Placements(len(placed))    # set_collider_matrix's memory
        self._threads = _backend.StepThreads()               # the thread count of the steps
        self.control = Control(pin_target=self.state.x[self._pinned].copy(),
                               particle_damping=np.zeros(n), collider_frame=placed,
                               collider_target=list(placed), wind=Wind(),
                               air_drag=_scalar(air_drag, "air_drag", 0.0),
                               soft_pin_anchor=self.state.x[self._soft].copy(),
                               soft_pin_target=self.state.x[self._soft].copy(),
                               soft_pin_compliance=model.soft_pin_compliance.copy(),
                               gravity=gravity, damping=damping,
                               stick_compliance=model.stick_compliance.copy(),
                               shape_compliance=model.shape_compliance.copy(),
                               shape_damping=model.shape_damping.copy(),
                               collider_friction=model.collider_friction.copy(),
                               collider_static_friction=model.collider_static_friction.copy(),
                               collider_restitution=model.collider_restitution.copy(),
                               particle_restitution=model.particle_restitution.copy(),
                               particle_friction=model.particle_friction.copy(),
                               volume_rest=np.array(model.volume_rest, np.float64),
                               joint_target=np.tile(np.eye(3), (model.joint_count, 1, 1)),
                               joint_drive=np.zeros(model.joint_count),
                               mesh_vertices=model.mesh_vertices.copy(),
                               mesh_target=model.mesh_vertices.copy())
        # scratch, allocated once
        # (3, n) [m/s^2] external acceleration, coordinate rows like X (so a h^2 needs no
        # transposing copy); _acc (n, 3) is its view
        self._acc_rows = np.zeros((3, n))
        self._acc = self._acc_rows.T
        self._motion2 = np.zeros(n)                 # (n,) [m^2] squared_motion's output
        self._drag = DragInputs(model)              # air drag's inputs, kept between steps
        # _velocity_kept's: ((damping, h), particle_damping (n,) copied, keep (n,)), or None
        self._keep_kept = None
        # the state before the step (restored when a step fails; sleep reads it), its arrays
        # allocated once: a copy of every array each step cost a 65k-particle cloth 1.3 ms
        self._backup = self.get_state()
        self.reruns = 0             # steps run again from their start in more rounds (rounds.py)
        self._dormant = None        # (n,) bool the particles asleep through this step, or None
        self._body_inputs = None    # (inv_mass, allowance, on_solid) of body_args

    # ------------------------------------------------------------------ read-out
    @property
    def x(self):
        """(n, 3) float64 current positions [m] (read-only view)."""
        return _read_only(self.state.x)

    @property
    def v(self):
        """(n, 3) float64 velocities [m/s], (x - x*) / h of the last substep (a copy)."""
        st = self.state
        if st.h is None:
            return st.v_start.copy()
        v = (st.x - st.x_prev) / st.h
        if st.island_asleep.any():
            v[self.sleep.asleep(st)] = 0.0          # paused (sleep.py)
        return v

    @property
    def time(self):
        return self.state.time

    @property
    def sleeping(self):
        """(n,) bool particles of sleeping islands (sleep.py; a copy)."""
        return self.sleep.asleep(self.state)

    def wake(self, ids=None):
        """Wake every sleeping body (ids None) or those holding particles ``ids``."""
        if ids is None:
            self.sleep.wake_all(self.state)
        else:
            self.sleep.wake_particles(self.state, self._ids(ids))

    @property
    def wind(self):
        return self.control.wind

    @property
    def gravity(self):
        """(3,) float64 [m/s^2] gravity (set_gravity changes it; a read-only view)."""
        return _read_only(self.control.gravity)

    @property
    def damping(self):
        """Fraction of every particle's velocity removed per second (set_global_damping)."""
        return self.control.damping

    # assignment, as when these were plain attributes, goes through the checked setters
    @gravity.setter
    def gravity(self, value):
        self.set_gravity(value)

    @damping.setter
    def damping(self, value):
        self.set_global_damping(value)

    @property
    def air_drag(self):
        """[kg / (m^2 s)] the air drag coefficient of surfaces (set_wind(drag=...) changes it)."""
        return self.control.air_drag

    def tetra_points(self, body=None):
        """(P, 3) positions [m] of the embedded points of one tetrahedral body (or all)."""
        return self.points.positions(self.state.x, body)

    def max_stick_strain(self):
        """Largest |length - rest| / rest over every stick (a diagnostic)."""
        return self.sticks.max_strain(self.state.x)

    # ------------------------------------------------------------------ control between steps
    def _ids(self, ids, name="ids"):
        a = np.asarray(ids)
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{name}: particle ids must be integers")
        a = a.astype(np.int64).ravel()
        n = self.model.particle_count
        if a.size and (a.min() < 0 or a.max() >= n):
            raise ValueError(f"{name}: particle id out of range 0..{n - 1}")
        return a

    def _positions(self, positions, count, name="positions"):
        p = np.asarray(positions, dtype=np.float64)
        if p.shape == (3,) and count == 1:
            p = p[None]
        if p.shape != (count, 3):
            raise ValueError(f"{name}: expected shape ({count}, 3), got {p.shape}")
        if not np.all(np.isfinite(p)):
            raise ValueError(f"{name}: contains NaN or infinity")
        return p

    def set_collider_matrix(self, k, matrix, teleport=False):
        """Where collider k is at the end of the next step (interpolated over its substeps, so
        it sweeps and pushes what it meets). teleport: it is there at once, without motion;
        what it then overlaps comes out at max_depenetration_speed, without being launched."""
        k = self._collider(k)
        frame = self._placements.place(k, matrix, self.control.collider_frame[k])
        self.control.collider_target[k] = frame
        if teleport:
            if not frames.same(frame, self.control.collider_frame[k]):
                self.wake()                  # it lands without motion: wake what it may land in
            self.control.collider_frame[k] = frame       # the same frame: at rest (colliders.py)

    def set_collider_vertices(self, k, vertices):
        """The local vertices (v, 3) [m] of mesh collider k at the end of the next step (a
        deforming mesh: interpolated linearly across its substeps; its surface's motion carries
        and bounces what touches it, as a moving collider's does). The count and the triangles
        stay the ones it was built with."""
        k = self._collider(k)
        m = self.model
        if m.collider_shape[k] != frames.MESH:
            raise ValueError(f"k: collider {k} is a {frames.SHAPE_NAMES[int(m.collider_shape[k])]}"
                             ", not a mesh (set_collider_vertices moves a mesh's vertices)")
        a, b = int(m.mesh_vertex_start[k]), int(m.mesh_vertex_start[k + 1])
        self.control.mesh_target[a:b] = self._positions(vertices, b - a, "vertices")

    def set_pin_targets(self, ids, positions):
        """Where the targets of pinned particles ``ids`` (hard or soft pins) go during the next
        step (they stay there after)."""
        ids = self._ids(ids)
        hard, soft = self._pin_slot[ids], self._soft_slot[ids]
        if np.any((hard < 0) & (soft < 0)):
            raise ValueError(f"ids: particle {int(ids[np.argmax((hard < 0) & (soft < 0))])} "
                             "is not pinned")
        p = self._positions(positions, ids.size)
        self.control.pin_target[hard[hard >= 0]] = p[hard >= 0]
        self.control.soft_pin_target[soft[soft >= 0]] = p[soft >= 0]

    def set_pin_compliance(self, ids, compliance):
        """Compliance [m/N] of the soft pins of particles ``ids`` from the next step on (scalar
        or per particle, >= 0; 0 = a rigid attachment, inf = released): animating it lets go
        of a pinned body gradually (constraints/pins.py)."""
        ids = self._ids(ids)
        slot = self._soft_slot[ids]
        if np.any(slot < 0):
            raise ValueError(f"ids: particle {int(ids[np.argmax(slot < 0)])} has no soft pin")
        c = np.broadcast_to(np.asarray(compliance, dtype=np.float64), ids.shape)
        if np.any(np.isnan(c)) or np.any(c < 0):
            raise ValueError("compliance: must be >= 0 [m/N] (inf releases the pin)")
        self.sleep.wake_particles(self.state, ids[self.control.soft_pin_compliance[slot] != c])
        self.control.soft_pin_compliance[slot] = c

    def move_particles(self, ids, positions, keep_velocity=True):
        """Move particles by hand between steps (Jakobsen's motion control). With keep_velocity
        their velocity is unchanged; without, the move becomes velocity (x* stays)."""
        ids = self._ids(ids)
        p = self._positions(positions, ids.size)
        self.sleep.wake_particles(self.state, ids)
        x, x_prev = self.state.x, self.state.x_prev
        if keep_velocity:
            x_prev[ids] += p - x[ids]
        elif self.state.h is not None:
            with np.errstate(over="ignore"):
                self._kick(np.linalg.norm(p - x[ids], axis=1) / self.state.h)
        x[ids] = p
        slot = self._pin_slot[ids]
        self.control.pin_target[slot[slot >= 0]] = p[slot >= 0]
        soft = self._soft_slot[ids]            # a soft pin's target moves with its particle
        self.control.soft_pin_anchor[soft[soft >= 0]] = p[soft >= 0]
        self.control.soft_pin_target[soft[soft >= 0]] = p[soft >= 0]

    def set_damping(self, ids, damping):
        """Extra damping for particles ``ids``: the fraction of their velocity removed per second
        (scalar or per particle, in [0, 1]), on top of the Simulation's own ``damping``."""
        ids = self._ids(ids)
        d = np.broadcast_to(np.asarray(damping, dtype=np.float64), ids.shape)
        if not np.all(np.isfinite(d)) or np.any(d < 0) or np.any(d > 1):
            raise ValueError("damping: must be finite and in [0, 1]")
        self.sleep.wake_particles(self.state, ids[self.control.particle_damping[ids] != d])
        self.control.particle_damping[ids] = d

    def set_velocities(self, ids, velocities):
        """Set velocities [m/s] of particles between steps (moves x*)."""
        ids = self._ids(ids)
        v = self._positions(velocities, ids.size, "velocities")
        st = self.state
        self.sleep.wake_particles(st, ids)
        with np.errstate(over="ignore"):
            self._kick(np.linalg.norm(v, axis=1))
        if st.h is None:
            st.v_start[ids] = v
        else:
            st.x_prev[ids] = st.x[ids] - v * st.h

    def explode(self, centre, strength, min_distance=0.1):
        """Jakobsen's explosion: kick free particles away from centre with an inverse-square
        falloff, dv = strength / max(r, min_distance)^2 [m/s] (strength in [m^3/s])."""
        c = _vec3(centre, "centre")
        strength = _scalar(strength, "strength", -np.inf)
        min_distance = _scalar(min_distance, "min_distance", 1e-6)
        dv = explosion_kick(self.state.x, self._free, c, strength, min_distance)
        if not np.all(np.isfinite(dv)):
            raise ValueError(f"strength: an explosion of {strength!r} gives a non-finite velocity "
                             f"change at min_distance {min_distance!r}")
        st = self.state
        self.sleep.wake_particles(st, np.nonzero(np.any(dv != 0, axis=1))[0])
        with np.errstate(over="ignore"):
            self._kick(np.linalg.norm(dv, axis=1))
        if st.h is None:
            st.v_start += dv
        else:
            st.x_prev[:] -= dv * st.h

    def set_wind(self, velocity=(0.0, 0.0, 0.0), turbulence=0.0, scale=2.0, seed=0, drag=None):
        """Wind of ``velocity`` [m/s] with seeded turbulence (fraction of its speed) of length
        ``scale`` [m]; drag [kg/(m^2 s)] sets the air drag coefficient it acts through."""
        velocity = _vec3(velocity, "velocity")
        turbulence = _scalar(turbulence, "turbulence", 0.0)
        scale = _scalar(scale, "scale", 1e-6)
        seed = _check_int(seed, "seed", 0)
        ctl = self.control
        if drag is not None:
            drag = _scalar(drag, "drag", 0.0)
            if drag != ctl.air_drag:
                self.wake()
            ctl.air_drag = drag
        old = ctl.wind
        if not (np.array_equal(old.velocity, velocity) and old.turbulence == turbulence
                and old.scale == scale and old.seed == seed):
            self.wake()                 # a new wind (the same one again changes nothing)
            ctl.wind = Wind(velocity, turbulence, scale, seed)

    def set_force_fields(self, fields):
        """Blender-style force fields (a fields.ForceFields, or None for none) acting from the
        next step on; the add-on sets them every frame."""
        if fields is not None:
            fields.check(self.model)
        if not same_fields(fields, self.control.fields):
            self.wake()
        self.control.fields = fields

    @property
    def fields(self):
        return self.control.fields

    def _kick(self, speeds):
        """A velocity change given by hand (speeds (k,) [m/s]) raises the runaway allowance."""
        if speeds.size:
            self.state.speed_budget += float(speeds.max())     # inf if it overflowed: no bound

    # ------------------------------------------------------------------ checkpoint
    def get_state(self):
        """A Checkpoint (State, Control copied); set_state(get_state()) resumes bit-identically."""
        return Checkpoint(self.state.copy(), self.control.copy())

    def set_state(self, checkpoint):
        """Restore a Checkpoint made by get_state on a simulation of the same model."""
        if not isinstance(checkpoint, Checkpoint):
            raise ValueError(f"state: expected a Checkpoint from get_state(), got "
                             f"{type(checkpoint).__name__}")
        self.state.assign(checkpoint.state)
        self.control.assign(checkpoint.control)

    # ------------------------------------------------------------------ the step
    def step(self, dt):
        """Advance dt seconds of simulated time (on all threads or one: backend.StepThreads)."""
        with self._threads.step(self.backend):
            self._step(dt)

    def _step(self, dt):
        dt = _scalar(dt, "dt", 0.0)
        if dt <= 0:
            raise ValueError("dt: must be > 0")
        h = dt / self.substeps
        backup = self._save_backup()
        rounds = self.state.contact_rounds
        while True:
            acc, acc_max, field_keep = self._external_acceleration(dt)      # accelerate
            limit = self._speed_limit(dt, acc_max)
            self._begin_step(h, acc)
            asleep = self._collide(dt, acc, acc_max, rounds)                # collide (and wake)
            # the substeps, in rounds; none when every body sleeps (a settled scene costs
            # nothing)
            failed, strayed, strays = -1, np.zeros(self.bodies.n_groups, bool), None
            if asleep is None or asleep.size < self.model.particle_count:
                failed, strayed, strays = self._run_rounds(h, acc, acc_max, field_keep, asleep,
                                                           rounds)
            if failed >= 0:
                self._fail(backup, failed)
            if strayed is not None:
                break
            # a cloth went where its contacts were not looked for: the step runs again from
            # its start in more rounds, its group's contacts found again in each
            # (body_stage.BodyContacts.surprised)
            in_rounds = self.state.round_groups | strays
            self.set_state(backup)
            self.state.round_groups[:] = in_rounds
            rounds = min(ROUNDS_GROWTH * rounds, self.substeps)
            self.reruns += 1
        self._next_rounds(rounds, strayed)
        # what touched another body in the last substep, through either solve
        np.logical_or(self.contacts.body_touch, self.rigid.touch, out=self.contacts.body_touch)
        if asleep is not None:         # sleeping bodies stay exactly where they were
            self.state.X[:, asleep] = backup.state.X[:, asleep]
            self.state.X_prev[:, asleep] = backup.state.X_prev[:, asleep]
        self.colliders.end_step(self.control)
        self.control.soft_pin_anchor[:] = self.control.soft_pin_target   # targets reached
        self.state.time += dt
        self.state.step_index += 1
        self._check_runaway(backup, limit)
        if self.sleep.enabled:
            self.kernels.squared_motion(self.state.X, backup.state.X, self._motion2)
            supported = self.contacts.touching | self.contacts.body_touch | ~self._free
            self.colliders.edges.touched(supported)
            self.sleep.update(self.state, dt, supported, self._motion2, self.contacts.body_idx)

    def _begin_step(self, h, acc):
        """Verlet's x* for the substep length h; constraint factors that depend on h."""
        st = self.state
        x, xp = st.x, st.x_prev
        if st.h is None:
            # x* of a particle that has velocity v0 at t = 0 under acceleration a, so the first
            # Verlet step is exact: x(-h) = x0 - v0 h + a h^2 / 2
            xp[:] = x - st.v_start * h + 0.5 * acc * (h * h)
        elif h != st.h:
            xp[:] = x - (x - xp) * (h / st.h)       # time-corrected Verlet for a new h
        st.h = h
        ctl = self.control
        self.sticks.begin_step(h, ctl.stick_compliance)
        self.shapes.begin_step(h, ctl.shape_compliance, ctl.shape_damping)
        self.volumes.begin_step(h)
        self.joints.begin_step(h, ctl.joint_drive)

    def _collide(self, dt, acc, acc_max, rounds=1):
        """The collide stage: candidate contacts for this step (collision/colliders.py), after
        waking the sleeping bodies that a moving pin or collider reaches. acc (n, 3) [m/s^2]
        and its largest norm acc_max; rounds the step's (BodyContacts.collide's skip). Returns
        the (s,) int64 particles that sleep through this step, or None."""
        x, xp = self.state.x, self.state.x_prev
        sleep, st, ctl = self.sleep, self.state, self.control
        motion2 = self._motion2
        self.kernels.squared_motion(st.X, st.X_prev, motion2)
        reach = scene_reach(motion2, st.h, dt, acc_max, ctl.wind.max_speed)
        sleep.wake_by_drivers(st, ctl, self._pinned, self._soft, self.colliders,
                              reach + self._radius_max)
        # contact between bodies (collision/bodies.py); a moving body wakes what it touches.
        # Pairs of sleeping bodies are left out (a settled pile costs its awake bodies only),
        # unless a body woke: then they are found, so it wakes the stack it rests in
        dormant = sleep.asleep(st) if st.island_asleep.any() else None
        args = (x, xp, st.h, dt, acc, acc_max, self._pinned, ctl.pin_target, self.contacts,
                ctl.particle_friction)
        skip = st.round_groups if rounds > 1 else None
        self.bodies.collide(*args, asleep=dormant, skip=skip)
        if sleep.wake_by_contacts(st, self.contacts) and dormant is not None:
            self.bodies.collide(*args, skip=skip)
            sleep.wake_by_contacts(st, self.contacts)
        asleep = sleep.asleep_ids(st)
        self._dormant = None if asleep is None else sleep.asleep(st)    # (n,) bool, or None
        awake = self._awake if asleep is None else ~self._dormant         # (n,) bool
        free = self._collidable & awake
        # the colliders' margin per particle: its island's speed, not the scene's fastest
        pins = [(self._pinned, x[self._pinned], ctl.pin_target),
                (self._soft, ctl.soft_pin_anchor, ctl.soft_pin_target)]
        each = particle_reach(motion2, st.h, dt, acc_max, ctl.wind.max_speed, sleep, pins,
                              self.contacts.body_idx, ctl.air_drag)
        self.colliders.collide(ctl, x, free, each + self._radius, self.contacts, self.kernels)
        # the contacts of rigid bodies leave the particle solves for the bodies' (rigid.py)
        self.rigid.select(self.contacts, awake, x, self.kernels)
        return asleep

    def _loop_args(self, h, field_keep=None, asleep=None):
        """loop.run_substeps' argument groups for this step (its docstring lists them).
        field_keep: (n,) velocity fraction the force fields' drag keeps per substep, or None;
        asleep: (s,) int64 sleeping particles (no acceleration, no drag), or None."""
        st, ctl, S = self.state, self.control, self.substeps
        keep = self._velocity_kept(h)
        if field_keep is not None:                  # force fields' drag, exact per substep
            keep = keep * field_keep
        a_h2 = self._acc_rows * (h * h)
        # contacts between bodies weigh a rigid body's particles as the body (shapes.py)
        inv_mass, body_inv_mass = self.model.particle_inv_mass, self.shapes.contact_inv_mass
        skip = None
        if asleep is not None:               # restored after the substeps: no work for them,
            a_h2[:, asleep] = 0.0            # no drag, and immovable in contacts with bodies
            inv_mass, body_inv_mass = inv_mass.copy(), body_inv_mass.copy()   # that are awake
            inv_mass[asleep] = body_inv_mass[asleep] = 0.0
            # and still: no velocity in the substeps (x* = x), so the awake bodies that touch
            # them meet them where they sleep, and the shape solve skips their clusters
            keep = keep.copy()
            keep[asleep] = 0.0
            skip = self.shapes.asleep_clusters(asleep)
        lim = self.max_speed * h if self.max_speed is not None else np.zeros(0)
        # the body contacts' inputs beside the contacts (a round's collide hands them again)
        self._body_inputs = (body_inv_mass, self.max_depenetration_speed * h,
                             self.bodies.on_solid)
        pins = (self._pinned, st.x[self._pinned].copy(), ctl.pin_target)
        drag = self._drag.terms(st, ctl, self.gravity, h, self.kernels, inv_mass) or _NO_DRAG
        return ((st.X, st.X_prev), (a_h2, keep, lim), drag, pins,
                self.soft_pins.kernel_args(ctl, h), self.sticks.kernel_args(self.over_relaxation),
                self.volumes.kernel_args(ctl.volume_rest), self.shapes.kernel_args(skip),
                self.joints.kernel_args(ctl.joint_target),
                self.colliders.kernel_args(ctl, S, self._radius, self.contacts),
                self.points.kernel_args(), self.contacts.kernel_args(),
                self.contacts.body_args(*self._body_inputs),
                self.rigid.kernel_args(self.contact_iterations,
                                       2.0 * float(np.linalg.norm(self.gravity)) * h * h),
                (S, self.iterations, self.contact_iterations, 0, S),
                (h, float(np.linalg.norm(self.gravity)), self.max_depenetration_speed * h),
                self.colliders.edges.kernel_args())

    def _velocity_kept(self, h):
        """(n,) the fraction of velocity each particle keeps per substep of h [s], (1 -
        damping)^h: the same per second at any substep count (x 1.0 changes no bit). Kept from
        the step before while the damping and h have not changed: a power per particle is
        0.4 ms a step for a 65k-particle cloth."""
        ctl = self.control
        key, kept = (ctl.damping, h), self._keep_kept
        if kept is not None and kept[0] == key and np.array_equal(kept[1], ctl.particle_damping):
            return kept[2]
        keep = ((1.0 - ctl.damping) * (1.0 - ctl.particle_damping)) ** h
        self._keep_kept = (key, ctl.particle_damping.copy(), keep)
        return keep

    def _external_acceleration(self, dt):
        """(n, 3) [m/s^2] gravity and force fields for the step of dt [s] (air drag and wind act
        every substep: forces.DragInputs), its largest norm [m/s^2], and the (n,) velocity fraction
        the fields' drag keeps per substep (or None)."""
        acc = self._acc
        acc[:] = self.gravity
        ctl = self.control
        field_keep = None if ctl.fields is None else ctl.fields.accelerate(
            acc, self.state.x, self.v, self.model, self.gravity, dt, self.substeps)
        # without fields every row is gravity: one row's norm is the largest. Rows in C order:
        # einsum sums a C-ordered row in another order than an F-ordered one (_acc is a view of
        # coordinate rows), and the margins that read acc_max keep the bits they had
        rows = np.ascontiguousarray(acc if ctl.fields is not None else acc[:1])
        acc_max = float(np.sqrt(np.max(np.einsum("ij,ij->i", rows, rows)))) if len(rows) else 0.0
        return acc, acc_max, field_keep

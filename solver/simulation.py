"""The Simulation: state arrays and the step.

One step of dt seconds is ``substeps`` substeps of h = dt / substeps. Each substep:

1. integrate (Jakobsen's Verlet, velocity-less): x' = x + (x - x*) k + a h^2, x* = x, where
   k = (1 - damping)^h removes the fraction ``damping`` of the velocity per second whatever the
   substep count (Jakobsen's 1.99x - 0.99x* is k = 0.99 per step); a holds gravity, drag and wind;
   an optional speed clamp bounds |x' - x*| / h; pinned particles are set on the straight line
   between their position at the start of the step and their target;
2. relax ``iterations`` times: sticks (colour by colour), volumes, collider projection with
   friction, shape matching;
3. velocity pass: restitution for contacts that bounced.

The defaults follow Macklin et al., "Small Steps in Physics Simulation" (SCA 2019): for the same
work per frame, many substeps with one iteration stretch far less than few substeps with many
iterations (measured here on the benchmark drape, see README). Velocity is never integrated on
its own: it is always (x - x*) / h.

Safety: after every substep the positions are checked; the first non-finite value restores the
state from before the step and raises SolverError naming the step, the particle and what acts on
it. Determinism: the same inputs give bit-identical results (fixed colour order; threads only
ever split items that touch disjoint particles, so the thread count changes no bit; no
randomness but the seeded wind), and get_state / set_state resume bit-identically, on either
backend (backend.py): the compiled kernels repeat the NumPy kernels' operations in their order.
"""

import math

import numpy as np

from . import backend as _backend
from .contact import Colliders, ContactState, TetraPoints
from .builder import _scalar
from .errors import SolverError
from .forces import Wind, aero_acceleration, explosion_kick, vertex_normals
from .shapes import ShapeSolver
from .sticks import StickSolver
from .volume import VolumeSolver

DEFAULT_SUBSTEPS = 40
DEFAULT_ITERATIONS = 1
DEFAULT_DAMPING = 0.0
# [kg/(m^2 s)] linear air drag on surfaces: a 150 g/m^2 cloth falls at about 1.5 m/s, as cotton
# does in still air
DEFAULT_AIR_DRAG = 1.0
def _check_int(value, name, lo):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"{name}: expected an integer >= {lo}, got {value!r}")
    return int(value)


def _vec3(value, name):
    a = np.asarray(value, dtype=np.float64)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected 3 finite numbers, got {value!r}")
    return a


class Simulation:
    """Steps a Model. See the module docstring for the algorithm and solver/README in the
    project README for the API."""

    def __init__(self, model, substeps=DEFAULT_SUBSTEPS, iterations=DEFAULT_ITERATIONS,
                 gravity=(0.0, 0.0, -9.81), damping=DEFAULT_DAMPING, over_relaxation=1.0,
                 max_speed=None, air_drag=DEFAULT_AIR_DRAG, backend=None):
        self.model = model
        self.substeps = _check_int(substeps, "substeps", 1)
        self.iterations = _check_int(iterations, "iterations", 1)
        self.gravity = _vec3(gravity, "gravity")
        self.damping = _scalar(damping, "damping", 0.0, 1.0)
        self.over_relaxation = _scalar(over_relaxation, "over_relaxation", 0.1, 1.99)
        self.air_drag = _scalar(air_drag, "air_drag", 0.0)      # [kg / (m^2 s)]
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
        self._kernels = _backend.numba_kernels() if self.backend == "numba" else None

        # positions are stored as coordinate rows (3, n) for the stick kernel's gathers; every
        # other module works on the (n, 3) transposed view of the same memory
        self._X = np.ascontiguousarray(model.particle_x0.T)   # (3, n) float64 [m] positions
        self._Xp = self._X.copy()                   # (3, n) float64 [m] positions one substep ago
        self._x = self._X.T                         # (n, 3) view of _X
        self._x_prev = self._Xp.T                   # (n, 3) view of _Xp
        self._h = None                              # [s] length of the last substep
        # velocity before the first step (Verlet has no x* yet), (n, 3) float64 [m/s]
        self._v_start = np.zeros_like(model.particle_x0)
        # per-particle damping on top of the global one, (n,) float64 fraction per second
        self._particle_damping = np.zeros(model.particle_count)
        self._time = 0.0                            # [s] simulated time
        self._step_index = 0
        self._free = model.particle_inv_mass > 0    # (n,) bool
        self._pinned = np.nonzero(~self._free)[0]   # (p,) int64
        self._pin_target = self._x[self._pinned].copy()   # (p, 3) float64 [m]
        self._pin_slot = np.full(n, -1, np.int64)   # (n,) index into _pinned or -1
        self._pin_slot[self._pinned] = np.arange(self._pinned.size)
        self._radius = model.particle_radius
        self._radius_max = float(self._radius.max()) if n else 0.0
        self._has_surface = np.zeros(n, bool)       # (n,) bool part of a surface (cloth, volume)
        self._has_surface[model.surface_tris.ravel()] = True
        self.wind = Wind()
        self.fields = None                          # ForceFields (fields.py) or None
        self._field_keep = None                     # (n,) velocity kept per substep, or None

        self._sticks = StickSolver(model)
        self._shapes = ShapeSolver(model)
        self._volumes = VolumeSolver(model)
        self._tetra = TetraPoints(model)
        self._colliders = Colliders(model)
        self._contact = ContactState(n, len(model.tetra_point_body))
        # scratch, allocated once
        self._disp = np.zeros((n, 3))               # (n, 3) [m] displacement of a substep
        self._acc = np.zeros((n, 3))                # (n, 3) [m/s^2] external acceleration
        self._x_pred = np.zeros((n, 3))             # (n, 3) [m] positions after integration
        self._backup = None

    # ------------------------------------------------------------------ read-out
    @property
    def x(self):
        """(n, 3) float64 current positions [m] (read-only view)."""
        v = self._x.view()
        v.flags.writeable = False
        return v

    @property
    def v(self):
        """(n, 3) float64 velocities [m/s], (x - x*) / h of the last substep (a copy)."""
        if self._h is None:
            return self._v_start.copy()
        return (self._x - self._x_prev) / self._h

    @property
    def time(self):
        return self._time

    def tetra_points(self, body=None):
        """(P, 3) positions [m] of the embedded points of one tetrahedral body (or all)."""
        return self._tetra.positions(self._x, body)

    def max_stick_strain(self):
        """Largest |length - rest| / rest over every stick (a diagnostic)."""
        return self._sticks.max_strain(self._x)

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

    def set_collider_matrix(self, k, matrix):
        """Where collider k is at the end of the next step (interpolated over its substeps)."""
        self._colliders.set_matrix(_check_int(k, "k", 0), matrix)

    def set_pin_targets(self, ids, positions):
        """Where pinned particles ``ids`` go during the next step (they stay there after)."""
        ids = self._ids(ids)
        slot = self._pin_slot[ids]
        if np.any(slot < 0):
            raise ValueError(f"ids: particle {int(ids[np.argmax(slot < 0)])} is not pinned")
        self._pin_target[slot] = self._positions(positions, ids.size)

    def move_particles(self, ids, positions, keep_velocity=True):
        """Move particles by hand between steps (Jakobsen's motion control). With keep_velocity
        their velocity is unchanged; without, the move becomes velocity (x* stays)."""
        ids = self._ids(ids)
        p = self._positions(positions, ids.size)
        if keep_velocity:
            self._x_prev[ids] += p - self._x[ids]
        self._x[ids] = p
        slot = self._pin_slot[ids]
        self._pin_target[slot[slot >= 0]] = p[slot >= 0]

    def set_damping(self, ids, damping):
        """Extra damping for particles ``ids``: the fraction of their velocity removed per second
        (scalar or per particle, in [0, 1]), on top of the Simulation's own ``damping``."""
        ids = self._ids(ids)
        d = np.broadcast_to(np.asarray(damping, dtype=np.float64), ids.shape)
        if not np.all(np.isfinite(d)) or np.any(d < 0) or np.any(d > 1):
            raise ValueError("damping: must be finite and in [0, 1]")
        self._particle_damping[ids] = d

    def set_velocities(self, ids, velocities):
        """Set velocities [m/s] of particles between steps (moves x*)."""
        ids = self._ids(ids)
        v = self._positions(velocities, ids.size, "velocities")
        if self._h is None:
            self._v_start[ids] = v
        else:
            self._x_prev[ids] = self._x[ids] - v * self._h

    def explode(self, centre, strength, min_distance=0.1):
        """Jakobsen's explosion: kick free particles away from centre with an inverse-square
        falloff, dv = strength / max(r, min_distance)^2 [m/s] (strength in [m^3/s])."""
        c = _vec3(centre, "centre")
        strength = _scalar(strength, "strength", -np.inf)
        min_distance = _scalar(min_distance, "min_distance", 1e-6)
        dv = explosion_kick(self._x, self._free, c, strength, min_distance)
        if not np.all(np.isfinite(dv)):
            raise ValueError(f"strength: an explosion of {strength!r} gives a non-finite velocity "
                             f"change at min_distance {min_distance!r}")
        if self._h is None:
            self._v_start += dv
        else:
            self._x_prev -= dv * self._h

    def set_wind(self, velocity=(0.0, 0.0, 0.0), turbulence=0.0, scale=2.0, seed=0, drag=None):
        """Wind of ``velocity`` [m/s] with seeded turbulence (fraction of its speed) of length
        ``scale`` [m]; drag [kg/(m^2 s)] sets the air drag coefficient it acts through."""
        velocity = _vec3(velocity, "velocity")
        turbulence = _scalar(turbulence, "turbulence", 0.0)
        scale = _scalar(scale, "scale", 1e-6)
        if drag is not None:
            self.air_drag = _scalar(drag, "drag", 0.0)
        self.wind = Wind(velocity, turbulence, scale, _check_int(seed, "seed", 0))

    def set_force_fields(self, fields):
        """Blender-style force fields (a fields.ForceFields, or None for none) acting from the
        next step on; the add-on sets them every frame."""
        if fields is not None:
            fields.check(self.model)
        self.fields = fields

    # ------------------------------------------------------------------ checkpoint
    def get_state(self):
        """A checkpoint (a dict of copies); set_state(get_state()) resumes bit-identically."""
        c = self._colliders
        return {
            "x": self._x.copy(), "x_prev": self._x_prev.copy(), "h": self._h,
            "v_start": self._v_start.copy(), "particle_damping": self._particle_damping.copy(),
            "time": self._time, "step_index": self._step_index,
            "pin_target": self._pin_target.copy(),
            "collider_frame": list(c.frame), "collider_target": list(c.target),
            "wind": (self.wind.velocity.copy(), self.wind.turbulence, self.wind.scale,
                     self.wind.seed),
            "air_drag": self.air_drag,
            "fields": self.fields,          # read-only arrays: held, not copied
        }

    def set_state(self, state):
        """Restore a checkpoint made by get_state on a simulation of the same model."""
        n = self.model.particle_count
        for key in ("x", "x_prev"):
            if np.shape(state[key]) != (n, 3):
                raise ValueError(f"state: '{key}' has shape {np.shape(state[key])}, expected ({n}, 3)")
        self._x[:] = state["x"]
        self._x_prev[:] = state["x_prev"]
        self._h = state["h"]
        self._v_start[:] = state["v_start"]
        self._particle_damping[:] = state["particle_damping"]
        self._time = state["time"]
        self._step_index = state["step_index"]
        self._pin_target[:] = state["pin_target"]
        self._colliders.frame = list(state["collider_frame"])
        self._colliders.target = list(state["collider_target"])
        self._colliders.now = list(self._colliders.frame)
        w = state["wind"]
        self.wind = Wind(w[0], w[1], w[2], w[3])
        self.air_drag = state["air_drag"]
        fields = state.get("fields")
        # a checkpoint kept as plain arrays writes no object: None comes back as a NaN scalar
        if fields is not None and not hasattr(fields, "accelerate"):
            try:
                empty = np.ndim(fields) == 0 and bool(np.isnan(fields))
            except TypeError:
                empty = False
            if not empty:
                raise ValueError("state: 'fields' must be a ForceFields or None")
            fields = None
        self.fields = fields

    # ------------------------------------------------------------------ the step
    def _external_acceleration(self, dt):
        acc = self._acc
        acc[:] = self.gravity
        if self.air_drag > 0 and np.any(self.model.particle_area > 0):
            m = self.model
            normals = vertex_normals(self._x, m.surface_tris, m.particle_count) \
                if len(m.surface_tris) else np.zeros_like(self._x)
            acc += aero_acceleration(self._x, self.v, self._time, m.particle_inv_mass,
                                     m.particle_area, normals, self._has_surface, self.wind,
                                     self.air_drag)
        self._field_keep = None if self.fields is None else self.fields.accelerate(
            acc, self._x, self.v, self.model, self.gravity, dt, self.substeps)
        return acc

    def step(self, dt):
        """Advance dt seconds of simulated time."""
        dt = _scalar(dt, "dt", 0.0)
        if dt <= 0:
            raise ValueError("dt: must be > 0")
        S = self.substeps
        h = dt / S
        x, xp = self._x, self._x_prev
        backup = self.get_state()
        acc = self._external_acceleration(dt)
        if self._h is None:
            # x* of a particle that has velocity v0 at t = 0 under acceleration a, so the first
            # Verlet step is exact: x(-h) = x0 - v0 h + a h^2 / 2
            xp[:] = x - self._v_start * h + 0.5 * acc * (h * h)
        elif h != self._h:
            xp[:] = x - (x - xp) * (h / self._h)       # time-corrected Verlet for a new h
        self._h = h
        free = self._free
        if x.shape[0]:
            vmax = float(np.sqrt(np.max(np.einsum("ij,ij->i", x - xp, x - xp)))) / h
            amax = float(np.sqrt(np.max(np.einsum("ij,ij->i", acc, acc))))
        else:
            vmax = amax = 0.0
        reach = 2.0 * (vmax * dt + 0.5 * amax * dt * dt) + 1e-3
        colliders, cs = self._colliders, self._contact
        colliders.begin_step(x, free, self._radius_max, reach)
        has_contacts = colliders.count > 0
        pins = self._pinned
        p0 = x[pins].copy()
        p1 = self._pin_target
        # (n,) fraction of velocity kept per substep: (1 - damping)^h is the same per second at
        # any substep count; multiplying by exactly 1.0 changes nothing, so no branch is needed
        keep = ((1.0 - self.damping) * (1.0 - self._particle_damping)) ** h
        if self._field_keep is not None:            # force fields' drag, exact per substep
            keep = keep * self._field_keep
        a_h2 = acc * (h * h)
        radius = self._radius
        g_norm = float(np.linalg.norm(self.gravity))
        sticks, shapes, volumes = self._sticks, self._shapes, self._volumes
        disp = self._disp
        kernels = self._kernels
        lim = self.max_speed * h if self.max_speed is not None else np.zeros(0)
        if kernels is not None:
            a_h2_rows = np.ascontiguousarray(a_h2.T)      # (3, n) for the compiled kernel
        for s in range(S):
            colliders.begin_substep(s, S)
            if kernels is not None:
                kernels.predict(self._X, self._Xp, a_h2_rows, keep, lim)
            else:
                np.subtract(x, xp, out=disp)
                xp[:] = x
                disp *= keep[:, None]
                disp += a_h2
                if lim.size:
                    length = np.sqrt(disp[:, 0] * disp[:, 0] + disp[:, 1] * disp[:, 1]
                                     + disp[:, 2] * disp[:, 2])
                    disp *= np.minimum(1.0, lim / np.maximum(length, 1e-300))[:, None]
                x += disp
            if pins.size:
                x[pins] = p0 + (p1 - p0) * ((s + 1) / S)
                xp[pins] = p0 + (p1 - p0) * (s / S)
            if colliders.any_restitution:
                self._x_pred[:] = x
            cs.reset()
            sticks.begin_substep(h, kernels)
            shapes.begin_substep(h)
            volumes.begin_substep(h)
            last = self.iterations - 1
            for it in range(self.iterations):
                sticks.solve(self._X, self.over_relaxation, kernels, it == 0, it == last)
                volumes.solve(x, self._X, kernels)
                if has_contacts:
                    colliders.project(x, xp, radius, cs, (self._X, self._Xp), kernels)
                    if self._tetra.ranks:
                        colliders.project_points(x, xp, self._tetra, cs, (self._X, self._Xp), kernels)
                if not shapes.empty:
                    shapes.solve(x, cs.touching, self._X, kernels)
            shapes.damp(x, xp, h, (self._X, self._Xp), kernels)
            if colliders.any_restitution:
                colliders.restitution(x, xp, self._x_pred, h, g_norm, cs)
            # one reduction per substep; the sum can overflow with finite entries, so confirm
            if not math.isfinite(float(x.sum())) and not np.isfinite(x).all():
                self._fail(backup, s)
        colliders.end_step()
        self._time += dt
        self._step_index += 1

    def _fail(self, backup, substep):
        bad = ~np.isfinite(self._x).all(axis=1)
        i = int(np.argmax(bad))
        step = self._step_index
        what = self.model.describe_particle(i)
        self.set_state(backup)
        raise SolverError(
            f"step {step} (substep {substep}): particle {i} left the finite numbers; acting on "
            f"it: {what}. The state before the step is kept; lower the time step, raise the "
            "substeps or soften the constraint.", step=step, particle=i, constraint=what)

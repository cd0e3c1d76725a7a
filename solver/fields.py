"""Blender's force fields (Wind, Force, Turbulence, Vortex, Drag) acting on the particles.

A ``ForceFields`` holds F fields as structure-of-arrays parameters, plus who they act on
(particle groups, one per simulated object, with the object's mass and effector weights). The
add-on builds one from Blender's Force Field objects every frame (so keyframed strengths work)
and hands it to ``Simulation.set_force_fields``; solver users may build one directly. Evaluation
is vectorised over the particles (a Python loop runs over the few fields only).

Sources. The formulas follow Blender's manual (Physics > Forces > Force Fields: the common
settings, Falloff, and the Wind, Force, Vortex, Turbulence and Drag pages) and, where the manual
is vague, Blender's source, ``blenkernel/intern/effect.cc`` (``get_effector_data``,
``effector_falloff``, ``falloff_func``, ``do_physical_effector``, ``wind_func``) with the
EffectorWeights of ``BKE_effector_add_weights``. Symbols: x a particle, v its velocity [m/s],
o the field object's origin, n its unit local Z axis, s its strength, w the falloff below.

Geometry (get_effector_data). d2 = x - o, and the field's point of action gives d:
  Point: d = d2;   Plane: d = (d2 . n) n  (from the nearest point of the local XY plane);
  Line, and a Vortex of Plane shape: d = d2 - (d2 . n) n  (from the local Z axis).
r = |d|.

Falloff (effector_falloff, falloff_func; the manual's "1 / (r - min + 1)^power"):
  f(t) = 0 where use_max and t > max; 1 where use_min and t < min;
         else (1 + t - min')^-power with min' = min if use_min else 0.
  Sphere: w = f(r).  Tube: w = f(|d2 . n|) * f_radial(|d2 - (d2 . n) n|).
  Cone:   w = f(|d2 . n|) * f_radial(angle between d2 and n [degrees]).
  Z direction Positive / Negative: w = 0 where d2 . n < 0 / > 0.
  Effector weights: w *= all * (the field type's weight); a field acts only where w > 0
  (as in Blender, a negative weight switches it off rather than reversing it).

Forces [N] (do_physical_effector, with Blender particles' convention of velocities per second):
  Wind:       F = s w n                                  (along the field's local Z)
  Force:      F = s w d / r   (x 1/r^2 with use_gravity_falloff; positive s pushes away)
  Vortex, Point shape: F = s w r (n x d) / |n x d|       (tangential, grows with r)
  Vortex, Line / Plane shape (Blender's "new vortex"), w' = s w the air's angular velocity:
              F = w' (n x d2) - v + w'^2 n x (n x d2)     (rotating air + centripetal pull)
  Turbulence: F = s w T(p / size), T the 3-octave noise of noise.py in [-1, 1]^3 (size 0: 1),
              p = x with use_global_coords, else d2 + n (the noise moves with the field)
  Drag:       F = -w (linear + quadratic |v|) v           (linear = strength, both <= 2)
  Flow (every type but Drag; Vortex calls it Inflow): F += -flow w v, which turns the field
  into an air flow of velocity F / (flow w) that drags objects along (the manual's "Flow").
  Noise: s (and Drag's quadratic coefficient) gain, per particle and frame, Blender's wind_func
  value sign * r / (1 + u) * noise / 128 with r uniform in 0..127, sign = + if r > 64, u uniform
  in [0, 1), from a generator seeded by (seed, frame).
  Wind factor (cloth and plant sheets only, as Blender's cloth): a fraction wind_factor of the
  field's velocity-independent force acts only through the surface normal m: F' = (1 - k) F +
  k (F . m) m.

Which mass. Each field force acts on a whole object: particle i of an object of total mass M
gets the acceleration F(x_i) / M, i.e. its mass share of F. A uniform field therefore moves any
object exactly as Blender moves a rigid body (a central force F), and a cloth's response does
not depend on its vertex count. (Blender's cloth instead scales field forces by 0.02 x the
vertex's face area; we do not copy that constant.) Gravity weight: the object's gravity is
multiplied by its effector weight ``gravity`` (acceleration (weight - 1) g is added).

Deliberate differences from effect.cc, all documented here:
  - Drag uses the manual's names: "linear" multiplies |v|, "quadratic" |v|^2 (effect.cc
    multiplies f_strength, the RNA's ``linear_drag``, by |v|^2). Negative drag is refused.
  - The flow and vortex velocity terms stay isotropic on sheets (wind factor projects only the
    velocity-independent force), so that they integrate exactly per substep (below).
  - Turbulence noise is Perlin's improved noise, not Blender's table (same range and scale).

Integration. Velocity-dependent terms are linear in v per particle, a = a0 - c v - q |v| v with
rates c [1/s] (linear drag, flow, vortex) and q [1/m] (quadratic drag); they are NOT applied as
an explicit force once per frame (that diverges once c dt > 2). Per frame, c_eff is the rate
whose exponential decay equals the exact solution of dv/dt = -(c + q |v|) v over the frame from
the frame's starting speed u (Bernoulli's equation):
  exp(-c_eff dt) = exp(-c dt) / (1 + q u (1 - exp(-c dt)) / c)
(exact for drag alone, whatever dt, c or q; with other forces the quadratic term is linearised
at the frame's starting speed). Each substep h then keeps exp(-c_eff h) of the velocity and
takes the constant accelerations times phi = (1 - exp(-c_eff h)) / (c_eff h): the exact
exponential integrator of dv/dt = a - c_eff v, so the terminal velocity a / c_eff (e.g. a wind's
flow speed s / flow) is reached exactly and no rate is too stiff. The step holds a0 over its
substeps, so the fields are evaluated once per step at the positions predicted for its middle,
x + v dt / 2 (the midpoint rule: a body circling in a vortex keeps its radius to 0.6 % per turn
at 1.5 rad/s and 24 fps where evaluating at the step's start drifts 10 %).
"""

import numpy as np

from .forces import vertex_normals
from .noise import turbulence

FIELD_KINDS = ("WIND", "FORCE", "TURBULENCE", "VORTEX", "DRAG")
WIND, FORCE, TURBULENCE, VORTEX, DRAG = range(5)
SHAPES = ("POINT", "LINE", "PLANE")
POINT, LINE, PLANE = range(3)
FALLOFF_TYPES = ("SPHERE", "TUBE", "CONE")
SPHERE, TUBE, CONE = range(3)
Z_DIRECTIONS = ("BOTH", "POSITIVE", "NEGATIVE")
BOTH, POSITIVE, NEGATIVE = range(3)
DRAG_MAX = 2.0                  # effect.cc clamps both drag coefficients to at most 2

# per-field float parameters: name -> (lowest allowed value, default)
_FLOATS = {
    "strength": (-np.inf, 1.0),        # [N]; Vortex (Line/Plane): [rad/s]; Drag: linear [N s/m]
    "flow": (-np.inf, 0.0),            # [N s/m] = [kg/s]
    "quadratic_drag": (0.0, 0.0),      # [N s^2/m^2] Drag only
    "noise": (0.0, 0.0),               # [N] amplitude of the random strength change
    "size": (0.0, 1.0),                # [m] Turbulence noise scale (0: unscaled, as Blender)
    "wind_factor": (0.0, 0.0),         # fraction in [0, 1] acting only through sheet normals
    "falloff_power": (0.0, 0.0),
    "distance_min": (0.0, 0.0),        # [m]
    "distance_max": (0.0, 0.0),        # [m]
    "radial_falloff": (0.0, 0.0),
    "radial_min": (0.0, 0.0),          # [m] (Tube) or [degrees] (Cone)
    "radial_max": (0.0, 0.0),
}
_BOOLS = ("use_min_distance", "use_max_distance", "use_radial_min", "use_radial_max",
          "use_global_coords", "use_gravity_falloff")
_ENUMS = {"shape": SHAPES, "falloff_type": FALLOFF_TYPES, "z_direction": Z_DIRECTIONS}


def _codes(values, table, name, count):
    vals = [values] * count if isinstance(values, str) else list(values)
    if len(vals) != count:
        raise ValueError(f"{name}: expected {count} values, got {len(vals)}")
    out = np.empty(count, np.int8)
    for k, v in enumerate(vals):         # build time: per field, not per particle
        if v not in table:
            raise ValueError(f"{name}: field {k} has {v!r}; expected one of {', '.join(table)}")
        out[k] = table.index(v)
    return out


def _frozen(a):
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


class ForceFields:
    """F force fields and the particle groups they act on (see the module docstring).

    Per field (scalars broadcast to all F):
      kind: F strings of FIELD_KINDS; matrix: (F, 4, 4) world matrices of the field objects
      [m] (local Z = the field's axis); shape, falloff_type, z_direction: strings of SHAPES,
      FALLOFF_TYPES, Z_DIRECTIONS; the floats of _FLOATS and the booleans of _BOOLS, named as
      Blender's FieldSettings; seed: ints; names: F strings for messages (default "field k").
    Who they act on (None = defaults):
      particle_group: (n,) int64 group (object) of each particle, default all in group 0;
      group_mass: (G,) float64 [kg] each group's total mass, default the model's total mass;
      group_weight: (G, F) float64 effector weight of field f on group g (all x type weight,
        0 where the field is outside the group's effector collection), default 1;
      group_gravity: (G,) float64 gravity weight, default 1;
      group_sheet: (G,) bool whether wind_factor applies (cloth, plants), default True;
      frame: int, the frame the noise is drawn for.
    Arrays are read-only after construction, so a Simulation checkpoint can hold the object."""

    def __init__(self, kind, matrix, names=None, particle_group=None, group_mass=None,
                 group_weight=None, group_gravity=None, group_sheet=None, frame=0, seed=0,
                 **params):
        kinds = [kind] if isinstance(kind, str) else list(kind)
        F = len(kinds)
        self.count = F
        self.names = list(names) if names is not None else [f"field {k}" for k in range(F)]
        if len(self.names) != F:
            raise ValueError(f"names: expected {F} names, got {len(self.names)}")
        self.kind = _frozen(_codes(kinds, FIELD_KINDS, "kind", F))       # (F,) int8
        m = np.asarray(matrix, dtype=np.float64)
        if m.shape == (4, 4):
            m = np.broadcast_to(m, (F, 4, 4))
        if m.shape != (F, 4, 4) or not np.all(np.isfinite(m)):
            raise ValueError(f"matrix: expected ({F}, 4, 4) finite world matrices, got {m.shape}")
        axis = m[:, :3, 2]
        length = np.linalg.norm(axis, axis=1)
        if np.any(length < 1e-12):
            k = int(np.argmax(length < 1e-12))
            raise ValueError(f"{self.names[k]}: its matrix has a zero Z axis (scale 0)")
        self.origin = _frozen(m[:, :3, 3].copy())                         # (F, 3) [m]
        self.axis = _frozen(axis / length[:, None])                       # (F, 3) unit
        unknown = set(params) - set(_FLOATS) - set(_BOOLS) - set(_ENUMS)
        if unknown:
            raise ValueError(f"unknown field parameter(s): {', '.join(sorted(unknown))}")
        for name, (lo, default) in _FLOATS.items():
            a = np.asarray(params.get(name, default), dtype=np.float64)
            a = np.broadcast_to(a, (F,)).copy() if a.ndim == 0 else a
            if a.shape != (F,) or not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: expected {F} finite numbers")
            if np.any(a < lo):
                k = int(np.argmax(a < lo))
                raise ValueError(f"{self.names[k]}: {name} is {a[k]!r}; it must be >= {lo}")
            setattr(self, name, _frozen(a))                               # (F,) float64
        for name in _BOOLS:
            a = np.broadcast_to(np.asarray(params.get(name, False), dtype=bool), (F,)).copy()
            setattr(self, name, _frozen(a))                               # (F,) bool
        for name, table in _ENUMS.items():
            setattr(self, name, _frozen(_codes(params.get(name, table[0]), table, name, F)))
        drag = self.kind == DRAG
        if np.any(drag & (self.strength < 0)):
            k = int(np.argmax(drag & (self.strength < 0)))
            raise ValueError(f"{self.names[k]}: negative linear drag ({self.strength[k]!r}) adds "
                             "energy without bound; use 0 or more")
        if np.any(self.wind_factor > 1):
            k = int(np.argmax(self.wind_factor > 1))
            raise ValueError(f"{self.names[k]}: wind_factor must be in [0, 1]")
        s = np.broadcast_to(np.asarray(seed), (F,))
        if not np.issubdtype(s.dtype, np.integer):
            raise ValueError("seed: expected integers")
        self.seed = _frozen(s.astype(np.int64))                           # (F,) int64
        self.frame = int(frame)
        self.particle_group = None if particle_group is None else \
            _frozen(np.asarray(particle_group, dtype=np.int64))           # (n,) int64
        G = 1 if particle_group is None else (int(self.particle_group.max()) + 1
                                              if self.particle_group.size else 1)
        if self.particle_group is not None and self.particle_group.size \
                and self.particle_group.min() < 0:
            raise ValueError("particle_group: group ids must be >= 0")
        if group_mass is not None:
            gm = np.asarray(group_mass, dtype=np.float64).reshape(-1)
            G = max(G, gm.size)
            if not np.all(np.isfinite(gm)) or np.any(gm <= 0):
                raise ValueError("group_mass: every group's mass must be a finite number > 0 [kg]")
            self.group_mass = _frozen(gm)                                 # (G,) [kg]
        else:
            self.group_mass = None
        self.group_count = G
        gw = np.ones((G, F)) if group_weight is None else np.asarray(group_weight, np.float64)
        if gw.shape != (G, F) or not np.all(np.isfinite(gw)):
            raise ValueError(f"group_weight: expected ({G}, {F}) finite weights, got {gw.shape}")
        self.group_weight = _frozen(gw)                                   # (G, F)
        gg = np.ones(G) if group_gravity is None else np.asarray(group_gravity, np.float64)
        if gg.shape != (G,) or not np.all(np.isfinite(gg)):
            raise ValueError(f"group_gravity: expected {G} finite weights")
        self.group_gravity = _frozen(gg)                                  # (G,)
        gs = np.ones(G, bool) if group_sheet is None else np.asarray(group_sheet, bool)
        if gs.shape != (G,):
            raise ValueError(f"group_sheet: expected {G} booleans")
        self.group_sheet = _frozen(gs)                                    # (G,) bool
        if self.group_mass is not None and self.group_mass.size != G:
            raise ValueError(f"group_mass: expected {G} masses, got {self.group_mass.size}")

    # ------------------------------------------------------------------ checks
    def check(self, model):
        """Raise ValueError when the groups do not fit ``model`` (n particles)."""
        n = model.particle_count
        if self.particle_group is not None and self.particle_group.shape != (n,):
            raise ValueError(f"particle_group: expected ({n},) group ids, got "
                             f"{self.particle_group.shape}")
        if self.group_mass is None and self.group_count != 1:
            raise ValueError("group_mass: needed when there is more than one group")

    @property
    def has_velocity_terms(self):
        """True when some field's force depends on velocity (drag, flow, new vortex)."""
        k = self.kind
        return bool(np.any(k == DRAG) or np.any((k != DRAG) & (self.flow != 0))
                    or np.any((k == VORTEX) & (self.shape != POINT)))

    # ------------------------------------------------------------------ evaluation
    def _noise(self, f, n, which=0):
        """(n,) Blender's wind_func values for field f this frame (module docstring); ``which``
        tells the strength's draw (0) from Drag's quadratic coefficient's (1)."""
        rng = np.random.default_rng((int(self.seed[f]), abs(self.frame), f, which))
        r = (rng.integers(0, 128, n) + 1) % 128
        u = rng.random(n) + 1.0
        return np.where(r > 64, 1.0, -1.0) * (r / u) * (self.noise[f] / 128.0)

    def _falloff(self, f, d2, fac, r):
        """(n,) falloff of field f (before weights): effector_falloff."""
        def fall(t, use_min, lo, use_max, hi, power):
            base = 1.0 + t - (lo if use_min else 0.0)
            out = np.power(np.maximum(base, 1e-300), -power)
            if use_min:
                out = np.where(t < lo, 1.0, out)
            if use_max:
                out = np.where(t > hi, 0.0, out)
            return out
        dist = (self.use_min_distance[f], self.distance_min[f], self.use_max_distance[f],
                self.distance_max[f], self.falloff_power[f])
        rad = (self.use_radial_min[f], self.radial_min[f], self.use_radial_max[f],
               self.radial_max[f], self.radial_falloff[f])
        t = self.falloff_type[f]
        if t == SPHERE:
            w = fall(r, *dist)
        else:
            w = fall(np.abs(fac), *dist)
            if t == TUBE:
                radial = np.linalg.norm(d2 - fac[:, None] * self.axis[f], axis=1)
            else:
                length = np.linalg.norm(d2, axis=1)
                cos = np.clip(fac / np.maximum(length, 1e-300), -1.0, 1.0)
                radial = np.degrees(np.arccos(cos))
            w = w * fall(radial, *rad)
        z = self.z_direction[f]
        if z == POSITIVE:
            w = np.where(fac < 0, 0.0, w)
        elif z == NEGATIVE:
            w = np.where(fac > 0, 0.0, w)
        return w

    def _group_arrays(self, model):
        n = model.particle_count
        group = np.zeros(n, np.int64) if self.particle_group is None else self.particle_group
        if self.group_mass is None:
            mass = np.array([max(float(model.particle_mass.sum()), 1e-300)])
        else:
            mass = self.group_mass
        inv_mass = np.where(model.particle_inv_mass > 0, 1.0 / mass[group], 0.0)   # (n,)
        return group, inv_mass

    def evaluate(self, x, v, model, gravity=(0.0, 0.0, 0.0)):
        """The fields at the particles, split as the integrator needs them:
        (a0 (n, 3) [m/s^2] velocity-independent acceleration incl. the gravity weight's
        correction, c (n,) [1/s] linear velocity rate, q (n,) [1/m] quadratic drag rate), so that
        a = a0 - c v - q |v| v. x, v: (n, 3) positions [m] and velocities [m/s]."""
        n = x.shape[0]
        group, inv_mass = self._group_arrays(model)
        force = np.zeros((n, 3))                     # (n, 3) [N] velocity-independent
        rate = np.zeros(n)                           # (n,) [kg/s]
        quad = np.zeros(n)                           # (n,) [kg/m]
        sheet = self.group_sheet[group]
        normals = None
        if np.any(self.wind_factor > 0) and np.any(sheet) and len(model.surface_tris):
            normals = vertex_normals(x, model.surface_tris, n)
            sheet = sheet & (np.einsum("ij,ij->i", normals, normals) > 0)
        for f in range(self.count):                  # over the few fields; each vectorised
            w = self.group_weight[group, f]
            if not np.any(w > 0):
                continue
            nor, kind, shape = self.axis[f], self.kind[f], self.shape[f]
            d2 = x - self.origin[f]
            fac = d2 @ nor
            if shape == POINT:
                d = d2
            elif shape == LINE or kind == VORTEX:
                d = d2 - fac[:, None] * nor
            else:
                d = fac[:, None] * nor
            r = np.linalg.norm(d, axis=1)
            w = np.where(w > 0, w, 0.0) * self._falloff(f, d2, fac, r)
            on = w > 0
            s = self.strength[f] + (self._noise(f, n) if self.noise[f] > 0 else 0.0)
            if kind == DRAG:
                lin = np.minimum(s, DRAG_MAX)
                q = self.quadratic_drag[f] + (self._noise(f, n, 1) if self.noise[f] > 0 else 0.0)
                rate += w * np.maximum(lin, 0.0)
                quad += w * np.clip(q, 0.0, DRAG_MAX)
                continue
            if kind == WIND:
                F = (s * w)[:, None] * nor
            elif kind == FORCE:
                k = s * w / np.maximum(r, 1e-300)
                if self.use_gravity_falloff[f]:
                    k = np.where(r < np.finfo(np.float32).eps, 0.0, k / np.maximum(r, 1e-300) ** 2)
                F = k[:, None] * d
            elif kind == VORTEX and shape == POINT:
                t = np.cross(nor, d)
                tn = np.linalg.norm(t, axis=1)
                F = (s * w * r / np.maximum(tn, 1e-300))[:, None] * t
            elif kind == VORTEX:
                omega = (s * w)[:, None]
                t = np.cross(nor, d2)
                F = omega * t + omega * omega * np.cross(nor, t)
                rate += on                               # the "- v" of the new vortex
            else:                                        # TURBULENCE
                p = x if self.use_global_coords[f] else d2 + nor
                size = self.size[f] if self.size[f] > 0 else 1.0    # noise.c: 0 = unscaled
                F = (s * w)[:, None] * turbulence(p, size)
            F = np.where(on[:, None], F, 0.0)
            if normals is not None and self.wind_factor[f] > 0:
                k = self.wind_factor[f]
                proj = np.einsum("ij,ij->i", F, normals)[:, None] * normals
                F = np.where(sheet[:, None], (1.0 - k) * F + k * proj, F)
            force += F
            rate += self.flow[f] * w
        a0 = force * inv_mass[:, None]
        gravity = np.asarray(gravity, dtype=np.float64)
        gw = self.group_gravity[group]
        if np.any(gw != 1.0):
            a0 += (gw - 1.0)[:, None] * gravity * (inv_mass > 0)[:, None]
        return a0, rate * inv_mass, quad * inv_mass

    def accelerate(self, acc, x, v, model, gravity, dt, substeps):
        """Add the fields to a step's constant acceleration ``acc`` (n, 3) [m/s^2] in place and
        return the (n,) fraction of velocity each substep keeps (None when no field depends on
        velocity). Velocity terms are integrated per substep in exponential form (module
        docstring): acc is multiplied by phi where they act. The fields are evaluated at the
        step's predicted midpoint x + v dt / 2."""
        a0, c, q = self.evaluate(x + v * (0.5 * dt), v, model, gravity)
        acc += a0
        if not self.has_velocity_terms:
            return None
        u = np.sqrt(np.einsum("ij,ij->i", v, v))     # (n,) [m/s] speed at the frame's start
        cd = c * dt
        # (1 - exp(-c dt)) / c, -> dt as c -> 0
        span = np.where(np.abs(cd) > 1e-12, -np.expm1(-cd) / np.where(cd != 0, c, 1.0), dt)
        c_eff = c + np.log1p(q * u * span) / dt       # (n,) [1/s]
        z = c_eff * (dt / substeps)
        phi = np.where(np.abs(z) > 1e-12, -np.expm1(-z) / np.where(z != 0, z, 1.0), 1.0)
        acc *= phi[:, None]
        return np.exp(-z)

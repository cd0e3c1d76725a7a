"""External forces: gravity, air drag and wind, explosions.

Air drag and wind act through the air's velocity relative to a particle, u - v (u = w(x, t) the
wind). A particle with a share of a surface (cloth, a closed body) feels only the normal part of
it, in proportion to its exposed area A (CS 426's viscous drag applied per face, the way
Blender's cloth takes wind): F = drag * A * ((u - v) . n) n. A particle without a surface (a
strand, a lone point) with an exposed area feels F = drag * A * (u - v). drag is in
[kg / (m^2 s)]. With k = drag * A / m [1/s] the velocity along the affected direction obeys
dv/dt = k (u - v) + g, whose exact solution over a substep h (u held) is

    v' = v_inf + (v - v_inf) e^{-k h},   v_inf = u + g / k     (the terminal velocity)

along the affected direction (the normal for a surface particle, every direction for a strand);
across it gravity alone acts. ``apply_drag`` (a kernel of the table) writes that velocity into
x* every substep before the Verlet prediction (which then adds g h^2 back), so drag is
unconditionally stable at any drag, mass and substep length (an explicit force held over a
step diverges once k dt > 2: a 15 g/m^2 cloth reached 6.9e10 m/s) and the terminal speed is
exact at any substep count. Only the wind (u) and the normals are evaluated once per step (at
its start) and held over its substeps.

Turbulence: w(x, t) = W + |W| turbulence * sum_j a_j sin(k_j . x - omega_j t + phi_j), three
plane waves whose directions, phases and amplitude vectors come from a seeded generator, with
wavelength ``scale`` [m] and a temporal frequency that moves gusts along with the wind. It is
smooth in space and time and identical on every run with the same seed.

Explosion (Jakobsen, section 7): every free particle gets a velocity kick away from a centre,
dv = strength / max(r, r_min)^2 [m/s] (inverse-square falloff), applied by moving x*.
"""

import numpy as np


class Wind:
    def __init__(self, velocity=(0.0, 0.0, 0.0), turbulence=0.0, scale=2.0, seed=0):
        self.velocity = np.asarray(velocity, dtype=np.float64).reshape(3)   # (3,) [m/s]
        self.turbulence = float(turbulence)
        self.scale = float(scale)                                            # [m]
        self.seed = int(seed)
        rng = np.random.default_rng(int(seed))
        dirs = rng.normal(size=(3, 3))
        self.k = dirs / np.linalg.norm(dirs, axis=1)[:, None] * (2 * np.pi / self.scale)  # (3, 3) [1/m]
        amp = rng.normal(size=(3, 3))
        self.amp = amp / np.linalg.norm(amp, axis=1)[:, None] / np.sqrt(3.0)  # (3, 3) unitless
        self.phase = rng.uniform(0.0, 2 * np.pi, size=3)                     # (3,) [rad]
        speed = float(np.linalg.norm(self.velocity))
        self.omega = (self.k @ self.velocity) + rng.uniform(0.5, 1.5, 3) * speed / self.scale

    def copy(self):
        """Wind is never modified in place (set_wind makes a new one): sharing it is a copy."""
        return self

    def to_arrays(self):
        """{name: ndarray} from which from_arrays rebuilds this wind exactly."""
        return {"velocity": self.velocity.copy(), "turbulence": np.asarray(self.turbulence),
                "scale": np.asarray(self.scale), "seed": np.asarray(self.seed)}

    @classmethod
    def from_arrays(cls, data):
        return cls(np.asarray(data["velocity"], np.float64), float(data["turbulence"]),
                   float(data["scale"]), int(data["seed"]))

    @property
    def max_speed(self):
        """[m/s] a bound on |w(x, t)| anywhere: the three waves of unit-norm amplitude rows
        / sqrt(3) add at most sqrt(3) times the turbulence fraction of the mean speed."""
        speed = float(np.linalg.norm(self.velocity))
        return speed * (1.0 + np.sqrt(3.0) * self.turbulence)

    @property
    def active(self):
        return bool(np.any(self.velocity != 0.0))

    def at(self, x, t):
        """(n, 3) wind velocity [m/s] at positions x (n, 3) [m] and time t [s]."""
        w = np.broadcast_to(self.velocity, x.shape)
        if self.turbulence == 0.0:
            return w
        speed = float(np.linalg.norm(self.velocity))
        waves = np.sin(x @ self.k.T - self.omega * t + self.phase)           # (n, 3)
        return w + (speed * self.turbulence) * (waves @ self.amp)


def vertex_normals(x, tris, n):
    """(n, 3) unit area-weighted vertex normals of triangles (F, 3) over x; zero where none."""
    a = x[tris[:, 1]] - x[tris[:, 0]]
    b = x[tris[:, 2]] - x[tris[:, 0]]
    # the cross product by columns (np.cross on rows cost a fifth of this function)
    fn = (a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1], a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
          a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])
    out = np.empty((n, 3))
    flat = tris.ravel()
    for d in range(3):
        # bincount adds in flat-index order: the compiled surface_normals gathers in that order
        out[:, d] = np.bincount(flat, weights=np.repeat(fn[d], 3), minlength=n)
    # by columns, the order the compiled kernel adds them (einsum's order is its own)
    length = np.sqrt(out[:, 0] * out[:, 0] + out[:, 1] * out[:, 1] + out[:, 2] * out[:, 2])
    return out / np.where(length > 0, length, 1.0)[:, None]


def vertex_triangles(tris, n):
    """The triangles of each of n particles, for surface_normals' gather: tri_start (n + 1,)
    int64 and vertex_tris (3F,) int64, particle i's triangles vertex_tris[tri_start[i]:
    tri_start[i + 1]] in increasing order (a particle is a corner of a triangle once)."""
    flat = tris.ravel()
    order = np.argsort(flat, kind="stable")            # by particle, then by flat index
    tri_start = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(flat, minlength=n), out=tri_start[1:])
    return tri_start, (order // 3).astype(np.int64)


def surface_normals(X, tris, tri_start, vertex_tris, ids, out):
    """Kernel: out (3, q) [1] the unit area-weighted normals (vertex_normals) of particles ids
    (q,) int64 over triangles tris (F, 3) int64 of X (3, n) [m]; zero where a particle has none.
    tri_start, vertex_tris (vertex_triangles) are the compiled kernel's gather, unused here."""
    out[:] = vertex_normals(X.T, tris, X.shape[1])[ids].T


def drag_particles(inv_mass, area, has_surface, drag, h):
    """The part of drag_terms that only the masses, areas, drag coefficient and substep change
    (DragInputs keeps it from step to step): ids (q,) int64 the particles drag acts on (area
    and finite mass); k (q,) [1/s] their drag rates; along_normal (q,) bool surface particle
    (normal part only); decay (q,) e^{-k h}. inv_mass (n,) [1/kg], area (n,) [m^2],
    has_surface (n,) bool, drag [kg / (m^2 s)], h [s]."""
    k = drag * area * inv_mass                                   # (n,) [1/s]
    ids = np.nonzero(k > 0)[0].astype(np.int64)
    kq = k[ids]
    return ids, kq, np.ascontiguousarray(has_surface[ids]), np.exp(-kq * h)


def drag_drift(x, t, ids, k, wind, gravity, h):
    """(3, q) [m] v_inf h for particles ids (q,) int64 with drag rates k (q,) [1/s]: the
    terminal velocity (wind + g / k) times h. x (n, 3) [m], t [s], gravity (3,) [m/s^2]."""
    if wind.turbulence == 0.0:          # the same wind everywhere: no positions to gather
        return (wind.velocity[:, None] + gravity[:, None] / k) * h
    return np.ascontiguousarray(((wind.at(x[ids], t) + gravity / k[:, None]) * h).T)


def drag_terms(particles, drift, gravity, h, normals):
    """Per-step inputs of apply_drag: ids (q,) int64 the particles drag acts on; drift (3, q)
    [m] v_inf h (drag_drift); normal (3, q) unit normals (zero where along_normal is False);
    along_normal (q,) bool surface particle (normal part only); decay (q,) e^{-k h}; g_h2 (3,)
    [m] gravity times h^2. particles: drag_particles' (ids, k, along_normal, decay); gravity
    (3,) [m/s^2]; normals(ids) -> (3, q) the unit normals of those particles (zero off every
    surface: the surface_normals kernel)."""
    ids, _, along, decay = particles
    return ids, drift, normals(ids), along, decay, gravity * (h * h)


class DragInputs:
    """The per-step inputs of the apply_drag kernel for one Simulation (drag_terms), with what
    depends only on the masses, the drag coefficient, h (and, in a wind without turbulence, the
    wind and gravity) kept from the step before while those have not changed: for a 65k-particle
    cloth it was a millisecond of serial NumPy a step."""

    def __init__(self, model):
        n = model.particle_count
        self.model = model
        self.any_area = bool(np.any(model.particle_area > 0))
        # (n,) bool a corner of a surface triangle (drag along the normal only)
        self.has_surface = np.bincount(model.surface_tris.ravel(), minlength=n) > 0
        # (n + 1,), (3F,) int64 each particle's surface triangles, for the normals kernel
        self.tri_start, self.vertex_tris = vertex_triangles(model.surface_tris, n)
        self.normals_out = np.zeros((3, 0))       # (3, q) surface_normals' output
        # ((drag, h), drag_particles' tuple, (uniform wind?, wind velocity, gravity),
        # drift (3, q) [m]), or None
        self.kept = None

    def terms(self, state, control, gravity, h, kernels, inv_mass=None):
        """drag_terms' tuple for a step of substeps h [s] (state, control: the Simulation's;
        gravity (3,) [m/s^2]; kernels the kernel table), or None when no particle feels the
        air. inv_mass (n,) [1/kg]: the model's, or a copy with 0 for sleeping particles."""
        m = self.model
        if not control.air_drag > 0 or not self.any_area:
            return None
        tris = m.surface_tris

        def normals(ids):                                # (3, q) unit normals of ids
            out = self.normals_out
            if out.shape[1] != ids.size:
                out = self.normals_out = np.zeros((3, ids.size))
            if len(tris):
                kernels.surface_normals(state.X, tris, self.tri_start, self.vertex_tris, ids,
                                        out)
            return out
        model_mass = inv_mass is None or inv_mass is m.particle_inv_mass
        inv_mass = m.particle_inv_mass if inv_mass is None else inv_mass
        key = (float(control.air_drag), h)
        kept = self.kept
        if model_mass and kept is not None and kept[0] == key:
            particles = kept[1]
        else:
            particles = drag_particles(inv_mass, m.particle_area, self.has_surface,
                                       control.air_drag, h)
            kept = self.kept = (key, particles, None, None) if model_mass else None
        if not particles[0].size:
            return None
        wind = control.wind
        still = (wind.turbulence == 0.0, tuple(wind.velocity), tuple(gravity))
        if kept is not None and kept[2] == still and still[0]:
            drift = kept[3]
        else:
            drift = drag_drift(state.x, state.time, particles[0], particles[1], wind, gravity, h)
            if kept is not None:
                self.kept = (key, particles, still, drift)
        return drag_terms(particles, drift, gravity, h, normals)


def apply_drag(X, Xp, ids, drift, normal, along_normal, decay, g_h2):
    """Exact exponential air drag over one substep (module docstring), in place on x* so that
    the Verlet prediction that follows (adding g h^2) moves with the new velocity. X, Xp (3, n)
    [m] positions and positions a substep ago; ids (q,) int64; drift (3, q) [m] terminal
    velocity times h; normal (3, q) unit normals; along_normal (q,) bool: drag acts on the
    normal part only, else on all of the velocity; decay (q,) e^{-k h}; g_h2 (3,) [m]."""
    x = X[:, ids]
    disp = x - Xp[:, ids]                                        # v h
    rel = disp - drift                                           # (v - v_inf) h
    rn = rel[0] * normal[0] + rel[1] * normal[1] + rel[2] * normal[2]
    gn = g_h2[0] * normal[0] + g_h2[1] * normal[1] + g_h2[2] * normal[2]
    full = drift + rel * decay - g_h2[:, None]
    normal_only = disp - normal * (rn * (1.0 - decay) + gn)
    Xp[:, ids] = x - np.where(along_normal, normal_only, full)


def explosion_kick(x, free, centre, strength, min_distance):
    """(n, 3) velocity change [m/s] of an explosion at centre (3,) [m]."""
    d = x - centre
    r = np.linalg.norm(d, axis=1)
    rr = np.maximum(r, min_distance)
    dirs = np.where((r > 1e-12)[:, None], d / np.maximum(r, 1e-12)[:, None], np.array([0.0, 0.0, 1.0]))
    return np.where(free[:, None], dirs * (strength / rr ** 2)[:, None], 0.0)

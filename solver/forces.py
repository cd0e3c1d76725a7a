"""External forces: gravity, air drag and wind, explosions.

Air drag and wind act through the air's velocity relative to a particle, u = w(x, t) - v. A
particle with a share of a surface (cloth, a closed body) feels only the normal part of it, in
proportion to its exposed area A (CS 426's viscous drag applied per face, the way Blender's cloth
takes wind): F = drag * A * (u . n) n. A particle without a surface (a strand, a lone point) with
an exposed area feels F = drag * A * u. drag is in [kg / (m^2 s)]; linear in u, so it never makes
the explicit Verlet step unstable at the speeds wind reaches. Forces are evaluated once per step
(at its start) and held over its substeps.

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
    fn = np.cross(x[tris[:, 1]] - x[tris[:, 0]], x[tris[:, 2]] - x[tris[:, 0]])
    out = np.zeros((n, 3))
    flat = tris.ravel()
    rep = np.repeat(fn, 3, axis=0)
    for d in range(3):
        out[:, d] = np.bincount(flat, weights=rep[:, d], minlength=n)
    length = np.linalg.norm(out, axis=1)
    return out / np.where(length > 0, length, 1.0)[:, None]


def aero_acceleration(x, v, t, inv_mass, area, normals, has_surface, wind, drag):
    """(n, 3) acceleration [m/s^2] from air drag and wind (see module docstring)."""
    u = wind.at(x, t) - v
    un = np.einsum("ij,ij->i", u, normals)[:, None] * normals
    rel = np.where(has_surface[:, None], un, u)
    return rel * (drag * area * inv_mass)[:, None]


def explosion_kick(x, free, centre, strength, min_distance):
    """(n, 3) velocity change [m/s] of an explosion at centre (3,) [m]."""
    d = x - centre
    r = np.linalg.norm(d, axis=1)
    rr = np.maximum(r, min_distance)
    dirs = np.where((r > 1e-12)[:, None], d / np.maximum(r, 1e-12)[:, None], np.array([0.0, 0.0, 1.0]))
    return np.where(free[:, None], dirs * (strength / rr ** 2)[:, None], 0.0)

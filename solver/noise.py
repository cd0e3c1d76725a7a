"""Smooth 3-D gradient noise for the Turbulence force field (pure NumPy, vectorised).

Ken Perlin's "improved noise" (SIGGRAPH 2002): at each integer lattice corner a pseudo-random
gradient from a fixed permutation of 0..255, dotted with the offset to the point, blended with
the quintic fade 6t^5 - 15t^4 + 10t^3. Blender's Turbulence field sums octaves of the same kind
of noise (BLI_noise_generic_turbulence, depth 2: three octaves, each at twice the frequency and
half the amplitude of the one before); ``turbulence`` does that too, normalised so the result
stays in [-1, 1]. It is not Blender's bit pattern (Blender's permutation table is its own); the
scale, smoothness and range are the same. Deterministic: no state, the same point gives the
same value on every run.
"""

import numpy as np

# a fixed permutation of 0..255, repeated so that P[i + 1] never needs a wrap
_PERM = np.random.default_rng(20020101).permutation(256).astype(np.int64)
_P = np.concatenate([_PERM, _PERM])            # (512,) int64
OCTAVES = 3                                    # Blender's depth 2 = octaves 0, 1, 2


def _fade(t):
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0)


def _grad(h, x, y, z):
    """Perlin's 12 edge gradients (4 repeated) picked by the low 4 bits of h, dotted with
    (x, y, z); all arrays (n,)."""
    h = h & 15
    u = np.where(h < 8, x, y)
    v = np.where(h < 4, y, np.where((h == 12) | (h == 14), x, z))
    return np.where(h & 1, -u, u) + np.where(h & 2, -v, v)


def perlin(p):
    """(n,) gradient noise at points p (n, 3) [lattice units], about in [-1, 1], zero on the
    lattice."""
    fl = np.floor(p)
    f = p - fl
    i = fl.astype(np.int64) & 255
    x, y, z = f[:, 0], f[:, 1], f[:, 2]
    u, v, w = _fade(x), _fade(y), _fade(z)
    X, Y, Z = i[:, 0], i[:, 1], i[:, 2]
    A = _P[X] + Y
    AA, AB = _P[A] + Z, _P[A + 1] + Z
    B = _P[X + 1] + Y
    BA, BB = _P[B] + Z, _P[B + 1] + Z

    def lerp(t, a, b):
        return a + t * (b - a)

    x1, y1, z1 = x - 1.0, y - 1.0, z - 1.0
    return lerp(w,
                lerp(v, lerp(u, _grad(_P[AA], x, y, z), _grad(_P[BA], x1, y, z)),
                     lerp(u, _grad(_P[AB], x, y1, z), _grad(_P[BB], x1, y1, z))),
                lerp(v, lerp(u, _grad(_P[AA + 1], x, y, z1), _grad(_P[BA + 1], x1, y, z1)),
                     lerp(u, _grad(_P[AB + 1], x, y1, z1), _grad(_P[BB + 1], x1, y1, z1))))


def turbulence(p, size):
    """(n, 3) turbulent vectors in [-1, 1] per component at points p (n, 3) [m], noise scale
    ``size`` [m]: component k samples the octave sum at the coordinates rotated by k
    (x, y, z), (y, z, x), (z, x, y), as Blender's Turbulence field does, so the three are
    independent."""
    q = p / size
    out = np.empty_like(q)
    norm = sum(0.5 ** o for o in range(OCTAVES))
    for k in range(3):                   # three components, each vectorised over the points
        r = np.roll(q, -k, axis=1)
        total = np.zeros(len(q))
        for o in range(OCTAVES):
            total += (0.5 ** o) * perlin(r * (2.0 ** o))
        out[:, k] = total / norm
    return np.clip(out, -1.0, 1.0)

"""The argument checks every Builder call makes (and the animatable setters reuse): each raises
ValueError naming the argument, so nothing degenerate (NaN, negative mass, out-of-range ids)
reaches the step. A module of its own so that collision/groups.py and animated.py reach them
without importing the Builder."""

import numpy as np


def _points(x, name):
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):      # was: numpy's message, which names no argument
        raise ValueError(f"{name}: expected an (n, 3) array of numbers, got {type(x).__name__}") \
            from None
    if a.ndim == 1 and a.size == 3:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"{name}: expected an (n, 3) array of positions, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinity")
    return a.copy()


def _ids(ids, n, name, shape=None):
    a = np.asarray(ids)
    if a.size == 0:
        a = a.astype(np.int64)
    if not np.issubdtype(a.dtype, np.integer):
        if np.issubdtype(a.dtype, np.floating) and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
            a = a.astype(np.int64)
        else:
            raise ValueError(f"{name}: particle ids must be integers")
    a = a.astype(np.int64)
    if shape is not None and (a.ndim != len(shape) or any(s is not None and s != d
                                                          for s, d in zip(shape, a.shape))):
        raise ValueError(f"{name}: expected shape {tuple('n' if s is None else s for s in shape)}, "
                         f"got {a.shape}")
    if a.size and (a.min() < 0 or a.max() >= n):
        raise ValueError(f"{name}: particle id out of range 0..{n - 1}")
    return a


def _per_item(value, n, name, allow_zero=True):
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):      # was: numpy's message, which names no argument
        raise ValueError(f"{name}: expected a number or an array of numbers, got "
                         f"{type(value).__name__}") from None
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise ValueError(f"{name}: expected a scalar or ({n},) array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinity")
    if np.any(a < 0) or (not allow_zero and np.any(a == 0)):
        raise ValueError(f"{name}: must be {'>= 0' if allow_zero else '> 0'}")
    return a


def _masses(mass, n):
    """(n,) float64 masses [kg]; a mass <= 0 is refused naming the particle and the value (a
    negative mass used to reach the step clamped to a tiny positive one, and flew away)."""
    try:
        a = np.broadcast_to(np.asarray(mass, dtype=np.float64), (n,))
    except (TypeError, ValueError):
        a = None                             # not numbers, or the wrong shape: _per_item says
    if a is not None and np.all(np.isfinite(a)) and np.any(a <= 0):
        k = int(np.argmax(a <= 0))
        raise ValueError(f"mass: every particle needs a mass > 0 kg; particle {k} of the {n} "
                         f"given has {float(a[k])!r}")
    return _per_item(mass, n, "mass", allow_zero=False)


def _scalar(value, name, lo=0.0, hi=np.inf):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number, got {value!r}") from None
    if not np.isfinite(v) or v < lo or v > hi:
        raise ValueError(f"{name}: must be a finite number in [{lo}, {hi}], got {value!r}")
    return v

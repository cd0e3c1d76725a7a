"""Jakobsen's Verlet integration, velocity-less ("Advanced Character Physics", section 2):

    x' = x + (x - x*) k + a h^2,   x* = x

k = (1 - damping)^h removes the fraction ``damping`` of the velocity per second whatever the
substep length h (Jakobsen's 1.99x - 0.99x* is k = 0.99 per step); a holds gravity, drag and wind.
An optional speed clamp bounds |x' - x*| / h by a per-particle speed (a safety net against
explosions the user can set). ``predict`` is the NumPy kernel of the table; kernels/compiled.py
has its compiled mirror with the same signature. ``squared_motion`` measures how far particles
moved, for the step's once-a-frame reads (reach, sleep, the runaway check): in the compiled
table a parallel pass from 16,384 particles (on the calling thread below), where NumPy's three
temporaries over every particle were serial work that no thread could share.
"""

import numpy as np


def predict(X, Xp, a_h2, keep, lim):
    """One Verlet step in place: X, Xp (3, n) [m] positions and positions a substep ago (set to
    X's old values); a_h2 (3, n) [m] acceleration times h^2; keep (n,) fraction of velocity kept;
    lim (n,) [m] largest displacement (max speed times h), or an empty array for no clamp."""
    disp = X - Xp
    Xp[:] = X
    disp *= keep
    disp += a_h2
    if lim.size:
        length = np.sqrt(disp[0] * disp[0] + disp[1] * disp[1] + disp[2] * disp[2])
        disp *= np.minimum(1.0, lim / np.maximum(length, 1e-300))
    X += disp


def squared_motion(A, B, out):
    """out (n,) [m^2] the squared distance of each particle from A (3, n) [m] to B (3, n) [m];
    inf where it overflows (a runaway particle)."""
    with np.errstate(over="ignore", invalid="ignore"):
        d0, d1, d2 = A[0] - B[0], A[1] - B[1], A[2] - B[2]
        out[:] = d0 * d0 + d1 * d1 + d2 * d2

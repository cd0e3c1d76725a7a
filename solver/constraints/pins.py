"""Soft pins: particles held to moving targets by an XPBD attachment of finite stiffness.

A hard pin (Builder.pin(ids)) gives a particle infinite mass; it goes exactly where its target
goes. A soft pin (Builder.pin(ids, compliance=...)) keeps the particle's mass and pulls it toward
its target p with the vector constraint C(x) = x - p and compliance alpha [m/N] (Macklin,
Mueller and Chentanez, "XPBD", MIG 2016), per coordinate:

    dlambda = (p - x - alpha~ lambda) / (w + alpha~),   x += w dlambda,   alpha~ = alpha / h^2

Its static equilibrium under a force F on the particle is x = p + alpha F: a particle of mass m
hanging from a soft pin sags by m g alpha (tests/solver/test_pins.py). alpha = 0 holds the
particle on its target after every sweep (a rigid attachment, which other constraints can still
pull between sweeps); alpha = inf releases it. The compliance is per pin and lives in the Control
(Simulation.set_pin_compliance), so it can change between steps (an animated pin strength lets
go of a cloth gradually). The targets also live in the Control and move like hard pins' targets:
on a straight line from where they were to where Simulation.set_pin_targets put them, over the
substeps of the next step. ``solve_soft_pins`` is the NumPy kernel of the table; its compiled
mirror is in kernels/compiled.py. s = soft pins.
"""

import numpy as np


class SoftPinSolver:
    """The soft pins' solve arrays (s = soft pins); the substep loop (loop.py) relaxes them with
    solve_soft_pins."""

    def __init__(self, model):
        self.particles = model.soft_pin_particles              # (s,) int64
        self.inv_mass = model.particle_inv_mass                # (n,) float64 [1/kg]
        self.count = len(self.particles)
        self.alpha = np.zeros(self.count)                      # (s,) float64 alpha / h^2
        self.lam = np.zeros((self.count, 3))                   # (s, 3) float64 [N s^2]

    def kernel_args(self, control, h):
        """The soft-pins group of loop.run_substeps' arguments for a step of substeps h [s]:
        alpha~ from the Control's compliance (inf: released); the loop moves the goals along
        from the anchors to the targets, (s + 1) / substeps of the way in substep s."""
        np.divide(control.soft_pin_compliance, h * h, out=self.alpha)
        return (self.particles, control.soft_pin_anchor, control.soft_pin_target,
                self.inv_mass, self.alpha, self.lam)


def solve_soft_pins(X, ids, anchor, target, frac, inv_mass, alpha, lam, read_lam):
    """One sweep of soft pins (module docstring), in place on X (3, n) [m]. ids (s,) int64
    unique particles; anchor, target (s, 3) [m] the targets at the step's start and end, the
    goal this substep being anchor + (target - anchor) frac; inv_mass (n,) [1/kg]; alpha (s,)
    alpha / h^2 (inf: released, skipped); lam (s, 3) accumulated lambda; read_lam False: lambda
    is zero (the substep's first sweep)."""
    on = np.nonzero(alpha < np.inf)[0]
    i = ids[on]
    w = inv_mass[i]
    al = alpha[on]
    for c in range(3):
        goal = anchor[on, c] + (target[on, c] - anchor[on, c]) * frac
        lam_c = lam[on, c] if read_lam else np.zeros(len(on))
        dl = (goal - X[c, i] - al * lam_c) / (w + al)
        lam[on, c] = lam_c + dl
        X[c, i] = X[c, i] + w * dl

"""The step's guard: the backup a failed step restores, the runaway check, and the SolverError
that names the step, the particle and what acts on it (mixed into Simulation).

A step that leaves a position non-finite, or a particle faster than anything the scene can
produce, is a divergence: the State and Control go back to what they were before the step (bit
for bit, so the simulation can go on from there as if the step had never run), and SolverError
says which particle, which constraint or contact acts on it, and what to try.

The runaway bound: after every step the fastest particle must be slower than RUNAWAY_FACTOR *
(speed budget + wind + depenetration + colliders + pins + clamp) + RUNAWAY_FLOOR, the speed
budget being gravity (or gravity and force fields, where more) x simulated time + every
kick (state.py). Nothing in the scene pushes a particle faster than that sum; the factor
leaves room for what constraints concentrate (a whip's tip). A real divergence grows
geometrically and passes any such bound within steps.
"""

import math

import numpy as np

from .errors import SolverError

RUNAWAY_FACTOR = 10.0
RUNAWAY_FLOOR = 100.0        # [m/s]


class StepGuard:
    """The backup, the runaway check and the failure report of Simulation._step (mixed into
    Simulation, whose state, control, model, colliders, kernels, _backup (a Checkpoint
    allocated once), _motion2 (n,) scratch, _pinned, _soft, max_speed,
    max_depenetration_speed and set_state they use)."""

    def _save_backup(self):
        """The Checkpoint a failed step restores (and sleep reads): this State copied into the
        backup's own arrays, and of the Control only what a step itself changes (Control.
        step_copy); everything else is the user's to change between steps, not during one."""
        backup = self._backup
        backup.state.assign(self.state)
        self.control.step_copy(backup.control)
        return backup

    def _speed_limit(self, dt, acc_max):
        """[m/s] the speed no particle may exceed after this step (the module docstring's
        bound); adds this step's acceleration to the state's speed budget: gravity, or the
        largest of gravity plus force fields (acc_max [m/s^2]) where that is more, so a
        field's blast that launches a body is not taken for a runaway."""
        st, ctl = self.state, self.control
        g = float(np.linalg.norm(self.gravity))
        st.speed_budget += (acc_max if ctl.fields is not None and acc_max > g else g) * dt
        swept = self.colliders.surface_speed(ctl, st.x, dt)
        if swept > st.collider_speed_seen:     # what a collider launches keeps its speed after
            st.speed_budget += swept - st.collider_speed_seen
            st.collider_speed_seen = swept
        drive = ctl.wind.max_speed + self.max_depenetration_speed + swept
        if self._pinned.size:
            moves = ctl.pin_target - st.x[self._pinned]
            drive += float(np.sqrt(np.max(np.einsum("ij,ij->i", moves, moves)))) / dt
        if self._soft.size:
            moves = ctl.soft_pin_target - ctl.soft_pin_anchor
            drive += float(np.sqrt(np.max(np.einsum("ij,ij->i", moves, moves)))) / dt
        if self.max_speed is not None:
            drive += float(self.max_speed.max())
        return RUNAWAY_FACTOR * (st.speed_budget + drive) + RUNAWAY_FLOOR

    def _check_runaway(self, backup, limit):
        """After a step: a particle faster than ``limit`` [m/s] is a divergence, reported as the
        NaN check does (state restored, SolverError)."""
        st = self.state
        if not st.X.shape[1]:
            return
        speed2 = self._motion2            # inf where it overflows: a speed beyond any limit
        self.kernels.squared_motion(st.X, st.X_prev, speed2)
        i = int(np.argmax(speed2))
        speed = math.sqrt(float(speed2[i])) / st.h
        if speed <= limit:
            return
        self._abort(backup, i, f"particle {i} moves at {speed:.3g} m/s, beyond anything this "
                    f"scene's forces can produce ({limit:.3g} m/s from gravity over the simulated "
                    "time, wind, colliders, pins and velocity kicks): the simulation is running "
                    "away", "raise the substeps, lower the air drag or soften the constraint")

    def _fail(self, backup, substep):
        i = int(np.argmax(~np.isfinite(self.state.x).all(axis=1)))
        self._abort(backup, i, f"(substep {substep}): particle {i} left the finite numbers",
                    "lower the time step, raise the substeps or soften the constraint")

    def _abort(self, backup, i, what_happened, advice):
        """Restore the state from before the step and raise SolverError naming the step, the
        particle i, what acts on it and what to try."""
        step = backup.state.step_index
        acting = self.model.describe_particle(i)
        self.set_state(backup)
        space = "" if what_happened.startswith("(") else ":"
        raise SolverError(
            f"step {step}{space} {what_happened}; acting on it: {acting}. The state before the "
            f"step is kept; {advice}.", step=step, particle=i, constraint=acting)

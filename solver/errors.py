"""Errors the solver raises.

Bad arguments to the Builder or the Simulation raise the built-in ``ValueError`` naming the
argument; a simulation that leaves the finite numbers, or runs away (speeds beyond anything the
scene's forces can produce, Simulation._check_runaway), raises ``SolverError``.
"""


class SolverError(RuntimeError):
    """A step produced a non-finite position or velocity, or a runaway speed.

    The simulation's state is rolled back to what it was before the failing step, so the caller
    can change settings and try again. Attributes say where it happened:

    step      int, index of the failing step (0 = the first ``Simulation.step`` call)
    particle  int, the first particle whose position became non-finite (or the fastest one)
    constraint  str, the constraint or collider acting on that particle (human readable)
    """

    def __init__(self, message, step=None, particle=None, constraint=None):
        super().__init__(message)
        self.step = step
        self.particle = particle
        self.constraint = constraint

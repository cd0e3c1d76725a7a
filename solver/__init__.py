"""Verlet Physics solver: NumPy (kernels also compiled with Numba when it imports; backend.py),
never imports bpy.

    from solver import Builder, Simulation
    b = Builder(); ids = b.add_particles(x); ...; sim = Simulation(b.build()); sim.step(1 / 24)

The data flows one way: Builder -> Model (fixed arrays) -> Simulation (state + step).
"""

from .builder import Builder
from .errors import SolverError
from .model import Model
from .simulation import Simulation

__all__ = ["Builder", "Simulation", "Model", "SolverError"]

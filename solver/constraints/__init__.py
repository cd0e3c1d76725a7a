"""Constraint families, one file each: its C(x) and source in the docstring, a solver class that
holds the family's per-step arrays, and its NumPy kernel (the compiled one is in kernels/)."""

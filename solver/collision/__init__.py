"""Collision: collider placement (frames.py), the collider SDFs (sdf.py), the collide stage and
contact passes (colliders.py), the contacts found each step (contacts.py), embedded points of
tetrahedral bodies (points.py) and the NumPy contact kernels (project.py)."""

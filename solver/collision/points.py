"""Embedded points of Jakobsen's tetrahedral rigid bodies ("Advanced Character Physics",
section 5): a point p = sum_k c_k x_k of a body's four particles touches colliders like a particle
does (colliders.py, project_points), so a body collides at any point, not only at its particles.

Points are grouped by rank within their body (the r-th point of every body forms rank r): points of
one rank belong to different bodies, so their particle updates never collide and a rank can be
processed as one batch. P = embedded points, B = bodies.
"""

import numpy as np


class TetraPoints:
    def __init__(self, model):
        self.particles = model.tetra_particles                 # (B, 4) int64
        self.point_body = model.tetra_point_body               # (P,) int64
        self.weight = model.tetra_point_weight                 # (P, 4) float64 barycentric c_k
        self.tet = np.ascontiguousarray(self.particles[self.point_body])   # (P, 4) int64 corners
        self.count = len(self.point_body)
        c = self.weight
        # (P,) float64 1 / sum_k c_k^2, summed in the order k = 0..3: a point's move delta is
        # shared as c_k delta / sum c^2 by its corners (Jakobsen section 5)
        self.inv_c2 = 1.0 / (c[:, 0] * c[:, 0] + c[:, 1] * c[:, 1] + c[:, 2] * c[:, 2]
                             + c[:, 3] * c[:, 3])
        start = model.tetra_point_start
        rank = np.arange(self.count) - start[self.point_body] if self.count \
            else np.zeros(0, np.int64)
        # the ranks back to back: rank r = rank_points[rank_start[r]:rank_start[r + 1]]
        order = np.argsort(rank, kind="stable")
        self.rank_points = order.astype(np.int64)              # (P,) int64 point ids
        n_ranks = int(rank.max()) + 1 if rank.size else 0
        self.rank_start = np.searchsorted(rank[order], np.arange(n_ranks + 1)).astype(np.int64)

    def kernel_args(self):
        """The points group of loop.run_substeps' arguments."""
        return self.rank_start, self.rank_points, self.tet, self.weight, self.inv_c2

    def positions(self, x, body=None):
        """(P, 3) embedded point positions [m] (all bodies, or one body's), x (n, 3) [m]."""
        sel = np.arange(self.count) if body is None else np.nonzero(self.point_body == body)[0]
        tet = self.particles[self.point_body[sel]]
        return np.einsum("pk,pkd->pd", self.weight[sel], x[tet])

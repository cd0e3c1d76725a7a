"""Prototype: does the cloth's bend hold a cantilever the same at every mesh resolution?

A measured experiment, not product code (nothing in solver/ or addon/ imports it; the
extension's zip leaves benchmarks/ out). README.md beside it has the question, the method and
the figures. Two bend models on one scene, a 0.4 x 0.1 m strip of 0.15 kg/m^2 clamped flat at
one end (its first two columns of vertices pinned) under gravity, settled, its free end's mean
position read:

- ``product``: the product's own solver (solver.Simulation, Builder.add_cloth) with its bend,
  Jakobsen's support sticks (a stick over every pair of adjacent faces, solver/mesh.py), at a
  given bend compliance [m/N];
- ``isometric``: a NumPy XPBD loop of this file with rigid stretch sticks on the triangles'
  edges and the isometric bending of Bergou, Wardetzky, Harmon, Zorin and Grinspun, "A
  Quadratic Bending Model for Inextensible Surfaces" (SGP 2006), as a linear XPBD constraint:
  for each interior edge (x0, x1) with opposite vertices x2, x3, K = (c03 + c04, c01 + c02,
  -c01 - c03, -c02 - c04) from the cotangents of the angles at the edge's ends, s = 3 / (A0 +
  A1), and C(x) = sqrt(s) sum_i K_i x_i, a 3-vector, zero on a flat sheet and linear in x, so
  its gradient sqrt(s) K_i is constant: E = C^2 / (2 alpha) is Bergou's energy times 1 / alpha,
  which is 3/2 B kappa^2 per unit area for a cylinder of curvature kappa (measured by
  ``--calibrate``: 2.6, 2.8, 2.9 -> 3 as the mesh refines), so alpha = 3 / B for a bending
  rigidity B [N m].

Each is set against the heavy elastica of the clamped length (theta'' = -(w / B) (L - s) cos
theta, w the weight per area; solved here by shooting).

    .venv/bin/python benchmarks/prototype_bending/bending.py product --compliance 1e-6 1e-3 1
    .venv/bin/python benchmarks/prototype_bending/bending.py isometric --rigidity 1e-2 --iterations 1 16
    .venv/bin/python benchmarks/prototype_bending/bending.py --calibrate
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

LENGTH, WIDTH = 0.4, 0.1        # [m] the strip
DENSITY = 0.15                  # [kg/m^2] the product's cloth default
GRAVITY = 9.81                  # [m/s^2]
FPS = 24
DAMPING = 6.0                   # [1/s] the isometric loop's velocity decay, to settle


def strip(nx):
    """(n, 3) positions, (t, 3) triangles (diagonals alternating), (nx + 1, ny + 1) ids."""
    ny = max(2, int(round(nx * WIDTH / LENGTH)))
    gx, gy = np.meshgrid(np.linspace(0, LENGTH, nx + 1), np.linspace(0, WIDTH, ny + 1),
                         indexing="ij")
    pos = np.column_stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)])
    ids = np.arange(gx.size).reshape(nx + 1, ny + 1)
    a, b = ids[:-1, :-1].ravel(), ids[1:, :-1].ravel()
    c, d = ids[1:, 1:].ravel(), ids[:-1, 1:].ravel()
    flip = ((np.arange(nx)[:, None] + np.arange(ny)[None, :]) % 2).ravel().astype(bool)[:, None]
    t1 = np.where(flip, np.column_stack([a, b, c]), np.column_stack([a, b, d]))
    t2 = np.where(flip, np.column_stack([a, c, d]), np.column_stack([b, c, d]))
    return pos, np.concatenate([t1, t2]), ids


def _edge_opposites(tris):
    """{(i, j): [opposite vertices]} over the triangles' edges, i < j."""
    out = {}
    for tri in tris:
        for k in range(3):
            i, j, o = tri[k], tri[(k + 1) % 3], tri[(k + 2) % 3]
            out.setdefault((min(i, j), max(i, j)), []).append(o)
    return out


def _cot(a, b):
    return (a * b).sum(-1) / np.linalg.norm(np.cross(a, b), axis=-1)


def isometric_stencils(pos, tris):
    """Bergou et al. 2006: (m, 4) ids (x0, x1 the edge, x2, x3 opposite), (m, 4) K, (m,) s."""
    quads = np.array([(i, j, o[0], o[1]) for (i, j), o in _edge_opposites(tris).items()
                      if len(o) == 2])
    x0, x1, x2, x3 = (pos[quads[:, k]] for k in range(4))
    e0, e1, e2, e3, e4 = x1 - x0, x2 - x0, x3 - x0, x2 - x1, x3 - x1
    c01, c02, c03, c04 = _cot(e0, e1), _cot(e0, e2), _cot(-e0, e3), _cot(-e0, e4)
    K = np.column_stack([c03 + c04, c01 + c02, -c01 - c03, -c02 - c04])
    area = 0.5 * (np.linalg.norm(np.cross(e0, e1), axis=1) + np.linalg.norm(np.cross(e0, e2),
                                                                             axis=1))
    return quads, K, 3.0 / area


def _colours(rows, n):
    """First-fit colours of constraints (rows of particle ids), no two sharing a particle."""
    colour = np.empty(len(rows), np.int64)
    used = [set() for _ in range(n)]
    for k, row in enumerate(rows):
        taken = set().union(*(used[p] for p in row))
        c = 0
        while c in taken:
            c += 1
        colour[k] = c
        for p in row:
            used[p].add(c)
    return colour


def run_isometric(nx, rigidity, substeps=40, iterations=1, frames=96):
    """The free end's mean position (3,) after ``frames`` frames (isometric bend)."""
    pos, tris, ids = strip(nx)
    n = len(pos)
    area = 0.5 * np.linalg.norm(np.cross(pos[tris[:, 1]] - pos[tris[:, 0]],
                                         pos[tris[:, 2]] - pos[tris[:, 0]]), axis=1)
    mass = np.zeros(n)
    np.add.at(mass, tris.ravel(), np.repeat(area * DENSITY / 3.0, 3))
    w = 1.0 / mass
    w[ids[:2].ravel()] = 0.0
    sticks = np.array(list(_edge_opposites(tris).keys()))
    rest = np.linalg.norm(pos[sticks[:, 0]] - pos[sticks[:, 1]], axis=1)
    s_col = _colours(sticks, n)
    quads, K, s = isometric_stencils(pos, tris)
    b_col = _colours(quads, n)
    alpha = 3.0 / rigidity
    x, v = pos.copy(), np.zeros_like(pos)
    h = 1.0 / FPS / substeps
    lam = np.zeros((len(quads), 3))

    def relax_sticks():                      # rigid: PBD projection, XPBD with alpha = 0
        for c in range(s_col.max() + 1):
            sel = s_col == c
            i, j = sticks[sel, 0], sticks[sel, 1]
            d = x[i] - x[j]
            ln = np.linalg.norm(d, axis=1)
            den = w[i] + w[j]
            dl = np.where(den > 0, -(ln - rest[sel]) / np.where(den > 0, den, 1.0), 0.0)
            x[i] += (w[i] * dl)[:, None] * d / ln[:, None]
            x[j] -= (w[j] * dl)[:, None] * d / ln[:, None]

    def relax_bending():
        # dlam = -(C + a lam) / (s sum_i w_i K_i^2 + a), dx_i = w_i sqrt(s) K_i dlam, a = alpha/h^2
        a = alpha / h ** 2
        for c in range(b_col.max() + 1):
            sel = b_col == c
            q, k, ss = quads[sel], K[sel], s[sel]
            rs = np.sqrt(ss)
            C = rs[:, None] * sum(k[:, r, None] * x[q[:, r]] for r in range(4))
            den = ss * sum(w[q[:, r]] * k[:, r] ** 2 for r in range(4)) + a
            dl = -(C + a * lam[sel]) / den[:, None]
            lam[sel] += dl
            for r in range(4):
                x[q[:, r]] += (w[q[:, r]] * k[:, r] * rs)[:, None] * dl

    for _ in range(frames * substeps):
        xp = x.copy()
        lam[:] = 0.0
        v[:, 2] -= GRAVITY * h * (w > 0)
        x += v * h
        for _ in range(iterations):
            relax_bending()
            relax_sticks()                   # stretch last, as the product does
        v = (x - xp) / h * np.exp(-DAMPING * h)
    return x[ids[-1]].mean(0)


def run_product(nx, compliance, substeps=40, iterations=1, frames=96):
    """The free end's mean position (3,) through the product's solver (support-stick bend)."""
    from solver import Builder, Simulation
    pos, _, ids = strip(nx)
    quads = np.column_stack([ids[:-1, :-1].ravel(), ids[1:, :-1].ravel(), ids[1:, 1:].ravel(),
                             ids[:-1, 1:].ravel()])
    b = Builder()
    b.add_cloth(pos, quads, density=DENSITY, bend_compliance=compliance)
    b.pin(ids[:2].ravel())
    sim = Simulation(b.build(), substeps=substeps, iterations=iterations, damping=0.5)
    for _ in range(frames):
        sim.step(1.0 / FPS)
    return sim.x[ids[-1]].mean(0)


def elastica(free_length, rigidity, n=4000):
    """The heavy elastica clamped flat at s = 0: the free end's (x, z) [m] from the clamp, by
    shooting on the curvature at the clamp (bisection) until the free end carries none."""
    lam, ds = DENSITY * GRAVITY / rigidity, free_length / n

    def shoot(k0):
        th, k, X, Z = 0.0, k0, 0.0, 0.0
        for i in range(n):
            X += np.cos(th) * ds
            Z -= np.sin(th) * ds
            th += k * ds
            k -= lam * (free_length - i * ds) * np.cos(th) * ds
        return k, X, Z

    lo, hi = 0.0, lam * free_length ** 2
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        k, X, Z = shoot(mid)
        lo, hi = (lo, mid) if k > 0 else (mid, hi)
    return X, Z


def calibrate():
    """Bergou's energy (K, s as above, alpha = 1) of the strip bent into a cylinder of radius
    R, against 1/2 kappa^2 times its area: the factor alpha = factor / B takes."""
    for nx in (8, 16, 32, 64):
        pos, tris, _ = strip(nx)
        R = 0.3
        th = pos[:, 0] / R
        cyl = np.column_stack([R * np.sin(th), pos[:, 1], R - R * np.cos(th)])
        quads, K, s = isometric_stencils(pos, tris)
        C2 = s * (sum(K[:, r, None] * cyl[quads[:, r]] for r in range(4)) ** 2).sum(1)
        ratio = 0.5 * C2.sum() / (0.5 / R ** 2 * LENGTH * WIDTH)
        print(f"nx {nx:3d}: Bergou's energy / (B kappa^2 area / 2) = {ratio:.3f}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", choices=("product", "isometric"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--compliance", type=float, nargs="+", default=[1e-3],
                    help="product: bend compliance [m/N]")
    ap.add_argument("--rigidity", type=float, nargs="+", default=[1e-2],
                    help="isometric: bending rigidity B [N m]")
    ap.add_argument("--iterations", type=int, nargs="+", default=[1])
    ap.add_argument("--substeps", type=int, default=40)
    ap.add_argument("--calibrate", action="store_true")
    args = ap.parse_args(argv)
    if args.calibrate:
        calibrate()
        return
    values = args.compliance if args.model == "product" else args.rigidity
    for value in values:
        for it in args.iterations:
            for nx in args.sizes:
                h = LENGTH / nx
                if args.model == "product":
                    tip = run_product(nx, value, args.substeps, it)
                    ref = ""
                else:
                    tip = run_isometric(nx, value, args.substeps, it)
                    X, Z = elastica(LENGTH - h, value)
                    ref = f"   elastica x {h + X:.3f} z {Z:.3f}"
                name = "compliance" if args.model == "product" else "B"
                print(f"{args.model:9s} {name} {value:g} {args.substeps} x {it}  nx {nx:3d}: "
                      f"free end x {tip[0]:.3f} z {tip[2]:.3f}{ref}", flush=True)


if __name__ == "__main__":
    main()

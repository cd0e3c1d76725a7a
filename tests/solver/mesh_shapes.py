"""Triangle meshes for the mesh collider tests: icosphere, box, torus, grid plane."""

import numpy as np


def icosphere(subdivisions=2, radius=1.0):
    t = (1.0 + 5 ** 0.5) / 2
    v = np.array([[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t],
                  [0, -1, -t], [0, 1, -t], [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]], float)
    f = np.array([[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9],
                  [5, 11, 4], [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2],
                  [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10],
                  [8, 6, 7], [9, 8, 1]])
    v /= np.linalg.norm(v, axis=1)[:, None]
    for _ in range(subdivisions):
        e = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
        uniq, inv = np.unique(e, axis=0, return_inverse=True)
        mid = v[uniq[:, 0]] + v[uniq[:, 1]]
        mid /= np.linalg.norm(mid, axis=1)[:, None]
        m = inv.reshape(3, -1).T + len(v)
        v = np.vstack([v, mid])
        a, b, c = f.T
        ab, bc, ca = m.T
        f = np.vstack([np.column_stack(x) for x in
                       ([a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca])])
    return v * radius, f


def box(size=(1.0, 1.0, 1.0)):
    h = np.asarray(size, float) / 2
    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * h
    quads = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    f = np.array([[q[0], q[1], q[2]] for q in quads] + [[q[0], q[2], q[3]] for q in quads])
    return v, f


def torus(major=1.0, minor=0.3, nu=32, nv=16):
    u, w = np.meshgrid(np.arange(nu) * 2 * np.pi / nu, np.arange(nv) * 2 * np.pi / nv,
                       indexing="ij")
    r = major + minor * np.cos(w)
    v = np.column_stack([(r * np.cos(u)).ravel(), (r * np.sin(u)).ravel(),
                         (minor * np.sin(w)).ravel()])
    i = np.arange(nu)[:, None]
    j = np.arange(nv)[None, :]
    a = i * nv + j
    b = ((i + 1) % nu) * nv + j
    c = ((i + 1) % nu) * nv + (j + 1) % nv
    d = i * nv + (j + 1) % nv
    f = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3),
                        np.stack([a, c, d], -1).reshape(-1, 3)])
    return v, f


def grid(n=4, size=2.0, z=0.0):
    """An open square sheet (n x n quads) in the plane z, normal +Z."""
    g = np.linspace(-size / 2, size / 2, n + 1)
    x, y = np.meshgrid(g, g, indexing="ij")
    v = np.column_stack([x.ravel(), y.ravel(), np.full(x.size, z)])
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    a = i * (n + 1) + j
    b = (i + 1) * (n + 1) + j
    c = (i + 1) * (n + 1) + j + 1
    d = i * (n + 1) + j + 1
    f = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3),
                        np.stack([a, c, d], -1).reshape(-1, 3)])
    return v, f

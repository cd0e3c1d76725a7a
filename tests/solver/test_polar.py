"""The LAPACK-free polar decomposition of shape matching (shapes.polar_rotation, one-sided
Jacobi) against numpy.linalg.svd, and its compiled mirror against it bit for bit."""

import numpy as np
import pytest

from solver import backend
from solver.constraints.shapes import jacobi_columns, pinv_apply, polar_rotation


def _svd_rotation(a):
    u, _, vt = np.linalg.svd(a)
    det = np.linalg.det(u @ vt)
    u[:, :, 2] *= np.where(det < 0, -1.0, 1.0)[:, None]
    return u @ vt


def _rotations(rng, k):
    q, _ = np.linalg.qr(rng.normal(size=(k, 3, 3)))
    return q * np.sign(np.linalg.det(q))[:, None, None]


def _cases():
    rng = np.random.default_rng(7)
    cases = {"random": rng.normal(size=(500, 3, 3))}
    for g in (1e-2, 1e-4, 1e-6):
        # R S with S symmetric positive definite and graded: contact weighting does this
        p = _rotations(rng, 500)
        s = p @ np.diag([1.0, g, 0.7 * g]) @ p.transpose(0, 2, 1)
        cases[f"graded {g:g}"] = _rotations(rng, 500) @ s
    reflect = _rotations(rng, 500) @ np.diag([1.0, 0.8, -0.3])        # det < 0
    cases["reflection"] = reflect
    planar = _rotations(rng, 500) @ np.diag([1.0, 0.5, 0.0]) @ _rotations(rng, 500)
    cases["planar"] = planar
    return cases


@pytest.mark.parametrize("name", list(_cases()))
def test_polar_matches_svd(name):
    """Graded cases are compared through the ground truth rotation's conditioning: the error
    of any backward-stable method grows like eps / (sigma_2 + sigma_3)."""
    a = _cases()[name]
    r = polar_rotation(a)
    ref = _svd_rotation(a)
    # a proper rotation
    assert np.abs(r @ r.transpose(0, 2, 1) - np.eye(3)).max() < 1e-13
    assert np.all(np.abs(np.linalg.det(r) - 1.0) < 1e-13)
    sv = np.linalg.svd(a, compute_uv=False)
    tol = 1e-14 * sv[:, 0] / (sv[:, 1] + sv[:, 2]) + 1e-13
    assert np.all(np.abs(r - ref).max(axis=(1, 2)) <= tol * 10), name


@pytest.mark.parametrize("name", list(_cases()))
def test_polar_from_a_basis_matches_svd(name):
    """Jacobi started from any rotation (the shape solve starts from each cluster's rest axes,
    shapes.rest_basis) converges to the same rotation, within test_polar_matches_svd's bound."""
    a = _cases()[name]
    basis = _rotations(np.random.default_rng(11), len(a))
    r = polar_rotation(a, basis)
    assert np.abs(r @ r.transpose(0, 2, 1) - np.eye(3)).max() < 1e-13
    assert np.all(np.abs(np.linalg.det(r) - 1.0) < 1e-13)
    sv = np.linalg.svd(a, compute_uv=False)
    tol = 1e-14 * sv[:, 0] / (sv[:, 1] + sv[:, 2]) + 1e-13
    assert np.all(np.abs(r - _svd_rotation(a)).max(axis=(1, 2)) <= tol * 10), name


def test_rest_basis_diagonalises_the_rest_moment():
    """shapes.rest_basis: for each cluster a rotation V (det +1) with V^T S0 V diagonal, S0 the
    mass-weighted second moment about the cluster's centre of mass; a rigidly turned cluster
    then needs no turn of Jacobi from there (the columns of A V are already orthogonal)."""
    from solver.constraints.shapes import rest_basis
    rng = np.random.default_rng(5)
    sizes = np.array([8, 4, 12, 2])                     # a box, a tetrahedron, a capsule, a rod
    cluster = np.repeat(np.arange(len(sizes)), sizes)
    q = rng.normal(size=(len(cluster), 3)) * [0.3, 0.1, 0.05]
    mass = rng.uniform(0.5, 2.0, len(cluster))
    v = rest_basis(q, cluster, mass, len(sizes))
    for k in range(len(sizes)):
        e = cluster == k
        c = (mass[e, None] * q[e]).sum(0) / mass[e].sum()
        s0 = ((q[e] - c).T * mass[e]) @ (q[e] - c)
        d = v[k].T @ s0 @ v[k]
        assert np.abs(d - np.diag(np.diag(d))).max() <= 1e-14 * np.abs(s0).max(), k
        assert np.linalg.det(v[k]) == pytest.approx(1.0, abs=1e-13)
        b = _rotations(rng, 1)[0] @ s0 @ v[k]           # A V of the cluster turned rigidly
        off = b.T @ b
        assert np.abs(off - np.diag(np.diag(off))).max() <= 1e-13 * np.abs(off).max(), k


def test_polar_degenerate():
    """Collinear and zero matrices still give proper rotations: a collinear cluster maps its
    axis onto the deformed axis; A = 0 gives the identity."""
    v1 = np.array([1.0, 2.0, 2.0]) / 3.0
    u1 = np.array([0.0, 0.6, 0.8])
    a = np.stack([np.outer(u1, v1) * 2.5, np.zeros((3, 3))])
    r = polar_rotation(a)
    assert np.allclose(r[0] @ v1, u1, atol=1e-14)
    assert np.allclose(r[0] @ r[0].T, np.eye(3), atol=1e-14)
    assert np.linalg.det(r[0]) == pytest.approx(1.0, abs=1e-14)
    assert np.array_equal(r[1], np.eye(3))


def test_jacobi_columns_and_pinv():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(200, 3, 3))
    b, v, m = jacobi_columns(a)
    assert np.array_equal(m, np.abs(a).max(axis=(1, 2)))
    b = b * m[:, None, None]
    assert np.abs(np.einsum("kij,kjl->kil", a, v) - b).max() < 1e-13       # B m = A V
    gram = np.einsum("kij,kil->kjl", b, b)
    off = gram - np.einsum("kii->ki", gram)[:, :, None] * np.eye(3)
    assert np.abs(off).max() < 1e-13 * np.abs(gram).max()                  # orthogonal columns
    # pinv of a rank-2 symmetric matrix (an inertia tensor of collinear points) on vectors
    axis = rng.normal(size=(200, 3))
    axis /= np.linalg.norm(axis, axis=1)[:, None]
    inertia = np.eye(3) - axis[:, :, None] * axis[:, None, :]
    y = rng.normal(size=(200, 3))
    got = np.stack(pinv_apply(inertia, [y[:, 0], y[:, 1], y[:, 2]]), axis=1)
    want = np.einsum("kij,kj->ki", np.linalg.pinv(inertia), y)
    assert np.abs(got - want).max() < 1e-12


def test_compiled_polar_is_bit_identical():
    kernels = backend.numba_kernels()
    if kernels is None:
        pytest.skip(f"numba not available: {backend.load_error()}")
    cases = dict(_cases())
    cases["collinear off-axis"] = np.array([[[0.00125, 0.00075, 0.0015],
                                             [0.00075, 0.00045, 0.0009],
                                             [0.0015, 0.0009, 0.0018]]])
    cases["tiny"] = _cases()["random"][:20] * 1e-160
    cases["huge"] = _cases()["random"][:20] * 1e155
    cases["zero and nan"] = np.stack([np.zeros((3, 3)), np.full((3, 3), np.nan)])
    basis = _rotations(np.random.default_rng(3), 500)
    for name, a in cases.items():
        want = polar_rotation(a)
        got = np.empty_like(want)
        for k in range(len(a)):
            kernels._polar3(a[k].copy(), got[k])
        assert np.array_equal(got, want, equal_nan=True), name
        # started from a basis, as the shape solve's clusters (shapes.rest_basis)
        want = polar_rotation(a, basis[:len(a)])
        scratch = np.empty((3, 3))
        for k in range(len(a)):
            kernels._polar3_from(a[k].copy(), got[k], scratch, basis[k])
        assert np.array_equal(got, want, equal_nan=True), name


def test_rank_deficient_converges_without_warnings():
    """A collinear cluster off the axes (the outer product below) leaves two noise columns of
    rounding size; they must count as converged, not be turned until the sweep cap with
    overflowing intermediate values (which NumPy reports as a RuntimeWarning)."""
    a = np.array([[[0.00125, 0.00075, 0.0015], [0.00075, 0.00045, 0.0009],
                   [0.0015, 0.0009, 0.0018]]])
    with np.errstate(all="raise"):
        r = polar_rotation(a)
        b, v, m = jacobi_columns(a)
    assert np.abs(r[0] @ r[0].T - np.eye(3)).max() < 1e-14
    u = np.array([0.00125, 0.00075, 0.0015])
    assert np.allclose(r[0] @ (u / np.linalg.norm(u)), u / np.linalg.norm(u), atol=1e-12)
    assert m[0] == 0.0018


@pytest.mark.parametrize("exponent", [-520, -300, 300, 520])
def test_polar_ignores_the_scale_of_a(exponent):
    """A is scaled to a largest entry of 1 first, so no scale over- or underflows: a power of
    two changes no bit of R."""
    a = _cases()["graded 0.0001"][:50]
    with np.errstate(all="raise"):
        r = polar_rotation(a * 2.0 ** exponent)
    assert np.array_equal(r, polar_rotation(a))

"""Strands (edge-only plants: grass, stems, trees) with bend and twist stiffness.

Support sticks between the far ends of two edges (Jakobsen's plants) hold an angle only to
second order when the two edges are in line, and nothing holds twist about a straight chain: a
tree of edges sagged at full stiffness and its branches swivelled about the trunk. Here every
edge e = (a, b) carries a frame particle g_e, off the edge's midpoint by half its length along
a direction perpendicular to it (a rigid triangle a, b, g_e: the edge's material frame, as the
"ghost points" of Umetani, Schmidt and Stam, "Position-based Elastic Rods", 2014), and every
vertex where two or more edges meet is one shape-matching cluster (Mueller et al. 2005; XPBD
goal compliance, constraints/shapes.py) over the vertex, its neighbours and the frame particles
of its edges. A cluster's fit is a full rotation as soon as one frame particle is off the line,
so it restores bend in every direction to first order and twist between the edges; a root whose
edge has both ends pinned pins its frame particle too (its target follows the root, see
Builder.add_strands), which anchors the twist of the whole tree.

Frame particles carry 10 % of the mean mass of their edge's ends (so the frame has inertia) and
no exposed area; the strand's own particles keep the masses given. Shapes: e = edges, n = the
strand's vertices.
"""

import numpy as np

FRAME_MASS_FRACTION = 0.1     # a frame particle's mass over its edge's mean end mass


def edge_frames(x, edges):
    """(e, 3) float64 [m] frame particle of each edge (e, 2) int64 over positions x (n, 3) [m]:
    the midpoint plus half the edge's length along a unit direction perpendicular to it (its
    cross product with world Z, or with X for an edge within 25 degrees of vertical)."""
    a, b = x[edges[:, 0]], x[edges[:, 1]]
    t = b - a
    length = np.linalg.norm(t, axis=1)
    t = t / length[:, None]
    ref = np.where((np.abs(t[:, 2]) > 0.9)[:, None], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    d = np.cross(t, ref)
    d /= np.linalg.norm(d, axis=1)[:, None]
    return 0.5 * (a + b) + d * (0.5 * length)[:, None]


def joints(edges, n):
    """The joint clusters of a strand graph: (vertices (k,) int64, members list of k (m_i,)
    int64). members[i] are local indices over the strand's vertices 0..n-1 followed by its
    frame particles n..n+e-1: vertices[i], its neighbours, then the frames of its edges. Only
    vertices with two or more edges have a joint."""
    e = np.asarray(edges, np.int64).reshape(-1, 2)
    ne = len(e)
    vertex = np.concatenate([e[:, 0], e[:, 1]])
    other = np.concatenate([e[:, 1], e[:, 0]])
    frame = np.concatenate([np.arange(ne), np.arange(ne)]) + n
    order = np.argsort(vertex, kind="stable")
    vertex, other, frame = vertex[order], other[order], frame[order]
    starts = np.nonzero(np.r_[True, vertex[1:] != vertex[:-1]])[0]
    counts = np.diff(np.r_[starts, vertex.size])
    keep = counts >= 2
    members = [np.concatenate(([vertex[s]], other[s:s + c], frame[s:s + c]))
               for s, c in zip(starts[keep], counts[keep])]
    return vertex[starts[keep]], members

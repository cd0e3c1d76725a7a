"""Partitioning the stick graph so a sweep synchronises its threads a handful of times, not once
per colour (built once, at build time).

Graph-coloured Gauss-Seidel (coloring.py) runs one colour at a time in parallel: a cloth has about
twelve colours, so a sweep waits for every thread twelve times, and at 40 substeps a frame that
is 480 waits of a few microseconds each (the issue's measurement: 16 cores gave 1.4x to 4x).
Domain decomposition fixes it: the particles are cut into blocks (contiguous id ranges, which
follow the mesh for the grids and strands Blender makes), each stick belongs to the block of its
lower particle id, and blocks whose sticks write disjoint particles run at the same time, each
relaxing its own sticks in Gauss-Seidel order. Blocks are grouped by a greedy colouring of the
block graph (two blocks conflict when their sticks write a common block); a sweep then waits once
per group: two groups for a strip of blocks along a cloth.

Within a block, sticks are still taken colour by colour (in the source order the builder chose:
shear, bend, ..., stretch last), and the stretch sticks are a phase of their own: every block
relaxes its other sticks before any block relaxes its stretch. Without the phase the second
group's shear and bend ran after the first group's stretch and undid it where the blocks meet
(Gauss-Seidel leaves what it solves last best satisfied): at N = 128 (64 blocks of 256
particles) the drape's largest and 99th-percentile edge strain were 0.186 and 0.079, against
0.106 and 0.062 with the phase and 0.101 and 0.059 as one block, which has no boundary
(benchmarks/cloth_drape.py, 2026-11-26). The groups run forward in one phase and backward in
the next, so the first phase's last group goes on into the second phase's first without a
wait: 2 x groups - 1 waits per sweep, three for a cloth. (A phase per source, four waits for a
cloth, gave 0.129 and 0.061 and cost the demo about 1 ms a frame on two threads.)

The NumPy backend's vectorised order is the compiled one's: it relaxes "this colour in every
block of this group" as one batch, and sticks of one batch never share a particle (one colour
within a block; disjoint particles across the blocks of a group), so both backends do the same
arithmetic in an order that gives the same bits, and no thread count changes the result (the
partition depends on the model only).

Where the block graph needs more than MAX_GROUPS groups (ids with no locality, e.g. a mesh whose
vertex order was shuffled: every block then conflicts with every other, and the groups would run
one block, one thread, at a time), the partition falls back to plain colours: each colour is a
group, cut into chunks of sticks that the threads share. A model of fewer than
2 x MIN_BLOCK_PARTICLES particles is one block: one task, one thread, one wait (threads cost
more than they save there).

The result, stored in the Model (m = sticks, S = batches, G = groups, T = tasks, R = ranges):
    order            (m,) int64 the permutation that sorts the builder's sticks
    batch_offsets    (S + 1,) batch s = sticks [s, s+1): the NumPy kernel's vectorised unit
    group_task_start (G + 1,) tasks of group g, run in parallel; groups run one after another
    task_range_start (T + 1,) ranges of task t, run in order by one thread
    range_lo, range_hi (R,) stick ranges [lo, hi)
"""

import numpy as np

# particles per block: BLOCK_PARTICLES from 65k particles on (64 blocks and more to share
# between 16 threads); below that TARGET_BLOCKS blocks of at least MIN_BLOCK_PARTICLES, so a
# smaller model still gives 16 threads two tasks each in each of its groups. Measured on
# 16 cores (2026-11-26, docs/performance.md, "Sixteen cores"): a N = 128 cloth's substeps took
# 12.2 ms a frame in 16 blocks of 1024, 7.5 ms in 64 blocks of 256 (44 to 47 ms on one thread either
# way); at N = 256, 256 blocks of 256 were slower than 64 of 1024 on one thread and on 16
# (254 against 180 ms, 34.5 against 29.3), hence the upper size. On two threads the size
# made no difference.
BLOCK_PARTICLES = 1024
MIN_BLOCK_PARTICLES = 256
TARGET_BLOCKS = 64
MAX_BLOCKS = 256
# sticks per task when a colour is split between threads (the fallback)
CHUNK_STICKS = 2048
# more groups than this and blocks stop paying: the fallback runs instead
MAX_GROUPS = 4


def partition_sticks(pairs, colors, n, phase=None):
    """The partition of sticks pairs (m, 2) int64 with colours (m,) int64 (numbered in relaxation
    order) over n particles; phase (m,) int64 (optional, nondecreasing with the colour): every
    stick of a phase is relaxed before any of the next (any number of phases). Returns a dict
    of the arrays the module docstring lists."""
    m = len(pairs)
    if m == 0:
        zero = np.zeros(1, np.int64)
        return {"order": np.zeros(0, np.int64), "batch_offsets": zero,
                "group_task_start": zero, "task_range_start": zero,
                "range_lo": np.zeros(0, np.int64), "range_hi": np.zeros(0, np.int64)}
    if phase is None:
        phase = np.zeros(m, np.int64)
    phase = np.unique(phase, return_inverse=True)[1].reshape(m)    # numbered 0, 1, ... in turn
    by_block, groups = _by_blocks(pairs, colors, n, phase)
    if groups <= MAX_GROUPS:
        return by_block
    return _by_colors(colors)


def _by_blocks(pairs, colors, n, phase):
    n_blocks = int(min(MAX_BLOCKS, max(1, n // BLOCK_PARTICLES,
                                       min(TARGET_BLOCKS, n // MIN_BLOCK_PARTICLES))))
    block = np.arange(n, dtype=np.int64) * n_blocks // n          # (n,) block of each particle
    bi, bj = block[pairs[:, 0]], block[pairs[:, 1]]
    owner = np.minimum(bi, bj)                                    # (m,)
    writes = np.zeros((n_blocks, n_blocks), bool)                 # [owner, block it writes]
    writes[owner, bi] = True
    writes[owner, bj] = True
    conflict = (writes.astype(np.int32) @ writes.T.astype(np.int32)) > 0
    group = _greedy_groups(conflict)                              # (blocks,) int64
    groups = int(group.max()) + 1
    # the phases one after another, their groups in turn forward and backward, so that the last
    # group of a phase and the first of the next are the same blocks and run as one group (its
    # blocks write disjoint particles in either phase): groups x phases - phases + 1 waits.
    # (One group: the colours keep the phases' order.)
    pos = np.where(phase % 2 == 0, group[owner], groups - 1 - group[owner])
    g = phase * (groups - 1) + pos
    order = np.lexsort((owner, colors, g))                        # by group, colour, block
    g, c, o = g[order], colors[order], owner[order]
    # batches: runs of equal (group, colour); tasks: blocks of a group; ranges: a block's
    # sticks in each batch of its group
    new_batch = np.r_[True, (g[1:] != g[:-1]) | (c[1:] != c[:-1])]
    batch_offsets = np.r_[np.nonzero(new_batch)[0], len(order)].astype(np.int64)
    new_range = new_batch | np.r_[True, o[1:] != o[:-1]]
    lo = np.nonzero(new_range)[0]
    hi = np.r_[lo[1:], len(order)]
    range_group, range_block = g[lo], o[lo]
    # a task's ranges must be consecutive in the range list: sort ranges by (group, block),
    # keeping batch order within a block (lo is increasing, so a stable sort keeps it)
    by_task = np.lexsort((lo, range_block, range_group))
    lo, hi = lo[by_task], hi[by_task]
    range_group, range_block = range_group[by_task], range_block[by_task]
    new_task = np.r_[True, (range_group[1:] != range_group[:-1])
                     | (range_block[1:] != range_block[:-1])]
    task_first = np.nonzero(new_task)[0]
    task_range_start = np.r_[task_first, len(lo)].astype(np.int64)
    _, task_group = np.unique(range_group[task_first], return_inverse=True)   # dense groups
    group_task_start = np.searchsorted(task_group, np.arange(int(task_group.max()) + 2)).astype(np.int64)
    return {"order": order.astype(np.int64), "batch_offsets": batch_offsets,
            "group_task_start": group_task_start, "task_range_start": task_range_start,
            "range_lo": lo.astype(np.int64), "range_hi": hi.astype(np.int64)}, groups


def _greedy_groups(conflict):
    """(B,) int64 group of each block: first fit in block order, no two conflicting blocks in one
    group (a loop over blocks, at most MAX_BLOCKS, at build time)."""
    n_blocks = len(conflict)
    group = np.full(n_blocks, -1, np.int64)
    for b in range(n_blocks):
        taken = set(group[conflict[b] & (group >= 0)].tolist())
        k = 0
        while k in taken:
            k += 1
        group[b] = k
    return group


def _by_colors(colors):
    order = np.argsort(colors, kind="stable")
    c = colors[order]
    n_colors = int(c.max()) + 1
    batch_offsets = np.searchsorted(c, np.arange(n_colors + 1)).astype(np.int64)
    lo = []
    group_task_start = [0]
    for k in range(n_colors):                                     # per colour, at build time
        starts = np.arange(batch_offsets[k], batch_offsets[k + 1], CHUNK_STICKS)
        lo.append(starts)
        group_task_start.append(group_task_start[-1] + len(starts))
    lo = np.concatenate(lo).astype(np.int64)
    hi = np.minimum(lo + CHUNK_STICKS, np.repeat(batch_offsets[1:], np.diff(group_task_start)))
    return {"order": order.astype(np.int64), "batch_offsets": batch_offsets,
            "group_task_start": np.array(group_task_start, np.int64),
            "task_range_start": np.arange(len(lo) + 1, dtype=np.int64),
            "range_lo": lo, "range_hi": hi.astype(np.int64)}

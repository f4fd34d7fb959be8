"""The compiled forward push of ``ppr.LocalPageRank`` (numba), in a module of its own so that
numba's on-disk cache finds it again in the next process (as ``retrieval/bm25_kernel.py``).
Imported only when numba is installed."""

from __future__ import annotations

from ..runtime.extras import requires_extra

with requires_extra("fast"):
    from numba import njit


@njit(cache=True, nogil=True)
def push(indptr, indices, share, degree, seeds, seed_mass, damping, epsilon, mass, residual, queued, queue,
         reached):
    """Forward push (Andersen, Chung & Lang 2006) on a symmetric graph in CSR form, ``share``
    holding each edge's weight over its source's weighted ``degree``. ``mass`` and
    ``residual`` (zeros) and ``queued`` (False) have a slot per node, ``queue`` one more (a
    ring whose head meets its tail only when empty); they are the caller's. A node is
    pushed while its residual is at least ``epsilon`` times its degree: it keeps (1 − d) of
    the residual and hands d of it to its neighbours by edge weight; a node without edges
    hands its d back to the restart nodes (as the power iteration's leaked mass goes back to them).
    The nodes given mass are written to ``reached`` in the order reached; returns how many."""
    n_queue = queue.size
    head = 0
    tail = 0
    for j in range(seeds.size):
        u = seeds[j]
        residual[u] += seed_mass[j]
        if not queued[u]:
            queued[u] = True
            queue[tail] = u
            tail = (tail + 1) % n_queue
    n_reached = 0
    while head != tail:
        u = queue[head]
        head = (head + 1) % n_queue
        queued[u] = False
        r = residual[u]
        residual[u] = 0.0
        if mass[u] == 0.0:
            reached[n_reached] = u
            n_reached += 1
        mass[u] += (1.0 - damping) * r
        lo, hi = indptr[u], indptr[u + 1]
        if lo == hi:
            for j in range(seeds.size):
                v = seeds[j]
                residual[v] += damping * r * seed_mass[j]
                if not queued[v] and residual[v] >= epsilon * max(degree[v], 1.0):
                    queued[v] = True
                    queue[tail] = v
                    tail = (tail + 1) % n_queue
            continue
        given = damping * r
        for p in range(lo, hi):
            v = indices[p]
            residual[v] += given * share[p]
            if not queued[v] and residual[v] >= epsilon * degree[v]:
                queued[v] = True
                queue[tail] = v
                tail = (tail + 1) % n_queue
    return n_reached


@njit(cache=True, nogil=True)
def spread(indptr, indices, share, nodes, values, out):
    """``out[v] += values[j] * share`` over the edges of each ``nodes[j]`` (a sparse product
    restricted to the nodes that hold mass)."""
    for j in range(nodes.size):
        u = nodes[j]
        x = values[j]
        for p in range(indptr[u], indptr[u + 1]):
            out[indices[p]] += x * share[p]

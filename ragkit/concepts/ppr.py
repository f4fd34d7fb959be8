"""Personalized PageRank by power iteration over a sparse, symmetric weighted graph.

    p = (1 − d) · s + d · P p,        P = A D⁻¹  (column-stochastic: each node shares its mass
                                                 among its neighbours in proportion to weight)

with ``s`` the personalization (the restart nodes, summing to 1) and ``d`` the damping (the chance of
walking on rather than jumping back to a seed). HippoRAG (Gutiérrez et al., 2024) ranks
passages this way with d = 0.5 over a graph of phrases and passages. Each iteration is one
sparse product, O(edges); the loop stops when the L1 change falls below ``tol`` or after
``max_iter`` iterations.

    >>> import scipy.sparse as sp
    >>> a = sp.csr_matrix([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float)   # a path 0 - 1 - 2
    >>> [round(float(x), 4) for x in personalized_pagerank(a, {0: 1.0}, damping=0.5)]
    [0.5833, 0.3333, 0.0833]

(By hand: p1 = ½(p0 + p2), p2 = ½·½p1, p0 = ½ + ½·½p1, so p = (7/12, 1/3, 1/12).)
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import scipy.sparse as sp


def transition_matrix(adjacency: sp.spmatrix) -> sp.csr_matrix:
    """``A D⁻¹``: column j holds node j's edge weights divided by their sum (a node without
    edges keeps a zero column: its mass leaks, and the restart nodes get it back through 1 − d)."""
    adjacency = sp.csr_matrix(adjacency, dtype=np.float64)
    degree = np.asarray(adjacency.sum(axis=0)).ravel()
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    return sp.csr_matrix(adjacency @ sp.diags(inverse))


def personalized_pagerank(adjacency: sp.spmatrix, seeds: Mapping[int, float], *, damping: float = 0.5,
                          max_iter: int = 50, tol: float = 1e-8,
                          transition: sp.csr_matrix | None = None) -> np.ndarray:
    """Stationary mass of a walk restarting at ``seeds`` ({node: weight}, normalised here).
    ``transition`` (from ``transition_matrix``) saves recomputing it per query."""
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping: must be in [0, 1), got {damping}")
    n = adjacency.shape[0]
    s = np.zeros(n)
    for node, weight in seeds.items():
        s[node] += max(weight, 0.0)
    if s.sum() <= 0:
        return s
    s /= s.sum()
    walk = transition if transition is not None else transition_matrix(adjacency)
    restart, seeded = (1.0 - damping) * s, np.flatnonzero(s)
    p = s.copy()
    for _ in range(max_iter):
        nxt = walk @ p
        nxt *= damping
        nxt += restart
        # Mass lost at nodes without edges goes back to the restart nodes, so p stays a distribution.
        nxt[seeded] += (1.0 - nxt.sum()) * s[seeded]
        done = np.abs(nxt - p).sum() < tol
        p = nxt
        if done:
            break
    return p


EPSILON = 1e-6      # forward push: a node is pushed while its residual is ≥ ε × its degree


class LocalPageRank:
    """Personalized PageRank by forward push (Andersen, Chung & Lang, 2006): mass moves only
    from nodes whose unspread residual is at least ``epsilon`` times their degree, so a
    query's work depends on the part of the graph its seeds reach with weight, not on the
    graph's size (a power iteration multiplies the whole matrix every round). Each node's
    mass is then within ``epsilon × degree`` of the exact answer (the residual left), where
    ``personalized_pagerank``'s 30 rounds stop at their own distance from it. Needs numba
    (the ``fast`` extra); without it ``rank`` uses ``personalized_pagerank``."""

    def __init__(self, adjacency: sp.spmatrix):
        adjacency = sp.csr_matrix(adjacency, dtype=np.float64)
        adjacency.sort_indices()
        self.indptr, self.indices = adjacency.indptr, adjacency.indices
        self.degree = np.asarray(adjacency.sum(axis=1)).ravel()
        per_row = np.repeat(self.degree, np.diff(adjacency.indptr))
        self.share = np.divide(adjacency.data, per_row, out=np.zeros_like(adjacency.data), where=per_row > 0)
        self.n = adjacency.shape[0]

    def __call__(self, seeds: Mapping[int, float], *, damping: float = 0.5,
                 epsilon: float = EPSILON) -> tuple[np.ndarray, np.ndarray]:
        """The walk's mass per node (a dense array; zeros where it never went) and the nodes
        it reached, ascending."""
        from .ppr_kernel import push

        if not 0.0 <= damping < 1.0:
            raise ValueError(f"damping: must be in [0, 1), got {damping}")
        nodes = np.fromiter((n for n, w in seeds.items() if w > 0), np.int64)
        weights = np.fromiter((w for w in seeds.values() if w > 0), np.float64)
        mass = np.zeros(self.n)            # calloc'd: pages the walk never touches stay unmapped
        if not nodes.size:
            return mass, nodes
        residual = np.zeros(self.n)
        reached = np.empty(self.n, np.int64)
        count = push(self.indptr, self.indices, self.share, self.degree, nodes, weights / weights.sum(),
                     damping, epsilon, mass, residual, np.zeros(self.n, np.bool_), np.empty(self.n + 1, np.int64),
                     reached)
        return mass, np.sort(reached[:count])

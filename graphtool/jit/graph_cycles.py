"""An acyclic graph that contracts edges without ever creating a cycle (TensorFlow's GraphCycles,
which XLA's mark-for-compilation pass clusters with).

Nodes keep a rank that is a topological order (Pearce-Kelly): an edge x -> y means
rank[x] < rank[y], so a search for a path from x to y only visits nodes ranked between them.
Contracting a -> b merges them unless another path a -> ... -> b exists (the merged node would
then sit on a cycle through that path).

    cycles = GraphCycles(number_of_nodes)
    cycles.insert_edge(x, y)          # False (and no edge) when it would close a cycle
    cycles.contract_edge(a, b)        # the surviving node when a and b were merged, else None
"""
from __future__ import annotations


class GraphCycles:
    def __init__(self, count: int):
        self.rank = list(range(count))
        self.succ: list[set[int]] = [set() for _ in range(count)]
        self.pred: list[set[int]] = [set() for _ in range(count)]
        self.alive = [True] * count

    def insert_edge(self, x: int, y: int) -> bool:
        if x == y or y in self.succ[x]:
            return x != y
        self.succ[x].add(y)
        self.pred[y].add(x)
        if self.rank[x] < self.rank[y]:
            return True
        forward = self._forward(y, self.rank[x])
        if forward is None:   # y reaches x: the edge would close a cycle
            self.succ[x].discard(y)
            self.pred[y].discard(x)
            return False
        backward = self._backward(x, self.rank[y])
        self._reorder(backward, forward)
        return True

    def is_reachable(self, x: int, y: int) -> bool:
        """Whether a path x -> ... -> y exists."""
        if x == y:
            return True
        if self.rank[x] > self.rank[y]:
            return False
        bound = self.rank[y]
        stack, seen = [x], {x}
        while stack:
            node = stack.pop()
            for nxt in self.succ[node]:
                if nxt == y:
                    return True
                if nxt not in seen and self.rank[nxt] < bound:
                    seen.add(nxt)
                    stack.append(nxt)
        return False

    def contract_edge(self, a: int, b: int) -> int | None:
        """Merge a and b along the edge a -> b, unless another path from a to b exists (None).
        Returns the surviving node: the one with more edges, so that a growing cluster's edges
        are not moved again at every merge."""
        assert b in self.succ[a]
        self.succ[a].discard(b)
        self.pred[b].discard(a)
        if self.is_reachable(a, b):
            self.succ[a].add(b)
            self.pred[b].add(a)
            return None
        keep, gone = (a, b) if len(self.pred[a]) + len(self.succ[a]) >= len(self.pred[b]) + len(self.succ[b]) else (b, a)
        self._absorb(keep, gone)
        return keep

    def _absorb(self, keep: int, gone: int) -> None:
        """Move every edge of `gone` to `keep` (the caller knows no cycle can arise)."""
        preds, succs = list(self.pred[gone]), list(self.succ[gone])
        for p in preds:
            self.succ[p].discard(gone)
        for s in succs:
            self.pred[s].discard(gone)
        self.pred[gone].clear()
        self.succ[gone].clear()
        self.alive[gone] = False
        for p in preds:
            ok = self.insert_edge(p, keep)
            assert ok, "contraction created a cycle"
        for s in succs:
            ok = self.insert_edge(keep, s)
            assert ok, "contraction created a cycle"

    def merge_unconnected(self, a: int, b: int) -> bool:
        """Merge b into a when no path joins them either way (then no cycle can arise)."""
        if self.is_reachable(a, b) or self.is_reachable(b, a):
            return False
        self._absorb(a, b)
        return True

    # --- Pearce-Kelly reordering ----------------------------------------------------------------
    def _forward(self, start: int, upper: int) -> list[int] | None:
        """Nodes reachable from start with rank below `upper`; None when one has rank == upper
        (that node is the edge's source: a cycle)."""
        stack, seen, order = [start], {start}, []
        while stack:
            node = stack.pop()
            order.append(node)
            for nxt in self.succ[node]:
                if self.rank[nxt] == upper:
                    return None
                if nxt not in seen and self.rank[nxt] < upper:
                    seen.add(nxt)
                    stack.append(nxt)
        return order

    def _backward(self, start: int, lower: int) -> list[int]:
        stack, seen, order = [start], {start}, []
        while stack:
            node = stack.pop()
            order.append(node)
            for prev in self.pred[node]:
                if prev not in seen and self.rank[prev] > lower:
                    seen.add(prev)
                    stack.append(prev)
        return order

    def _reorder(self, backward: list[int], forward: list[int]) -> None:
        backward.sort(key=self.rank.__getitem__)
        forward.sort(key=self.rank.__getitem__)
        nodes = backward + forward
        ranks = sorted(self.rank[n] for n in nodes)
        for node, rank in zip(nodes, ranks):
            self.rank[node] = rank

"""The dead-tensor marker: what a Switch's untaken port and every node downstream of it carry.

It lives in a module of its own, below plan.py (which gives each item its tuple of dead outputs)
and the executor modules that propagate it, so neither has to import the other for it.
"""
from __future__ import annotations


class _Dead:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DEAD"


DEAD = _Dead()

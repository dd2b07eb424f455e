"""'Did you mean ...?' for a name that does not exist (a node, tensor, feed, fetch or pass).

Candidates are ranked: the same name in another case, then names whose last scope component is
the name given ('MatMul' for 'dense/MatMul'), then difflib's close matches (typos).
"""
from __future__ import annotations

import difflib
from typing import Iterable

MAX_SUGGESTIONS = 3


def close_names(name: str, candidates: Iterable[str], limit: int = MAX_SUGGESTIONS) -> list[str]:
    """Up to `limit` names in `candidates` the user may have meant by `name`, best first."""
    wanted = name.lower()
    pool = list(dict.fromkeys(candidates))
    found: list[str] = [c for c in pool if c.lower() == wanted and c != name]
    found += [c for c in pool if c.rsplit("/", 1)[-1].lower() == wanted and c not in found and c != name]
    if len(found) < limit:
        lowered: dict[str, str] = {}
        for candidate in pool:
            lowered.setdefault(candidate.lower(), candidate)
        for match in difflib.get_close_matches(wanted, list(lowered), n=limit, cutoff=0.6):
            if lowered[match] not in found and lowered[match] != name:
                found.append(lowered[match])
    return found[:limit]


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """'did you mean 'a' or 'b'?' or None when nothing is close."""
    names = close_names(name, candidates)
    if not names:
        return None
    quoted = [f"'{n}'" for n in names]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f"did you mean {listed}?"


def join_hints(*hints: str | None) -> str | None:
    """The hints given, as one (after a question: ' ', else '; ' between), or None."""
    text = ""
    for hint in hints:
        if hint:
            text += ("" if not text else " " if text.endswith("?") else "; ") + hint
    return text or None

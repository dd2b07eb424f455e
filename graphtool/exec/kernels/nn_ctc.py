"""CTC kernels (TensorFlow's ctc_loss_calculator and ctc_decoder semantics). They compute on the
host, as TensorFlow's (CPU-only) kernels do: outputs' sizes depend on the data and the loops run
over time steps. On a GPU device the inputs are copied to the host and the results back, so a
graph placed on a GPU still runs.

- CTCLoss: softmax over the classes, then Graves' forward-backward recursions in log space over
  the label sequence with blanks (the last class) interleaved; the loss is -log p(labels | x) and
  the gradient (with respect to the logits) softmax - posterior occupancy. Labels may first be
  collapsed (preprocess_collapse_repeated); with ctc_merge_repeated off, a label may not stay on
  itself unless it is a blank, and repeated labels need no blank between them. A sequence too
  short for its labels fails, or (ignore_longer_outputs_than_inputs) gets loss and gradient 0.
- CTCGreedyDecoder: the best class per step, blanks dropped (and repeats merged when asked);
  log_probability is minus the sum of the chosen logits.
Recursions run in float64 and are rounded to the input type at the end.
"""
from __future__ import annotations

import numpy as np

from functools import wraps

from .gpu_host_memory import host_context
from .nn_common import host_ints, shape_text
from .registry import CPU, GPU, kernel


def host_kernel(*ops: str, expensive: bool = False):
    """Register a numpy kernel for the CPU and, copying through the host, for the GPU."""
    def register(fn):
        kernel(*ops, devices=(CPU,), expensive=expensive)(fn)

        @wraps(fn)
        def on_gpu(ctx, *inputs, **attrs):
            host = [x if isinstance(x, np.ndarray) else ctx.xp.asnumpy(x) for x in inputs]
            result = fn(host_context(ctx), *host, **attrs)
            return tuple(ctx.xp.asarray(r) for r in result) if isinstance(result, tuple) else ctx.xp.asarray(result)
        kernel(*ops, devices=(GPU,), expensive=expensive)(on_gpu)
        return fn
    return register


def _check_logits(ctx, logits, lengths):
    if logits.ndim != 3:
        ctx.fail(f"inputs is not a 3-Tensor: {shape_text(logits.shape)}")
    if lengths.ndim != 1 or lengths.shape[0] != logits.shape[1]:
        ctx.fail(f"len(sequence_length) != batch_size.  len(sequence_length):  {lengths.size} batch_size: "
                 f"{logits.shape[1]}")
    max_time = logits.shape[0]
    for b, length in enumerate(host_ints(lengths)):
        if length > max_time or length < 0:
            ctx.fail(f"sequence_length({b}) <= {max_time}")
    return host_ints(lengths)


def sparse_triple(sequences: list[list[int]]):
    """(indices [n, 2], values [n], dense_shape [2]) of a batch of label sequences, row-major."""
    indices = [(b, i) for b, sequence in enumerate(sequences) for i in range(len(sequence))]
    values = [label for sequence in sequences for label in sequence]
    longest = max((len(s) for s in sequences), default=0)
    return (np.asarray(indices, np.int64).reshape(-1, 2), np.asarray(values, np.int64),
            np.asarray([len(sequences), longest], np.int64))


@host_kernel("CTCGreedyDecoder")
def ctc_greedy_decoder(ctx, logits, lengths, *, merge_repeated, blank_index):
    lengths = _check_logits(ctx, logits, lengths)
    classes = logits.shape[2]
    blank = classes - 1 if blank_index < 0 else blank_index
    if not 0 <= blank < classes:
        ctx.fail(f"blank_index expected to be between {-classes} and {classes - 1} but was {blank_index}")
    if classes == 0 and any(lengths):
        ctx.fail("Invalid input dimensions.")
    best = logits.argmax(axis=2) if classes else np.zeros(logits.shape[:2], np.int64)
    best_values = logits.max(axis=2).astype(np.float64) if classes else np.zeros(logits.shape[:2])
    sequences, log_probs = [], []
    for b, length in enumerate(lengths):
        labels, previous = [], -1
        for t in range(length):
            label = int(best[t, b])
            if label != blank and not (merge_repeated and label == previous):
                labels.append(label)
            previous = label
        sequences.append(labels)
        log_probs.append(-best_values[:length, b].sum())
    return (*sparse_triple(sequences), np.asarray(log_probs, logits.dtype).reshape(-1, 1))


# --- CTCLoss --------------------------------------------------------------------------------

def _log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _alpha_beta(log_y, l_prime: np.ndarray, blank: int, merge_repeated: bool):
    """Graves' log alpha and log beta [T, U'] for one sequence (log_y [T, classes])."""
    steps, size = log_y.shape[0], l_prime.size
    emit = log_y[:, l_prime]                                        # [T, U']
    stay = merge_repeated | (l_prime == blank)                      # may stay on u
    skip = np.zeros(size, bool)                                     # may come from u - 2
    skip[2:] = (l_prime[2:] != blank) & ~(merge_repeated & (l_prime[2:] == l_prime[:-2]))
    u = np.arange(size)
    alpha = np.full((steps, size), -np.inf)
    alpha[0, 0] = emit[0, 0]
    if size > 1:
        alpha[0, 1] = emit[0, 1]
    for t in range(1, steps):
        previous = alpha[t - 1]
        total = np.where(stay, previous, -np.inf)
        total[1:] = np.logaddexp(total[1:], previous[:-1])
        total[2:] = np.logaddexp(total[2:], np.where(skip[2:], previous[:-2], -np.inf))
        reachable = (u >= max(0, size - 2 * (steps - t))) & (u < min(size, 2 * (t + 1)))
        alpha[t] = np.where(reachable, emit[t] + total, -np.inf)
    beta = np.full((steps, size), -np.inf)
    beta[steps - 1, max(0, size - 2):] = 0.0
    for t in range(steps - 2, -1, -1):
        following = beta[t + 1] + emit[t + 1]
        total = np.where(stay, following, -np.inf)
        total[:-1] = np.logaddexp(total[:-1], following[1:])
        total[:-2] = np.logaddexp(total[:-2], np.where(skip[2:], following[2:], -np.inf))
        reachable = (u >= max(0, size - 2 * (steps - t))) & (u < min(size, 2 * (t + 1)))
        beta[t] = np.where(reachable, total, -np.inf)
    return alpha, beta


def _labels_per_batch(ctx, indices, values, batch: int) -> list[list[int]]:
    indices = np.asarray(indices).reshape(-1, 2) if np.size(indices) else np.zeros((0, 2), np.int64)
    if indices.shape[0] != np.size(values):
        ctx.fail("labels_indices and labels_values must contain the same number of rows")
    labels: list[list[int]] = [[] for _ in range(batch)]
    for (b, _), value in zip(indices.tolist(), np.asarray(values).reshape(-1).tolist()):
        if not 0 <= b < batch:
            ctx.fail(f"labels batch index must be between 0 and {batch - 1} but was {b}")
        labels[b].append(int(value))
    return labels


@host_kernel("CTCLoss", expensive=True)
def ctc_loss(ctx, logits, labels_indices, labels_values, lengths, *, preprocess_collapse_repeated,
             ctc_merge_repeated, ignore_longer_outputs_than_inputs):
    lengths = _check_logits(ctx, logits, lengths)
    max_time, batch, classes = logits.shape
    blank = classes - 1
    labels = _labels_per_batch(ctx, labels_indices, labels_values, batch)
    loss = np.zeros(batch)
    gradient = np.zeros(logits.shape)
    with np.errstate(all="ignore"):
        for b in range(batch):
            label = labels[b]
            if preprocess_collapse_repeated:
                label = [v for i, v in enumerate(label) if i == 0 or v != label[i - 1]]
            if any(not 0 <= v < blank for v in label):
                ctx.fail(f"Saw a non-null label (index >= num_classes - 1) following a null label, batch: {b} "
                         f"num_classes: {classes} labels: {','.join(map(str, label))}")
            repeats = sum(label[i] == label[i - 1] for i in range(1, len(label))) if ctc_merge_repeated else 0
            required, steps = len(label) + repeats, lengths[b]
            if steps < required:
                if ignore_longer_outputs_than_inputs:
                    continue
                ctx.fail(f"Not enough time for target transition sequence (required: {required}, available: "
                         f"{steps}){b}You can turn this error into a warning by using the flag "
                         "ignore_longer_outputs_than_inputs")
            if steps == 0:
                continue
            log_y = _log_softmax(logits[:steps, b].astype(np.float64))
            l_prime = np.full(2 * len(label) + 1, blank)
            l_prime[1::2] = label
            alpha, beta = _alpha_beta(log_y, l_prime, blank, ctc_merge_repeated)
            log_p = np.logaddexp.reduce(alpha[0] + beta[0])
            loss[b] = -log_p
            y = np.exp(log_y)
            if log_p == -np.inf:
                gradient[:steps, b] = y
                continue
            occupancy = np.full((steps, classes), -np.inf)
            for u, label_u in enumerate(l_prime):
                occupancy[:, label_u] = np.logaddexp(occupancy[:, label_u], alpha[:, u] + beta[:, u])
            gradient[:steps, b] = y - np.exp(occupancy - log_p)
    return loss.astype(logits.dtype), gradient.astype(logits.dtype)


# --- CTCBeamSearchDecoder -------------------------------------------------------------------
# TensorFlow's CTCBeamSearchDecoder (ctc_beam_search.h) with its default scorer, step for step:
# per time step the log softmax of the logits scores the beam; each beam entry
# keeps log probabilities (total, blank, label) of its prefix, first updated for the entries in
# the beam, then children grown from them in decreasing order of their previous probability. A
# child joins the beam when it beats the beam's bottom, which is then reset and forgotten
# (Active: total above -inf). Decoded paths are the top entries' prefixes, with repeated labels
# merged when merge_repeated is set (TensorFlow merges them in its output, not in the search).

class _Entry:
    __slots__ = ("parent", "label", "children", "old", "new")

    def __init__(self, parent, label: int):
        self.parent, self.label = parent, label
        self.children: dict[int, _Entry] = {}   # label -> the prefix extended by it
        self.old = [-np.inf, -np.inf, -np.inf]     # total, blank, label
        self.new = [-np.inf, -np.inf, -np.inf]

    def active(self) -> bool:
        return self.new[0] != -np.inf

    def labels(self, merge_repeated: bool) -> list[int]:
        out, previous, entry = [], -1, self
        while entry.parent is not None:
            if not merge_repeated or entry.label != previous:
                out.append(entry.label)
            previous, entry = entry.label, entry.parent
        return out[::-1]


def _log_sum(a: float, b: float) -> float:
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    return max(a, b) + float(np.log1p(np.exp(-abs(a - b))))


class _Beam:
    """TensorFlow's bounded top-N of entries by new total (ties keep insertion order)."""

    def __init__(self, width: int):
        self.width = width
        self.entries: list[_Entry] = []

    def bottom(self) -> _Entry:
        return min(self.entries, key=lambda e: e.new[0])

    def push(self, entry: _Entry) -> None:
        if len(self.entries) < self.width:
            self.entries.append(entry)
            return
        bottom = self.bottom()
        if entry.new[0] > bottom.new[0]:
            self.entries[self.entries.index(bottom)] = entry

    def extract(self) -> list[_Entry]:
        ranked = sorted(self.entries, key=lambda e: -e.new[0])
        self.entries = []
        return ranked


def _beam_search(logits, width: int, blank: int):
    root = _Entry(None, -1)
    root.new = [0.0, 0.0, -np.inf]
    beam = _Beam(width)
    beam.push(root)
    for row in _log_softmax(logits.astype(np.float64)):
        branches = beam.extract()
        for entry in branches:
            entry.old = list(entry.new)
        for entry in branches:
            if entry.parent is not None:
                if entry.parent.active():
                    parent_old = entry.parent.old
                    previous = parent_old[1] if entry.label == entry.parent.label else parent_old[0]
                    entry.new[2] = _log_sum(entry.new[2], previous)
                entry.new[2] += row[entry.label]
            entry.new[1] = entry.old[0] + row[blank]
            entry.new[0] = _log_sum(entry.new[1], entry.new[2])
            beam.push(entry)

        def candidate(total: float) -> bool:
            return total > -np.inf and (len(beam.entries) < width or total > beam.bottom().new[0])
        for entry in branches:
            if not candidate(entry.old[0]):
                continue
            for label in range(row.size - 1):
                child = entry.children.get(label)
                if child is None:
                    child = entry.children[label] = _Entry(entry, label)
                if child.active():
                    continue
                previous = entry.old[1] if label == entry.label else entry.old[0]
                score = row[label] + previous
                child.new = [score, -np.inf, score]
                if candidate(score):
                    if len(beam.entries) == width:
                        beam.bottom().new = [-np.inf, -np.inf, -np.inf]
                    beam.push(child)
                else:
                    child.old = [-np.inf, -np.inf, -np.inf]
                    child.new = [-np.inf, -np.inf, -np.inf]
    return beam.extract()


@host_kernel("CTCBeamSearchDecoder", expensive=True)
def ctc_beam_search_decoder(ctx, logits, lengths, *, beam_width, top_paths, merge_repeated):
    lengths = _check_logits(ctx, logits, lengths)
    if top_paths > beam_width:
        ctx.fail("top_paths must be <= beam_width")
    classes = logits.shape[2]
    if classes == 0:
        ctx.fail("num_classes must be positive")
    paths: list[list[list[int]]] = [[] for _ in range(top_paths)]
    log_probs = np.zeros((logits.shape[1], top_paths))
    for b, length in enumerate(lengths):
        ranked = _beam_search(logits[:length, b], beam_width, classes - 1)
        if top_paths > len(ranked):
            ctx.fail("Less leaves in the beam search than requested.")
        for i, entry in enumerate(ranked[:top_paths]):
            paths[i].append(entry.labels(merge_repeated))
            log_probs[b, i] = entry.new[0]
    triples = [sparse_triple(sequences) for sequences in paths]
    # One flat tuple: every path's indices, then values, then shapes (the list outputs), then scores.
    return (*[t[0] for t in triples], *[t[1] for t in triples], *[t[2] for t in triples],
            log_probs.astype(logits.dtype))

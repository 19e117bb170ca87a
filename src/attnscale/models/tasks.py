r"""Tasks that make a head find one key among n: associative recall, masked text, a needle.

Chapter *Retrieval past the training length*.  Each generator returns a
:class:`TaskBatch`: the tokens a model reads, the tokens it must predict,
which positions are scored, and, for the retrieval tasks, where in the
context the answer sits (so that the weight a head puts on it can be
measured).  Every generator is seeded (``numpy.random.default_rng(seed)``)
and the same arguments give the same batch.

Associative recall (multi-query, as Zoology's MQAR; Arora et al., 2023)
    A window of :math:`T = 4P` tokens holds :math:`P` key--value pairs, then
    the :math:`P` keys again in a random order, each followed by its value::

        BOS k1 v1 k2 v2 ... kP vP | k7 v7 k2 v2 ... kQ

    Keys are distinct tokens drawn from ``n_keys``, values from ``n_values``
    (disjoint ranges).  The target after each queried key is its value:
    :math:`P` answers per window, chance :math:`1/\text{n\_values}`.  The
    number of pairs grows with the window, so at :math:`16L` a query has
    16 times as many distractors.  With ``absent=True`` the queried keys
    are *not* in the context (the control: accuracy must fall to chance).
    With ``causal=False`` (a bidirectional model) each query's value is
    replaced by a mask token and predicted in place.

Masked text (Su's masked-LM setting, bidirectional)
    A window of bytes of the corpus with a fraction of them replaced by a
    mask token; the targets are the original bytes there.

A needle in the text (passkey)
    A window of the corpus with a line ``key = value`` planted at a chosen
    depth (key: lowercase letters, value: digits) and the key asked again at
    the end (a new line with the key, ``=`` and the value); the scored positions are the value's digits
    (exact match: every digit predicted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..support._validate import count as _count
from ..support._validate import seed as _seed

__all__ = [
    "NEEDLE_DIGITS",
    "NEEDLE_KEY_LETTERS",
    "RecallVocabulary",
    "TaskBatch",
    "associative_recall",
    "describe_needle",
    "describe_recall",
    "masked_text",
    "needle_in_text",
    "recall_vocabulary",
    "step_seed",
]

#: Letters in a needle's key and digits in its value.
NEEDLE_KEY_LETTERS, NEEDLE_DIGITS = 3, 4


def step_seed(seed: int, step: int) -> int:
    """The seed of training batch ``step`` of the run seeded ``seed``: ``1_000_003 (seed + 1) + step``.

    Every arm of one seed gets the same batches in the same order (the arms
    are paired), and no two (seed, step) of a sweep share a batch.

    Examples
    --------
    >>> from attnscale.models.tasks import step_seed
    >>> step_seed(0, 5), step_seed(1, 0)
    (1000008, 2000006)
    """
    return 1_000_003 * (_seed(seed) + 1) + _count(step, "step", 0)


@dataclass(frozen=True)
class TaskBatch:
    """A batch of examples of a task.

    Attributes
    ----------
    inputs : numpy.ndarray
        ``(B, T)`` int32: what the model reads.
    targets : numpy.ndarray
        ``(B, T)`` int32: what it must predict at each position (the next
        token for a causal model; the original token for a masked one).
    weights : numpy.ndarray
        ``(B, T)`` float32: 1 at the scored positions, 0 elsewhere.
    answer_keys : numpy.ndarray
        ``(B, T, 2)`` int32: for a scored position, the two context positions
        that hold the answer (a recall pair's key and value; a needle's key
        start and value start); -1 elsewhere and for tasks without one.
    chance : float
        Accuracy per scored position of a model that guesses uniformly
        among the possible answers.
    """

    inputs: np.ndarray
    targets: np.ndarray
    weights: np.ndarray
    answer_keys: np.ndarray
    chance: float

    @property
    def length(self) -> int:
        """Tokens per example, :math:`T`."""
        return self.inputs.shape[1]


@dataclass(frozen=True)
class RecallVocabulary:
    """Token ids of associative recall: ``bos``, keys, values and ``mask``.

    Keys are ``1 .. n_keys``, values ``n_keys + 1 .. n_keys + n_values``, the
    mask token ``n_keys + n_values + 1``; ``size`` is the vocabulary size.
    """

    n_keys: int
    n_values: int

    bos = 0

    @property
    def first_value(self) -> int:
        return self.n_keys + 1

    @property
    def mask(self) -> int:
        return self.n_keys + self.n_values + 1

    @property
    def size(self) -> int:
        return self.n_keys + self.n_values + 2


def recall_vocabulary(n_keys: int = 1024, n_values: int = 64) -> RecallVocabulary:
    """The vocabulary of :func:`associative_recall` (``n_keys``, ``n_values`` >= 2).

    Examples
    --------
    Keys 1..4, values 5..7, the mask 8, and ``bos`` 0:

    >>> from attnscale.models.tasks import recall_vocabulary
    >>> vocabulary = recall_vocabulary(4, 3)
    >>> vocabulary.first_value, vocabulary.mask, vocabulary.size
    (5, 8, 9)
    """
    return RecallVocabulary(_count(n_keys, "n_keys", 2), _count(n_values, "n_values", 2))


def associative_recall(
    length: int,
    count: int,
    seed: int,
    vocabulary: RecallVocabulary | None = None,
    *,
    causal: bool = True,
    absent: bool = False,
) -> TaskBatch:
    """Multi-query associative recall: ``count`` windows of ``length`` tokens.

    Parameters
    ----------
    length : int
        Tokens per window, :math:`T = 4P` (a multiple of 4, at least 8):
        :math:`P` pairs and :math:`P` queries.  :math:`P` must not exceed
        ``vocabulary.n_keys`` (keys are distinct within a window).
    count : int
        Windows.
    seed : int
        Non-negative; seeds every draw.
    vocabulary : RecallVocabulary, optional
        Default :func:`recall_vocabulary` ``()`` (1024 keys, 64 values).
    causal : bool, optional
        ``True``: next-token layout (the answer follows its query key).
        ``False``: each answer is a mask token predicted in place.
    absent : bool, optional
        The control: queried keys are drawn from the keys *not* in the
        context, so no model can beat chance.

    Returns
    -------
    TaskBatch
        ``answer_keys[b, i]`` is (key position, value position) of the
        queried pair in the context; with ``absent=True`` it is -1.

    Examples
    --------
    >>> from attnscale.models.tasks import associative_recall, recall_vocabulary
    >>> batch = associative_recall(8, count=1, seed=0, vocabulary=recall_vocabulary(4, 3))
    >>> batch.inputs.shape, int(batch.weights.sum())
    ((1, 8), 2)
    """
    vocabulary = recall_vocabulary() if vocabulary is None else vocabulary
    if not isinstance(vocabulary, RecallVocabulary):
        raise TypeError(f"vocabulary must be a RecallVocabulary, got {type(vocabulary).__name__}")
    length, count = _count(length, "length", 8), _count(count, "count")
    if length % 4:
        raise ValueError(f"length must be a multiple of 4 (pairs and queries), got {length}")
    pairs = length // 4
    needed = 2 * pairs if absent else pairs
    if needed > vocabulary.n_keys:
        raise ValueError(
            f"length {length} needs {needed} distinct keys, "
            f"but the vocabulary has n_keys = {vocabulary.n_keys}"
        )
    rng = np.random.default_rng(_seed(seed))
    # distinct keys per window: the first `pairs` columns of a random permutation
    keys = np.argsort(rng.random((count, vocabulary.n_keys)), axis=1)[:, :needed] + 1
    values = rng.integers(0, vocabulary.n_values, size=(count, pairs)) + vocabulary.first_value
    order = np.argsort(rng.random((count, pairs)), axis=1)  # which pair each query asks
    context_keys = keys[:, :pairs]
    query_keys = keys[:, pairs:] if absent else np.take_along_axis(context_keys, order, axis=1)
    answers = (
        rng.integers(0, vocabulary.n_values, size=(count, pairs)) + vocabulary.first_value
        if absent
        else np.take_along_axis(values, order, axis=1)
    )
    rows = np.arange(count)[:, None]
    tokens = np.empty((count, 4 * pairs + 1), dtype=np.int32)  # BOS, pairs, queries with answers
    tokens[:, 0] = vocabulary.bos
    tokens[:, 1 : 2 * pairs + 1 : 2] = context_keys
    tokens[:, 2 : 2 * pairs + 2 : 2] = values
    tokens[:, 2 * pairs + 1 :: 2] = query_keys
    tokens[:, 2 * pairs + 2 :: 2] = answers
    pair_key_position = 1 + 2 * order  # of the queried pair, in the BOS-led layout
    answer_keys = np.full((count, length, 2), -1, dtype=np.int32)
    weights = np.zeros((count, length), dtype=np.float32)
    if causal:
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        scored = 2 * pairs + 1 + 2 * np.arange(pairs)  # the query keys: next token is the answer
    else:
        # no BOS; the answer slots hold the mask token and are predicted in place
        inputs, targets = tokens[:, 1:].copy(), tokens[:, 1:]
        scored = 2 * pairs + 1 + 2 * np.arange(pairs)
        inputs[:, scored] = vocabulary.mask
        pair_key_position = pair_key_position - 1
    weights[:, scored] = 1.0
    if not absent:
        answer_keys[rows, scored[None, :], 0] = pair_key_position
        answer_keys[rows, scored[None, :], 1] = pair_key_position + 1
    return TaskBatch(
        np.ascontiguousarray(inputs, dtype=np.int32),
        np.ascontiguousarray(targets, dtype=np.int32),
        weights,
        answer_keys,
        1.0 / vocabulary.n_values,
    )


def masked_text(
    text, length: int, count: int, seed: int, *, rate: float = 0.15, mask_token: int = 256
) -> TaskBatch:
    """Windows of ``text`` with a fraction ``rate`` of the bytes masked (a masked language model).

    Parameters
    ----------
    text : numpy.ndarray
        ``uint8`` bytes (:func:`attnscale.models.corpus.sympy_corpus`).
    length, count, seed : int
        Bytes per window, windows, and the seed of the windows' starts and
        of which positions are masked (``round(rate * length)`` of them,
        at least one, at random places in each window).
    rate : float, optional
        In (0, 1).
    mask_token : int, optional
        The token that replaces a masked byte (vocabulary 257 by default).

    Returns
    -------
    TaskBatch
        ``chance`` is 1/256.

    Examples
    --------
    Windows of 20 bytes, ``round(0.15 * 20) = 3`` of them masked in each:

    >>> import numpy as np
    >>> from attnscale.models.tasks import masked_text
    >>> text = np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 4, dtype=np.uint8)
    >>> batch = masked_text(text, 20, count=2, seed=0)
    >>> batch.inputs.shape, batch.weights.sum(axis=1).tolist()
    ((2, 20), [3.0, 3.0])
    """
    from .corpus import window_starts

    length, count = _count(length, "length", 2), _count(count, "count")
    if not 0 < rate < 1:
        raise ValueError(f"rate must lie in (0, 1), got {rate!r}")
    text = np.asarray(text)
    rng = np.random.default_rng(_seed(seed))
    starts = window_starts(len(text), length, count, int(rng.integers(2**31)))
    targets = text[starts[:, None] + np.arange(length)].astype(np.int32)
    # the same number of masked positions in every window, round(rate * length) >= 1, at random places
    chosen = np.argsort(rng.random((count, length)), axis=1)[:, : max(1, round(rate * length))]
    masked = np.zeros((count, length), dtype=bool)
    np.put_along_axis(masked, chosen, True, axis=1)
    inputs = np.where(masked, np.int32(mask_token), targets).astype(np.int32)
    return TaskBatch(
        inputs, targets, masked.astype(np.float32), np.full((count, length, 2), -1, np.int32), 1.0 / 256
    )


def needle_in_text(text, length: int, count: int, seed: int, *, depth=None) -> TaskBatch:
    """Windows of ``text`` with a line ``key = value`` planted and the key asked at the end.

    Each window of ``length`` bytes (next-byte layout: inputs and targets
    shifted by one) is the corpus text with a line ``abc = 1234`` (on its own line)
    written over it at ``depth`` (0: the start of the window, 1: just
    before the question) and ends with the question (a new line ``abc =``) and the
    value's digits.  Keys are ``NEEDLE_KEY_LETTERS`` random lowercase
    letters, values ``NEEDLE_DIGITS`` random digits.

    Parameters
    ----------
    text : numpy.ndarray
        ``uint8`` bytes.
    length, count, seed : int
        ``length`` at least 40 bytes.
    depth : float or None, optional
        Where the needle sits, as a fraction of the text before the
        question; ``None`` draws it uniformly per window.

    Returns
    -------
    TaskBatch
        The scored positions are those whose target is one of the value's
        digits in the question (``NEEDLE_DIGITS`` per window; the
        needle is found when all of them are right).  ``answer_keys`` holds
        the positions of the planted key's first letter and of the value's
        first digit.  ``chance`` is 1/10 per digit.

    Examples
    --------
    Four scored digits per window (``describe_needle`` prints one):

    >>> import numpy as np
    >>> from attnscale.models.tasks import needle_in_text
    >>> text = np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 4, dtype=np.uint8)
    >>> batch = needle_in_text(text, 40, count=3, seed=0)
    >>> batch.inputs.shape, batch.weights.sum(axis=1).tolist(), batch.chance
    ((3, 40), [4.0, 4.0, 4.0], 0.1)
    """
    from .corpus import window_starts

    length, count = _count(length, "length", 40), _count(count, "count")
    if depth is not None and not (isinstance(depth, (int, float)) and 0.0 <= depth <= 1.0):
        raise ValueError(f"depth must be None or a number in [0, 1], got {depth!r}")
    text = np.asarray(text)
    rng = np.random.default_rng(_seed(seed))
    starts = window_starts(len(text), length, count, int(rng.integers(2**31)))
    window = text[starts[:, None] + np.arange(length + 1)].astype(np.int32)
    letters = rng.integers(ord("a"), ord("z") + 1, size=(count, NEEDLE_KEY_LETTERS))
    digits = rng.integers(ord("0"), ord("9") + 1, size=(count, NEEDLE_DIGITS))
    k, v = NEEDLE_KEY_LETTERS, NEEDLE_DIGITS
    line = np.concatenate(  # \n key " = " value \n
        [
            np.full((count, 1), 10),
            letters,
            np.tile([32, 61, 32], (count, 1)),
            digits,
            np.full((count, 1), 10),
        ],
        axis=1,
    )
    question = line[:, :-1]  # \n key " = " value  (the last v bytes are the answer)
    room = length + 1 - question.shape[1] - line.shape[1]  # where the needle line may start
    fraction = rng.random(count) if depth is None else np.full(count, float(depth))
    offset = np.floor(fraction * room).astype(int)
    rows = np.arange(count)[:, None]
    window[rows, offset[:, None] + np.arange(line.shape[1])] = line
    window[:, -question.shape[1] :] = question
    inputs, targets = window[:, :-1], window[:, 1:]
    weights = np.zeros((count, length), dtype=np.float32)
    first_answer = length - v  # inputs index whose target is the first digit
    weights[:, first_answer:] = 1.0
    answer_keys = np.full((count, length, 2), -1, dtype=np.int32)
    answer_keys[:, first_answer:, 0] = (offset + 1)[:, None]
    answer_keys[:, first_answer:, 1] = (offset + 1 + k + 3)[:, None]
    return TaskBatch(
        np.ascontiguousarray(inputs, dtype=np.int32),
        np.ascontiguousarray(targets, dtype=np.int32),
        weights,
        answer_keys,
        0.1,
    )


def describe_needle(batch: TaskBatch, example: int = 0) -> str:
    """One example of :func:`needle_in_text` as text: the window, its planted line and answer marked.

    The window is printed as the model reads it, with its final answer
    appended; the planted ``key = value`` line is wrapped in ``⟦ ⟧`` and the
    scored digits of the question in ``[ ]``.  Bytes that do not print
    (other than new lines) are shown as ``·``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale.models.tasks import describe_needle, needle_in_text
    >>> text = np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 4, dtype=np.uint8)
    >>> print(describe_needle(needle_in_text(text, 40, count=1, seed=2, depth=0.5)))
    the quick
    ⟦gch = 4840⟧
    umps over
    gch = [4840]
    """
    if not isinstance(batch, TaskBatch):
        raise TypeError("batch must be a TaskBatch")
    text = np.append(batch.inputs[example], batch.targets[example, -1])
    scored = np.flatnonzero(batch.weights[example] > 0) + 1  # text index of each scored byte
    key_start = int(batch.answer_keys[example, scored[0] - 1, 0])
    line_end = key_start + NEEDLE_KEY_LETTERS + 3 + NEEDLE_DIGITS  # key " = " value

    def show(chunk):
        return "".join(chr(b) if b == 10 or 32 <= b < 127 else "·" for b in chunk)

    return (
        show(text[:key_start])
        + "⟦"
        + show(text[key_start:line_end])
        + "⟧"
        + show(text[line_end : scored[0]])
        + "["
        + show(text[scored[0] : scored[-1] + 1])
        + "]"
    )


def describe_recall(batch: TaskBatch, vocabulary: RecallVocabulary, example: int = 0) -> str:
    """One example of :func:`associative_recall` as Markdown: keys ``k·``, values ``v·``, scored answers bold.

    Causal layout: the tokens read, then the last answer; each token whose
    next token is scored is followed by that answer in bold.  Masked layout
    (``causal=False``): the window as the model reads it, with each masked
    answer written in bold in its place.

    Examples
    --------
    Two pairs, then the two keys asked again, each followed by its value:

    >>> from attnscale.models.tasks import associative_recall, describe_recall, recall_vocabulary
    >>> vocabulary = recall_vocabulary(4, 3)
    >>> batch = associative_recall(8, count=1, seed=0, vocabulary=vocabulary)
    >>> describe_recall(batch, vocabulary)
    '⟨bos⟩ k4 v0 k3 v2 k3 **v2** k4 **v0**'
    """
    if not isinstance(batch, TaskBatch) or not isinstance(vocabulary, RecallVocabulary):
        raise TypeError("batch must be a TaskBatch and vocabulary a RecallVocabulary")

    def name(token):
        if token == vocabulary.bos:
            return "⟨bos⟩"
        if token == vocabulary.mask:
            return "⟨mask⟩"
        if token < vocabulary.first_value:
            return f"k{token}"
        return f"v{token - vocabulary.first_value}"

    inputs, targets, scored = batch.inputs[example], batch.targets[example], batch.weights[example] > 0
    if scored.any() and np.all(inputs[scored] == vocabulary.mask):  # answers predicted in place
        shown = zip(inputs, targets, scored, strict=True)
        return " ".join(f"**{name(t)}**" if s else name(i) for i, t, s in shown)
    words = [name(inputs[0])]
    for i in range(1, len(inputs)):
        words.append(f"**{name(inputs[i])}**" if scored[i - 1] else name(inputs[i]))
    if scored[-1]:
        words.append(f"**{name(targets[-1])}**")
    return " ".join(words)

r"""The language model's text: the Python sources of the pinned SymPy release.

Chapter *A language model*.  Every install of the book has the same SymPy
(``requirements.txt`` pins it), and its ``.py`` files are about 26 MB of
real text that nobody here wrote: code, English docstrings and doctests.
Long context helps to predict it: identifiers defined once recur many lines
later, indentation repeats, a docstring's example echoes the signature
above it.

The corpus is read at byte level (a vocabulary of 256), file by file in
sorted path order.  Files are split by their index in that order, so that
no file is shared between the splits: every ``SPLIT_PERIOD``-th file (from
the first) goes to validation, the one after it to test, the rest to
training.  :data:`SYMPY_CORPUS` records what SymPy 1.14.0 gives, and
:func:`sympy_corpus` refuses a different text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..support import _validate

__all__ = ["SPLIT_PERIOD", "SYMPY_CORPUS", "Corpus", "batch_windows", "sympy_corpus", "window_starts"]

#: One file in this many goes to validation, the next one to test.
SPLIT_PERIOD = 20

#: The corpus the pinned SymPy must give, with its version, the number of
#: files and the SHA-256 of each split (the concatenated bytes).
SYMPY_CORPUS = {
    "sympy": "1.14.0",
    "files": 1532,
    "sha256": {
        "train": "0e67df463b4d455d1f434afba9e59b1ac823ee7684ec6c2685daddfcfc37455c",
        "validation": "49ea14147a8c8b7febef5a1fcb49c990f8fdccc69be4e704f33f5b45af85b2f9",
        "test": "e1adf47ebb1f45adde6bea7435c7bc03c40d73a5502381b82a9b266e85bf4be8",
    },
}


@dataclass(frozen=True)
class Corpus:
    """Bytes of the three splits, and where they come from.

    Attributes
    ----------
    train, validation, test
        The concatenated files of each split, ``uint8`` NumPy arrays.
    files : dict
        Split name to the tuple of relative paths, in order.
    sha256 : dict
        Split name to the SHA-256 hex digest of its bytes.
    source : str
        The package and version the text was read from.
    """

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray
    files: dict
    sha256: dict
    source: str

    def split(self, name: str) -> np.ndarray:
        """The bytes of split ``name`` ("train", "validation" or "test")."""
        if name not in ("train", "validation", "test"):
            raise ValueError(f"split must be 'train', 'validation' or 'test', got {name!r}")
        return getattr(self, name)


def _split_of(index: int) -> str:
    position = index % SPLIT_PERIOD
    return "validation" if position == 0 else "test" if position == 1 else "train"


def sympy_corpus(root=None, check=True) -> Corpus:
    """Read the ``.py`` files of the installed SymPy into the three splits.

    Parameters
    ----------
    root : str or pathlib.Path, optional
        The folder to read (default: the installed ``sympy`` package).
    check : bool, optional
        Compare the version and the checksums with :data:`SYMPY_CORPUS`
        and raise if they differ (the book's numbers were computed on that
        text).

    Returns
    -------
    Corpus

    Raises
    ------
    RuntimeError
        With ``check=True``, if the text is not the recorded one.
    """
    import sympy

    folder = Path(sympy.__file__).parent if root is None else Path(root)
    if not folder.is_dir():
        raise ValueError(f"root must be a folder, got {str(folder)!r}")
    paths = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.py"))
    parts = {"train": [], "validation": [], "test": []}
    names = {"train": [], "validation": [], "test": []}
    for index, relative in enumerate(paths):
        split = _split_of(index)
        parts[split].append((folder / relative).read_bytes())
        names[split].append(relative)
    data = {split: np.frombuffer(b"".join(chunks), dtype=np.uint8) for split, chunks in parts.items()}
    digests = {split: hashlib.sha256(array.tobytes()).hexdigest() for split, array in data.items()}
    source = f"sympy {sympy.__version__}" if root is None else str(folder)
    if check:
        expected = SYMPY_CORPUS
        if root is None and sympy.__version__ != expected["sympy"]:
            raise RuntimeError(
                f"the corpus is SymPy {expected['sympy']}'s sources, but SymPy {sympy.__version__} "
                "is installed: pip install -r requirements.txt"
            )
        if len(paths) != expected["files"] or digests != expected["sha256"]:
            raise RuntimeError(
                f"the SymPy sources under {folder} are not the recorded corpus "
                f"({len(paths)} files, train sha256 {digests['train'][:12]}...; expected "
                f"{expected['files']} files, {expected['sha256']['train'][:12]}...)"
            )
    return Corpus(
        train=data["train"],
        validation=data["validation"],
        test=data["test"],
        files={split: tuple(v) for split, v in names.items()},
        sha256=digests,
        source=source,
    )


def window_starts(size, length, count, seed):
    """Start offsets of ``count`` random windows of ``length + 1`` bytes in a text of ``size`` bytes.

    Parameters
    ----------
    size : int
        Length of the text, ``> length + 1``.
    length : int
        Window length (tokens the model reads), ``>= 1``.
    count : int or tuple of int
        How many windows (any shape).
    seed : int
        Seeds ``numpy.random.default_rng``; the same seed gives the same windows.

    Returns
    -------
    numpy.ndarray
        Integer offsets in ``[0, size - length - 1]``, of shape ``count``.
    """
    size, length = _validate.count(size, "size", 2), _validate.count(length, "length")
    if size <= length + 1:
        raise ValueError(f"size must exceed length + 1 = {length + 1}, got {size}")
    seed = _validate.seed(seed)
    return np.random.default_rng(seed).integers(0, size - length, size=count)


def batch_windows(text, starts, length):
    """Windows of ``length + 1`` bytes starting at ``starts``: inputs and next-byte targets.

    Parameters
    ----------
    text : numpy.ndarray
        ``uint8`` bytes.
    starts : array_like
        Integer offsets, any shape ``S``, each in ``[0, len(text) - length - 1]``.
    length : int
        Tokens per window, ``>= 1``.

    Returns
    -------
    numpy.ndarray
        ``int32`` array of shape ``S + (length + 1,)``: ``[..., :-1]`` are the
        inputs, ``[..., 1:]`` the targets.
    """
    length = _validate.count(length, "length")
    starts = np.asarray(starts)
    if starts.dtype.kind not in "iu":
        raise TypeError(f"starts must be integers, got dtype {starts.dtype}")
    if starts.size and (starts.min() < 0 or starts.max() > len(text) - length - 1):
        raise ValueError(f"starts must lie in [0, {len(text) - length - 1}]")
    return np.asarray(text)[starts[..., None] + np.arange(length + 1)].astype(np.int32)

"""The trained models: the training experiment, the byte-level language model
and its trainer, the retrieval tasks and their corpus, and the readers of the
experiments' results files.

Imports :mod:`attnscale.theory` and :mod:`attnscale.support`; never the
advice or the calculator (:mod:`attnscale.practice`).
"""

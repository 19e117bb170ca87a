"""The plumbing the chapters share: input validation, the checks that make
the build a test, intervals and the length-factor fit, number formatting,
tables, the plotting style and figures.

Imports none of :mod:`attnscale.theory`, :mod:`attnscale.models` or
:mod:`attnscale.practice`.
"""

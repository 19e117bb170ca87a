"""The mathematics of the sources: the softmax and its Jacobian, the
Gaussian and cosine score laws, exact finite-n expectations, entropy,
decoders, initialization and deep-network moments, and the extreme-value
diagnostic.

Imports only :mod:`attnscale.support`; never a trained model or advice
(the layered contract in ``pyproject.toml``, checked by ``tests/test_layers.py``).
"""

"""TeX commands that read as one character, shared by the local extensions.

``header_math`` writes headings' math as HTML text and ``figure_alt`` speaks
a caption's math in a figure's ``alt``; both read ``\\alpha`` as α.  This is
not an extension (``_config.yml`` does not load it): jupyter-book puts
``book/_ext`` on ``sys.path`` for its local extensions, which import it.
"""

#: Lower-case Greek letters (TeX sets them italic).
GREEK = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "kappa": "κ",
    "lambda": "λ",
    "mu": "μ",
    "sigma": "σ",
    "theta": "θ",
    "tau": "τ",
    "rho": "ρ",
    "pi": "π",
}

#: Operators and relations.
OPERATORS = {
    "cdot": "·",
    "times": "×",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "approx": "≈",
    "pm": "±",
}

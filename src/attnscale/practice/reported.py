"""Numbers the sources report, typed once, for the chapters that set the book's results beside them.

These are not computed by the book: each is copied from the publication
named in its docstring, and every chapter that shows one takes it from
here, so that a correction is made once.
"""

from __future__ import annotations

__all__ = ["SU2021_LENGTH_EXTRAPOLATION"]

#: Su (2021), "从熵不变性看Attention的Scale操作" (entropy invariance and the
#: attention scale), kexue.fm/archives/8823, table "Attention的长度外推实验"
#: (length extrapolation of attention): masked-LM accuracy in percent of
#: RoFormer-small trained at 64 tokens and evaluated on validation sets of
#: the given lengths.  "Attention-O": softmax(q.k / sqrt(d)); "Attention-E":
#: softmax(log_512(n) q.k / sqrt(d)), base 512 because common pretraining
#: uses 512 tokens.
SU2021_LENGTH_EXTRAPOLATION = {
    "train_length": 64,
    "base": 512,
    "lengths": (64, 128, 256, 512, 1024),
    "metric": "masked-token accuracy (%)",
    "accuracy": {
        "Attention-O": (43.27, 36.53, 23.02, 15.12, 11.54),
        "Attention-E": (43.11, 41.17, 34.04, 20.15, 13.58),
    },
}

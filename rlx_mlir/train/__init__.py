"""Training: losses (`softmax_cross_entropy`), optimisers (`SGD`, `AdamW`) and `TrainStep`,
forward + backward + update compiled as one function (see docs/design.md, "Reverse mode")."""

from .losses import softmax_cross_entropy
from .optim import SGD, AdamW
from .step import TrainStep, build_train_function

__all__ = ["AdamW", "SGD", "TrainStep", "build_train_function", "softmax_cross_entropy"]

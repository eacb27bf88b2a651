"""How chapter 08's check calls the learner's capstone code.

* `invoke_loss(fn, logits, labels)`: the learner's `cross_entropy(logits, labels)` runs on the
  learner's own engine, found where the function was defined (`fn.__globals__`: its `Tensor`
  and its `grad`, as the engine chapter's contract has them): the loss, and its gradient with
  respect to the logits from the learner's `grad`.
* `invoke_train_epoch(fn, W, b, x, y, order, lr, batch_size)`: the learner's
  `train_epoch(loss_and_grads, params, x, y, order, lr, batch_size)` trains a linear
  least-squares model for one epoch, with `least_squares` below as its `loss_and_grads`. The
  loop is what is checked, so the model it trains is the simplest one whose gradients are
  exact in numpy; it is not the capstone's network, and its loss is not the capstone's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import english

Params = dict[str, np.ndarray]


def _engine_name(fn: Callable[..., Any], name: str, *args: Any) -> Any:
    """`name` from where the learner's function was defined. Without it, the function is
    called on plain arrays first: an unanswered stub then says so (NotImplementedError), as
    every check's does, before the check asks for the engine."""
    namespace = getattr(fn, "__globals__", {})
    if name not in namespace:
        try:
            fn(*args)
        except NotImplementedError:
            raise
        except Exception:  # an answer needs the engine: say so below
            pass
        raise NameError(
            english(
                "The check runs your {function} on your own engine, but no `{name}` is defined "
                "where {function} was defined. Paste your engine into this notebook (section 2) "
                "and run its cell, then run this check again.",
                function=getattr(fn, "__name__", "function"),
                name=name,
            )
        )
    return namespace[name]


def _array(value: Any) -> np.ndarray:
    """A Tensor's `.value`, or the array itself."""
    return np.asarray(getattr(value, "value", value))


def invoke_loss(fn: Callable[..., Any], logits: np.ndarray, labels: np.ndarray) -> tuple:
    """(loss, gradient of the loss with respect to logits), on the learner's engine."""
    tensor = _engine_name(fn, "Tensor", np.copy(logits), np.copy(labels))
    grad = _engine_name(fn, "grad", np.copy(logits), np.copy(labels))
    loss = fn(tensor(np.copy(logits)), tensor(np.copy(labels)))
    gradient = grad(lambda z: fn(z, tensor(np.copy(labels))))(np.copy(logits))
    return _array(loss), _array(gradient)


def least_squares(params: Params, x: np.ndarray, y: np.ndarray) -> tuple[float, Params]:
    """A linear model's loss, 0.5 * mean over the rows of |x @ W + b - y|^2, and its
    gradients: the `loss_and_grads` the check trains `train_epoch` with."""
    residual = x @ params["W"] + params["b"] - y
    rows = len(x)
    loss = 0.5 * float(np.mean(np.sum(residual**2, axis=-1)))
    return loss, {"W": x.T @ residual / rows, "b": residual.sum(axis=0) / rows}


def invoke_train_epoch(
    fn: Callable[..., Any],
    W: np.ndarray,
    b: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    lr: float,
    batch_size: int,
) -> tuple:
    """The parameters after the learner's epoch, and the loss of each of its steps."""
    result = fn(least_squares, {"W": W, "b": b}, x, y, order, lr, batch_size)
    if not (isinstance(result, tuple | list) and len(result) == 2 and isinstance(result[0], dict)):
        raise TypeError(
            english(
                "train_epoch must return (params, losses): the dict of parameters after the "
                "epoch and the list of the losses of its steps; it returned a {type}.",
                type=type(result).__name__,
            )
        )
    params, losses = result
    return _array(params["W"]), _array(params["b"]), np.asarray(losses, dtype=np.float64)

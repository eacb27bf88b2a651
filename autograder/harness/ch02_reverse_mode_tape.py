"""Chapter 02: calling a learner's `hessian_vector_product`, `directional_derivative` and
`find_wrong_rule`.

The chapter's engine (its `Tensor`, operations, rules, order, backward pass and `grad`) is
the learner's, all of it, and is checked on random programs (harness/programs.py); nothing
here differentiates a program or holds a rule. `find_wrong_rule` is handed rule tables with
wrong rules in them (WRONG_RULES, as learners write them); the other ops of a table are
differentiated numerically, by the complex step (no formula of a rule is written here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import english, learner_name, stand_in_only
from .programs import learner_functions, run

FORWARD: dict[str, Callable[..., np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "matmul": np.matmul,
    "neg": np.negative,
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "sum": lambda x, axis=None: np.asarray(np.sum(x, axis=axis)),
}
COMPLEX_STEP = 1e-30  # Im f(x + i h e) / h is the derivative along e, with no cancellation


# ---------------------------------------------------------------- gradients of gradients


def invoke_hessian_vector_product(
    fn: Callable[..., Any],
    program: str,
    x0: np.ndarray,
    x1: np.ndarray,
    x2: np.ndarray,
    v: np.ndarray,
) -> np.ndarray:
    """The learner's hessian_vector_product(f, x0, v) of f(x0) = the program (a scalar) with
    x1 and x2 held fixed, run on the learner's own engine, found where fn is defined."""
    ops = fn.__globals__
    functions, tensor = learner_functions(ops), learner_name(ops, "Tensor")

    def f(x: Any) -> Any:
        return run(program, functions, [x, tensor(np.copy(x1)), tensor(np.copy(x2))])[-1]

    result = fn(f, np.copy(x0), np.copy(v))
    return np.asarray(getattr(result, "value", result))


# ---------------------------------------------------------------- gradient checking


def _numpy_math() -> dict[str, Callable[..., Any]]:
    return {"tanh": np.tanh, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sum": np.sum}


# The scalar functions directional_derivative is checked on, over any array library `m`
# (numpy, jax.numpy, or TensorFlow through the same five names): smooth where the cases
# draw their points ("log" on positive values only), each with its numpy gradient.
SCALAR_FUNCTIONS: dict[str, Callable[[dict, Any], Any]] = {
    "tanh_x2": lambda m, x: m["sum"](m["tanh"](x) * x * x),
    "softplus": lambda m, x: m["sum"](m["log"](1 + m["exp"](x))),
    "log": lambda m, x: m["sum"](m["log"](x)),
    "norm": lambda m, x: m["sqrt"](m["sum"](x * x)),
}
SCALAR_GRADIENTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh_x2": lambda x: (1 - np.tanh(x) ** 2) * x * x + 2 * x * np.tanh(x),
    "softplus": lambda x: 1 / (1 + np.exp(-x)),
    "log": lambda x: 1 / x,
    "norm": lambda x: x / np.sqrt(np.sum(x * x)),
}


def scalar_function(name: str, dtype: Any) -> Callable[[Any], np.ndarray]:
    """The numpy function `name`, computed in `dtype` whatever the point it is given: a
    learner who widens x to float64 still differentiates a float32 function."""

    def f(x: Any) -> np.ndarray:
        return np.asarray(SCALAR_FUNCTIONS[name](_numpy_math(), np.asarray(x, dtype)), dtype)

    return f


def invoke_directional_derivative(
    fn: Callable[..., Any], f: str, x: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """The learner's directional_derivative(f, x, v) of the named function, in x's dtype."""
    result = fn(scalar_function(f, x.dtype), x, v)
    if np.ndim(result) != 0:
        raise ValueError(
            english(
                "directional_derivative must return one number (the "
                "derivative of f along v), not an array of shape {shape}.",
                shape=np.shape(result),
            )
        )
    return np.asarray(result, dtype=x.dtype)


def directional_derivative(
    f: Callable[[np.ndarray], Any], x: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """The reference of the exercise directional_derivative: a central difference whose
    step balances truncation (h**2) against rounding (eps / h) for x's dtype, relative to
    x's magnitude. It stands in for the learner's only while find_wrong_rule is checked;
    imported and called as an answer, it raises (harness.stand_in_only).

    A difference, not the frameworks' JVP (the exercise's reference): find_wrong_rule hands
    it numpy functions of the learner's (the rule table's forward), which jax.jvp cannot
    trace; find_wrong_rule is a numpy round in the grader's child, where JAX raises
    FrameworkUsed; and a tolerance's mistake (float64_tolerance) is judged by the error a
    right finite difference has in float32, which an exact JVP would not show."""
    stand_in_only("directional_derivative")
    x = np.asarray(x)
    h = np.finfo(x.dtype).eps ** (1 / 3) * max(1.0, float(np.abs(x).max(initial=0.0)))
    return (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))) / (2 * h)


# ---------------------------------------------------------------- find_wrong_rule

# Rule tables with one wrong rule each, as learners write them (seed 001's kind first: a
# transpose in the wrong place, whose shape is right for square matrices): the op, its rule.
WRONG_RULES: dict[str, tuple[str, Callable[..., tuple]]] = {
    "matmul_transposed": ("matmul", lambda g, x, y: (g @ y.T, (x.T @ g).T)),
    "sub_sign": ("sub", lambda g, x, y: (g, g)),
    "div_sign": ("div", lambda g, x, y: (g / y, g * x / y**2)),
    "mul_swapped": ("mul", lambda g, x, y: (g * x, g * y)),
    "neg_sign": ("neg", lambda g, x: (g,)),
    "exp_forgotten": ("exp", lambda g, x: (g,)),
    "log_squared": ("log", lambda g, x: (g / x**2,)),
    "tanh_of_input": ("tanh", lambda g, x: (g * (1 - x**2),)),
    "sum_axis_lost": ("sum", lambda g, x, axis=None: (np.broadcast_to(g, x.shape).copy(),)),
}
RIGHT_TABLE = "right"
FLAGS = (*FORWARD, "none")  # what find_wrong_rule's answer is compared as: one flag each
JOINED = "+"  # "sub_sign+tanh_of_input": several wrong rules; the first op is the answer


def complex_step_vjp(op: str, g: np.ndarray, *primals: np.ndarray, **params: Any) -> tuple:
    """The cotangents of op's primals for the cotangent g, entry by entry by the complex step
    (every op of FORWARD is analytic where it is drawn): exact to rounding, in the primals'
    dtype. A numerical differentiator, as a gradient checker is, not a rule."""
    cotangents = []
    for i, primal in enumerate(primals):
        cotangent = np.zeros(primal.shape)
        for j in np.ndindex(primal.shape):
            moved = [np.asarray(p, np.complex128) for p in primals]
            moved[i][j] += COMPLEX_STEP * 1j
            out = FORWARD[op](*moved, **params)
            cotangent[j] = np.sum(np.asarray(g, np.float64) * np.imag(out)) / COMPLEX_STEP
        cotangents.append(cotangent.astype(primal.dtype))
    return tuple(cotangents)


def rule_table(table: str) -> Callable[..., tuple]:
    """A vjp_rule(op, g, *primals, **params): the WRONG_RULES named in `table` for their ops,
    the complex step for every other op."""
    wrong = {} if table == RIGHT_TABLE else dict(WRONG_RULES[name] for name in table.split(JOINED))

    def vjp_rule(op: str, g: np.ndarray, *primals: np.ndarray, **params: Any) -> tuple:
        if op in wrong:
            return wrong[op](g, *primals, **params)
        return complex_step_vjp(op, g, *primals, **params)

    return vjp_rule


def flags(answer: str | None) -> np.ndarray:
    """One flag per op (and one for "no rule is wrong"): 1.0 at the answer."""
    return np.array([float(name == (answer or "none")) for name in FLAGS])


def invoke_find_wrong_rule(fn: Callable[..., Any], table: str, dtype: str) -> np.ndarray:
    """The learner's find_wrong_rule(vjp_rule, forward, dtype) on a rule table, as flags."""
    answer = fn(rule_table(table), dict(FORWARD), np.dtype(dtype))
    if answer is not None and answer not in FORWARD:
        raise ValueError(
            english(
                "find_wrong_rule returned {answer}: return the name of an op, "
                "one of {ops}, or None when every rule passes.",
                answer=repr(answer),
                ops=", ".join(FORWARD),
            )
        )
    return flags(answer)


def handed_out_vjp_rule() -> Callable[..., tuple]:
    """The rule table of the tape chapter 02 hands out to be checked: one rule in it is
    wrong, of the kind seed 001's learner could not find (the notebook does not say which)."""
    return rule_table("matmul_transposed")

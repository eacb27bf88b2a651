"""Random programs run on the learner's whole engine: the text, its interpreter, the invoke.

A *program* is a few lines of Python over the inputs x0, x1, x2, one operation per line, in
the learner's own names, ending with a scalar:

    y0 = x0 @ x1
    y1 = maximum(y0, x2)
    y2 = sum(y1 * y1, axis=1)   # (each line holds ONE operation; this one has two)

It is a static parameter of a case (plain text, shown to the learner as code), so the same
program runs on the learner's engine, on numpy (to draw its values), on JAX and on TensorFlow:
`run` reads each line with `ast` and evaluates only what the grammar below allows, with the
functions of a namespace (the learner's notebook, or a framework's table) and the operators
of the values themselves. Nothing else of Python is evaluated, so a program is data.

The grammar: `name = expression`, where an expression is one of
  a + b, a - b, a * b, a / b, a @ b, a ** c (c a number), -a,
  a[index] (slices, and one integer list per index: a[:, [0, 2, 0]]),
  f(a, ...) for f in FUNCTIONS, with numbers, tuples of numbers and None as arguments.

This module runs in the learner's kernel and in the grader's sandboxed child: it imports the
standard library and numpy only (tests/architecture/test_layout.py).
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from . import english, learner_name

INPUTS = ("x0", "x1", "x2")
FUNCTIONS = (
    "exp",
    "log",
    "tanh",
    "relu",
    "maximum",
    "sum",
    "mean",
    "reshape",
    "transpose",
    "broadcast_to",
    "log_softmax",
)
BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.MatMult: operator.matmul,
    ast.Pow: operator.pow,
}
# What the learner's notebook must define for the check to build its programs.
NAMESPACE = ("Tensor", "backward", *FUNCTIONS)

Index = Callable[[Any, Any], Any]
Line = tuple[str, ast.expr]


class ProgramError(ValueError):
    """A program outside the grammar: a bug of the course, or a tampered case."""


class ArgnumsError(TypeError):
    """What the learner's grad gave for an int argnums, or a tuple of one, is not what
    jax.grad gives: one array for an int, a tuple for a tuple (the exercise's hint for
    `exception:ArgnumsError` says what to do)."""


class ScalarOutputError(Exception):
    """The learner's grad did not refuse with a TypeError, as jax.grad does, an f whose
    output is not a scalar (the hint for `exception:ScalarOutputError` says what to do)."""


@functools.lru_cache(maxsize=4096)
def statements(program: str) -> tuple[Line, ...]:
    """(name, expression) for each line of the program, checked against the grammar (read
    once per program: each case runs it on numpy, both frameworks and the learner's engine)."""
    lines = []
    for node in ast.parse(program).body:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            raise ProgramError(f"not an assignment to one name: {ast.unparse(node)}")
        _check(node.value)
        lines.append((node.targets[0].id, node.value))
    return tuple(lines)


def _check(node: ast.AST) -> None:
    allowed = (
        ast.Name,
        ast.Constant,
        ast.Tuple,
        ast.List,
        ast.BinOp,
        ast.UnaryOp,
        ast.Call,
        ast.Subscript,
        ast.Slice,
        ast.Load,
        ast.USub,
        ast.keyword,
        *BINARY,
    )
    for inner in ast.walk(node):
        if not isinstance(inner, allowed):
            raise ProgramError(f"{type(inner).__name__} is not in the program grammar")
        if isinstance(inner, ast.Call) and not (
            isinstance(inner.func, ast.Name) and inner.func.id in FUNCTIONS
        ):
            raise ProgramError(f"{ast.unparse(inner.func)} is not a program function")


def run(
    program: str,
    functions: dict[str, Any],
    inputs: Sequence[Any],
    index: Index = operator.getitem,
    nudges: Sequence[Any] | None = None,
) -> list[Any]:
    """Every value of the program: the inputs, then one per line, computed with `functions`
    (name -> callable) and the values' own operators; `index(value, key)` does `a[key]`,
    with an integer list as a numpy int64 array. `nudges[k]` (zeros) is added to line k's
    value, so that JAX can give the cotangent of each intermediate value."""
    values = list(inputs)
    env = dict(zip(INPUTS, values, strict=False))
    for k, (name, expression) in enumerate(statements(program)):
        value = _evaluate(expression, env, functions, index)
        if nudges is not None:
            value = value + nudges[k]
        env[name] = value
        values.append(value)
    return values


def _evaluate(node: ast.expr, env: dict[str, Any], functions: dict[str, Any], index: Index) -> Any:
    def value(inner: ast.expr) -> Any:
        return _evaluate(inner, env, functions, index)

    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(value(element) for element in node.elts)
    if isinstance(node, ast.List):  # an integer index array
        return np.array([value(element) for element in node.elts], dtype=np.int64)
    if isinstance(node, ast.BinOp):
        return BINARY[type(node.op)](value(node.left), value(node.right))
    if isinstance(node, ast.UnaryOp):
        return -value(node.operand)
    if isinstance(node, ast.Slice):
        return slice(
            *(None if part is None else value(part) for part in (node.lower, node.upper, node.step))
        )
    if isinstance(node, ast.Subscript):
        return index(value(node.value), value(node.slice))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    keywords = {keyword.arg: value(keyword.value) for keyword in node.keywords}
    return functions[node.func.id](*(value(arg) for arg in node.args), **keywords)


def operations(program: str) -> int:
    """How many operations the program has (one per line)."""
    return len(statements(program))


def shown(program: str) -> str:
    """The program as the learner reads it: one line each, the inputs' names first."""
    return "\n".join(
        f"{name} = {ast.unparse(expression)}" for name, expression in statements(program)
    )


# ---------------------------------------------------------------- numpy, to draw values


def _log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


NUMPY: dict[str, Callable[..., Any]] = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0.0),
    "maximum": np.maximum,
    "sum": lambda x, axis=None, keepdims=False: np.asarray(np.sum(x, axis, keepdims=keepdims)),
    "mean": lambda x, axis=None, keepdims=False: np.asarray(np.mean(x, axis, keepdims=keepdims)),
    "reshape": np.reshape,
    "transpose": np.transpose,
    "broadcast_to": np.broadcast_to,
    "log_softmax": _log_softmax,
}


def forward(program: str, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The program's values in numpy (the forward pass only: it differentiates nothing)."""
    return [np.asarray(v) for v in run(program, NUMPY, inputs)]


def numpy_value(expression: str, env: dict[str, np.ndarray]) -> np.ndarray:
    """One expression of the grammar over named numpy values (a program being drawn)."""
    return np.asarray(_evaluate(_expression(expression), env, NUMPY, operator.getitem))


@functools.lru_cache(maxsize=4096)
def _expression(expression: str) -> ast.expr:
    node = ast.parse(expression, mode="eval").body
    _check(node)
    return node


# ---------------------------------------------------------------- the learner's engine


def learner_functions(ops: dict[str, Any]) -> dict[str, Any]:
    """The program functions of the learner's notebook, each checked to exist."""
    return {name: learner_name(ops, name) for name in FUNCTIONS}


def flat(arrays: Iterable[Any]) -> np.ndarray:
    """Arrays flattened and joined, in order (an empty float64 array for none)."""
    parts = [np.ravel(np.asarray(a)) for a in arrays]
    return np.concatenate(parts) if parts else np.zeros(0)


def invoke_engine(
    fn: Callable[..., Any], program: str, x0: np.ndarray, x1: np.ndarray, x2: np.ndarray
) -> tuple:
    """The learner's grad(f, argnums=(0, 1, 2)) of f = the program, and the .grad of every
    line's value after the learner's backward(root) on the program traced afresh. Between
    them, grad is held to jax.grad's argnums and scalar output (ArgnumsError,
    ScalarOutputError, each with its hint in the exercise's declaration)."""
    ops = fn.__globals__
    functions = learner_functions(ops)
    tensor, backward = learner_name(ops, "Tensor"), learner_name(ops, "backward")

    def f(*tensors: Any) -> Any:
        return run(program, functions, tensors)[-1]

    gradients = fn(f, argnums=(0, 1, 2))(x0, x1, x2)
    if not isinstance(gradients, tuple | list) or len(gradients) != len(INPUTS):
        raise TypeError(
            english(
                "grad(f, argnums=(0, 1, 2)) must return a tuple of three gradients, one per "
                "input, as jax.grad does; it returned a {type}.",
                type=_described(gradients),
            )
        )
    _argnums_as_jax(fn, functions["sum"], (x0, x1, x2))
    _scalar_only(fn, functions, program, (x0, x1, x2))
    values = run(program, functions, [tensor(np.copy(x)) for x in (x0, x1, x2)])
    backward(values[-1])
    nodes = [_grad_of(value, line) for line, value in enumerate(values[len(INPUTS) :], 1)]
    return (*gradients, flat(nodes))


def _fresh(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [np.copy(x) for x in inputs]


def _argnums_as_jax(fn: Callable[..., Any], sum_: Any, inputs: Sequence[np.ndarray]) -> None:
    """grad(f) (argnums 0, an int) gives one array, and grad(f, argnums=(2,)) a tuple of one,
    as jax.grad does: asked of f = sum(x0) and sum(x2), one operation each (what is returned
    is judged, not its values: the program's gradients are judged on their own)."""
    alone = fn(lambda *tensors: sum_(tensors[0]))(*_fresh(inputs))
    if isinstance(alone, tuple | list):
        raise ArgnumsError(
            english(
                "grad(f) returned a {type} of length {length} for f(x0, x1, x2) = sum(x0), "
                "where jax.grad returns one array: an int argnums (0, the default) asks for "
                "the gradient of that one argument.",
                type=type(alone).__name__,
                length=len(alone),
            )
        )
    single = fn(lambda *tensors: sum_(tensors[2]), argnums=(2,))(*_fresh(inputs))
    if not isinstance(single, tuple | list) or len(single) != 1:
        raise ArgnumsError(
            english(
                "grad(f, argnums=(2,)) returned a value of type {type} for f(x0, x1, x2) = "
                "sum(x2), where jax.grad returns a tuple holding one array: a tuple argnums "
                "gives a tuple, even of one argument.",
                type=_described(single),
            )
        )


def _scalar_only(
    fn: Callable[..., Any],
    functions: dict[str, Any],
    program: str,
    inputs: Sequence[np.ndarray],
) -> None:
    """grad(f) raises a TypeError, as jax.grad does, for f = the program's last value but one
    (the value the final line sums) when it has more than one entry ((1, 1) is left to the
    learner)."""
    names = [name for name, _ in statements(program)]
    if len(names) < 2:
        return
    with np.errstate(all="ignore"):
        shape = np.shape(forward(program, list(inputs))[-2])
    if int(np.prod(shape)) <= 1:
        return

    without_last = "\n".join(
        f"{name} = {ast.unparse(expression)}" for name, expression in statements(program)[:-1]
    )

    def vector(*tensors: Any) -> Any:
        return run(without_last, functions, tensors)[-1]

    try:
        fn(vector)(*_fresh(inputs))
    except TypeError:
        return
    except Exception as error:
        raise ScalarOutputError(
            english(
                "grad(f) raised {error}, not a TypeError, for f = this program without its "
                "last line, whose output {name} has shape {shape}: jax.grad raises a "
                "TypeError for an output that is not a scalar.",
                error=type(error).__name__,
                name=names[-2],
                shape=shape,
            )
        ) from error
    raise ScalarOutputError(
        english(
            "grad(f) returned gradients for f = this program without its last line, whose "
            "output {name} has shape {shape}, not a scalar: jax.grad raises a TypeError there.",
            name=names[-2],
            shape=shape,
        )
    )


def _grad_of(value: Any, line: int) -> np.ndarray:
    if not hasattr(value, "grad"):
        raise TypeError(
            english(
                "Line {line} of the program gave a {type}, not a Tensor with "
                "a .grad: every operation must return a Tensor.",
                line=line,
                type=type(value).__name__,
            )
        )
    return np.asarray(value.grad)


def _described(value: Any) -> str:
    """What a value is, in Python's words (its type, and its length for a sequence)."""
    if isinstance(value, tuple | list):
        return f"{type(value).__name__} of length {len(value)}"
    return type(value).__name__

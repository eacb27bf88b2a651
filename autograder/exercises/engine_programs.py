"""The learner's whole engine, checked on random programs against JAX and TensorFlow.

The contract the check tests (what the engine chapter asks the learner to write, in the
notebook where `grad` is defined; the check finds every name there, `fn.__globals__`):

- `Tensor(value)` wraps a numpy array: `.value` (the array), `.grad` (its cotangent after a
  backward pass, the value's shape and dtype; zeros before one). Operators `a + b`, `a - b`,
  `a * b`, `a / b`, `a @ b` (numpy's batched, broadcasting matmul), `a ** c` for a number c,
  `-a`, and `a[key]` with slices and with one integer index array (a numpy int64 array; an
  index may repeat, so the VJP of a gather is a scatter-add), all broadcasting as numpy does.
  Every operation returns a new Tensor.
- Functions `exp, log, tanh, relu, maximum(a, b), sum(x, axis=None, keepdims=False),
  mean(x, axis=None, keepdims=False), reshape(x, shape), transpose(x, axes),
  broadcast_to(x, shape), log_softmax(x, axis=-1)` (axis an int, a tuple of ints or None).
- `backward(root)` with `root` a scalar Tensor: fills the `.grad` of every node the root
  depends on with d root / d node, accumulating over every path (a value used twice gets
  both contributions).
- `grad(f, argnums=0)`, as `jax.grad`: a function of numpy arrays that returns the gradient of
  the scalar `f` (a function of Tensors) with respect to argument `argnums` (an int: one
  numpy array; a tuple: a tuple of them); zeros for an argument `f` does not use.

A case is a program over x0, x1, x2 (autograder/harness/programs.py: one operation a line,
written with the learner's names, ending with a sum to a scalar) and the three inputs, float64.
`programs(profile)` draws them with Hypothesis, so a failure shrinks to the smallest program.
The program is built so that it never meets a kink or a pole: `maximum` and `relu` never see a
tie (|a - b| and |x| stay above 1e-3, so any convention at a tie passes), `log`, `/` and
fractional powers only positive values or values away from zero, `exp` and powers only values
that keep every value small. Each line uses the line before it, so every value reaches the
output; a second operand is any earlier value (fan-out) or input (reuse). About half the
programs start with a batched matmul (x0 a batch of matrices, x1 a matrix), and five
hand-picked programs (the source material's batched matmul among them) use between them
every operation, whatever a seed draws. The operations and the drawing of a program's text are
in engine_operations.py.

The outputs are the gradient of each input, from the learner's `grad(f, argnums=(0, 1, 2))`,
and every line's cotangent (its `.grad` after the learner's `backward(root)`), flattened in
program order: the second says where a wrong gradient starts (engine_reports.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from autograder.exercises.engine_operations import program_text
from autograder.harness.programs import INPUTS, flat, forward, run, shown
from autograder.judging.cases import Case, Profile, grading_sized
from autograder.judging.derived import two_references

OUTPUTS = ("x0.grad", "x1.grad", "x2.grad", "node cotangents")
INVOKE = "programs:invoke_engine"
NOTEBOOK_LINES, GRADING_LINES = 5, 7  # operations before the final sum, at most


# ---------------------------------------------------------------- the inputs


@dataclass(frozen=True)
class Sizes:
    """The sizes every input's shape is made of: batch b, rows m, columns k."""

    b: int
    m: int
    k: int

    def shape(self, kind: str) -> tuple[int, ...]:
        """One of SHAPES: matrices either way round, batches of them, vectors, size-1 axes
        that broadcast, and a scalar."""
        b, m, k = self.b, self.m, self.k
        return {
            "matrix": (m, k),
            "matrix_t": (k, m),
            "batch": (b, m, k),
            "batch_t": (b, k, m),
            "vector": (k,),
            "column": (m, 1),
            "row": (1, k),
            "batch_row": (b, 1, k),
            "scalar": (),
        }[kind]


# A batch first: a program shrinks towards it, and the 3-D operand of a matmul is where a rule
# that transposes every axis (`.T`) goes wrong.
SHAPES = (
    "batch",
    "matrix",
    "matrix_t",
    "vector",
    "batch_t",
    "column",
    "row",
    "batch_row",
    "scalar",
)


def _input(rng: np.random.Generator, shape: tuple[int, ...], positive: bool) -> np.ndarray:
    """Values in [0.5, 1.5], or of either sign with 0.1 <= |x| <= 1.5."""
    magnitude = rng.uniform(0.5 if positive else 0.1, 1.5, size=shape)
    sign = 1.0 if positive else rng.choice([-1.0, 1.0], size=shape)
    return np.asarray(sign * magnitude, dtype=np.float64)


@st.composite
def _inputs(draw: st.DrawFn, batched: bool) -> list[np.ndarray]:
    """Three inputs of shapes drawn from SHAPES; `batched`: x0 a batch of (m, k) matrices
    and x1 a (k, m) matrix, so that both x0 @ x1 and x1 @ x0 are batched matmuls."""
    sizes = Sizes(*(draw(st.integers(2, 3)) for _ in range(3)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    kinds = [draw(st.sampled_from(SHAPES)) for _ in INPUTS]
    if batched:
        kinds[:2] = ["batch", "matrix_t"]
    return [_input(rng, sizes.shape(kind), draw(st.booleans())) for kind in kinds]


# ---------------------------------------------------------------- the cases


@st.composite
def programs(draw: st.DrawFn, profile: Profile) -> Case:
    """A case: a random program and its three inputs."""
    batched = draw(st.booleans())  # a batched matmul first, in about half the programs
    inputs = draw(_inputs(batched))
    most = GRADING_LINES if grading_sized(profile) else NOTEBOOK_LINES
    program = draw(program_text(inputs, most, batched))
    return Case((("program", program), *zip(INPUTS, inputs, strict=True)))


def program_case(program: str, inputs: list[np.ndarray], label: str = "") -> Case:
    """A hand-picked case: the program (checked against the grammar) and its inputs."""
    return Case((("program", shown(program)), *zip(INPUTS, inputs, strict=True)), label=label)


# The source material's case (seed 001): x @ y @ z with a (2, 2) weight between two batches.
QA_INPUTS = [
    np.array([[[1.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]]]),
    np.array([[3.0, -7.0], [-1.0, 5.0]]),
    np.array([[[1.0, 1.0], [2.0, 2.0]], [[3.0, 3.0], [-1.0, -1.0]]]),
]


# Two programs that between them use every operation the random ones draw from, so that every
# check runs each at least once, whatever its seed draws.
EVERY_OPERATION = (
    "y0 = maximum(x0, x1)\ny1 = relu(y0)\ny2 = y1 / x2\ny3 = y2 - x1\n"
    "y4 = log_softmax(y3, axis=0)\ny5 = mean(y4, axis=1, keepdims=True)\n"
    "y6 = broadcast_to(y5, (2, 2))\ny7 = y6 * y6\ny8 = sum(y7)",
    "y0 = log(x0)\ny1 = reshape(y0, (3, 2))\ny2 = transpose(y1, (1, 0))\ny3 = -y2\n"
    "y4 = exp(y3)\ny5 = y4[:, 1:3]\ny6 = y5 ** 3\ny7 = sum(y6, axis=0)\ny8 = y7 ** -1\n"
    "y9 = y8 ** 0.5\ny10 = x1[[1, 1]]\ny11 = y9 + y10\ny12 = sum(y11)",
)


def program_edges() -> list[Case]:
    """The source material's batched matmul, a value used three times, a gather that
    repeats, and the two programs of every operation."""
    rng = np.random.default_rng(2)
    return [
        program_case(
            "y0 = x0 @ x1\ny1 = y0 @ x2\ny2 = sum(y1)",
            QA_INPUTS,
            label="the Q&A case, x0 @ x1 @ x2 with a (2, 2) weight between batches",
        ),
        program_case(
            "y0 = x0 * x0\ny1 = y0 + x0\ny2 = sum(y1)",
            [_input(rng, (2, 3), False), *QA_INPUTS[1:]],
            label="a value used three times",
        ),
        program_case(
            "y0 = x0[[0, 2, 0]]\ny1 = tanh(y0)\ny2 = y1 * x1\ny3 = sum(y2)",
            [_input(rng, (3, 2), False), _input(rng, (3, 2), False), QA_INPUTS[2]],
            label="a gather that repeats row 0",
        ),
        program_case(
            EVERY_OPERATION[0],
            [_input(rng, (2, 3), False), _input(rng, (3,), False), _input(rng, (2, 1), True)],
            label="maximum, relu, /, -, log_softmax, mean and broadcast_to",
        ),
        program_case(
            EVERY_OPERATION[1],
            [_input(rng, (2, 3), True), _input(rng, (3, 2), False), QA_INPUTS[2]],
            label="log, reshape, transpose, -, exp, slices, powers and a gather",
        ),
    ]


# ---------------------------------------------------------------- the references


def _jax_functions(jax: Any) -> dict[str, Any]:
    jnp = jax.numpy
    return {
        "exp": jnp.exp,
        "log": jnp.log,
        "tanh": jnp.tanh,
        "relu": jax.nn.relu,
        "maximum": jnp.maximum,
        "sum": lambda x, axis=None, keepdims=False: jnp.sum(x, axis, keepdims=keepdims),
        "mean": lambda x, axis=None, keepdims=False: jnp.mean(x, axis, keepdims=keepdims),
        "reshape": jnp.reshape,
        "transpose": jnp.transpose,
        "broadcast_to": jnp.broadcast_to,
        "log_softmax": jax.nn.log_softmax,
    }


def _tf_functions(tf: Any) -> dict[str, Any]:
    return {
        "exp": tf.exp,
        "log": tf.math.log,
        "tanh": tf.tanh,
        "relu": tf.nn.relu,
        "maximum": tf.maximum,
        "sum": lambda x, axis=None, keepdims=False: tf.reduce_sum(x, axis, keepdims),
        "mean": lambda x, axis=None, keepdims=False: tf.reduce_mean(x, axis, keepdims),
        "reshape": tf.reshape,
        "transpose": tf.transpose,
        "broadcast_to": tf.broadcast_to,
        "log_softmax": lambda x, axis=-1: tf.nn.log_softmax(x, axis),
    }


def _tf_index(tf: Any) -> Callable[[Any, Any], Any]:
    """a[key] for a TensorFlow tensor: the slices first, then a gather for the index array."""

    def index(x: Any, key: Any) -> Any:
        key = key if isinstance(key, tuple) else (key,)
        x = x[tuple(slice(None) if isinstance(k, np.ndarray) else k for k in key)]
        for axis, k in enumerate(key):
            if isinstance(k, np.ndarray):
                x = tf.gather(x, k, axis=axis)
        return x

    return index


def program_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    """tf.GradientTape: the gradient of each input and of every line's value."""
    inputs = [tf.constant(case.arg(name)) for name in INPUTS]
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        values = run(case.arg("program"), _tf_functions(tf), inputs, index=_tf_index(tf))
    grads = tape.gradient(values[-1], values, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    grads = [grad.numpy() for grad in grads]
    return (*grads[: len(INPUTS)], flat(grads[len(INPUTS) :]))


def program_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    """jax.grad: of each input, and of a zero added to every line's value (its cotangent)."""
    program, functions = params["program"], _jax_functions(jax)
    inputs = [arrays[name] for name in INPUTS]

    def f(inputs: list[Any], nudges: list[Any]) -> Any:
        return run(program, functions, inputs, nudges=nudges)[-1]

    nudges = [
        jax.numpy.zeros(shape, inputs[0].dtype)
        for shape in line_shapes(program, [x.shape for x in inputs])
    ]
    of_inputs, of_lines = jax.grad(f, argnums=(0, 1))(inputs, nudges)
    return (*of_inputs, jax.numpy.concatenate([jax.numpy.ravel(g) for g in of_lines]))


def line_shapes(program: str, shapes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The shape of every line's value, from numpy on inputs of ones (no framework traces a
    second copy of the program for them)."""
    with np.errstate(all="ignore"):
        values = forward(program, [np.ones(shape) for shape in shapes])
    return [value.shape for value in values[len(INPUTS) :]]


PROGRAM_REFERENCE = two_references(
    tf=program_tf,
    jax=program_jax,
    why="TensorFlow indexes with an integer array by tf.gather, and gives the cotangent of "
    "an intermediate value directly; JAX gives it as the gradient of a zero added there.",
)
REFERENCES_TEXT = (
    "jax.grad and tf.GradientTape of the same program: the gradient of x0, x1 "
    "and x2, and the cotangent of every line's value"
)

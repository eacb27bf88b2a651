"""Chapter 02 exercises, breadth: one VJP rule per operation of the learner's engine.

The learner writes `vjp_<op>(g, *primals, **params)`, returning a tuple with one cotangent per
primal ((g_x,) for a unary operation), numpy arrays in and out; a cotangent may also be a
learner's Tensor whose `.value` is the array (autograder/harness/ch02_rules.py reads it), so
the same rules written with the engine's own operations pass too. Binary operations broadcast
as numpy does, so each cotangent is summed back to its operand's shape.

Each reference is the frameworks' own VJP of the operation, written once (`vjp_reference`),
except maximum's: at a tie JAX splits the cotangent in halves and TensorFlow gives all of it
to the first operand, and the exercise states JAX's convention (`two_references`). relu's
reference gives 0 at 0, as both frameworks do. The private `_sum_to` builds known wrong answers
only; verdicts always come from TensorFlow and JAX.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.exercises.common import between, rng_array
from autograder.judging.cases import Case, Profile, dtypes, float_arrays
from autograder.judging.derived import two_references, vjp_reference
from autograder.judging.exercise import Exercise, Mistake

BINARY = "ch02_rules:invoke_rule"
UNARY = "ch02_rules:invoke_unary_rule"
F32, F64 = np.float32, np.float64


def _sum_to(g: np.ndarray, like: np.ndarray) -> np.ndarray:
    """g summed to the shape of the array `like` (takes an array, not a shape, so it is no
    unbroadcast a learner could import)."""
    shape = like.shape
    summed = g.sum(axis=tuple(range(g.ndim - len(shape))))
    ones = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
    return summed.sum(axis=ones, keepdims=True)


def _mean_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    averaged = np.mean(g, axis=tuple(range(g.ndim - len(shape))))
    ones = tuple(i for i, n in enumerate(shape) if n == 1)
    return np.asarray(np.mean(averaged, axis=ones, keepdims=True), g.dtype)


def _signed(dtype: Any, shape: tuple[int, ...], low: float, high: float) -> st.SearchStrategy:
    """Arrays of magnitudes in [low, high], each entry's sign drawn."""
    signs = hnp.arrays(np.bool_, shape)
    return st.tuples(between(dtype, shape, low, high), signs).map(
        lambda pair: np.where(pair[1], pair[0], -pair[0])
    )


def _broadcasting(away: float = 0.0, **matmul: str) -> Callable[..., Any]:
    """Cases (g, a, b) of a binary operation: two shapes that broadcast together (batches of
    matrices with matmul's `signature=`); b's magnitudes at least `away` (a divisor)."""

    @st.composite
    def cases(draw: st.DrawFn, profile: Profile) -> Case:
        core = 2 if matmul else 0  # a matrix's two axes come on top of max_dims
        drawn = matmul or {"num_shapes": 2}
        sizes = {"max_dims": profile.max_dims - core, "max_side": profile.max_side}
        shapes = draw(hnp.mutually_broadcastable_shapes(**drawn, **sizes))
        dtype = draw(dtypes())
        a_shape, b_shape = shapes.input_shapes
        a = draw(float_arrays(dtype, a_shape))
        b = draw(_signed(dtype, b_shape, away, 10.0) if away else float_arrays(dtype, b_shape))
        return Case((("g", draw(float_arrays(dtype, shapes.result_shape))), ("a", a), ("b", b)))

    return cases


PAIRS = (
    ((2, 3), (2, 3), F32, "same shapes"),
    ((4, 3), (3,), F32, "b broadcast along a missing leading axis"),
    ((2, 1, 3), (4, 1), F64, "size-1 axes on both sides"),
    ((), (2, 2), F64, "a scalar a"),
)


def _binary_edges(
    seed: int, b_shift: float = 0.0, pairs: tuple = PAIRS, op: Any = np.add
) -> Callable[[], list[Case]]:
    """Hand-picked pairs of shapes (a, b) of `op`; b's entries shifted away from zero by
    `b_shift`."""

    def edges() -> list[Case]:
        rng = np.random.default_rng(seed)
        cases = []
        for a_shape, b_shape, dtype, label in pairs:
            a, b = rng_array(rng, a_shape, dtype), rng_array(rng, b_shape, dtype)
            b = np.asarray(b + np.where(b < 0, -b_shift, b_shift), dtype)
            g = rng_array(rng, op(a, b).shape, dtype)
            cases.append(Case((("g", g), ("a", a), ("b", b)), label=label))
        return cases

    return edges


def _elementwise(low: float, high: float, **params: st.SearchStrategy) -> Callable[..., Any]:
    """Cases (g, x, *params) of a unary elementwise operation, x in [low, high]."""

    @st.composite
    def cases(draw: st.DrawFn, profile: Profile) -> Case:
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=profile.max_side))
        dtype = draw(dtypes())
        x = draw(between(dtype, shape, low, high))
        extra = tuple((name, draw(value)) for name, value in params.items())
        return Case((("g", draw(float_arrays(dtype, shape))), ("x", x), *extra))

    return cases


def _elementwise_edges(seed: int, low: float, high: float, *params: tuple) -> Callable[..., Any]:
    """A 0-d, a float32 matrix and a float64 vector, x in [low, high]; each of `params` (a
    tuple of (name, value) pairs) gives a case of each."""

    def edges() -> list[Case]:
        rng = np.random.default_rng(seed)
        cases = []
        for extra in params or ((),):
            for shape, dtype in (((), F64), ((2, 3), F32), ((5,), F64)):
                x = np.asarray(rng.uniform(low, high, size=shape).round(2), dtype)
                g = rng_array(rng, shape, dtype)
                cases.append(Case((("g", g), ("x", x), *extra)))
        return cases

    return edges


def _picked(seed: int, name: str, forward: Callable[..., Any], picks: list) -> Callable[..., Any]:
    """Hand-picked cases (g, x, <name>) from (x's shape, the parameter, dtype[, label]) each; g
    has the shape of forward(x, parameter)."""

    def edges() -> list[Case]:
        rng = np.random.default_rng(seed)
        cases = []
        for shape, param, dtype, *label in picks:
            x = rng_array(rng, shape, dtype)
            g = rng_array(rng, np.shape(forward(x, param)), dtype)
            cases.append(Case((("g", g), ("x", x), (name, param)), label="".join(label)))
        return cases

    return edges


UNBROADCAST_HINT = (
    "Broadcasting made copies of an operand: its cotangent must have the operand's shape. Sum "
    "g over the leading axes the operand lacks, then with keepdims=True over every axis where "
    "the operand has size 1 (chapter 03's unbroadcast)."
)
IGNORES_G = (
    "Your cotangents do not depend on the values in g: you wrote the derivative alone. A VJP "
    "multiplies it by the incoming cotangent g (chain rule)."
)
TUPLE_HINT = (
    "Return a tuple with one cotangent per primal, each of its primal's shape and dtype: "
    "(g_a, g_b) for a binary operation, (g_x,) for a unary one."
)
BINARY_HINTS = {"error": TUPLE_HINT, "shape": UNBROADCAST_HINT, "structure": TUPLE_HINT}
UNARY_HINTS = {"error": TUPLE_HINT, "shape": TUPLE_HINT}


# ---------------------------------------------------------------- add, sub, mul, div

VJP_ADD = Exercise(
    signature="vjp_add(g, a, b) -> (g_a, g_b)",
    nudge=(
        "How much does the output move when a moves a little, and when b does? Then mind "
        "broadcasting: each cotangent must come back with its own operand's shape."
    ),
    outputs=("g_a", "g_b"),
    cases=_broadcasting(),
    edges=_binary_edges(21),
    reference=vjp_reference(lambda xp, a, b: a + b, wrt=("a", "b")),
    references_text="jax.vjp and tf.GradientTape of a + b",
    invoke=BINARY,
    mistakes=(
        Mistake("not_unbroadcast", UNBROADCAST_HINT, lambda g, a, b: (g, g)),
        Mistake(
            "ignores_cotangent",
            IGNORES_G,
            lambda g, a, b: (_sum_to(np.ones_like(g), a), _sum_to(np.ones_like(g), b)),
        ),
    ),
    hints_by_kind={
        **BINARY_HINTS,
        "value": "y = a + b: each operand's cotangent is g itself, "
        "summed over the axes that operand was broadcast along.",
    },
)

VJP_SUB = Exercise(
    signature="vjp_sub(g, a, b) -> (g_a, g_b)",
    nudge=(
        "How does the output move when a grows, and when b grows? Then mind broadcasting: each "
        "cotangent must come back with its own operand's shape."
    ),
    outputs=("g_a", "g_b"),
    cases=_broadcasting(),
    edges=_binary_edges(22),
    reference=vjp_reference(lambda xp, a, b: a - b, wrt=("a", "b")),
    references_text="jax.vjp and tf.GradientTape of a - b",
    invoke=BINARY,
    mistakes=(
        Mistake(
            "wrong_sign",
            "y = a - b decreases when b grows: b's cotangent is -g (summed to b's shape), not g.",
            lambda g, a, b: (_sum_to(g, a), _sum_to(g, b)),
        ),
        Mistake("not_unbroadcast", UNBROADCAST_HINT, lambda g, a, b: (g, -g)),
    ),
    hints_by_kind={
        **BINARY_HINTS,
        "value": "y = a - b: a's cotangent is g and b's is -g, each "
        "summed over the axes its operand was broadcast along.",
    },
)

VJP_MUL = Exercise(
    signature="vjp_mul(g, a, b) -> (g_a, g_b)",
    nudge=(
        "In a product, how fast does the output change with one factor, and which value sets that "
        "rate? Then mind broadcasting: each cotangent must come back with its own operand's shape."
    ),
    outputs=("g_a", "g_b"),
    cases=_broadcasting(),
    edges=_binary_edges(23),
    reference=vjp_reference(lambda xp, a, b: a * b, wrt=("a", "b")),
    references_text="jax.vjp and tf.GradientTape of a * b",
    invoke=BINARY,
    mistakes=(
        Mistake(
            "swapped_factors",
            "For y = a * b, dy/da is b: a's cotangent is g * b and b's is g * a. You multiplied "
            "each by its own operand.",
            lambda g, a, b: (_sum_to(g * a, a), _sum_to(g * b, b)),
        ),
        Mistake("not_unbroadcast", UNBROADCAST_HINT, lambda g, a, b: (g * b, g * a)),
        Mistake(
            "ignores_cotangent",
            IGNORES_G,
            lambda g, a, b: (
                _sum_to(np.broadcast_to(b, g.shape), a),
                _sum_to(np.broadcast_to(a, g.shape), b),
            ),
        ),
    ),
    hints_by_kind={
        **BINARY_HINTS,
        "value": "y = a * b: g_a = g * b and g_b = g * a, each "
        "summed over the axes its operand was broadcast along.",
    },
)

VJP_DIV = Exercise(
    signature="vjp_div(g, a, b) -> (g_a, g_b)",
    nudge=(
        "Differentiate the quotient with respect to each operand while holding the other fixed, and"
        " mind the sign for the denominator. Then mind broadcasting: each cotangent must come back "
        "with its own operand's shape."
    ),
    outputs=("g_a", "g_b"),
    cases=_broadcasting(away=0.5),
    edges=_binary_edges(24, b_shift=0.5),
    reference=vjp_reference(lambda xp, a, b: a / b, wrt=("a", "b")),
    references_text="jax.vjp and tf.GradientTape of a / b",
    invoke=BINARY,
    mistakes=(
        Mistake(
            "wrong_sign",
            "d(a/b)/db = -a / b**2: b's cotangent is -g * a / b**2. Yours has the opposite sign.",
            lambda g, a, b: (_sum_to(g / b, a), _sum_to(g * a / b**2, b)),
        ),
        Mistake(
            "b_not_squared",
            "d(a/b)/db = -a / b**2 (the derivative of 1/b is -1/b**2): you divided by b once.",
            lambda g, a, b: (_sum_to(g / b, a), _sum_to(-g * a / b, b)),
        ),
        Mistake("not_unbroadcast", UNBROADCAST_HINT, lambda g, a, b: (g / b, -g * a / b**2)),
    ),
    hints_by_kind={
        **BINARY_HINTS,
        "value": "y = a / b: g_a = g / b and g_b = -g * a / "
        "b**2, each summed over the axes its operand was broadcast along.",
    },
)


# ---------------------------------------------------------------- neg, power, exp, log, tanh, relu

VJP_NEG = Exercise(
    signature="vjp_neg(g, x) -> (g_x,)",
    nudge=(
        "Negation flips the direction of every change: what does that do to the cotangent on its "
        "way back?"
    ),
    outputs=("g_x",),
    cases=_elementwise(-10.0, 10.0),
    edges=_elementwise_edges(31, -3.0, 3.0),
    reference=vjp_reference(lambda xp, x: -x, wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of -x",
    invoke=UNARY,
    mistakes=(
        Mistake("wrong_sign", "y = -x: its cotangent is -g, not g.", lambda g, x: (g,)),
        Mistake("ignores_cotangent", IGNORES_G, lambda g, x: (-np.ones_like(x),)),
    ),
    hints_by_kind={**UNARY_HINTS, "value": "y = -x: g_x = -g."},
)

EXPONENTS = (2.0, 3.0, 0.5, -1.0, 1.5, -0.5)

VJP_POWER = Exercise(
    signature="vjp_power(g, x, exponent) -> (g_x,)",
    nudge=(
        "Recall the power rule for a fixed exponent; a VJP then scales that local derivative by the"
        " incoming cotangent, entry by entry."
    ),
    outputs=("g_x",),
    cases=_elementwise(0.5, 3.0, exponent=st.sampled_from(EXPONENTS)),
    edges=_elementwise_edges(32, 0.5, 3.0, (("exponent", 3.0),), (("exponent", -0.5),)),
    reference=vjp_reference(lambda xp, x, exponent: x**exponent, wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of x ** exponent",
    invoke=UNARY,
    mistakes=(
        Mistake(
            "exponent_not_lowered",
            "d(x**c)/dx = c * x**(c - 1): the power drops by one. You kept x**c.",
            lambda g, x, exponent: (g * exponent * x**exponent,),
        ),
        Mistake(
            "no_factor",
            "d(x**c)/dx = c * x**(c - 1): you left out the factor c.",
            lambda g, x, exponent: (g * x ** (exponent - 1),),
        ),
        Mistake(
            "ignores_cotangent",
            IGNORES_G,
            lambda g, x, exponent: (exponent * x ** (exponent - 1),),
        ),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "y = x ** c: g_x = g * c * x ** (c - 1), with c the exponent given.",
        "dtype": "exponent is a Python float: x ** exponent keeps x's dtype, and so does "
        "multiplying by it; an np.float64(exponent) would not.",
    },
)

VJP_EXP = Exercise(
    signature="vjp_exp(g, x) -> (g_x,)",
    nudge=(
        "The exponential is its own derivative, but the rule receives the input x, not the output: "
        "what must it compute from x?"
    ),
    outputs=("g_x",),
    cases=_elementwise(-5.0, 5.0),
    edges=_elementwise_edges(33, -3.0, 3.0),
    reference=vjp_reference(lambda xp, x: xp.exp(x), wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of exp(x)",
    invoke=UNARY,
    mistakes=(
        Mistake(
            "output_for_input",
            "exp's derivative is exp(x), the output y. But the rule receives the input x, not "
            "y: compute np.exp(x) (or keep y from the forward pass).",
            lambda g, x: (g * x,),
        ),
        Mistake("ignores_cotangent", IGNORES_G, lambda g, x: (np.exp(x),)),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "y = exp(x): g_x = g * np.exp(x), with x the input the rule receives.",
    },
)

VJP_LOG = Exercise(
    signature="vjp_log(g, x) -> (g_x,)",
    nudge=(
        "What is the slope of the natural logarithm at a positive point? A VJP scales that slope by"
        " the incoming cotangent."
    ),
    outputs=("g_x",),
    cases=_elementwise(0.125, 10.0),
    edges=_elementwise_edges(34, 0.1, 4.0),
    reference=vjp_reference(lambda xp, x: xp.log(x), wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of log(x)",
    invoke=UNARY,
    mistakes=(
        Mistake("times_x", "d(log x)/dx = 1 / x: divide g by x.", lambda g, x: (g * x,)),
        Mistake("ignores_cotangent", IGNORES_G, lambda g, x: (1 / x,)),
    ),
    hints_by_kind={**UNARY_HINTS, "value": "y = log(x): g_x = g / x."},
)

VJP_TANH = Exercise(
    signature="vjp_tanh(g, x) -> (g_x,)",
    nudge=(
        "The derivative of tanh is easiest to write through tanh itself, and the rule receives the "
        "input x: compute what you need from it first."
    ),
    outputs=("g_x",),
    cases=_elementwise(-4.0, 4.0),
    edges=_elementwise_edges(35, -3.0, 3.0),
    reference=vjp_reference(lambda xp, x: xp.tanh(x), wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of tanh(x)",
    invoke=UNARY,
    mistakes=(
        Mistake(
            "output_for_input",
            "1 - y**2 is tanh's derivative in terms of its output y = tanh(x). The rule "
            "receives the input x: use 1 - np.tanh(x)**2.",
            lambda g, x: (g * (1 - x**2),),
        ),
        Mistake(
            "not_squared",
            "tanh's derivative is 1 - tanh(x)**2: you left out the square.",
            lambda g, x: (g * (1 - np.tanh(x)),),
        ),
        Mistake("ignores_cotangent", IGNORES_G, lambda g, x: (1 - np.tanh(x) ** 2,)),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "y = tanh(x): g_x = g * (1 - np.tanh(x)**2), with x the input the rule receives.",
    },
)


def _relu_edges() -> list[Case]:
    rng = np.random.default_rng(36)
    x = np.array([[-1.5, 0.0, 2.0], [0.0, 0.5, -0.25]], F32)
    cases = [Case((("g", rng_array(rng, (2, 3), F32)), ("x", x)), label="x = 0 at two places")]
    return cases + _elementwise_edges(36, -3.0, 3.0)()


VJP_RELU = Exercise(
    signature="vjp_relu(g, x) -> (g_x,)",
    nudge=(
        "Where does relu let a change through, where does it block it, and what do both frameworks "
        "decide exactly at zero?"
    ),
    outputs=("g_x",),
    cases=_elementwise(-3.0, 3.0),
    edges=_relu_edges,
    reference=vjp_reference(lambda xp, x: xp.where(x > 0, x, xp.zeros_like(x)), wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of relu(x) (0 at x = 0, as tf.nn.relu and "
    "jax.nn.relu give)",
    invoke=UNARY,
    mistakes=(
        Mistake(
            "one_at_zero",
            "At x = 0 relu has no derivative; the course follows both frameworks (tf.nn.relu, "
            "jax.nn.relu), whose gradient there is 0: pass g where x > 0, strictly.",
            lambda g, x: (g * (x >= 0),),
        ),
        Mistake(
            "relu_of_cotangent",
            "You applied relu to g. What decides where g passes is the input: g where x > 0, "
            "0 elsewhere.",
            lambda g, x: (np.maximum(g, 0),),
        ),
        Mistake("ignores_cotangent", IGNORES_G, lambda g, x: ((x > 0).astype(x.dtype),)),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "g passes where x > 0 and is 0 elsewhere, at x = 0 too (as in tf.nn.relu and "
        "jax.nn.relu).",
    },
)


# ---------------------------------------------------------------- maximum


def _maximum_edges() -> list[Case]:
    rng = np.random.default_rng(41)
    a = np.array([[1.0, 2.0, -1.0], [0.5, 0.5, 3.0]], F64)
    b = np.array([1.0, 0.5, -1.0], F64)
    ties = [
        Case((("g", rng_array(rng, (2, 3), F64)), ("a", a), ("b", b)), label="ties, b broadcast"),
        Case(
            (("g", rng_array(rng, (3,), F32)), ("a", np.zeros(3, F32)), ("b", np.zeros(3, F32))),
            label="a tie everywhere",
        ),
    ]
    return ties + _binary_edges(42)()


# At a tie jnp.maximum gives each operand half the cotangent and tf.maximum all of it to the
# first (x >= y): measured with TF 2.21 and JAX 0.10 (tests/exercises/test_check_ch02_rules.py).
VJP_MAXIMUM = Exercise(
    signature="vjp_maximum(g, a, b) -> (g_a, g_b)",
    nudge=(
        "Only the operand that wins decides the output, and at a tie the course follows JAX's "
        "convention, stated above. Then mind broadcasting: each cotangent must come back with its "
        "own operand's shape."
    ),
    outputs=("g_a", "g_b"),
    cases=_broadcasting(),
    edges=_maximum_edges,
    reference=two_references(
        jax=vjp_reference(lambda xp, a, b: xp.maximum(a, b), wrt=("a", "b")).jax,
        tf=vjp_reference(lambda xp, a, b: (a + b + xp.abs(a - b)) / 2, wrt=("a", "b")).tf,
        why="At a tie tf.maximum's gradient goes all to a, jnp.maximum's half to each. The "
        "exercise states JAX's split, so TensorFlow's reference is the tape of (a + b + "
        "|a - b|) / 2, the same function, whose gradient splits a tie (TF's d|t|/dt is 0 at 0).",
    ),
    references_text="jax.vjp(jnp.maximum), and tf.GradientTape of the same maximum written "
    "(a + b + |a - b|) / 2, which splits a tie as JAX does",
    invoke=BINARY,
    mistakes=(
        Mistake(
            "tie_to_a",
            "Where a == b you gave all of g to a: that is TensorFlow's convention "
            "(tf.maximum). The course states JAX's: at a tie each operand gets g / 2.",
            lambda g, a, b: (_sum_to(g * (a >= b), a), _sum_to(g * (a < b), b)),
        ),
        Mistake(
            "tie_to_nobody",
            "Where a == b neither operand got any of g. The course states JAX's convention: at "
            "a tie each operand gets g / 2.",
            lambda g, a, b: (_sum_to(g * (a > b), a), _sum_to(g * (b > a), b)),
        ),
        Mistake(
            "not_unbroadcast",
            UNBROADCAST_HINT,
            lambda g, a, b: (
                np.where(a > b, g, np.where(a == b, g / 2, 0)),
                np.where(b > a, g, np.where(a == b, g / 2, 0)),
            ),
        ),
    ),
    hints_by_kind={
        **BINARY_HINTS,
        "value": "g goes to the larger operand (g where a > b, else 0, and the other way round "
        "for b); where a == b, the course follows JAX: each gets g / 2 (TensorFlow gives all to "
        "a). Then sum each to its operand's shape.",
    },
)


# ---------------------------------------------------------------- sum, mean


@st.composite
def _reduction(draw: st.DrawFn, profile: Profile) -> Case:
    """Cases (g, x, axis, keepdims): axis None, an int (negative too) or a tuple of axes."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=profile.max_dims, max_side=profile.max_side))
    ndim = len(shape)
    axes = st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)
    axis = draw(st.none() | st.integers(-ndim, ndim - 1) | axes.map(tuple))
    keepdims, dtype = draw(st.booleans()), draw(dtypes())
    g_shape = np.zeros(shape).sum(axis=axis, keepdims=keepdims).shape
    x, g = draw(float_arrays(dtype, shape)), draw(float_arrays(dtype, g_shape))
    return Case((("g", g), ("x", x), ("axis", axis), ("keepdims", keepdims)))


def _reduction_edges() -> list[Case]:
    rng = np.random.default_rng(51)
    picks = [(1, False, F32), (-1, True, F64), ((0, 2), False, F32), (None, False, F64)]
    picks += [(None, True, F32)]
    cases = []
    for axis, keepdims, dtype in picks:
        x = rng_array(rng, (2, 3, 4), dtype)
        g = rng_array(rng, x.sum(axis=axis, keepdims=keepdims).shape, dtype)
        cases.append(Case((("g", g), ("x", x), ("axis", axis), ("keepdims", keepdims))))
    return cases


def _spread(g: np.ndarray, x: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
    """g with the reduced axes put back (size 1), broadcast to x's shape."""
    if not keepdims:
        g = np.expand_dims(g, tuple(range(x.ndim)) if axis is None else axis)
    return np.broadcast_to(g, x.shape)


NOT_EXPANDED = (
    "Without keepdims the summed axes are gone from g, and numpy lines g's axes up with x's "
    "from the right, against the wrong axes. Put them back with size 1 first "
    "(np.expand_dims(g, axis)), then broadcast g to x's shape."
)

VJP_SUM = Exercise(
    signature="vjp_sum(g, x, axis=None, keepdims=False) -> (g_x,)",
    nudge=(
        "A sum gives every entry it added the whole of the incoming cotangent. Which axes did the "
        "forward pass remove from g, and how do you line g up with x again before spreading it?"
    ),
    outputs=("g_x",),
    cases=_reduction,
    edges=_reduction_edges,
    reference=vjp_reference(
        lambda xp, x, axis, keepdims: xp.sum(x, axis=axis, keepdims=keepdims), wrt=("x",)
    ),
    references_text="jax.vjp and tf.GradientTape of sum(x, axis, keepdims)",
    invoke=UNARY,
    mistakes=(
        Mistake(
            "not_expanded",
            NOT_EXPANDED,
            lambda g, x, axis, keepdims: (np.broadcast_to(g, x.shape),),
        ),
        Mistake(
            "divides",
            "That is mean's rule: a sum gives each summed entry all of g, not a share of it.",
            lambda g, x, axis, keepdims: (_spread(g, x, axis, keepdims) / (x.size // g.size),),
        ),
        Mistake("ignores_cotangent", IGNORES_G, lambda g, x, axis, keepdims: (np.ones_like(x),)),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "Each entry of x a sum added up gets that sum's cotangent: put the reduced axes "
        "back into g (size 1) and broadcast g to x's shape.",
        "exception": NOT_EXPANDED,
    },
)

VJP_MEAN = Exercise(
    signature="vjp_mean(g, x, axis=None, keepdims=False) -> (g_x,)",
    nudge=(
        "A mean is a sum that shares its cotangent among the entries it averaged: how many entries "
        "does each mean average, given the axes it reduced?"
    ),
    outputs=("g_x",),
    cases=_reduction,
    edges=_reduction_edges,
    reference=vjp_reference(
        lambda xp, x, axis, keepdims: xp.mean(x, axis=axis, keepdims=keepdims), wrt=("x",)
    ),
    references_text="jax.vjp and tf.GradientTape of mean(x, axis, keepdims)",
    invoke=UNARY,
    mistakes=(
        Mistake(
            "not_divided",
            "That is sum's rule: a mean divides by the number of entries "
            "it averages, so does its VJP.",
            lambda g, x, axis, keepdims: (_spread(g, x, axis, keepdims),),
        ),
        Mistake(
            "divided_by_size",
            "You divided by x.size, every entry of x; divide by the "
            "number of entries each mean averages (the product of the reduced axes' sizes).",
            lambda g, x, axis, keepdims: (_spread(g, x, axis, keepdims) / x.size,),
        ),
        Mistake(
            "ignores_cotangent",
            IGNORES_G,
            lambda g, x, axis, keepdims: (np.ones_like(x) / (x.size // g.size),),
        ),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "sum's rule, divided by the number of entries each mean averages (the product of "
        "the reduced axes' sizes).",
        "exception": NOT_EXPANDED,
    },
)


# ---------------------------------------------------------------- reshape, transpose, broadcast_to


@st.composite
def _reshape_case(draw: st.DrawFn, profile: Profile) -> Case:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=profile.max_dims, max_side=profile.max_side))
    size = int(np.prod(shape))
    split = draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
    target = draw(st.sampled_from([(size,), shape[::-1], (1, *shape), (split, -1)]))
    dtype = draw(dtypes())
    g = draw(float_arrays(dtype, np.zeros(shape).reshape(target).shape))
    return Case((("g", g), ("x", draw(float_arrays(dtype, shape))), ("shape", target)))


VJP_RESHAPE = Exercise(
    signature="vjp_reshape(g, x, shape) -> (g_x,)",
    nudge=(
        "A reshape moves no values, it only relabels them: which shape must the cotangent of x "
        "have?"
    ),
    outputs=("g_x",),
    cases=_reshape_case,
    edges=_picked(
        61,
        "shape",
        np.reshape,
        [((2, 3), (6,), F32), ((2, 3, 4), (4, -1), F64), ((6,), (3, 1, 2), F32)],
    ),
    reference=vjp_reference(lambda xp, x, shape: xp.reshape(x, shape), wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of reshape(x, shape)",
    invoke=UNARY,
    mistakes=(
        Mistake(
            "returns_g",
            "g has the output's shape, `shape`; x's cotangent has x's shape. "
            "Reshape g back to x.shape.",
            lambda g, x, shape: (g,),
        ),
        Mistake("ignores_cotangent", IGNORES_G, lambda g, x, shape: (np.ones_like(x),)),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "A reshape only moves entries: g_x is g reshaped to x's shape.",
    },
)


@st.composite
def _transpose_case(draw: st.DrawFn, profile: Profile) -> Case:
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=profile.max_dims, max_side=profile.max_side))
    axes = tuple(draw(st.permutations(range(len(shape)))))
    dtype = draw(dtypes())
    g = draw(float_arrays(dtype, tuple(shape[i] for i in axes)))
    return Case((("g", g), ("x", draw(float_arrays(dtype, shape))), ("axes", axes)))


VJP_TRANSPOSE = Exercise(
    signature="vjp_transpose(g, x, axes) -> (g_x,)",
    nudge=(
        "A transpose moves axes around, and the cotangent must travel back: which permutation "
        "undoes the one given? With three or more axes it is not always the same permutation."
    ),
    outputs=("g_x",),
    cases=_transpose_case,
    edges=_picked(
        62,
        "axes",
        np.transpose,
        [
            ((2, 3, 4), (1, 2, 0), F32),
            ((2, 3, 4), (2, 0, 1), F64),
            ((2, 3), (1, 0), F32),
            ((2, 1, 3, 4), (0, 3, 1, 2), F64),
        ],
    ),
    reference=vjp_reference(lambda xp, x, axes: xp.transpose(x, axes), wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of transpose(x, axes)",
    invoke=UNARY,
    mistakes=(
        Mistake(
            "same_permutation",
            "You permuted g by `axes` again. That undoes the transpose "
            "only when the permutation is its own inverse (a swap); in general use the "
            "inverse permutation, np.argsort(axes).",
            lambda g, x, axes: (np.transpose(g, axes),),
        ),
        Mistake(
            "all_axes_reversed",
            "np.transpose(g) and g.T reverse all the axes, whatever "
            "`axes` was: undo the permutation given, with np.transpose(g, np.argsort(axes)).",
            lambda g, x, axes: (np.transpose(g),),
        ),
        Mistake(
            "reversed_permutation",
            "Reversing `axes` does not invert it. The inverse "
            "permutation sends each axis back where it came from: np.argsort(axes).",
            lambda g, x, axes: (np.transpose(g, axes[::-1]),),
        ),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "Undo the permutation: g_x = np.transpose(g, np.argsort(axes)).",
    },
)


@st.composite
def _broadcast_to_case(draw: st.DrawFn, profile: Profile) -> Case:
    shapes = draw(
        hnp.mutually_broadcastable_shapes(
            num_shapes=2, min_dims=0, max_dims=profile.max_dims, max_side=profile.max_side
        )
    )
    dtype = draw(dtypes())
    x = draw(float_arrays(dtype, shapes.input_shapes[0]))
    g = draw(float_arrays(dtype, shapes.result_shape))
    return Case((("g", g), ("x", x), ("shape", shapes.result_shape)))


VJP_BROADCAST_TO = Exercise(
    signature="vjp_broadcast_to(g, x, shape) -> (g_x,)",
    nudge=(
        "Broadcasting copies x along new leading axes and along its size-1 axes. Every copy sends "
        "back its own cotangent: how do those contributions combine into one of x's shape?"
    ),
    outputs=("g_x",),
    cases=_broadcast_to_case,
    edges=_picked(
        63,
        "shape",
        np.broadcast_to,
        [((8,), (4, 8), F32), ((4, 1, 2), (5, 4, 3, 2), F32), ((), (2, 3), F64), ((3,), (3,), F64)],
    ),
    reference=vjp_reference(lambda xp, x, shape: xp.broadcast_to(x, shape), wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of broadcast_to(x, shape)",
    invoke=UNARY,
    mistakes=(
        Mistake(
            "leading_only",
            "You summed away the leading axes x lacks but not the size-1 "
            "axes: where x has 1 and `shape` has n > 1, x was copied too. Sum over that axis "
            "with keepdims=True.",
            lambda g, x, shape: (g.sum(axis=tuple(range(g.ndim - x.ndim))),),
        ),
        Mistake(
            "mean",
            "You averaged instead of summing: each copy broadcasting made "
            "contributes its own cotangent, and the VJP adds them up.",
            lambda g, x, shape: (_mean_to(g, x.shape),),
        ),
        Mistake("returns_g", UNBROADCAST_HINT, lambda g, x, shape: (g,)),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "Sum g over the axes broadcasting added or stretched: the leading ones x lacks, "
        "then with keepdims=True those where x has 1 and `shape` does not.",
    },
)


# ---------------------------------------------------------------- index


def _index(xp: Any, x: Any, key: Any) -> Any:
    """x[key]: key (start, stop, step) triples (slices), or an integer array (a gather)."""
    if isinstance(key, tuple):
        return x[tuple(slice(*triple) for triple in key)]
    return xp.take(x, key, axis=0)


@st.composite
def _slices(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple:
    """(start, stop, step) for the first few axes, none of them empty."""
    key = []
    for n in shape[: draw(st.integers(1, len(shape)))]:
        start = draw(st.integers(0, n - 1))
        stop, step = draw(st.integers(start + 1, n)), draw(st.sampled_from([None, 1, 2]))
        key.append(draw(st.sampled_from([(start, stop, step), (None, None, -1)])))
    return tuple(key)


@st.composite
def _index_case(draw: st.DrawFn, profile: Profile) -> Case:
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=profile.max_side))
    rows = hnp.arrays(np.int64, st.integers(1, 6), elements=st.integers(0, shape[0] - 1))
    key = draw(_slices(shape) | rows)
    dtype = draw(dtypes())
    g = draw(float_arrays(dtype, _index(np, np.zeros(shape), key).shape))
    return Case((("g", g), ("x", draw(float_arrays(dtype, shape))), ("key", key)))


def _assigns(g: np.ndarray, x: np.ndarray, key: Any) -> tuple[np.ndarray]:
    grad = np.zeros_like(x)
    grad[key] = g
    return (grad,)


VJP_INDEX = Exercise(
    signature="vjp_index(g, x, key) -> (g_x,)",
    nudge=(
        "Indexing reads some entries of x, perhaps the same one more than once. The cotangent of x "
        "has x's shape: where does each read send its part of g, and what happens to an entry read "
        "twice?"
    ),
    outputs=("g_x",),
    cases=_index_case,
    edges=_picked(
        71,
        "key",
        lambda x, key: _index(np, x, key),
        [
            ((4, 3), ((1, 3, None),), F32, "rows 1 and 2"),
            ((4, 5), ((None, None, 2), (None, None, -1)), F64, "every other row, columns reversed"),
            ((5, 3), np.array([0, 2, 2, 4, 0, 2]), F32, "repeated rows (an embedding lookup)"),
            ((6,), np.array([5, 1, 3]), F64, "distinct indices"),
        ],
    ),
    reference=vjp_reference(_index, wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of x[key]",
    invoke="ch02_rules:invoke_index_rule",
    mistakes=(
        Mistake(
            "assigns",
            "An index that repeats reads the same entry twice, and each read "
            "sends back its own cotangent: grad[key] = g keeps only the last one. Add them "
            "up: np.add.at(grad, key, g) (a scatter-add).",
            _assigns,
        ),
        Mistake(
            "returns_g",
            "g has the shape of x[key], not of x: the cotangent of x is zeros "
            "of x's shape with g added at the entries key picked.",
            lambda g, x, key: (g,),
        ),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "Start from zeros of x's shape and add g at the entries key picked, with "
        "np.add.at(grad, key, g): an index that repeats must add up every cotangent it gets. "
        "(A key of slices is shown as (start, stop, step) triples; your rule gets the slices.)",
    },
)


# ---------------------------------------------------------------- matmul


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


MATRICES = (
    ((2, 2, 2), (2, 2), F32, "a batch times a shared matrix"),
    ((2, 3), (3, 4), F64, "plain 2-D"),
    ((3, 1, 2, 4), (5, 4, 2), F32, "batch axes broadcast on both sides"),
)

VJP_MATMUL = Exercise(
    signature="vjp_matmul(g, a, b) -> (g_a, g_b)",
    nudge=(
        "Let the shapes guide you: for each operand, which product of g with the other operand has "
        "exactly that operand's shape? In a batch only the last two axes form the matrices, and "
        "batch axes may have been broadcast."
    ),
    outputs=("g_a", "g_b"),
    cases=_broadcasting(signature="(m,n),(n,p)->(m,p)"),
    edges=_binary_edges(81, pairs=MATRICES, op=np.matmul),
    reference=vjp_reference(lambda xp, a, b: xp.matmul(a, b), wrt=("a", "b")),
    references_text="jax.vjp and tf.GradientTape of a @ b",
    invoke=BINARY,
    mistakes=(
        Mistake(
            "batch_not_summed",
            "An operand whose batch axes were broadcast was used by "
            "every matrix of the batch: sum its cotangent back to its shape (chapter 03's "
            "unbroadcast).",
            lambda g, a, b: (g @ _swap(b), _swap(a) @ g),
        ),
        Mistake(
            "all_axes_transposed",
            "np.transpose(x) and x.T reverse ALL axes; a batch of "
            "matrices must transpose only the last two: np.swapaxes(x, -1, -2).",
            lambda g, a, b: (
                _sum_to(g @ np.transpose(b), a),
                _sum_to(np.transpose(a) @ g, b),
            ),
        ),
        Mistake(
            "ignores_cotangent",
            IGNORES_G,
            lambda g, a, b: (
                _sum_to(np.ones_like(g) @ _swap(b), a),
                _sum_to(_swap(a) @ np.ones_like(g), b),
            ),
        ),
    ),
    hints_by_kind={
        **BINARY_HINTS,
        "value": "Right shapes, wrong values: check the order of each product (g @ b^T, a^T @ g) "
        "and that ^T swaps only the last two axes.",
        "exception": "g_a = g @ b^T and g_b = a^T @ g, with ^T swapping the last two "
        "axes only (np.swapaxes(x, -1, -2)); then sum each to its operand's shape.",
    },
)


# ---------------------------------------------------------------- log_softmax


@st.composite
def _log_softmax_case(draw: st.DrawFn, profile: Profile) -> Case:
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=profile.max_side))
    axis, dtype = draw(st.integers(-len(shape), len(shape) - 1)), draw(dtypes())
    x = draw(float_arrays(dtype, shape, bound=draw(st.sampled_from([10.0, 1000.0]))))
    return Case((("g", draw(float_arrays(dtype, shape))), ("x", x), ("axis", axis)))


def _log_softmax_edges() -> list[Case]:
    rng = np.random.default_rng(91)
    large = np.array([[1000.0, 999.0, -1000.0], [-1000.0, -999.5, -1000.0]], F32)
    picks = [(large, -1, "magnitudes of 1000"), (large, 0, "magnitudes of 1000, axis 0")]
    picks += [(rng_array(rng, (2, 3, 4), F64), 1, "axis 1 of three")]
    return [
        Case((("g", rng_array(rng, x.shape, x.dtype)), ("x", x), ("axis", axis)), label=label)
        for x, axis, label in picks
    ]


def _log_softmax(xp: Any, x: Any, axis: int) -> Any:
    shifted = x - xp.stop_gradient(xp.max(x, axis=axis, keepdims=True))
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def _unstable(g: np.ndarray, x: np.ndarray, axis: int = -1) -> tuple[np.ndarray]:
    with np.errstate(over="ignore", invalid="ignore"):  # NaN, as a notebook shows it
        e = np.exp(x)
        return (g - e / e.sum(axis=axis, keepdims=True) * g.sum(axis=axis, keepdims=True),)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


VJP_LOG_SOFTMAX = Exercise(
    signature="vjp_log_softmax(g, x, axis=-1) -> (g_x,)",
    nudge=(
        "Through the normalisation every output along the axis depends on every input along it. How"
        " is the softmax related to this function, and how do you keep it finite for inputs near "
        "1000?"
    ),
    outputs=("g_x",),
    cases=_log_softmax_case,
    edges=_log_softmax_edges,
    reference=vjp_reference(_log_softmax, wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of log_softmax(x, axis)",
    invoke=UNARY,
    mistakes=(
        Mistake(
            "unstable",
            "np.exp(x) overflows for x near 1000 (inf / inf is NaN). Subtract "
            "x.max(axis, keepdims=True) before exponentiating: softmax does not change.",
            _unstable,
        ),
        Mistake(
            "diagonal_only",
            "Each output of log_softmax depends on every entry along the "
            "axis: g_x = g - softmax(x) * g.sum(axis, keepdims=True). You kept only "
            "the diagonal, g * (1 - softmax(x)).",
            lambda g, x, axis=-1: (g - _softmax(x, axis) * g,),
        ),
        Mistake(
            "last_axis_always",
            "Use the axis given: your rule works along the last axis whatever `axis` is.",
            lambda g, x, axis=-1: (g - _softmax(x, -1) * g.sum(axis=-1, keepdims=True),),
        ),
    ),
    hints_by_kind={
        **UNARY_HINTS,
        "value": "g_x = g - softmax(x) * g.sum(axis, keepdims=True), along the axis given, "
        "with softmax computed stably (x minus its maximum along the axis).",
        "nonfinite": "np.exp overflows for large x: subtract the "
        "maximum along the axis before exponentiating.",
    },
)

EXERCISES = (
    VJP_ADD,
    VJP_SUB,
    VJP_MUL,
    VJP_DIV,
    VJP_NEG,
    VJP_POWER,
    VJP_EXP,
    VJP_LOG,
    VJP_TANH,
    VJP_RELU,
    VJP_MAXIMUM,
    VJP_SUM,
    VJP_MEAN,
    VJP_RESHAPE,
    VJP_TRANSPOSE,
    VJP_BROADCAST_TO,
    VJP_INDEX,
    VJP_MATMUL,
    VJP_LOG_SOFTMAX,
)

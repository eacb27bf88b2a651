"""Chapter 05 exercises: custom derivatives in JAX.

* `log1pexp(x)`: a stable softplus with a `jax.custom_jvp` rule (checked to second order);
* `clip_gradient(lo, hi, x)`: the identity going forward, a clipped cotangent going backward
  (`jax.custom_vjp`, or `jax.custom_gradient`);
* `argmax_ste(logits)`: a straight-through one-hot, written with `jax.lax.stop_gradient`: the
  one-hot of each row's argmax going forward; going backward, a VJP given as a formula (g minus
  its row mean), whose surrogate the learner derives (chapter 04's STE is for `round` with
  `tf.stop_gradient`; the notebook's demo is for `floor` with the identity as surrogate).

The case builders, learner-function builders, hints and elementwise references are shared with
chapter 06 (autograder/exercises/common.py).

Each exercise's invoke (autograder/harness/ch05_custom_derivatives_jax.py) runs the learner's
function under `jax.jit`, `jax.jvp`/`jax.vjp`, `jax.vmap` and `jax.grad` (twice for the custom_jvp
ones) and returns numpy arrays. When JAX refuses a transformation, the invoke raises a ValueError
naming the transformation and the likely mistake (a rule not linear in the tangent, residuals
closing over tracers, a bwd returning the wrong structure, ...). The references are JAX's own
derivatives of a stable formula and a TensorFlow twin of the same function; the known wrong answers
below are small JAX programs a learner would write, run through the same invoke.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.exercises.common import (
    FWD_PRIMAL_HINT,
    built_learner,
    custom_jvp_learner,
    edges_at,
    elementwise_cases,
    elementwise_references,
    jax_hints,
    lazy_jax,
    menu_cases,
    primal_hints,
    rng_array,
)
from autograder.judging.cases import Case, Shape
from autograder.judging.derived import two_references
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction

FRAMEWORKS = ("jax",)
Fn = Callable[..., Any]


# ---------------------------------------------------------------- log1pexp (custom_jvp)


def _naive(jax: Any, x: Any) -> Any:  # log(1 + exp(x)) as on paper: exp(x) overflows
    return jax.numpy.log(1 + jax.numpy.exp(x))


def _stable(jax: Any, x: Any) -> Any:
    return jax.numpy.logaddexp(x, 0.0)


def _naive_slope(jax: Any, x: Any, t: Any) -> Any:
    return jax.numpy.exp(x) / (1 + jax.numpy.exp(x)) * t


def _sigmoid_slope(jax: Any, x: Any, t: Any) -> Any:
    return jax.nn.sigmoid(x) * t


def _log1pexp(tangent: Fn, value: Fn = _stable, rule_primal: Fn | None = None) -> Fn:
    """A learner's log1pexp: `value` going forward, `tangent(jax, x, t)` in its JVP rule."""
    return custom_jvp_learner(
        "log1pexp", value, lambda jax, f, x, t: tangent(jax, x, t), rule_primal
    )


RULE_PRIMAL_HINT = (
    "The primal output of your JVP rule (the first value it returns) is not log1pexp(x): "
    "jax.jvp, jax.vjp and jax.grad take the primal from the rule, not from the function, "
    "so a rule that returns log(1 + exp(x)) overflows to inf for large x even when "
    "log1pexp itself is stable. Return log1pexp(x) from the rule."
)
NAN_AT_EDGES_HINT = (
    "NaN or Inf at the edges: exp(x) overflows for large x (float32 above ~88), so "
    "log(1 + exp(x)) is inf and exp(x) / (1 + exp(x)) is inf / inf = NaN. Rewrite the value "
    "and the derivative so that exp only ever sees a number <= 0 (split off max(x, 0), or "
    "divide above and below by exp(x) where x > 0), and check each at x = +-1000, its own "
    "derivative too. If you chose a stable branch with jnp.where, JAX still differentiates "
    "the other branch, and 0 * NaN is NaN: every branch must stay finite."
)
LOG1PEXP_OUTPUTS = ("value", "jvp_primal", "jvp", "vjp_primal", "vjp", "grad", "second_derivative")
LARGE = [-1000.0, -100.0, -0.5, 0.0, 100.0, 1000.0]
LOG1PEXP_EDGES = [  # x, its dtype, the label; t and g drawn
    (LARGE, np.float32, "x = +-100, +-1000, float32"),
    (LARGE, np.float64, "x = +-100, +-1000, float64"),
    ([-88.0, -30.0, -1.0, 1.0, 30.0, 89.0], np.float32, "around float32's exp overflow"),
]

LOG1PEXP = Exercise(
    signature="log1pexp(x) -> y, a jax.custom_jvp function with its JVP rule",
    nudge=(
        "For large x the naive formula overflows: rewrite both the value and its derivative so that"
        " exp only sees numbers that are not large and positive. The JVP rule's first output is the"
        " primal, and it must be stable too."
    ),
    outputs=LOG1PEXP_OUTPUTS,
    cases=elementwise_cases(x=40.0, t=10.0, g=10.0),
    edges=lambda: edges_at(5, "x", LOG1PEXP_EDGES, "t", "g"),
    reference=elementwise_references(
        tf=lambda tf: tf.math.softplus,
        jax=lambda jax: lambda v: jax.numpy.logaddexp(v, jax.numpy.zeros_like(v)),
        outputs=LOG1PEXP_OUTPUTS,
        why=(
            "value, JVP, VJP, gradient and second derivative: TensorFlow's from a "
            "ForwardAccumulator and nested tapes, JAX's from jax.jvp, jax.vjp and two jax.grad"
        ),
    ),
    references_text=(
        "JAX's derivatives of its own stable softplus and TensorFlow's of tf.math.softplus "
        "(value, JVP, VJP, vmap of grad, second derivative)"
    ),
    invoke="ch05_custom_derivatives_jax:invoke_log1pexp",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("naive_value", NAN_AT_EDGES_HINT, _log1pexp(_sigmoid_slope, _naive)),
        Mistake("naive_both", NAN_AT_EDGES_HINT, _log1pexp(_naive_slope, _naive)),
        Mistake("naive_tangent", NAN_AT_EDGES_HINT, _log1pexp(_naive_slope)),
        Mistake(
            "naive_rule_primal", RULE_PRIMAL_HINT, _log1pexp(_sigmoid_slope, rule_primal=_naive)
        ),
        Mistake(
            "ignores_tangent",
            "The tangent output must be the derivative TIMES the input "
            "tangent t, not the derivative alone.",
            _log1pexp(lambda jax, x, t: jax.nn.sigmoid(x) + 0 * t),
        ),
        Mistake(
            "affine_tangent",
            "Your JVP rule is not linear in the tangent (it adds a constant): a JVP maps a tangent "
            "t to (derivative) * t, so t = 0 must give 0. Reverse mode silently drops the "
            "constant, forward mode does not, so the two disagree.",
            _log1pexp(lambda jax, x, t: jax.nn.sigmoid(x) * t + 1),
        ),
        Mistake(
            "wrong_derivative",
            "The derivative of log(1 + exp(x)) is exp(x) / (1 + exp(x)) = "
            "sigmoid(x), not sigmoid(-x).",
            _log1pexp(lambda jax, x, t: jax.nn.sigmoid(-x) * t),
        ),
    ),
    hints_by_kind=jax_hints(
        primal_hints(("jvp_primal", "vjp_primal"), RULE_PRIMAL_HINT),
        value="Right shape, wrong numbers: log1pexp(x) is log(1 + exp(x)), and its JVP rule "
        "returns (log1pexp(x), the derivative exp(x) / (1 + exp(x)) times t), each "
        "written so that it never overflows.",
        nonfinite=NAN_AT_EDGES_HINT,
        dtype="Keep x's dtype: build constants with jnp.zeros_like(x) or plain Python "
        "floats (weakly typed), not float64 numpy arrays.",
    ),
)


# ---------------------------------------------------------------- clip_gradient (custom_vjp)


# x is 2-D (the check vmaps the VJP over rows), each shape in one dtype (cases.
# dtype_and_shape): one element and a non-square block in float32, one row in float64, and
# when grading, one column in float64, a taller block in float32 and a wider one in float64.
CLIP_SHAPES: tuple[Shape, ...] = ((1, 1), (1, 5), (3, 4))
CLIP_GRADING: tuple[Shape, ...] = ((4, 1), (7, 2), (2, 9))
# lo and hi are static (nondiff_argnums): each pair compiles the learner's function again, so
# they come from a short list, mostly asymmetric (a rule that clips to [-hi, hi] fails).
CLIP_BOUNDS = ((-0.1, 0.2), (-0.5, 1.5), (-1.0, 1.0), (-2.5, 0.5))


def clip_bounds(shape: Shape) -> tuple[float, float]:
    """The bounds of every case of this shape: one pair each, so a submission's
    clip_gradient is compiled once per shape (6 programs when grading), not once per
    bounds, shape and dtype (20 of a possible 48 were drawn, 27 ms each). The shapes of
    the menu take the pairs in turn, so every pair is met, each dtype with two of them."""
    shapes = (*CLIP_SHAPES, *CLIP_GRADING)
    return CLIP_BOUNDS[shapes.index(shape) % len(CLIP_BOUNDS)]


def _bounds(shape: Shape) -> tuple[tuple[str, float], ...]:
    return tuple(zip(("lo", "hi"), clip_bounds(shape), strict=True))


def _clip_edges() -> list[Case]:
    rng = np.random.default_rng(6)
    shapes = [  # in their dtype, with their bounds from the menu: they compile nothing more
        ((3, 4), np.float32, "clip to [-1, 1]"),
        ((4, 1), np.float64, "an asymmetric interval [-2.5, 0.5], float64"),
        ((1, 1), np.float32, "a single element"),
        ((1, 5), np.float64, "one row, float64"),
    ]
    return [
        Case(
            (
                *_bounds(shape),
                ("x", rng_array(rng, shape, dtype, 3.0, 2)),
                ("g", rng_array(rng, shape, dtype, 6.0, 2)),
            ),
            label=label,
        )
        for shape, dtype, label in shapes
    ]


def _clip_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    lo, hi, x_np, g_np = case.values()
    x, g = tf.constant(x_np), tf.constant(g_np)

    @tf.custom_gradient
    def clip_gradient(v: Any) -> Any:
        return tf.identity(v), lambda g: tf.clip_by_value(g, lo, hi)

    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = clip_gradient(x)
        chained = tf.reduce_sum(g * tf.sin(clip_gradient(3 * x)))
    vjp = tape.gradient(y, x, output_gradients=g)
    # Row by row, each row's VJP is that row of the whole VJP (the rule is elementwise).
    rows = tf.stack(
        [
            tape.gradient(y, x, output_gradients=g * mask)[i]
            for i, mask in enumerate(tf.eye(x.shape[0], dtype=x.dtype)[:, :, None])
        ]
    )
    return y.numpy(), y.numpy(), vjp.numpy(), rows.numpy(), tape.gradient(chained, x).numpy()


def _clip_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy
    lo, hi, x, g = params["lo"], params["hi"], arrays["x"], arrays["g"]
    y, identity_vjp = jax.vjp(lambda v: v, x)
    clipped = jnp.clip(identity_vjp(g)[0], lo, hi)
    # d/dx sum(g * sin(clip_gradient(3x))): the cotangent reaching clip_gradient is
    # g * cos(3x), from JAX's VJP of sin; it is clipped, then multiplied by 3.
    (at_clip,) = jax.vjp(jnp.sin, 3 * x)[1](g)
    (chained,) = jax.vjp(lambda v: 3 * v, x)[1](jnp.clip(at_clip, lo, hi))
    return y, y, clipped, clipped, chained


def _clip(backward: Fn) -> Fn:
    """A learner's clip_gradient: a custom_vjp (lo and hi in nondiff_argnums), the identity
    going forward, `backward(jnp, lo, hi, g)` the cotangent of x."""

    def build() -> Fn:
        jax = lazy_jax()

        @functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def clip_gradient(lo: float, hi: float, x: Any) -> Any:
            return x

        def bwd(lo: float, hi: float, residuals: Any, g: Any) -> Any:
            return (backward(jax.numpy, lo, hi, g),)

        clip_gradient.defvjp(lambda lo, hi, x: (x, None), bwd)
        return clip_gradient

    return built_learner("clip_gradient", "lo, hi, x", build)


CLIP_GRADIENT = Exercise(
    signature="clip_gradient(lo, hi, x) -> x, whose cotangent is clipped to [lo, hi]",
    nudge=(
        "Which of the two passes should change anything here, and what does the backward rule need "
        "from the forward one? Think about each element of the cotangent on its own."
    ),
    outputs=("value", "vjp_primal", "vjp", "vmap_vjp", "chained_grad"),
    cases=menu_cases(CLIP_SHAPES, CLIP_GRADING, params=_bounds, x=3.0, g=10.0),
    edges=_clip_edges,
    reference=two_references(
        tf=_clip_tf,
        jax=_clip_jax,
        why=(
            "a clipped cotangent is no forward's derivative: each framework clips its own "
            "cotangents, also chained through sin(3x)"
        ),
    ),
    references_text=(
        "jnp.clip of JAX's own cotangents, and a tf.custom_gradient twin under tf.GradientTape"
    ),
    invoke="ch05_custom_derivatives_jax:invoke_clip_gradient",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "clips_primal",
            "You clipped the VALUE x going forward. clip_gradient returns x "
            "unchanged; only the cotangent flowing backward is clipped, in bwd.",
            lambda lo, hi, x: lazy_jax().numpy.clip(x, lo, hi),
        ),
        Mistake(
            "ignores_cotangent",
            "bwd must clip the incoming cotangent g itself (jnp.clip(g, "
            "lo, hi)); your result does not depend on g.",
            _clip(lambda jnp, lo, hi, g: jnp.clip(jnp.ones_like(g), lo, hi)),
        ),
        Mistake(
            "clip_by_norm",
            "This exercise clips each element of the cotangent to [lo, hi] "
            "(jnp.clip), not its norm.",
            _clip(
                lambda jnp, lo, hi, g: (
                    g * jnp.minimum(1.0, hi / jnp.maximum(jnp.linalg.norm(g), 1e-12))
                )
            ),
        ),
        Mistake(
            "symmetric_clip",
            "Your cotangent is clipped to a symmetric range [-hi, hi]. The "
            "bounds are lo and hi as given, and lo need not be -hi: jnp.clip(g, lo, hi).",
            _clip(lambda jnp, lo, hi, g: jnp.clip(g, -hi, hi)),
        ),
    ),
    hints_by_kind=jax_hints(
        primal_hints(("vjp_primal",), FWD_PRIMAL_HINT),
        value="Going forward clip_gradient is the identity; bwd returns "
        "(jnp.clip(g, lo, hi),), the clipped cotangent, and nothing for lo and hi.",
    ),
)


# ---------------------------------------------------------------- argmax_ste (stop_gradient)


# logits are 2-D (rows of classes), each shape in one dtype: one class (the centred logits are
# constant, the VJP zero), a row, a block; when grading, more rows, a longer row, two classes.
STE_SHAPES: tuple[Shape, ...] = ((2, 1), (1, 5), (3, 4))
STE_GRADING: tuple[Shape, ...] = ((6, 3), (1, 9), (4, 2))
THOUSANDS = [
    [1000.0, -1000.0, 0.0, 999.0],
    [-1000.0, -999.0, -1000.0, -998.0],
    [3.0, -2.0, 0.5, 1.0],
]
STE_EDGES = [  # logits, their dtype, the label; g drawn
    (THOUSANDS, np.float32, "logits of +-1000, float32"),
    ([[2.0, 2.0, -1.0, 0.0, 1.0]], np.float64, "a tie: the first largest is chosen"),
    ([[0.5], [-700.0]], np.float32, "one class: the gradient is zero"),
]

# The backward pass is given by its VJP, not by a surrogate: the cotangent of the logits is g
# minus its row mean (the part of g that a change of the logits can produce: adding one number
# to a whole row changes no argmax, so the cotangent of the logits sums to 0 over each row).
# The learner finds a surrogate whose VJP that is (the centred logits, v - mean(v): the
# centring matrix is symmetric) or writes it in a custom_vjp. The references use the surrogate.


def _ste_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    logits, g = (tf.constant(v) for v in case.values())
    with tf.GradientTape() as tape:
        tape.watch(logits)
        centred = logits - tf.reduce_mean(logits, axis=-1, keepdims=True)
        hard = tf.one_hot(tf.argmax(logits, axis=-1), logits.shape[-1], dtype=logits.dtype)
        y = centred + tf.stop_gradient(hard - centred)
    vjp = tape.gradient(y, logits, output_gradients=g)
    return y.numpy(), y.numpy(), vjp.numpy()


def _ste_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy

    def ste(v: Any) -> Any:
        centred = v - jnp.mean(v, axis=-1, keepdims=True)
        hard = jax.nn.one_hot(jnp.argmax(v, axis=-1), v.shape[-1], dtype=v.dtype)
        return centred + jax.lax.stop_gradient(hard - centred)

    y, pullback = jax.vjp(ste, arrays["logits"])
    return y, y, pullback(arrays["g"])[0]


def _ste(build: Callable[[Any, Any, Any], Any]) -> Fn:
    """A learner's argmax_ste: build(jax, v, hard) gives the output, hard the one-hot of v's
    argmax."""

    def make() -> Callable[[Any], Any]:
        jax = lazy_jax()

        def hard(v: Any) -> Any:
            return jax.nn.one_hot(jax.numpy.argmax(v, axis=-1), v.shape[-1], dtype=v.dtype)

        return lambda logits: build(jax, logits, hard(logits))

    return built_learner("argmax_ste", "logits", make)


def _through(surrogate: Callable[[Any, Any], Any]) -> Fn:
    """The straight-through estimator with this surrogate(jax, v)."""
    return _ste(
        lambda jax, v, hard: surrogate(jax, v) + jax.lax.stop_gradient(hard - surrogate(jax, v))
    )


def _centred(axis: int) -> Callable[[Any, Any], Any]:
    return lambda jax, v: v - jax.numpy.mean(v, axis=axis, keepdims=True)


CENTRED_HINT = (
    "the cotangent of the logits is g minus its row mean. Which function of the logits has that as "
    "its VJP? Put it outside jax.lax.stop_gradient, or write the VJP in a jax.custom_vjp."
)

ARGMAX_STE = Exercise(
    signature=(
        "argmax_ste(logits) -> the one-hot of each row's argmax, whose logits' cotangent is g "
        "minus its row mean"
    ),
    nudge=(
        "Going forward the value is the hard one-hot; going backward it borrows the derivative of a"
        " smooth surrogate. Which simple function of the logits has, as its VJP, the cotangent "
        "minus its row mean?"
    ),
    outputs=("value", "vjp_primal", "vjp"),
    cases=menu_cases(STE_SHAPES, STE_GRADING, logits=5.0, g=10.0),
    edges=lambda: edges_at(9, "logits", STE_EDGES, "g"),
    reference=two_references(
        tf=_ste_tf,
        jax=_ste_jax,
        why=(
            "the surrogate needs a one-hot of the argmax, which neither NumPy API has "
            "(tf.one_hot, jax.nn.one_hot)"
        ),
    ),
    references_text=(
        "JAX's and TensorFlow's straight-through one-hot (jax.lax.stop_gradient, "
        "tf.stop_gradient): the argmax's one-hot going forward, g minus its row mean going backward"
    ),
    invoke="ch05_custom_derivatives_jax:invoke_argmax_ste",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "hard_only",
            "The cotangent of the logits is zero: argmax and one_hot have no "
            "derivative, so JAX differentiates nothing. The straight-through estimator keeps "
            "the one-hot's VALUE and takes its derivative from a surrogate: only the "
            "difference between the two may go inside jax.lax.stop_gradient.",
            _ste(lambda jax, v, hard: hard),
        ),
        Mistake(
            "surrogate_only",
            "Going forward the value must be the one-hot of the argmax (0s and a single 1 per "
            "row), not the surrogate; the surrogate only gives the derivative.",
            _ste(lambda jax, v, hard: _centred(-1)(jax, v)),
        ),
        Mistake(
            "identity_surrogate",
            "The cotangent came back unchanged: your surrogate is the logits themselves, as in the "
            "floor demo (x + stop_gradient(floor(x) - x)). The cotangent it returns has row sums "
            "that are not 0: adding one number to a whole row of logits changes no argmax, so no "
            "cotangent should push along that direction. Here " + CENTRED_HINT,
            _through(lambda jax, v: v),
        ),
        Mistake(
            "softmax_surrogate",
            "Your cotangent is softmax's VJP, p * (g - sum(p * g)): the "
            "surrogate softmax(logits) weights each class by its probability. This exercise "
            "asks for another backward pass: " + CENTRED_HINT,
            _through(lambda jax, v: jax.nn.softmax(v, axis=-1)),
        ),
        Mistake(
            "stopped_the_wrong_term",
            "Your cotangent has the wrong sign: stop_gradient wraps the surrogate instead of the "
            "difference (hard + stop_gradient(s) - s differentiates -s). Wrap the whole difference "
            "between the one-hot and the surrogate.",
            _ste(
                lambda jax, v, hard: (
                    hard + jax.lax.stop_gradient(_centred(-1)(jax, v)) - _centred(-1)(jax, v)
                )
            ),
        ),
        Mistake(
            "mean_over_rows",
            "Centred over the wrong axis: the classes are the LAST axis, "
            "each row on its own (axis=-1), as argmax is taken.",
            _through(_centred(0)),
        ),
    ),
    hints_by_kind=jax_hints(
        {
            "value": "Right shape, wrong numbers: going forward, a one-hot of each row's argmax "
            "(the first largest on a tie); going backward, the cotangent g minus its mean over "
            "each row (the last axis).",
            "value:vjp": "The value is right, the cotangent of the logits is not: " + CENTRED_HINT,
            "nonfinite": "NaN or Inf: with logits around 1000, keep exp out of the surrogate; the "
            "backward pass asked for needs none.",
            "dtype": "Keep the logits' dtype: one_hot(..., dtype=logits.dtype).",
        }
    ),
)


EXERCISES = (LOG1PEXP, CLIP_GRADIENT, ARGMAX_STE)

PREDICTIONS = (
    Prediction(
        name="ch05_naive_softplus_slope",
        question="In float32, what does jax.grad of log(1 + exp(x)) return at x = 100?",
        choices={
            "a": "1.0, the true slope",
            "b": "inf",
            "c": "nan",
            "d": "0.0",
        },
        answer="c",
        why="exp(100) overflows float32 to inf, and the chain rule multiplies "
        "1 / (1 + inf) = 0 by exp(100) = inf: 0 * inf is nan.",
    ),
    Prediction(
        name="ch05_floor_gradient",
        question="What does jax.grad(lambda x: jnp.floor(x).sum()) return at x = [0.3, 1.7, -2.5]?",
        choices={
            "a": "ones: floor goes up by one per unit, on average",
            "b": "zeros",
            "c": "an error: floor has no derivative",
            "d": "nan",
        },
        answer="b",
        why="floor is flat between integers, so its derivative is 0 wherever it exists; JAX "
        "returns 0 (not an error), and learning through a step stops.",
    ),
)

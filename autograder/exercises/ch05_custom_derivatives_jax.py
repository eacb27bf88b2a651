"""Chapter 05 exercises: custom derivatives in JAX.

* `log1pexp(x)`: a stable softplus with a `jax.custom_jvp` rule (checked to second order);
* `clip_gradient(lo, hi, x)`: the identity going forward, a clipped cotangent going backward
  (`jax.custom_vjp`, or `jax.custom_gradient`);
* `argmax_ste(logits)`: a straight-through one-hot, written with `jax.lax.stop_gradient`: the
  one-hot of each row's argmax going forward; going backward, a VJP given as a formula (g minus
  its row mean), whose surrogate the learner derives (chapter 04's STE is for `round` with
  `tf.stop_gradient`; the notebook's demo is for `floor` with the identity as surrogate).

The learner-function builder, the elementwise shapes and the primal hints are shared with
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
from hypothesis import strategies as st

from autograder.exercises.common import (
    built_learner,
    elementwise,
    elementwise_dtype_and_shape,
    lazy_jax,
    primal_hints,
    rng_array,
)
from autograder.judging.cases import Case, Profile, Shape, dtype_and_shape, float_arrays
from autograder.judging.derived import two_references
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction

FRAMEWORKS = ("jax",)

# Each exercise's invoke, in autograder/harness/ch05_custom_derivatives_jax.py (the learner's kernel
# and the grader's child both run it).
LOG1PEXP_INVOKE = "ch05_custom_derivatives_jax:invoke_log1pexp"
CLIP_INVOKE = "ch05_custom_derivatives_jax:invoke_clip_gradient"
ARGMAX_STE_INVOKE = "ch05_custom_derivatives_jax:invoke_argmax_ste"

EXCEPTION_HINT = (
    "JAX refused one of the transformations the check applies (jit, jvp, vjp, vmap, grad); "
    "the message above names it and the likely mistake."
)


# ---------------------------------------------------------------- log1pexp (custom_jvp)


@st.composite
def _log1pexp_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(elementwise_dtype_and_shape(profile))
    x = draw(float_arrays(dtype, shape, bound=40.0))
    t = draw(float_arrays(dtype, shape))
    g = draw(float_arrays(dtype, shape))
    return Case((("x", x), ("t", t), ("g", g)))


def _log1pexp_edges() -> list[Case]:
    rng = np.random.default_rng(5)
    points = [
        ([-1000.0, -100.0, -0.5, 0.0, 100.0, 1000.0], np.float32, "x = +-100, +-1000, float32"),
        ([-1000.0, -100.0, -0.5, 0.0, 100.0, 1000.0], np.float64, "x = +-100, +-1000, float64"),
        ([-88.0, -30.0, -1.0, 1.0, 30.0, 89.0], np.float32, "around float32's exp overflow"),
    ]
    return [
        Case(
            (
                ("x", np.asarray(x, dtype)),
                ("t", rng_array(rng, (len(x),), dtype, decimals=2)),
                ("g", rng_array(rng, (len(x),), dtype, decimals=2)),
            ),
            label=label,
        )
        for x, dtype, label in points
    ]


def _log1pexp_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, t, g = (tf.constant(v) for v in case.values())
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape(persistent=True) as inner:
            inner.watch(x)
            y = tf.math.softplus(x)
        grad = inner.gradient(y, x)
    vjp = inner.gradient(y, x, output_gradients=g)
    second = outer.gradient(grad, x)
    with tf.autodiff.ForwardAccumulator(x, t) as accumulator:
        y_forward = tf.math.softplus(x)
    jvp = accumulator.jvp(y_forward)
    return tuple(v.numpy() for v in (y, y_forward, jvp, y, vjp, grad, second))


def _log1pexp_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy

    def softplus(v: Any) -> Any:
        return jnp.logaddexp(v, jnp.zeros_like(v))

    x, t, g = arrays["x"], arrays["t"], arrays["g"]
    y, jvp = jax.jvp(softplus, (x,), (t,))
    (vjp,) = jax.vjp(softplus, x)[1](g)
    scalar = lambda v: softplus(v)  # noqa: E731 - an elementwise function of one element
    grad = elementwise(jax, jax.grad(scalar), x)
    second = elementwise(jax, jax.grad(jax.grad(scalar)), x)
    return y, y, jvp, y, vjp, grad, second


def _custom_jvp_softplus(value: Any, tangent: Any, rule_primal: Any = None) -> Any:
    """A learner's log1pexp: `value(x)` going forward, `tangent(x, t)` as the JVP rule,
    whose primal output is `rule_primal(x)` (log1pexp(x) itself when None)."""
    jax = lazy_jax()

    @jax.custom_jvp
    def log1pexp(x: Any) -> Any:
        return value(x)

    @log1pexp.defjvp
    def log1pexp_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return (rule_primal or log1pexp)(x), tangent(x, t)

    return log1pexp


def _log1pexp_mistake(value: Any, tangent: Any, rule_primal: Any = None) -> Any:
    return built_learner("log1pexp", "x", lambda: _custom_jvp_softplus(
        value(), tangent(), rule_primal() if rule_primal else None))


def _naive_value() -> Any:
    jnp = lazy_jax().numpy
    return lambda x: jnp.log(1 + jnp.exp(x))


def _stable_value() -> Any:
    jnp = lazy_jax().numpy
    return lambda x: jnp.logaddexp(x, 0.0)


def _naive_tangent() -> Any:
    jnp = lazy_jax().numpy
    return lambda x, t: jnp.exp(x) / (1 + jnp.exp(x)) * t


def _sigmoid_tangent() -> Any:
    jax = lazy_jax()
    return lambda x, t: jax.nn.sigmoid(x) * t


def _ignores_tangent() -> Any:
    jax = lazy_jax()
    return lambda x, t: jax.nn.sigmoid(x) + 0 * t


def _affine_tangent() -> Any:
    jax = lazy_jax()
    return lambda x, t: jax.nn.sigmoid(x) * t + 1


def _wrong_derivative() -> Any:
    jax = lazy_jax()
    return lambda x, t: jax.nn.sigmoid(-x) * t


RULE_PRIMAL_HINT = (
    "The primal output of your JVP rule (the first value it returns) is not log1pexp(x): "
    "jax.jvp, jax.vjp and jax.grad take the primal from the rule, not from the function, "
    "so a rule that returns log(1 + exp(x)) overflows to inf for large x even when "
    "log1pexp itself is stable. Return log1pexp(x) from the rule."
)
FWD_PRIMAL_HINT = (
    "The primal output of fwd (the first value it returns) is not the function's value: "
    "jax.vjp and jax.grad take the primal from fwd, not from the function. fwd must return "
    "(the same value the function returns, residuals)."
)


NAN_AT_EDGES_HINT = (
    "NaN or Inf at the edges: exp(x) overflows for large x (float32 above ~88), so "
    "log(1 + exp(x)) is inf and exp(x) / (1 + exp(x)) is inf / inf = NaN. Rewrite the value "
    "and the derivative so that exp only ever sees a number <= 0 (split off max(x, 0), or "
    "divide above and below by exp(x) where x > 0), and check each at x = +-1000, its own "
    "derivative too. If you chose a stable branch with jnp.where, JAX still differentiates "
    "the other branch, and 0 * NaN is NaN: every branch must stay finite."
)


LOG1PEXP = Exercise(
    signature="log1pexp(x) -> y, a jax.custom_jvp function with its JVP rule",
    outputs=("value", "jvp_primal", "jvp", "vjp_primal", "vjp", "grad", "second_derivative"),
    cases=_log1pexp_case,
    edges=_log1pexp_edges,
    reference=two_references(
        tf=_log1pexp_tf, jax=_log1pexp_jax,
        why=("value, JVP, VJP, gradient and second derivative: TensorFlow's from a "
             "ForwardAccumulator and nested tapes, JAX's from jax.jvp, jax.vjp and two jax.grad")),
    references_text=(
        "JAX's derivatives of its own stable softplus and TensorFlow's of tf.math.softplus "
        "(value, JVP, VJP, vmap of grad, second derivative)"
    ),
    invoke=LOG1PEXP_INVOKE,
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "naive_value", NAN_AT_EDGES_HINT, _log1pexp_mistake(_naive_value, _sigmoid_tangent)
        ),
        Mistake("naive_both", NAN_AT_EDGES_HINT, _log1pexp_mistake(_naive_value, _naive_tangent)),
        Mistake("naive_tangent", NAN_AT_EDGES_HINT,
                _log1pexp_mistake(_stable_value, _naive_tangent)),
        Mistake("naive_rule_primal", RULE_PRIMAL_HINT,
                _log1pexp_mistake(_stable_value, _sigmoid_tangent, _naive_value)),
        Mistake("ignores_tangent", "The tangent output must be the derivative TIMES the input "
                "tangent t, not the derivative alone.",
                _log1pexp_mistake(_stable_value, _ignores_tangent)),
        Mistake("affine_tangent", "Your JVP rule is not linear in the tangent (it adds a "
                "constant): a JVP maps a tangent t to (derivative) * t, so t = 0 must give 0. "
                "Reverse mode silently drops the constant, forward mode does not, so the two "
                "disagree.", _log1pexp_mistake(_stable_value, _affine_tangent)),
        Mistake("wrong_derivative", "The derivative of log(1 + exp(x)) is exp(x) / (1 + exp(x)) = "
                "sigmoid(x), not sigmoid(-x).",
                _log1pexp_mistake(_stable_value, _wrong_derivative)),
    ),
    hints_by_kind={
        "exception": EXCEPTION_HINT,
        "error": EXCEPTION_HINT,
        **primal_hints(("jvp_primal", "vjp_primal"), RULE_PRIMAL_HINT),
        "value": "Right shape, wrong numbers: log1pexp(x) is log(1 + exp(x)), and its JVP rule "
                 "returns (log1pexp(x), the derivative exp(x) / (1 + exp(x)) times t), each "
                 "written so that it never overflows.",
        "nonfinite": NAN_AT_EDGES_HINT,
        "dtype": "Keep x's dtype: build constants with jnp.zeros_like(x) or plain Python "
        "floats (weakly typed), not float64 numpy arrays.",
    },
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


@st.composite
def _clip_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(dtype_and_shape(profile, CLIP_SHAPES, CLIP_GRADING))
    lo, hi = clip_bounds(shape)
    x = draw(float_arrays(dtype, shape, bound=3.0))
    g = draw(float_arrays(dtype, shape))
    return Case((("lo", lo), ("hi", hi), ("x", x), ("g", g)))


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
                *zip(("lo", "hi"), clip_bounds(shape), strict=True),
                ("x", rng.uniform(-3, 3, size=shape).round(2).astype(dtype)),
                ("g", (rng.uniform(-6, 6, size=shape)).round(2).astype(dtype)),
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
    rows = tf.stack([tape.gradient(y, x, output_gradients=g * mask)[i] for i, mask in
                     enumerate(tf.eye(x.shape[0], dtype=x.dtype)[:, :, None])])
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


def _clip_learner(forward: Any, backward: Any) -> Any:
    """A learner's clip_gradient: custom_vjp with nondiff_argnums=(0, 1)."""
    jax = lazy_jax()

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo: float, hi: float, x: Any) -> Any:
        return forward(lo, hi, x)

    def fwd(lo: float, hi: float, x: Any) -> Any:
        return forward(lo, hi, x), None

    def bwd(lo: float, hi: float, residuals: Any, g: Any) -> Any:
        return (backward(lo, hi, g),)

    clip_gradient.defvjp(fwd, bwd)
    return clip_gradient


def _clip_mistake(forward: Any, backward: Any) -> Any:
    return built_learner("clip_gradient", "lo, hi, x", lambda: _clip_learner(forward(), backward()))


def _identity() -> Any:
    return lambda lo, hi, x: x


def _clipped_cotangent() -> Any:
    jnp = lazy_jax().numpy
    return lambda lo, hi, g: jnp.clip(g, lo, hi)


def _clips_primal(lo: float, hi: float, x: Any) -> Any:
    return lazy_jax().numpy.clip(x, lo, hi)


def _clip_ones() -> Any:
    jnp = lazy_jax().numpy
    return lambda lo, hi, g: jnp.clip(jnp.ones_like(g), lo, hi)


def _clip_symmetric() -> Any:
    jnp = lazy_jax().numpy
    return lambda lo, hi, g: jnp.clip(g, -hi, hi)


def _clip_by_norm() -> Any:
    jnp = lazy_jax().numpy
    return lambda lo, hi, g: g * jnp.minimum(1.0, hi / jnp.maximum(jnp.linalg.norm(g), 1e-12))


CLIP_GRADIENT = Exercise(
    signature="clip_gradient(lo, hi, x) -> x, whose cotangent is clipped to [lo, hi]",
    outputs=("value", "vjp_primal", "vjp", "vmap_vjp", "chained_grad"),
    cases=_clip_case,
    edges=_clip_edges,
    reference=two_references(
        tf=_clip_tf, jax=_clip_jax,
        why=("a clipped cotangent is no forward's derivative: each framework clips its own "
             "cotangents, also chained through sin(3x)")),
    references_text=(
        "jnp.clip of JAX's own cotangents, and a tf.custom_gradient twin under tf.GradientTape"
    ),
    invoke=CLIP_INVOKE,
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("clips_primal", "You clipped the VALUE x going forward. clip_gradient returns x "
                "unchanged; only the cotangent flowing backward is clipped, in bwd.",
                _clips_primal),
        Mistake("ignores_cotangent", "bwd must clip the incoming cotangent g itself (jnp.clip(g, "
                "lo, hi)); your result does not depend on g.",
                _clip_mistake(_identity, _clip_ones)),
        Mistake("clip_by_norm", "This exercise clips each element of the cotangent to [lo, hi] "
                "(jnp.clip), not its norm.", _clip_mistake(_identity, _clip_by_norm)),
        Mistake("symmetric_clip", "Your cotangent is clipped to a symmetric range [-hi, hi]. The "
                "bounds are lo and hi as given, and lo need not be -hi: jnp.clip(g, lo, hi).",
                _clip_mistake(_identity, _clip_symmetric)),
    ),
    hints_by_kind={
        "exception": EXCEPTION_HINT,
        "error": EXCEPTION_HINT,
        **primal_hints(("vjp_primal",), FWD_PRIMAL_HINT),
        "value": "Going forward clip_gradient is the identity; bwd returns "
        "(jnp.clip(g, lo, hi),), the clipped cotangent, and nothing for lo and hi.",
    },
)



# ---------------------------------------------------------------- argmax_ste (stop_gradient)


# logits are 2-D (rows of classes), each shape in one dtype: one class (the centred logits are
# constant, the VJP zero), a row, a block; when grading, more rows, a longer row, two classes.
STE_SHAPES: tuple[Shape, ...] = ((2, 1), (1, 5), (3, 4))
STE_GRADING: tuple[Shape, ...] = ((6, 3), (1, 9), (4, 2))


@st.composite
def _ste_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(dtype_and_shape(profile, STE_SHAPES, STE_GRADING))
    logits = draw(float_arrays(dtype, shape, bound=5.0))
    g = draw(float_arrays(dtype, shape))
    return Case((("logits", logits), ("g", g)))


def _ste_edges() -> list[Case]:
    rng = np.random.default_rng(9)
    rows = [
        ([[1000.0, -1000.0, 0.0, 999.0], [-1000.0, -999.0, -1000.0, -998.0],
          [3.0, -2.0, 0.5, 1.0]], np.float32, "logits of +-1000, float32"),
        ([[2.0, 2.0, -1.0, 0.0, 1.0]], np.float64, "a tie: the first largest is chosen"),
        ([[0.5], [-700.0]], np.float32, "one class: the gradient is zero"),
    ]
    return [
        Case((("logits", np.asarray(x, dtype)),
              ("g", rng.uniform(-3, 3, size=np.shape(x)).round(2).astype(dtype))), label=label)
        for x, dtype, label in rows
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


def _ste_mistake(build: Callable[[Any, Any, Any], Any]) -> Any:
    """A learner's argmax_ste: build(v, hard(v), jax) gives the output."""
    def make() -> Callable[[Any], Any]:
        jax = lazy_jax()
        jnp = jax.numpy

        def hard(v: Any) -> Any:
            return jax.nn.one_hot(jnp.argmax(v, axis=-1), v.shape[-1], dtype=v.dtype)

        return lambda logits: build(logits, hard(logits), jax)

    return built_learner("argmax_ste", "logits", make)


def _softmax(v: Any, jax: Any) -> Any:
    return jax.nn.softmax(v, axis=-1)


def _centred(axis: int) -> Callable[[Any, Any], Any]:
    return lambda v, jax: v - jax.numpy.mean(v, axis=axis, keepdims=True)


def _ste_with(surrogate: Callable[[Any, Any], Any]) -> Any:
    return _ste_mistake(lambda v, hard, jax: surrogate(v, jax) + jax.lax.stop_gradient(
        hard - surrogate(v, jax)))


CENTRED_HINT = (
    "the cotangent of the logits is g minus its row mean. Which function of the logits has "
    "that as its VJP? Put it outside jax.lax.stop_gradient, or write the VJP in a "
    "jax.custom_vjp."
)

ARGMAX_STE = Exercise(
    signature=(
        "argmax_ste(logits) -> the one-hot of each row's argmax, whose logits' cotangent is g "
        "minus its row mean"
    ),
    outputs=("value", "vjp_primal", "vjp"),
    cases=_ste_case,
    edges=_ste_edges,
    reference=two_references(
        tf=_ste_tf, jax=_ste_jax,
        why=("the surrogate needs a one-hot of the argmax, which neither NumPy API has "
             "(tf.one_hot, jax.nn.one_hot)")),
    references_text=(
        "JAX's and TensorFlow's straight-through one-hot (jax.lax.stop_gradient, "
        "tf.stop_gradient): the argmax's one-hot going forward, g minus its row mean going "
        "backward"
    ),
    invoke=ARGMAX_STE_INVOKE,
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("hard_only", "The cotangent of the logits is zero: argmax and one_hot have no "
                "derivative, so JAX differentiates nothing. The straight-through estimator keeps "
                "the one-hot's VALUE and takes its derivative from a surrogate: only the "
                "difference between the two may go inside jax.lax.stop_gradient.",
                _ste_mistake(lambda v, hard, jax: hard)),
        Mistake("surrogate_only", "Going forward the value must be the one-hot of the argmax (0s "
                "and a single 1 per row), not the surrogate; the surrogate only gives the "
                "derivative.", _ste_mistake(lambda v, hard, jax: _centred(-1)(v, jax))),
        Mistake(
            "identity_surrogate",
            "The cotangent came back unchanged: your surrogate is the logits themselves, as "
            "in the floor demo (x + stop_gradient(floor(x) - x)). The cotangent it returns has "
            "row sums that are not 0: adding one number to a whole row of logits changes no "
            "argmax, so no cotangent should push along that direction. Here " + CENTRED_HINT,
            _ste_mistake(lambda v, hard, jax: v + jax.lax.stop_gradient(hard - v)),
        ),
        Mistake(
            "softmax_surrogate",
            "Your cotangent is softmax's VJP, p * (g - sum(p * g)): the surrogate softmax(logits) "
            "weights each class by its probability. This exercise asks for another backward "
            "pass: " + CENTRED_HINT,
            _ste_with(_softmax),
        ),
        Mistake(
            "stopped_the_wrong_term",
            "Your cotangent has the wrong sign: stop_gradient wraps the surrogate instead of "
            "the difference (hard + stop_gradient(s) - s differentiates -s). Wrap the whole "
            "difference between the one-hot and the surrogate.",
            _ste_mistake(lambda v, hard, jax: hard + jax.lax.stop_gradient(
                _centred(-1)(v, jax)) - _centred(-1)(v, jax)),
        ),
        Mistake("mean_over_rows", "Centred over the wrong axis: the classes are the LAST axis, "
                "each row on its own (axis=-1), as argmax is taken.", _ste_with(_centred(0))),
    ),
    hints_by_kind={
        "exception": EXCEPTION_HINT,
        "error": EXCEPTION_HINT,
        "value": "Right shape, wrong numbers: going forward, a one-hot of each row's argmax (the "
                 "first largest on a tie); going backward, the cotangent g minus its mean over "
                 "each row (the last axis).",
        "value:vjp": "The value is right, the cotangent of the logits is not: " + CENTRED_HINT,
        "nonfinite": "NaN or Inf: with logits around 1000, keep exp out of the surrogate; the "
        "backward pass asked for needs none.",
        "dtype": "Keep the logits' dtype: one_hot(..., dtype=logits.dtype).",
    },
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
        question="What does jax.grad(lambda x: jnp.floor(x).sum()) return at "
        "x = [0.3, 1.7, -2.5]?",
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

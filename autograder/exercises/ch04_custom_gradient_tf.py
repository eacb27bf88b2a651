"""Chapter 04 exercises: custom gradients in TensorFlow (`tf.custom_gradient`).

Each learner function takes tensors and returns a tensor; the invoke (autograder/harness/
ch04.py) calls it under a `tf.GradientTape` with a random cotangent, once eagerly and once
inside `tf.function`, insists that the two agree, and returns the primal output and the
cotangent of every input as numpy.
The references are the analytic or numerically stable formulas differentiated by JAX
(`jax.vjp`) and by TensorFlow's own tape; the tests cross-check them with
`tf.test.compute_gradient`. The known wrong answers are learner functions, written with
tf.custom_gradient as learners write them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.judging.cases import Case, Profile, Shape, dtypes, shape_menu
from autograder.judging.exercise import Exercise, Mistake, learner_function

FRAMEWORKS = ("tensorflow",)
EDGE_VALUES = (0.0, 100.0, -100.0, 1000.0, -1000.0)


def _tf() -> Any:
    from autograder.judging.references import tensorflow

    return tensorflow()


def _custom(value: Callable[..., Any], gradient: Callable[..., Any]) -> Callable[..., Any]:
    """A learner's function of tensors written with tf.custom_gradient: its value is
    `value(tf, *inputs)`, and its grad_fn returns `gradient(tf, g, *inputs)`."""

    def learner(*inputs: Any) -> Any:
        tf = _tf()

        @tf.custom_gradient
        def forward(*xs: Any) -> Any:
            return value(tf, *xs), lambda g: gradient(tf, g, *xs)

        return forward(*inputs)

    return learner


def _plain(dtype: np.dtype, bound: float = 10.0) -> st.SearchStrategy[float]:
    return st.floats(-bound, bound, width=dtype.itemsize * 8, allow_subnormal=False)


def _arrays(draw: st.DrawFn, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Values of order 1 to 10, or (one array in three) of order 100 to 1000: large enough
    for exp() to overflow in float32 and in float64."""
    base = draw(hnp.arrays(dtype, shape, elements=_plain(dtype), fill=st.nothing()))
    return np.asarray(base * draw(st.sampled_from([1, 1, 100])), dtype=dtype)


def _cotangent(draw: st.DrawFn, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """A random cotangent, its elements all different: never ones, never constant."""
    return draw(hnp.arrays(dtype, shape, elements=_plain(dtype), unique=True))


# The elementwise exercises' shapes. Each new input signature retraces the learner's
# tf.function (and eager TensorFlow caches kernels per shape), so the shapes come from a
# menu: a scalar, a length of one, a vector, a non-square matrix, a size-1 axis; grading adds
# a row and a larger matrix. The values are drawn afresh for every case.
ELEMENTWISE_SHAPES: tuple[Shape, ...] = ((), (1,), (5,), (3, 4), (4, 1))
ELEMENTWISE_GRADING: tuple[Shape, ...] = ((1, 6), (6, 5))
# linear_layer's (batch, features in, features out): ones, square (a transpose mistake
# cannot hide in the shapes) and non-square.
LINEAR_SIZES: tuple[Shape, ...] = ((1, 1, 1), (1, 4, 2), (3, 3, 3), (4, 2, 1), (2, 3, 4))
LINEAR_GRADING: tuple[Shape, ...] = ((6, 5, 4), (5, 1, 6))


def _shapes(profile: Profile) -> st.SearchStrategy[Shape]:
    return shape_menu(profile, ELEMENTWISE_SHAPES, ELEMENTWISE_GRADING)


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return rng.uniform(-3, 3, size=shape).round(2).astype(dtype)



def _outputs(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(a) for a in arrays)


# ---------------------------------------------------------------- logaddexp


@st.composite
def _logaddexp_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(dtypes()), draw(_shapes(profile))
    a, b = _arrays(draw, dtype, shape), _arrays(draw, dtype, shape)
    return Case((("a", a), ("b", b), ("g", _cotangent(draw, dtype, shape))))


def _logaddexp_edges() -> list[Case]:
    rng = np.random.default_rng(40)
    grid = np.array(EDGE_VALUES)
    a, b = (v.ravel() for v in np.meshgrid(grid, grid))
    cases = []
    for dtype in (np.float32, np.float64):
        cases.append(Case(
            (("a", a.astype(dtype)), ("b", b.astype(dtype)),
             ("g", _random(rng, a.shape, dtype))),
            label=f"every pair of 0, +-100, +-1000 ({np.dtype(dtype).name})",
        ))
    return cases


def _logaddexp_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    a, b, g = (tf.constant(v) for v in case.values())
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.reduce_logsumexp(tf.stack([a, b]), axis=0)
    grad_a, grad_b = tape.gradient(y, [a, b], output_gradients=g)
    return _outputs(y, grad_a, grad_b)


def _logaddexp_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    # The stable formula m + log(sum(exp(v - m))), m = max (held constant), as JAX writes it.
    # (Differentiating max(a, b) + log1p(exp(-|a - b|)) instead is wrong at a == b: JAX
    # sends the whole cotangent of a tie in max to one side and takes |0|' = 0.)
    def stable(a, b):
        return jax.nn.logsumexp(jax.numpy.stack([a, b]), axis=0)

    y, vjp = jax.vjp(stable, arrays["a"], arrays["b"])
    return (y, *vjp(arrays["g"]))



def _stable(tf: Any, a: Any, b: Any) -> Any:
    return tf.maximum(a, b) + tf.math.log1p(tf.exp(-tf.abs(a - b)))


def _naive(tf: Any, a: Any, b: Any) -> Any:
    return tf.math.log(tf.exp(a) + tf.exp(b))


def _logaddexp_mistake(value: Callable[..., Any], gradient: Callable[..., Any]
                       ) -> Callable[..., Any]:
    return learner_function("logaddexp", "a, b", _custom(value, gradient))


_swapped_inputs = _logaddexp_mistake(
    _stable, lambda tf, g, a, b: (g * tf.sigmoid(b - a), g * tf.sigmoid(a - b)))
_naive_gradient = _logaddexp_mistake(_stable, lambda tf, g, a, b: (
    g * tf.exp(a) / (tf.exp(a) + tf.exp(b)), g * tf.exp(b) / (tf.exp(a) + tf.exp(b))))
_naive_forward = _logaddexp_mistake(
    _naive, lambda tf, g, a, b: (g * tf.sigmoid(a - b), g * tf.sigmoid(b - a)))
_logaddexp_ignores_cotangent = _logaddexp_mistake(
    _stable, lambda tf, g, a, b: (tf.sigmoid(a - b), tf.sigmoid(b - a)))


LOGADDEXP = Exercise(
    name="logaddexp",
    returns="tensor y (with a custom gradient for a and b)",
    outputs=("y", "grad_a", "grad_b"),
    strategy=_logaddexp_case,
    edge_cases=_logaddexp_edges,
    tf_reference=_logaddexp_tf,
    jax_reference=_logaddexp_jax,
    references_text="jax.vjp(jax.nn.logsumexp) and tf.GradientTape(tf.reduce_logsumexp)",
    invoke="ch04_custom_gradient_tf:invoke",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "wrong_input",
            "Your grad_fn returns the gradient of the wrong input: grad_a and grad_b "
            "are swapped. grad_fn returns one gradient per input, in the order of the inputs "
            "(a first): d/da = sigmoid(a - b), d/db = sigmoid(b - a).",
            _swapped_inputs,
        ),
        Mistake(
            "naive_gradient",
            "NaN at the edges: exp(a) / (exp(a) + exp(b)) is inf / inf (or 0 / 0) once |a| or "
            "|b| is large (float32 overflows past 88). Write the gradient without exp of a "
            "large number: sigmoid(a - b) = 1 / (1 + exp(b - a)), e.g. tf.sigmoid(a - b).",
            _naive_gradient,
        ),
        Mistake(
            "naive_forward",
            "NaN or Inf at the edges in the forward value: log(exp(a) + exp(b)) overflows for "
            "a or b near 100 in float32 (and 1000 in float64). Use the stable form "
            "max(a, b) + log1p(exp(-|a - b|)).",
            _naive_forward,
        ),
        Mistake(
            "ignores_cotangent",
            "Your gradients do not depend on the incoming cotangent g (they equal what a "
            "cotangent of ones gives). Multiply by `g`, the cotangent grad_fn receives.",
            _logaddexp_ignores_cotangent,
        ),
    ),
    hints_by_kind={
        "error": (
            "The traceback names the line of your code that raised. Build y and the gradients "
            "with tf ops on tensors (not numpy or Python if), so the function also runs inside "
            "tf.function, and return (y, grad_fn) from the @tf.custom_gradient function."
        ),
        "exception": (
            "grad_fn must return one gradient per input, in the order of the inputs: "
            "(grad_a, grad_b), each with the shape of its input."
        ),
        "nonfinite": (
            "NaN or Inf at the edges: somewhere exp() of a large number overflows. Keep every "
            "exp argument <= 0: max(a, b) + log1p(exp(-|a - b|)), gradient sigmoid(a - b)."
        ),
        "value": (
            "For y = log(exp(a) + exp(b)): dy/da = exp(a - y) = sigmoid(a - b) and dy/db = "
            "sigmoid(b - a), each multiplied by the incoming cotangent g."
        ),
    },
)


# ---------------------------------------------------------------- log_or_zero


@st.composite
def _log_or_zero_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(dtypes()), draw(_shapes(profile))
    x = _arrays(draw, dtype, shape)
    zeros = draw(hnp.arrays(np.bool_, shape, fill=st.nothing()))  # exact zeros: the trap
    x = np.asarray(np.where(zeros, 0, x), dtype=dtype)
    return Case((("x", x), ("g", _cotangent(draw, dtype, shape))))


def _log_or_zero_edges() -> list[Case]:
    rng = np.random.default_rng(41)
    x = np.array([0.0, 0.0, 1.0, 2.5, -1.0, 100.0, -100.0, 1000.0, -1000.0, 1e-3])
    return [
        Case((("x", x.astype(dt)), ("g", _random(rng, x.shape, dt))),
             label=f"zeros, negatives, +-100, +-1000 ({np.dtype(dt).name})")
        for dt in (np.float32, np.float64)
    ] + [Case((("x", np.zeros((), np.float32)), ("g", np.full((), 1.5, np.float32))),
              label="x = 0 alone")]


def _log_or_zero_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, g = (tf.constant(v) for v in case.values())
    with tf.GradientTape() as tape:
        tape.watch(x)
        positive = x > 0
        safe = tf.where(positive, x, tf.ones_like(x))  # the double where
        y = tf.where(positive, tf.math.log(safe), tf.zeros_like(x))
    return _outputs(y, tape.gradient(y, x, output_gradients=g))


def _log_or_zero_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy

    def f(x):
        positive = x > 0
        return jnp.where(positive, jnp.log(jnp.where(positive, x, 1)), 0)

    y, vjp = jax.vjp(f, arrays["x"])
    return (y, *vjp(arrays["g"]))


def _safe_log(tf: Any, x: Any) -> Any:
    return tf.where(x > 0, tf.math.log(tf.where(x > 0, x, tf.ones_like(x))), tf.zeros_like(x))


def _single_where(x: Any) -> Any:
    """The branch not taken still computes log(0), whose VJP gives 0 * inf = NaN there."""
    tf = _tf()
    return tf.where(x > 0, tf.math.log(x), tf.zeros_like(x))


def _log_or_zero_mistake(gradient: Callable[..., Any]) -> Callable[..., Any]:
    return learner_function("log_or_zero", "x", _custom(_safe_log, gradient))


_unmasked_gradient = _log_or_zero_mistake(lambda tf, g, x: g / x)
_log_or_zero_ignores_cotangent = _log_or_zero_mistake(
    lambda tf, g, x: tf.where(x > 0, 1 / tf.where(x > 0, x, tf.ones_like(x)), tf.zeros_like(x)))


LOG_OR_ZERO = Exercise(
    name="log_or_zero",
    returns="tensor: log(x) where x > 0, else 0",
    outputs=("y", "grad_x"),
    strategy=_log_or_zero_case,
    edge_cases=_log_or_zero_edges,
    tf_reference=_log_or_zero_tf,
    jax_reference=_log_or_zero_jax,
    references_text="jax.vjp and tf.GradientTape of the double-where log",
    invoke="ch04_custom_gradient_tf:invoke",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "single_where",
            "NaN at x = 0 from the branch not taken: tf.where(x > 0, tf.math.log(x), 0) "
            "still computes log(0) = -inf, and its VJP multiplies the zero cotangent tf.where "
            "sends it by 1/0: 0 * inf = NaN. Feed the log a safe value where it is not used "
            "(the double where: tf.math.log(tf.where(x > 0, x, 1))). In a custom gradient, "
            "divide by that safe x and mask it: tf.where(x > 0, g / safe_x, 0).",
            _single_where,
        ),
        Mistake(
            "unmasked_gradient",
            "Your gradient is g / x everywhere, but where x <= 0 the output is the "
            "constant 0, so the gradient there is 0: mask it, "
            "tf.where(x > 0, g / safe_x, 0).",
            _unmasked_gradient,
        ),
        Mistake(
            "ignores_cotangent",
            "Your gradient does not depend on the incoming cotangent g (it equals what a "
            "cotangent of ones gives). Multiply by `g`.",
            _log_or_zero_ignores_cotangent,
        ),
    ),
    hints_by_kind={
        "error": (
            "The traceback names the line of your code that raised. Use tf ops on tensors "
            "(tf.where, tf.math.log), not a Python if or numpy: the check also runs your function "
            "inside tf.function, where values are symbolic."
        ),
        "nonfinite": (
            "NaN or Inf at x = 0: the branch tf.where does not take is still differentiated. "
            "Make it safe (the double where) or write the gradient with tf.custom_gradient."
        ),
        "value": "For x > 0 the gradient is g / x; for x <= 0 it is 0.",
    },
)


# ---------------------------------------------------------------- clip_cotangent


@st.composite
def _clip_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(dtypes()), draw(_shapes(profile))
    # |x| >= 3, beyond every limit: a learner who clips the forward value is always seen.
    size = draw(hnp.arrays(dtype, shape, elements=st.floats(3, 10, width=dtype.itemsize * 8),
                           fill=st.nothing()))
    negative = draw(hnp.arrays(np.bool_, shape, fill=st.nothing()))
    x = np.asarray(np.where(negative, -size, size), dtype=dtype)
    limit = draw(st.sampled_from([0.5, 1.0, 2.5]))
    return Case((("x", x), ("limit", limit), ("g", _cotangent(draw, dtype, shape))))


def _clip_edges() -> list[Case]:
    rng = np.random.default_rng(42)
    x = np.array([-1000.0, -100.0, -3.0, 0.0, 0.5, 3.0, 100.0, 1000.0])
    g = np.array([-50.0, 0.2, -0.7, 4.0, -1.0, 1.0, 0.9, 30.0])
    return [
        Case((("x", x.astype(np.float32)), ("limit", 1.0), ("g", g.astype(np.float32))),
             label="large and small inputs and cotangents, limit 1"),
        Case((("x", _random(rng, (3, 4), np.float64)), ("limit", 0.5),
              ("g", 4 * _random(rng, (3, 4), np.float64))), label="a matrix, limit 0.5"),
    ]


def _clip_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, limit, g = case.values()
    x, g = tf.constant(x), tf.constant(g)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.identity(x)
    g_x = tape.gradient(y, x, output_gradients=g)
    return _outputs(y, tf.clip_by_value(g_x, -limit, limit))


def _clip_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    limit = params["limit"]

    @jax.custom_vjp
    def clipped(x):
        return x

    clipped.defvjp(lambda x: (x, None), lambda _, g: (jax.numpy.clip(g, -limit, limit),))
    y, vjp = jax.vjp(clipped, arrays["x"])
    return (y, *vjp(arrays["g"]))


def _clip_learner(value: Callable[..., Any], gradient: Callable[..., Any]
                  ) -> Callable[..., Any]:
    """A learner's clip_cotangent(x, limit): `value(tf, x, limit)` going forward, and a
    grad_fn returning `gradient(tf, g, limit)` (limit is a number, not an input)."""

    def clip_cotangent(x: Any, limit: float) -> Any:
        tf = _tf()

        @tf.custom_gradient
        def forward(x: Any) -> Any:
            return value(tf, x, limit), lambda g: gradient(tf, g, limit)

        return forward(x)

    return clip_cotangent


def _identity(tf: Any, x: Any, limit: float) -> Any:
    return tf.identity(x)


def _clipped(tf: Any, t: Any, limit: float) -> Any:
    return tf.clip_by_value(t, -limit, limit)


def _clips_forward(x: Any, limit: float) -> Any:
    """The value clipped, with no custom gradient: TF's own gradient of clip_by_value."""
    return _tf().clip_by_value(x, -limit, limit)


_clips_forward_passes_gradient = _clip_learner(_clipped, lambda tf, g, limit: g)
_clips_both = _clip_learner(_clipped, _clipped)
_not_clipped = _clip_learner(_identity, lambda tf, g, limit: g)
_clip_ignores_cotangent = _clip_learner(_identity, lambda tf, g, limit: _clipped(
    tf, tf.ones_like(g), limit))
_clip_fixed_limit = _clip_learner(_identity, lambda tf, g, limit: tf.clip_by_value(g, -1.0, 1.0))


_CLIP_FORWARD_HINT = (
    "You clipped the forward value instead of the gradient. The forward pass must be the "
    "identity (y = x, unchanged); only the cotangent is clipped, inside grad_fn: "
    "tf.clip_by_value(g, -limit, limit)."
)

CLIP_COTANGENT = Exercise(
    name="clip_cotangent",
    returns="tensor x, its cotangent clipped to [-limit, limit]",
    outputs=("y", "grad_x"),
    strategy=_clip_case,
    edge_cases=_clip_edges,
    tf_reference=_clip_tf,
    jax_reference=_clip_jax,
    references_text="jax.custom_vjp (identity, clipped cotangent) and tf.clip_by_value",
    invoke="ch04_custom_gradient_tf:invoke",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("clips_forward", _CLIP_FORWARD_HINT, _clips_forward),
        Mistake("clips_forward_only", _CLIP_FORWARD_HINT, _clips_forward_passes_gradient),
        Mistake("clips_both", _CLIP_FORWARD_HINT, _clips_both),
        Mistake(
            "not_clipped",
            "The cotangent comes back unchanged: clip it inside grad_fn with "
            "tf.clip_by_value(g, -limit, limit).",
            _not_clipped,
        ),
        Mistake(
            "ignores_cotangent",
            "Your gradient does not depend on the incoming cotangent g (it equals a clipped "
            "cotangent of ones). Clip `g` itself.",
            _clip_ignores_cotangent,
        ),
        Mistake(
            "fixed_limit",
            "Your cotangent is clipped to a fixed range, not to [-limit, limit]: use the "
            "`limit` argument (grad_fn can read it, as a closure), "
            "tf.clip_by_value(g, -limit, limit).",
            _clip_fixed_limit,
        ),
    ),
    hints_by_kind={
        "error": (
            "The traceback names the line of your code that raised. limit is a Python number, not "
            "an input with a gradient: grad_fn returns one gradient, for x, g clipped "
            "with tf.clip_by_value(g, -limit, limit)."
        ),
        "value": "y must equal x; grad_x must be the incoming cotangent g clipped elementwise.",
    },
)


# ---------------------------------------------------------------- sign_ste


@st.composite
def _sign_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(dtypes()), draw(_shapes(profile))
    x = draw(hnp.arrays(dtype, shape, fill=st.nothing(), elements=st.one_of(
        _plain(dtype, 3.0), st.sampled_from([-1.0, 1.0]))))  # the window's edges, exactly
    return Case((("x", x), ("g", _cotangent(draw, dtype, shape))))


def _sign_edges() -> list[Case]:
    rng = np.random.default_rng(43)
    x = np.array([-1000.0, -100.0, -1.0, -0.5, 0.0, 0.25, 1.0, 1.5, 100.0, 1000.0])
    return [
        Case((("x", x.astype(dt)), ("g", _random(rng, x.shape, dt))),
             label=f"the window edges +-1, zero, +-100, +-1000 ({np.dtype(dt).name})")
        for dt in (np.float32, np.float64)
    ]


def _sign_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, g = (tf.constant(v) for v in case.values())
    with tf.GradientTape() as tape:
        tape.watch(x)
        hard_tanh = tf.clip_by_value(x, -1, 1)  # its gradient is the window |x| <= 1
        y = hard_tanh + tf.stop_gradient(tf.sign(x) - hard_tanh)
    return _outputs(tf.sign(x), tape.gradient(y, x, output_gradients=g))


def _sign_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy
    x = arrays["x"]
    window = (jnp.abs(x) <= 1).astype(x.dtype)
    _, vjp = jax.vjp(lambda x: x * window, x)  # the analytic STE: d/dx taken as 1 on |x| <= 1
    return (jnp.sign(x), *vjp(arrays["g"]))


def _sign(tf: Any, x: Any) -> Any:
    return tf.sign(x)


def _plain_sign(x: Any) -> Any:
    """tf.sign with its own gradient: zero almost everywhere."""
    return _tf().sign(x)


def _window(tf: Any, x: Any, inside: Callable[[Any], Any]) -> Any:
    return tf.cast(inside(tf.abs(x)), x.dtype)


def _sign_ste_mistake(gradient: Callable[..., Any]) -> Callable[..., Any]:
    return learner_function("sign_ste", "x", _custom(_sign, gradient))


_no_window = _sign_ste_mistake(lambda tf, g, x: g)
_open_window = _sign_ste_mistake(lambda tf, g, x: g * _window(tf, x, lambda a: a < 1))
_sign_ignores_cotangent = _sign_ste_mistake(lambda tf, g, x: _window(tf, x, lambda a: a <= 1))


SIGN_STE = Exercise(
    name="sign_ste",
    returns="tensor: tf.sign(x) with the straight-through gradient",
    outputs=("y", "grad_x"),
    strategy=_sign_case,
    edge_cases=_sign_edges,
    tf_reference=_sign_tf,
    jax_reference=_sign_jax,
    references_text="jax.vjp of the analytic STE and tf.stop_gradient's straight-through form",
    invoke="ch04_custom_gradient_tf:invoke",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "open_window",
            "Your window leaves out |x| = 1 exactly; it is |x| <= 1, edges included.",
            _open_window,
        ),
        Mistake(
            "plain_sign",
            "Your gradient is zero everywhere: that is tf.sign's own gradient (0 almost "
            "everywhere), which is why nothing before a quantizer learns. Replace it: pass "
            "the incoming cotangent g straight through where |x| <= 1.",
            _plain_sign,
        ),
        Mistake(
            "no_window",
            "You passed the cotangent through everywhere. This straight-through estimator "
            "lets it through only where |x| <= 1 (the gradient of hard tanh) and gives 0 "
            "outside.",
            _no_window,
        ),
        Mistake(
            "ignores_cotangent",
            "Your gradient does not depend on the incoming cotangent g (it equals what a "
            "cotangent of ones gives). Multiply the window by `g`.",
            _sign_ignores_cotangent,
        ),
    ),
    hints_by_kind={
        "error": (
            "The traceback names the line of your code that raised. Use tf ops on tensors "
            "(tf.sign, tf.abs, tf.where), not a Python if or numpy, and have grad_fn return g "
            "where |x| <= 1, else 0."
        ),
        "value": "y = tf.sign(x); grad_x = g where |x| <= 1, else 0.",
    },
)


# ---------------------------------------------------------------- linear_layer (a tf.Variable)


@st.composite
def _linear_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype = draw(dtypes())
    n, k, m = draw(shape_menu(profile, LINEAR_SIZES, LINEAR_GRADING))
    x = draw(hnp.arrays(dtype, (n, k), elements=_plain(dtype, 3), fill=st.nothing()))
    w = draw(hnp.arrays(dtype, (k, m), elements=_plain(dtype, 3), fill=st.nothing()))
    return Case((("x", x), ("w", w), ("g", _cotangent(draw, dtype, (n, m)))))


def _linear_edges() -> list[Case]:
    rng = np.random.default_rng(44)
    shapes = [((4, 3), (3, 2), np.float32, "a batch of 4, 3 features in, 2 out"),
              ((1, 5), (5, 1), np.float64, "one row, one output"),
              ((3, 3), (3, 3), np.float32, "square: a transpose mistake cannot hide in shapes")]
    cases = []
    for xs, ws, dt, label in shapes:
        x, w = _random(rng, xs, dt), _random(rng, ws, dt)
        cases.append(Case((("x", x), ("w", w), ("g", _random(rng, (xs[0], ws[1]), dt))),
                          label=label))
    return cases


def _linear_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, w, g = case.values()
    x, w, g = tf.constant(x), tf.Variable(w), tf.constant(g)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x @ w
    grad_x, grad_w = tape.gradient(y, [x, w], output_gradients=g)
    return _outputs(y, grad_x, grad_w)


def _linear_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    y, vjp = jax.vjp(jax.numpy.matmul, arrays["x"], arrays["w"])
    return (y, *vjp(arrays["g"]))


def _linear_learner(gradients: Callable[..., tuple[Any, Any]]) -> Callable[..., Any]:
    """A learner's linear_layer(x, w): x @ w, with a grad_fn(g, variables=None)
    returning (grad_x, [grad_w]) from `gradients(tf, g, x, w)`."""

    def linear_layer(x: Any, w: Any) -> Any:
        tf = _tf()

        @tf.custom_gradient
        def forward(x: Any) -> Any:
            def grad_fn(g: Any, variables: Any = None) -> Any:
                grad_x, grad_w = gradients(tf, g, x, w)
                return grad_x, [grad_w]

            return x @ w, grad_fn

        return forward(x)

    return linear_layer


_linear_untransposed = _linear_learner(lambda tf, g, x, w: (g @ w, x @ g))
_linear_ignores_cotangent = _linear_learner(lambda tf, g, x, w: (
    tf.ones_like(g) @ tf.transpose(w), tf.transpose(x) @ tf.ones_like(g)))
_linear_swapped = _linear_learner(lambda tf, g, x, w: (tf.transpose(x) @ g, g @ tf.transpose(w)))


LINEAR_LAYER = Exercise(
    name="linear_layer",
    returns="tensor x @ w, w a tf.Variable read inside a custom gradient",
    outputs=("y", "grad_x", "grad_w"),
    strategy=_linear_case,
    edge_cases=_linear_edges,
    tf_reference=_linear_tf,
    jax_reference=_linear_jax,
    references_text="jax.vjp(jnp.matmul) and tf.GradientTape over a tf.Variable",
    invoke="ch04_custom_gradient_tf:invoke_layer",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "untransposed",
            "Transpose in the VJP of a matmul: grad_x = g @ w^T and "
            "grad_w = x^T @ g (tf.transpose or tf.linalg.matmul(..., transpose_b=True)).",
            _linear_untransposed,
        ),
        Mistake(
            "swapped",
            "Your grad_fn returns the gradient of the wrong input: the input "
            "gradients come first, (g @ w^T), then the list of variable gradients "
            "[x^T @ g].",
            _linear_swapped,
        ),
        Mistake(
            "ignores_cotangent",
            "Your gradients do not depend on the incoming cotangent g (they equal what a "
            "cotangent of ones gives). Multiply by `g`.",
            _linear_ignores_cotangent,
        ),
    ),
    hints_by_kind={
        "error": (
            "The traceback names the line of your code that raised. Inside @tf.custom_gradient, "
            "linear_layer returns (x @ w, grad_fn), and grad_fn(g, variables=None) returns "
            "(g @ w^T, [x^T @ g]); use tf ops on tensors, not numpy."
        ),
        "value": (
            "Right shapes, wrong numbers: y = x @ w, grad_x = g @ w^T and grad_w = x^T @ "
            "g (tf.linalg.matmul with transpose_a= or transpose_b=), both multiplied "
            "through by g."
        ),
        "exception": (
            "With a tf.Variable read inside, grad_fn must be `def grad_fn(g, variables=None)` "
            "and return a pair: (gradient of x, [gradient of w]) -- the variable gradients "
            "in a list, one per variable in `variables`."
        ),
        "shape": (
            "grad_x must have x's shape (n, k) and grad_w w's shape (k, m): "
            "grad_x = g @ w^T, grad_w = x^T @ g."
        ),
    },
)

EXERCISES = (LINEAR_LAYER, LOGADDEXP, LOG_OR_ZERO, CLIP_COTANGENT, SIGN_STE)

"""Chapter 05 exercises: custom derivatives in JAX.

* `log1pexp(x)`: a stable softplus with a `jax.custom_jvp` rule (checked to second order);
* `clip_gradient(lo, hi, x)`: the identity going forward, a clipped cotangent going backward
  (`jax.custom_vjp`, or `jax.custom_gradient`).

Chapter 06's exercises (autograder/exercises/ch06_implicit_callbacks_checkpointing.py) reuse
this module's helpers (the learner-function builder, shapes, hints).

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
from hypothesis.extra import numpy as hnp

from autograder.judging.cases import Case, Profile, Shape, dtype_and_shape, float_arrays
from autograder.judging.exercise import Exercise, Mistake, learner_function

FRAMEWORKS = ("jax",)

# Each exercise's invoke, in autograder/harness/ch05_custom_derivatives_jax.py (the learner's kernel
# and the grader's child both run it).
LOG1PEXP_INVOKE = "ch05_custom_derivatives_jax:invoke_log1pexp"
CLIP_INVOKE = "ch05_custom_derivatives_jax:invoke_clip_gradient"

EXCEPTION_HINT = (
    "JAX refused one of the transformations the check applies (jit, jvp, vjp, vmap, grad); "
    "the message above names it and the likely mistake."
)


def _learner(name: str, parameters: str, build: Callable[[], Callable[..., Any]]
             ) -> Callable[..., Any]:
    """A wrong learner function `name(parameters)` whose body, a function with a custom rule,
    is built by `build` on the first call, since JAX is imported only when a check runs."""
    built = functools.cache(build)
    return learner_function(name, parameters, lambda *args: built()(*args))


@functools.cache
def _jax() -> Any:
    from autograder.judging.references import jax_module

    return jax_module()


def _between(dtype: np.dtype, shape: Shape, low: float, high: float) -> st.SearchStrategy:
    """Arrays with every element drawn on its own from [low, high]."""
    elements = st.floats(low, high, width=dtype.itemsize * 8, allow_subnormal=False)
    return hnp.arrays(dtype, shape, elements=elements, fill=st.nothing())


# The elementwise exercises' shapes: each (shape, dtype) compiles the learner's function once
# per transformation, so the menu is short, and each shape comes in one dtype (cases.
# dtype_and_shape): a length of one and a 2-D array (a rule that assumes a vector fails) in
# float32, a vector in float64, and, when grading, a size-1 middle axis in float64 and a longer
# vector in float32.
ELEMENTWISE_SHAPES: tuple[Shape, ...] = ((1,), (6,), (2, 3))
ELEMENTWISE_GRADING: tuple[Shape, ...] = ((3, 1, 4), (16,))


def _dtype_and_shape(profile: Profile) -> st.SearchStrategy[tuple[np.dtype, Shape]]:
    return dtype_and_shape(profile, ELEMENTWISE_SHAPES, ELEMENTWISE_GRADING)


def _rng_vector(rng: np.random.Generator, n: int, dtype: Any) -> np.ndarray:
    return rng.uniform(-3, 3, size=n).round(2).astype(dtype)


# ---------------------------------------------------------------- log1pexp (custom_jvp)


@st.composite
def _log1pexp_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(_dtype_and_shape(profile))
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
                ("t", _rng_vector(rng, len(x), dtype)),
                ("g", _rng_vector(rng, len(x), dtype)),
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
    grad = _elementwise(jax, jax.grad(scalar), x)
    second = _elementwise(jax, jax.grad(jax.grad(scalar)), x)
    return y, y, jvp, y, vjp, grad, second


def _elementwise(jax: Any, scalar_fn: Any, x: Any) -> Any:
    """scalar_fn of every element of x (of any shape), through jax.vmap, in x's shape."""
    return jax.vmap(scalar_fn)(x.reshape(-1)).reshape(x.shape)


def _custom_jvp_softplus(value: Any, tangent: Any, rule_primal: Any = None) -> Any:
    """A learner's log1pexp: `value(x)` going forward, `tangent(x, t)` as the JVP rule,
    whose primal output is `rule_primal(x)` (log1pexp(x) itself when None)."""
    jax = _jax()

    @jax.custom_jvp
    def log1pexp(x: Any) -> Any:
        return value(x)

    @log1pexp.defjvp
    def log1pexp_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return (rule_primal or log1pexp)(x), tangent(x, t)

    return log1pexp


def _log1pexp_mistake(value: Any, tangent: Any, rule_primal: Any = None) -> Any:
    return _learner("log1pexp", "x", lambda: _custom_jvp_softplus(
        value(), tangent(), rule_primal() if rule_primal else None))


def _naive_value() -> Any:
    jnp = _jax().numpy
    return lambda x: jnp.log(1 + jnp.exp(x))


def _stable_value() -> Any:
    jnp = _jax().numpy
    return lambda x: jnp.logaddexp(x, 0.0)


def _naive_tangent() -> Any:
    jnp = _jax().numpy
    return lambda x, t: jnp.exp(x) / (1 + jnp.exp(x)) * t


def _sigmoid_tangent() -> Any:
    jax = _jax()
    return lambda x, t: jax.nn.sigmoid(x) * t


def _ignores_tangent() -> Any:
    jax = _jax()
    return lambda x, t: jax.nn.sigmoid(x) + 0 * t


def _affine_tangent() -> Any:
    jax = _jax()
    return lambda x, t: jax.nn.sigmoid(x) * t + 1


def _wrong_derivative() -> Any:
    jax = _jax()
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


def _primal_hints(outputs: tuple[str, ...], hint: str) -> dict[str, str]:
    """The hint for a wrong or non-finite primal from the rule, on each of these outputs."""
    return {f"{kind}:{output}": hint for kind in ("value", "nonfinite") for output in outputs}


NAN_AT_EDGES_HINT = (
    "NaN or Inf at the edges: exp(x) overflows for large x (float32 above ~88), so "
    "log(1 + exp(x)) is inf and exp(x) / (1 + exp(x)) is inf / inf = NaN. Use a stable form: "
    "jnp.logaddexp(x, 0.) going forward and jax.nn.sigmoid(x) for the derivative. If you "
    "chose a stable branch with jnp.where, JAX still differentiates the other branch, and "
    "0 * NaN is NaN: every branch must stay finite (for example, use exp(-abs(x)))."
)


LOG1PEXP = Exercise(
    name="log1pexp",
    returns="y, a jax.custom_jvp function with its JVP rule",
    outputs=("value", "jvp_primal", "jvp", "vjp_primal", "vjp", "grad", "second_derivative"),
    strategy=_log1pexp_case,
    edge_cases=_log1pexp_edges,
    tf_reference=_log1pexp_tf,
    jax_reference=_log1pexp_jax,
    references_text=(
        "JAX's derivatives of jnp.logaddexp(x, 0) and TensorFlow's of tf.math.softplus "
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
        Mistake(
            "ignores_tangent",
            "The tangent output must be the derivative TIMES the input tangent t: "
            "`jax.nn.sigmoid(x) * t`, not `jax.nn.sigmoid(x)` alone.",
            _log1pexp_mistake(_stable_value, _ignores_tangent),
        ),
        Mistake(
            "affine_tangent",
            "Your JVP rule is not linear in the tangent (it adds a constant): a JVP maps a "
            "tangent t to (derivative) * t, so t = 0 must give 0. Reverse mode silently "
            "drops the constant, forward mode does not, so the two disagree.",
            _log1pexp_mistake(_stable_value, _affine_tangent),
        ),
        Mistake(
            "wrong_derivative",
            "The derivative of log(1 + exp(x)) is exp(x) / (1 + exp(x)) = sigmoid(x), "
            "not sigmoid(-x).",
            _log1pexp_mistake(_stable_value, _wrong_derivative),
        ),
    ),
    hints_by_kind={
        "exception": EXCEPTION_HINT,
        "error": EXCEPTION_HINT,
        **_primal_hints(("jvp_primal", "vjp_primal"), RULE_PRIMAL_HINT),
        "value": "Right shape, wrong numbers: log1pexp(x) is log(1 + exp(x)), and its JVP rule "
        "returns (log1pexp(x), jax.nn.sigmoid(x) * t).",
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
    jax = _jax()

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
    return _learner("clip_gradient", "lo, hi, x", lambda: _clip_learner(forward(), backward()))


def _identity() -> Any:
    return lambda lo, hi, x: x


def _clipped_cotangent() -> Any:
    jnp = _jax().numpy
    return lambda lo, hi, g: jnp.clip(g, lo, hi)


def _clips_primal(lo: float, hi: float, x: Any) -> Any:
    return _jax().numpy.clip(x, lo, hi)


def _clip_ones() -> Any:
    jnp = _jax().numpy
    return lambda lo, hi, g: jnp.clip(jnp.ones_like(g), lo, hi)


def _clip_symmetric() -> Any:
    jnp = _jax().numpy
    return lambda lo, hi, g: jnp.clip(g, -hi, hi)


def _clip_by_norm() -> Any:
    jnp = _jax().numpy
    return lambda lo, hi, g: g * jnp.minimum(1.0, hi / jnp.maximum(jnp.linalg.norm(g), 1e-12))


CLIP_GRADIENT = Exercise(
    name="clip_gradient",
    returns="x, whose cotangent is clipped to [lo, hi]",
    outputs=("value", "vjp_primal", "vjp", "vmap_vjp", "chained_grad"),
    strategy=_clip_case,
    edge_cases=_clip_edges,
    tf_reference=_clip_tf,
    jax_reference=_clip_jax,
    references_text=(
        "jnp.clip of JAX's own cotangents, and a tf.custom_gradient twin under tf.GradientTape"
    ),
    invoke=CLIP_INVOKE,
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "clips_primal",
            "You clipped the VALUE x going forward. clip_gradient returns x unchanged; only "
            "the cotangent flowing backward is clipped, in bwd.",
            _clips_primal,
        ),
        Mistake(
            "ignores_cotangent",
            "bwd must clip the incoming cotangent g itself (jnp.clip(g, lo, hi)); your "
            "result does not depend on g.",
            _clip_mistake(_identity, _clip_ones),
        ),
        Mistake(
            "clip_by_norm",
            "This exercise clips each element of the cotangent to [lo, hi] (jnp.clip), "
            "not its norm.",
            _clip_mistake(_identity, _clip_by_norm),
        ),
        Mistake(
            "symmetric_clip",
            "Your cotangent is clipped to a symmetric range [-hi, hi]. The bounds are lo and "
            "hi as given, and lo need not be -hi: jnp.clip(g, lo, hi).",
            _clip_mistake(_identity, _clip_symmetric),
        ),
    ),
    hints_by_kind={
        "exception": EXCEPTION_HINT,
        "error": EXCEPTION_HINT,
        **_primal_hints(("vjp_primal",), FWD_PRIMAL_HINT),
        "value": "Going forward clip_gradient is the identity; bwd returns "
        "(jnp.clip(g, lo, hi),), the clipped cotangent, and nothing for lo and hi.",
    },
)



EXERCISES = (LOG1PEXP, CLIP_GRADIENT)

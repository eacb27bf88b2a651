"""Chapter 05 exercises: custom derivatives in JAX.

* `log1pexp(x)`: a stable softplus with a `jax.custom_jvp` rule (checked to second order);
* `clip_gradient(lo, hi, x)`: the identity going forward, a clipped cotangent going backward
  (`jax.custom_vjp`, or `jax.custom_gradient`);
* `fixed_point(a)`: the root of x = a / (1 + x), differentiated implicitly (`jax.custom_vjp`);
* `bessel_i0(x)`: numpy's `np.i0` called through `jax.pure_callback`, made differentiable by a
  `jax.custom_jvp` rule.

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
FIXED_POINT_INVOKE = "ch05_custom_derivatives_jax:invoke_fixed_point"
BESSEL_INVOKE = "ch05_custom_derivatives_jax:invoke_bessel_i0"

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
BESSEL_RULE_PRIMAL_HINT = (
    "The primal output of your JVP rule (the first value it returns) is not bessel_i0(x): "
    "jax.jvp and jax.grad take the primal from the rule, not from the function. Return "
    "bessel_i0(x) itself from the rule."
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


# ---------------------------------------------------------------- fixed_point (custom_vjp)


# The map contracts by x / (1 + x) per iteration, 0.905 at a = 100: the notebook's 300
# iterations still reach float64 precision there (0.905**300 = 1e-13), while a backward pass
# that iterates too few times (40: 0.905**40 = 0.02) is far off. Larger a would need more
# iterations of the given solver.
FIXED_POINT_LARGEST_A = 100.0


@st.composite
def _fixed_point_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(_dtype_and_shape(profile))
    a = draw(_between(dtype, shape, 0.0625, FIXED_POINT_LARGEST_A))
    g = draw(float_arrays(dtype, shape))
    return Case((("a", a), ("g", g)))


def _fixed_point_edges() -> list[Case]:
    rng = np.random.default_rng(7)
    points = [
        ([2.0, 6.0, 12.0, 0.75, 3.75, 20.0], np.float32, "a = x(1 + x) for x = 1, 2, 3, ..."),
        ([0.05, 0.5, 1.0, 5.0, 10.0, 20.0], np.float64, "small and large a, float64"),
        ([0.5], np.float32, "a single element"),
        ([30.0, 45.0, 60.0, 75.0, 90.0, 100.0], np.float64,
         "large a, where the map contracts slowly"),
        ([25.0, 40.0, 55.0, 70.0, 85.0, 100.0], np.float32, "large a, float32"),
    ]
    return [
        Case((("a", np.asarray(a, dtype)), ("g", _rng_vector(rng, len(a), dtype))), label=label)
        for a, dtype, label in points
    ]


def _fixed_point_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    a, g = (tf.constant(v) for v in case.values())
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(a)
        x = 2 * a / (1 + tf.sqrt(1 + 4 * a))
    vjp = tape.gradient(x, a, output_gradients=g)
    return x.numpy(), x.numpy(), vjp.numpy(), tape.gradient(x, a).numpy()


def _fixed_point_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy

    def closed_form(a: Any) -> Any:  # the root of x**2 + x - a = 0, without cancellation
        return 2 * a / (1 + jnp.sqrt(1 + 4 * a))

    a, g = arrays["a"], arrays["g"]
    x, vjp_fn = jax.vjp(closed_form, a)
    return x, x, vjp_fn(g)[0], _elementwise(jax, jax.grad(closed_form), a)


FIXED_POINT_ITERATIONS = 300


def _fixed_point_learner(backward: Any) -> Any:
    """A learner's fixed_point: the given solver, residuals (a, x), and `backward`."""
    jax = _jax()
    jnp = jax.numpy

    def solve(a: Any) -> Any:
        return jax.lax.fori_loop(
            0, FIXED_POINT_ITERATIONS, lambda i, x: a / (1 + x), jnp.zeros_like(a)
        )

    @jax.custom_vjp
    def fixed_point(a: Any) -> Any:
        return solve(a)

    def fwd(a: Any) -> Any:
        x = solve(a)
        return x, (a, x)

    def bwd(residuals: Any, g: Any) -> Any:
        a, x = residuals
        return (backward(a, x, g),)

    fixed_point.defvjp(fwd, bwd)
    return fixed_point


def _fixed_point_mistake(backward: Any) -> Any:
    return _learner("fixed_point", "a", lambda: _fixed_point_learner(backward))


FIXED_POINT = Exercise(
    name="fixed_point",
    returns="x with x = a / (1 + x), a jax.custom_vjp function",
    outputs=("value", "vjp_primal", "vjp", "grad"),
    strategy=_fixed_point_case,
    edge_cases=_fixed_point_edges,
    tf_reference=_fixed_point_tf,
    jax_reference=_fixed_point_jax,
    references_text=(
        "JAX's and TensorFlow's derivatives of the closed form x = 2a / (1 + sqrt(1 + 4a))"
    ),
    invoke=FIXED_POINT_INVOKE,
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "missing_factor",
            "You returned g * df/da only. x itself depends on a, so the implicit function "
            "theorem divides by (1 - df/dx): the cotangent of a is g * (df/da) / (1 - df/dx), with "
            "df/da = 1 / (1 + x) and df/dx = -a / (1 + x)**2.",
            _fixed_point_mistake(lambda a, x, g: g / (1 + x)),
        ),
        Mistake(
            "sign_of_dfdx",
            "Check the sign of df/dx: for f(a, x) = a / (1 + x), df/dx = -a / (1 + x)**2, so "
            "1 - df/dx = 1 + a / (1 + x)**2.",
            _fixed_point_mistake(lambda a, x, g: g / (1 + x) / (1 - a / (1 + x) ** 2)),
        ),
        Mistake(
            "ignores_cotangent",
            "bwd must multiply the incoming cotangent g; your result does not depend on it.",
            _fixed_point_mistake(lambda a, x, g: 0 * g + 1 / (1 + x) / (1 + a / (1 + x) ** 2)),
        ),
    ),
    hints_by_kind={
        "exception": EXCEPTION_HINT,
        "error": EXCEPTION_HINT,
        **_primal_hints(("vjp_primal",), FWD_PRIMAL_HINT),
        "value": "From x = f(a, x): dx = df/da da + df/dx dx, so dx/da = (df/da) / (1 - df/dx); "
        "the VJP multiplies the cotangent g by that.",
    },
)


# ---------------------------------------------------------------- bessel_i0 (pure_callback)


@st.composite
def _bessel_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(_dtype_and_shape(profile))
    magnitude = draw(_between(dtype, shape, 0.25, 8.0))
    signs = draw(hnp.arrays(dtype, shape, elements=st.sampled_from([-1.0, 1.0])))
    x = (magnitude * signs).astype(dtype)
    t = draw(float_arrays(dtype, shape))
    return Case((("x", x), ("t", t)))


def _bessel_edges() -> list[Case]:
    rng = np.random.default_rng(8)
    points = [
        ([-8.0, -1.0, 0.25, 0.5, 3.0, 8.0], np.float32, "from -8 to 8, float32"),
        ([-5.0, -0.25, 0.25, 1.0, 2.0, 6.0], np.float64, "float64"),
    ]
    return [
        Case((("x", np.asarray(x, dtype)), ("t", _rng_vector(rng, len(x), dtype))), label=label)
        for x, dtype, label in points
    ]


def _bessel_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, t = (tf.constant(v) for v in case.values())
    i0 = tf.math.special.bessel_i0
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")  # bessel_i1's gradient warns that it uses a deprecated `div`
    try:
        return _bessel_tf_outputs(tf, i0, x, t)
    finally:
        logger.setLevel(level)


def _bessel_tf_outputs(tf: Any, i0: Any, x: Any, t: Any) -> tuple[np.ndarray, ...]:
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = i0(x)
        grad = inner.gradient(y, x)
    second = outer.gradient(grad, x)
    with tf.autodiff.ForwardAccumulator(x, t) as accumulator:
        y_forward = i0(x)
    return (y.numpy(), y_forward.numpy(), accumulator.jvp(y_forward).numpy(), grad.numpy(),
            second.numpy())


# I0(x) = (1 / 2pi) * integral over [0, 2pi) of exp(x cos(theta)): the integrand is periodic
# and smooth, so the mean over equally spaced theta converges faster than any power (48
# points reach float64 precision for |x| <= 8), every term is positive, and the program is
# one broadcast exp and a mean, cheap to compile and to differentiate twice.
I0_POINTS = 48


def _bessel_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy
    cosines = np.cos(2 * np.pi * np.arange(I0_POINTS) / I0_POINTS)

    def i0(v: Any) -> Any:
        terms = jnp.exp(v.astype(jnp.float64)[..., None] * cosines)
        return jnp.mean(terms, axis=-1).astype(v.dtype)

    x, t = arrays["x"], arrays["t"]
    y, jvp = jax.jvp(i0, (x,), (t,))
    return (y, y, jvp, _elementwise(jax, jax.grad(i0), x),
            _elementwise(jax, jax.grad(jax.grad(i0)), x))


def _bessel_learner(tangent: Any) -> Any:
    jax = _jax()

    @jax.custom_jvp
    def bessel_i0(x: Any) -> Any:
        shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.pure_callback(
            lambda v: np.i0(v).astype(v.dtype), shape, x, vmap_method="expand_dims"
        )

    @bessel_i0.defjvp
    def bessel_i0_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return bessel_i0(x), tangent(bessel_i0, x, t)

    return bessel_i0


def _bessel_mistake(tangent: Any) -> Any:
    return _learner("bessel_i0", "x", lambda: _bessel_learner(tangent))


def _i1(x: Any) -> Any:
    return _jax().scipy.special.i1(x)


BESSEL_I0 = Exercise(
    name="bessel_i0",
    returns="np.i0(x) through jax.pure_callback, with a jax.custom_jvp rule",
    outputs=("value", "jvp_primal", "jvp", "grad", "second_derivative"),
    strategy=_bessel_case,
    edge_cases=_bessel_edges,
    tf_reference=_bessel_tf,
    jax_reference=_bessel_jax,
    references_text=(
        "JAX's derivatives of I0's integral (mean of exp(x cos t)) and TensorFlow's of "
        "tf.math.special.bessel_i0 (value, JVP, vmap of grad, second derivative)"
    ),
    invoke=BESSEL_INVOKE,
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "ignores_tangent",
            "The tangent output must be the derivative TIMES the input tangent t: "
            "jax.scipy.special.i1(x) * t.",
            _bessel_mistake(lambda f, x, t: _i1(x) + 0 * t),
        ),
        Mistake(
            "derivative_is_i0",
            "The derivative of I0 is I1 (jax.scipy.special.i1), not I0 itself "
            "(that would be exp).",
            _bessel_mistake(lambda f, x, t: f(x) * t),
        ),
        Mistake(
            "wrong_sign",
            "I0 is even, so its derivative I1 is odd: i1(-x) = -i1(x). Use i1(x) itself, "
            "not i1(|x|).",
            _bessel_mistake(lambda f, x, t: _i1(_jax().numpy.abs(x)) * t),
        ),
    ),
    hints_by_kind={
        "exception": EXCEPTION_HINT,
        "error": EXCEPTION_HINT,
        **_primal_hints(("jvp_primal",), BESSEL_RULE_PRIMAL_HINT),
        "value": "Right shape, wrong numbers: the value is np.i0(x), and the JVP rule returns "
        "(bessel_i0(x), jax.scipy.special.i1(x) * t); i1 is differentiable in JAX, so the "
        "second derivative follows.",
        "dtype": "np.i0 may return another dtype than x: cast inside the callback "
        "(np.i0(v).astype(v.dtype)) and declare jax.ShapeDtypeStruct(x.shape, x.dtype).",
    },
)

EXERCISES = (LOG1PEXP, CLIP_GRADIENT, FIXED_POINT, BESSEL_I0)

"""Chapter 06 exercises: implicit differentiation and callbacks in JAX.

* `fixed_point(a)`: the root of x = a / (1 + x), differentiated implicitly (`jax.custom_vjp`);
* `bessel_i0e(x)`: exp(-|x|) * I0(x), a numpy routine called through `jax.pure_callback`, made
  differentiable by a `jax.custom_jvp` rule whose derivative the learner derives (product rule;
  the notebook shows I0' = I1 only);
* `remat_net(w, x)`: the notebook's net with `jax.checkpoint`, within a memory budget.

Each exercise's invoke (autograder/harness/ch06_implicit_callbacks_checkpointing.py) runs the
learner's function under `jax.jit`, `jax.jvp`/`jax.vjp`, `jax.vmap` and `jax.grad` and returns
numpy arrays; the case builders, learner-function builders, hints and elementwise references
are shared with chapter 05 (autograder/exercises/common.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.exercises.common import (
    FWD_PRIMAL_HINT,
    between,
    built_learner,
    custom_jvp_learner,
    edges_at,
    elementwise_cases,
    elementwise_references,
    jax_elementwise,
    jax_hints,
    lazy_jax,
    primal_hints,
    tf_elementwise,
)
from autograder.judging.cases import Case, Profile, dtype_and_shape, float_arrays
from autograder.judging.derived import two_references
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction

FRAMEWORKS = ("jax",)


# ---------------------------------------------------------------- fixed_point (custom_vjp)


# The map contracts by x / (1 + x) per iteration, 0.905 at a = 100: the notebook's 300
# iterations still reach float64 precision there (0.905**300 = 1e-13), while a backward pass
# that iterates too few times (40: 0.905**40 = 0.02) is far off. Larger a would need more
# iterations of the given solver.
FIXED_POINT_LARGEST_A = 100.0
# One edge point beyond it, in float64, where the given solver's 300 iterations still give x*
# within the tolerance (at 0.27 of it) but the derivative OF THE LOOP is not yet the derivative
# of x* (its error shrinks like n * 0.93**n, x's like 0.93**n): a bwd that differentiates the
# unrolled solver is 6 times the tolerance off there, the implicit formula at 0.01 of it, and
# u = g + (df/dx) u iterated 300 times at 0.14 of it.
FIXED_POINT_UNROLLED_APART = 175.0
FIXED_POINT_ITERATIONS = 300


def _solve(a: Any) -> Any:
    """The notebook's given solver: FIXED_POINT_ITERATIONS of x <- a / (1 + x) from 0."""
    jax = lazy_jax()
    return jax.lax.fori_loop(
        0, FIXED_POINT_ITERATIONS, lambda i, x: a / (1 + x), jax.numpy.zeros_like(a)
    )


def _unrolled(a: Any, x: Any, g: Any) -> Any:
    """bwd as reverse mode through the solver's loop: the derivative of 300 iterations."""
    return lazy_jax().vjp(_solve, a)[1](g)[0]


def _fixed_point(backward: Callable[[Any, Any, Any], Any]) -> Callable[..., Any]:
    """A learner's fixed_point: the given solver, residuals (a, x), and `backward(a, x, g)`."""

    def build() -> Callable[..., Any]:
        fixed_point = lazy_jax().custom_vjp(_solve)

        def fwd(a: Any) -> Any:
            x = _solve(a)
            return x, (a, x)

        fixed_point.defvjp(fwd, lambda residuals, g: (backward(*residuals, g),))
        return fixed_point

    return built_learner("fixed_point", "a", build)


FIXED_POINT_OUTPUTS = ("value", "vjp_primal", "vjp", "grad")

FIXED_POINT = Exercise(
    signature="fixed_point(a) -> x with x = a / (1 + x), a jax.custom_vjp function",
    nudge=(
        "Do not differentiate the solver's loop. Differentiate the equation the solution satisfies,"
        " at the solution, and solve for how x moves when a moves: the implicit function theorem."
    ),
    outputs=FIXED_POINT_OUTPUTS,
    cases=elementwise_cases(
        a=lambda dtype, shape: between(dtype, shape, 0.0625, FIXED_POINT_LARGEST_A), g=10.0
    ),
    edges=lambda: edges_at(
        7,
        "a",
        [
            ([2.0, 6.0, 12.0, 0.75, 3.75, 20.0], np.float32, "a = x(1 + x) for x = 1, 2, 3, ..."),
            ([0.05, 0.5, 1.0, 5.0, 10.0, 20.0], np.float64, "small and large a, float64"),
            ([0.5], np.float32, "a single element"),
            (
                [30.0, 60.0, 90.0, 100.0, 140.0, FIXED_POINT_UNROLLED_APART],
                np.float64,
                "large a, where the map contracts slowly",
            ),
            ([25.0, 40.0, 55.0, 70.0, 85.0, 100.0], np.float32, "large a, float32"),
        ],
        "g",
    ),
    # The root of x**2 + x - a = 0, without cancellation.
    reference=elementwise_references(
        tf=lambda tf: lambda a: 2 * a / (1 + tf.sqrt(1 + 4 * a)),
        jax=lambda jax: lambda a: 2 * a / (1 + jax.numpy.sqrt(1 + 4 * a)),
        outputs=FIXED_POINT_OUTPUTS,
        wrt="a",
        why=(
            "more than one VJP: the value twice, the VJP with g and the per-element gradient "
            "(a second tape.gradient; jax.grad through jax.vmap) of the closed form"
        ),
    ),
    references_text=(
        "JAX's and TensorFlow's derivatives of the closed form x = 2a / (1 + sqrt(1 + 4a))"
    ),
    invoke="ch06_implicit_callbacks_checkpointing:invoke_fixed_point",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "missing_factor",
            "You returned g * df/da only. x itself depends on a, so the "
            "implicit function theorem divides by (1 - df/dx): the cotangent of a is g * "
            "(df/da) / (1 - df/dx), both partial derivatives of f(a, x) = a / (1 + x) taken "
            "at the solution.",
            _fixed_point(lambda a, x, g: g / (1 + x)),
        ),
        Mistake(
            "sign_of_dfdx",
            "Check the sign of df/dx: for f(a, x) = a / (1 + x), df/dx = -a / "
            "(1 + x)**2, so 1 - df/dx = 1 + a / (1 + x)**2.",
            _fixed_point(lambda a, x, g: g / (1 + x) / (1 - a / (1 + x) ** 2)),
        ),
        Mistake(
            "ignores_cotangent",
            "bwd must multiply the incoming cotangent g; your result does not depend on it.",
            _fixed_point(lambda a, x, g: 0 * g + 1 / (1 + x) / (1 + a / (1 + x) ** 2)),
        ),
        Mistake(
            "unrolled_loop",
            "Your derivative is that of the solver's loop (reverse mode "
            "through solve's 300 iterations), not that of the solution x*: the two differ "
            "where the loop converges slowly (large a), and the loop's derivative keeps every"
            " iteration's residuals. Differentiate the equation x = f(a, x) at the solution "
            "instead: bwd needs only the residuals a and x, and the partial derivatives of "
            "f(a, x) = a / (1 + x) there.",
            _fixed_point(_unrolled),
        ),
    ),
    hints_by_kind=jax_hints(
        primal_hints(("vjp_primal",), FWD_PRIMAL_HINT),
        value="From x = f(a, x): dx = df/da da + df/dx dx, so dx/da = (df/da) / (1 - df/dx); "
        "the VJP multiplies the cotangent g by that.",
    ),
)


# ---------------------------------------------------------------- bessel_i0e (pure_callback)


@st.composite
def _signed(draw: st.DrawFn, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """x with 0.25 <= |x| <= 8, each element's sign drawn (|x| is not differentiable at 0)."""
    magnitude = draw(between(dtype, shape, 0.25, 8.0))
    signs = draw(hnp.arrays(dtype, shape, elements=st.sampled_from([-1.0, 1.0])))
    return (magnitude * signs).astype(dtype)


BESSEL_OUTPUTS = ("value", "jvp_primal", "jvp", "grad", "second_derivative")


def _bessel_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")  # bessel_i1e's gradient warns that it uses a deprecated `div`
    try:
        return tf_elementwise(tf, tf.math.special.bessel_i0e, BESSEL_OUTPUTS, case)
    finally:
        logger.setLevel(level)


# i0e(x) = exp(-|x|) I0(x) = (1 / 2pi) * integral over [0, 2pi) of exp(x cos(theta) - |x|):
# the integrand is periodic and smooth, so the mean over equally spaced theta converges
# faster than any power (48 points reach float64 precision for |x| <= 8), every term is
# positive and at most 1, and the program is one broadcast exp and a mean, cheap to compile
# and to differentiate twice (|x| is differentiable away from 0, where no case lies).
I0_POINTS = 48


def _bessel_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy
    cosines = np.cos(2 * np.pi * np.arange(I0_POINTS) / I0_POINTS)

    def i0e(v: Any) -> Any:
        wide = v.astype(jnp.float64)[..., None]
        return jnp.mean(jnp.exp(wide * cosines - jnp.abs(wide)), axis=-1).astype(v.dtype)

    return jax_elementwise(jax, i0e, BESSEL_OUTPUTS, arrays)


def external_i0e(v: np.ndarray) -> np.ndarray:
    """The notebook's numpy routine: exp(-|x|) I0(x), in v's dtype."""
    return (np.exp(-np.abs(v)) * np.i0(v)).astype(v.dtype)


def _callback(jax: Any, x: Any) -> Any:
    shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.pure_callback(external_i0e, shape, x, vmap_method="expand_dims")


def _bessel(tangent: Callable[..., Any]) -> Callable[..., Any]:
    """A learner's bessel_i0e: the callback, and `tangent(special, f, x, t)` in its JVP rule
    (special: jax.scipy.special)."""
    return custom_jvp_learner(
        "bessel_i0e", _callback, lambda jax, f, x, t: tangent(jax.scipy.special, f, x, t)
    )


PRODUCT_RULE_HINT = (
    "i0e(x) = exp(-|x|) * I0(x) is a product: differentiate both factors. I0' = I1 gives "
    "exp(-|x|) * I1(x), which is i1e(x); the factor exp(-|x|) has the derivative "
    "-sign(x) * exp(-|x|), which gives a second term in i0e(x) itself."
)
BESSEL_RULE_PRIMAL_HINT = (
    "The primal output of your JVP rule (the first value it returns) is not bessel_i0e(x): "
    "jax.jvp and jax.grad take the primal from the rule, not from the function. Return "
    "bessel_i0e(x) itself from the rule."
)

BESSEL_I0E = Exercise(
    signature=(
        "bessel_i0e(x) -> exp(-|x|) * I0(x) through jax.pure_callback, with a jax.custom_jvp rule"
    ),
    nudge=(
        "The callback is opaque to JAX, so the JVP rule is yours. This function is a product of two"
        " factors, each with a known derivative: look at the scaled Bessel functions JAX ships."
    ),
    outputs=BESSEL_OUTPUTS,
    cases=elementwise_cases(x=_signed, t=10.0),
    edges=lambda: edges_at(
        8,
        "x",
        [
            ([-8.0, -1.0, 0.25, 0.5, 3.0, 8.0], np.float32, "from -8 to 8, float32"),
            ([-5.0, -0.25, 0.25, 1.0, 2.0, 6.0], np.float64, "float64"),
        ],
        "t",
    ),
    reference=two_references(
        tf=_bessel_tf,
        jax=_bessel_jax,
        why=(
            "TensorFlow has I0 (tf.math.special.bessel_i0e), jax.numpy has not: JAX's reference "
            "integrates exp(x cos t) in float64, and the two check each other"
        ),
    ),
    references_text=(
        "JAX's derivatives of i0e's integral (mean of exp(x cos t - |x|)) and TensorFlow's of "
        "tf.math.special.bessel_i0e (value, JVP, vmap of grad, second derivative)"
    ),
    invoke="ch06_implicit_callbacks_checkpointing:invoke_bessel_i0e",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "ignores_tangent",
            "The tangent output must be the derivative TIMES the input "
            "tangent t, not the derivative alone.",
            _bessel(lambda s, f, x, t: s.i1e(x) - lazy_jax().numpy.sign(x) * f(x) + 0 * t),
        ),
        Mistake(
            "derivative_of_i0",
            "jax.scipy.special.i1 is the derivative of I0, the unscaled "
            "function. This one is exp(-|x|) * I0(x): " + PRODUCT_RULE_HINT.split(": ", 1)[1],
            _bessel(lambda s, f, x, t: s.i1(x) * t),
        ),
        Mistake(
            "scale_not_differentiated", PRODUCT_RULE_HINT, _bessel(lambda s, f, x, t: s.i1e(x) * t)
        ),
        Mistake(
            "derivative_of_abs_is_one",
            "The derivative of |x| is sign(x): -1 for negative x, "
            "not 1. Your rule is right for x > 0 only.",
            _bessel(lambda s, f, x, t: (s.i1e(x) - f(x)) * t),
        ),
    ),
    hints_by_kind=jax_hints(
        primal_hints(("jvp_primal",), BESSEL_RULE_PRIMAL_HINT),
        value="Right shape, wrong numbers: the value is external_i0e(x), and the tangent "
        "output is i0e's derivative times t. " + PRODUCT_RULE_HINT,
        dtype="np.i0 may return another dtype than x: cast inside the callback "
        "(external_i0e(v).astype(v.dtype)) and declare jax.ShapeDtypeStruct(x.shape, x.dtype).",
    ),
)


# ---------------------------------------------------------------- remat_net (jax.checkpoint)


# The notebook's net: REMAT_DEPTH layers h <- tanh(h @ w), loss sum(h ** 2); the harness checks
# the memory budget (its MAX_RESIDUALS, MAX_PIECE, MAX_LAYER_RUNS): at most 4 arrays kept by
# the pullback, no checkpointed piece of more than 3 layers, each layer recomputed at most once.
# The references checkpoint the net in two halves of 3 layers, a placement within the budget.
REMAT_HALF = 3
REMAT_DEPTH = 6
# (rows of x, width): w is (width, width); each shape in one dtype.
REMAT_SHAPES = ((1, 3), (4, 2), (2, 5))
REMAT_GRADING = ((3, 4), (5, 3))


@st.composite
def _remat_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, (rows, width) = draw(dtype_and_shape(profile, REMAT_SHAPES, REMAT_GRADING))
    w = draw(float_arrays(dtype, (width, width), bound=1.0))
    x = draw(float_arrays(dtype, (rows, width), bound=2.0))
    g = draw(st.floats(-3.0, 3.0, allow_nan=False, width=32))  # the loss's cotangent: a float
    return Case((("w", w), ("x", x), ("g", g)))


def _remat_edges() -> list[Case]:
    rng = np.random.default_rng(10)
    shapes = [
        ((4, 2), np.float64, "four rows of two, float64"),
        ((1, 3), np.float32, "one row, float32"),
    ]
    return [
        Case(
            (
                ("w", rng.uniform(-1, 1, (width, width)).round(2).astype(dtype)),
                ("x", rng.uniform(-2, 2, (rows, width)).round(2).astype(dtype)),
                ("g", round(float(rng.uniform(-3, 3)), 2)),
            ),
            label=label,
        )
        for (rows, width), dtype, label in shapes
    ]


def _remat_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    w_np, x_np, g_value = case.values()
    w, x = tf.constant(w_np), tf.constant(x_np)
    g = tf.constant(g_value, dtype=x.dtype)

    def half(w: Any, h: Any) -> Any:
        for _ in range(REMAT_HALF):
            h = tf.tanh(h @ w)
        return h

    with tf.GradientTape() as tape:
        tape.watch([w, x])
        y = tf.reduce_sum(tf.recompute_grad(half)(w, tf.recompute_grad(half)(w, x)) ** 2)
    g_w, g_x = tape.gradient(y, [w, x], output_gradients=g)
    return y.numpy(), y.numpy(), g_w.numpy(), g_x.numpy()


def _remat_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy

    @jax.checkpoint
    def half(w: Any, h: Any) -> Any:
        for _ in range(REMAT_HALF):
            h = jnp.tanh(h @ w)
        return h

    def net(w: Any, x: Any) -> Any:
        return jnp.sum(half(w, half(w, x)) ** 2)

    y, pullback = jax.vjp(net, arrays["w"], arrays["x"])
    g = jnp.asarray(params["g"], arrays["x"].dtype)
    return (y, y, *pullback(g))


def _remat(sizes: tuple[int, ...], squared: bool = True) -> Callable[..., Any]:
    """A learner's remat_net: the layers in checkpointed pieces of these sizes, one after the
    other, and the loss sum(h ** 2) (sum(h) if not `squared`)."""

    def build() -> Callable[..., Any]:
        jax = lazy_jax()
        jnp = jax.numpy

        def piece_of(size: int) -> Callable[..., Any]:
            def piece(w: Any, h: Any) -> Any:
                for _ in range(size):
                    h = jnp.tanh(h @ w)
                return h

            return jax.checkpoint(piece)

        def remat_net(w: Any, h: Any) -> Any:
            for size in sizes:
                h = piece_of(size)(w, h)
            return jnp.sum(h**2) if squared else jnp.sum(h)

        return remat_net

    return built_learner("remat_net", "w, x", build)


REMAT_NET = Exercise(
    signature=(
        "remat_net(w, x) -> the net's loss, whose backward pass keeps at most 4 arrays, recomputes"
        " no checkpointed piece of more than 3 layers, and each layer at most once"
    ),
    nudge=(
        "A checkpointed piece keeps only its inputs and recomputes the rest in the backward pass. "
        "How many pieces, of how many layers, meet both limits of the statement?"
    ),
    outputs=("value", "vjp_primal", "g_w", "g_x"),
    cases=_remat_case,
    edges=_remat_edges,
    reference=two_references(
        tf=_remat_tf,
        jax=_remat_jax,
        why="checkpointing is each framework's own (tf.recompute_grad, jax.checkpoint)",
    ),
    references_text="the same net checkpointed within the budget, with TensorFlow's "
    "tf.recompute_grad and with JAX's jax.checkpoint",
    invoke="ch06_implicit_callbacks_checkpointing:invoke_remat_net",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "one_layer_short",
            "The value is off: the net applies its layer 6 times (range(6)), as net does.",
            _remat((REMAT_HALF, REMAT_HALF - 1)),
        ),
        Mistake(
            "loss_not_squared",
            "The loss is sum(h ** 2), the squares of the last layer's outputs, as in net.",
            _remat((REMAT_HALF, REMAT_HALF), squared=False),
        ),
    ),
    hints_by_kind=jax_hints(
        value="Right shape, wrong numbers: remat_net must compute exactly what net computes "
        "(jax.checkpoint changes what is saved, never the value or the derivative).",
    ),
)


EXERCISES = (FIXED_POINT, BESSEL_I0E, REMAT_NET)

PREDICTIONS = (
    Prediction(
        name="ch06_unrolled_or_implicit",
        question="After only 5 iterations of the solver, which derivative of x* with respect "
        "to a is closer to the exact one?",
        choices={
            "a": "the unrolled one: it differentiates exactly what was computed",
            "b": "the implicit one",
            "c": "neither: both are as far off as the solution itself",
        },
        answer="b",
        why="The unrolled loop gives the derivative of the 5-step loop, not of x*; the "
        "implicit formula is the derivative of x* (from the equation x* = f(a, x*)), only "
        "evaluated at an iterate that is not quite x*.",
    ),
    Prediction(
        name="ch06_while_loop_reverse",
        question="solve_until_converged runs x <- a / (1 + x) in a lax.while_loop until two "
        "iterates agree to 1e-6, so the number of iterations is known only once it has run. "
        "What does jax.grad(solve_until_converged)(2.0) do?",
        choices={
            "a": "it differentiates through every iteration, as it does for lax.fori_loop",
            "b": "it raises an error",
            "c": "it returns 0: the loop is treated as a constant",
        },
        answer="b",
        why="Reverse mode must keep the residuals of every iteration and replay them "
        "backward, so it needs the trip count when it traces; a while_loop's is decided by "
        "its values. JAX refuses (forward mode, jax.jvp, works: it needs no history).",
    ),
    Prediction(
        name="ch06_checkpoint_saved_residuals",
        question="The block takes two arrays, w and x, and computes two tanh layers from "
        "them. How many arrays does the backward pass of jax.checkpoint(block) save?",
        answer=2.0,
        rel_tolerance=0.01,
        why="Only the block's inputs, w and x: everything inside is recomputed from them "
        "during the backward pass.",
    ),
    Prediction(
        name="ch06_checkpoint_policy_dots",
        question="jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable): the "
        "policy lets the backward pass keep the outputs of matrix products (w @ x, w @ h) and "
        "nothing else computed inside. How many arrays does it save in all?",
        answer=4.0,
        rel_tolerance=0.01,
        why="The inputs w and x, and the two matrix products; each tanh, and the derivative "
        "of each, is recomputed from a saved product during the backward pass.",
    ),
    Prediction(
        name="ch06_sqrt_n_segments",
        question="A chain of n = 64 steps is cut into segments of k steps, each segment "
        "checkpointed: its input is kept, and during the backward pass its k steps run again "
        "and keep their residuals until its backward pass is done. For which k does the "
        "backward pass need the least memory?",
        answer=8.0,
        rel_tolerance=0.01,
        why="It keeps n / k segment inputs, plus the k residuals of the segment being "
        "differentiated: n / k + k is smallest at k = sqrt(n) = 8, where it is 2 sqrt(n) "
        "instead of n.",
    ),
)

"""Chapter 05 exercises: custom derivatives in JAX.

* `soft_threshold(x)`: sign(x) * max(|x| - 1, 0) with a `jax.custom_jvp` rule that fixes the
  derivative at the kinks x = +-1 (0 there: the dead zone [-1, 1] includes its ends), where
  JAX's derivative of the composed formula is 0.5 (a tie in `jnp.maximum`) and TensorFlow's 1;
* `softmax_entropy(logits)`: the entropy of each row's softmax, with a `jax.custom_vjp` (or
  custom_jvp) rule the learner derives, finite for logits of +-1000 where the naive formula and
  its derivative are NaN;
* `argmax_ste(logits)`: a straight-through one-hot, written with `jax.lax.stop_gradient`: the
  one-hot of each row's argmax going forward; going backward, a VJP given as a formula (g minus
  its row mean), whose surrogate the learner derives (chapter 04's STE is for `round` with
  `tf.stop_gradient`; the notebook's demo is for `floor` with the identity as surrogate).

Neither of the first two is in the JAX custom-derivatives tutorial (whose worked examples,
`log1pexp` and `clip_gradient`, these replace). Their invokes (autograder/harness/
ch05_custom_derivatives_jax.py) refuse, with the values right, a function that has no custom
rule: the values of both can be had from a formula JAX differentiates by itself, and the
exercise is the rule.

The case builders, learner-function builders and hints are shared with chapter 06
(autograder/exercises/common.py).

Each exercise's invoke runs the learner's function under `jax.jit`, `jax.vjp` and, where they
apply, `jax.jvp`, `jax.vmap` and `jax.grad` (twice for the custom_jvp one), and returns numpy
arrays. When JAX refuses a transformation, the invoke raises a ValueError naming the
transformation and the likely mistake (a rule not linear in the tangent, residuals closing over
tracers, a bwd returning the wrong structure, ...). The references are each framework's own
derivatives of a formula with the same derivative (TensorFlow under tapes, JAX under its
transformations); the known wrong answers below are small JAX programs a learner would write,
run through the same invoke.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.exercises.common import (
    ELEMENTWISE_OUTPUTS,
    FWD_PRIMAL_HINT,
    built_learner,
    custom_jvp_learner,
    edges_at,
    elementwise_cases,
    jax_elementwise,
    jax_hints,
    lazy_jax,
    menu_cases,
    primal_hints,
)
from autograder.judging.cases import Case, Profile, Shape, dtype_and_shape, float_arrays
from autograder.judging.derived import two_references
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction

FRAMEWORKS = ("jax",)
Fn = Callable[..., Any]


# ---------------------------------------------------------------- soft_threshold (custom_jvp)


def _kinks_and_between(dtype: np.dtype, shape: Shape) -> st.SearchStrategy[np.ndarray]:
    """x with its elements at the kinks (+-1), at 0, or anywhere in [-3, 3]: a drawn float
    almost never lands on a kink, where the convention is what is checked."""
    elements = st.one_of(
        st.sampled_from([-1.0, 1.0, 0.0]),
        st.floats(-3.0, 3.0, width=dtype.itemsize * 8, allow_subnormal=False),
    )
    return hnp.arrays(dtype, shape, elements=elements, fill=st.nothing())


KINKS = [-2.0, -1.0, -0.5, 0.0, 1.0, 2.0]
SOFT_THRESHOLD_EDGES = [  # x, its dtype, the label; t and g drawn
    (KINKS, np.float32, "the kinks x = +-1 and the dead zone, float32"),
    (KINKS, np.float64, "the kinks x = +-1 and the dead zone, float64"),
    ([-1000.0, -1.25, 0.75, 1.0, 1.25, 1000.0], np.float32, "far from the kinks, and x = 1"),
]


def _soft_threshold_formula(where: Fn, sign: Fn, absolute: Fn, zeros_like: Fn, v: Any) -> Any:
    """A formula with the convention's derivative in both frameworks: where picks 0 (whose
    derivative is 0) on the dead zone, ends included."""
    return where(absolute(v) > 1, v - sign(v), zeros_like(v))


def _soft_threshold_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    """TensorFlow's derivatives of the formula: nested tapes and a ForwardAccumulator; an
    unconnected derivative (where's mask has none) is 0, as JAX gives it."""
    x, t, g = (tf.constant(v) for v in case.values())

    def f(v: Any) -> Any:
        return _soft_threshold_formula(tf.where, tf.sign, tf.abs, tf.zeros_like, v)

    zero = tf.UnconnectedGradients.ZERO
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = f(x)
        grad = tape.gradient(y, x, unconnected_gradients=zero)
    vjp = tape.gradient(y, x, output_gradients=g, unconnected_gradients=zero)
    second = outer.gradient(grad, x, unconnected_gradients=zero)
    with tf.autodiff.ForwardAccumulator(x, t) as accumulator:
        jvp_primal = f(x)
    jvp = accumulator.jvp(jvp_primal, unconnected_gradients=zero)
    return tuple(v.numpy() for v in (y, jvp_primal, jvp, y, vjp, grad, second))


def _soft_threshold_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy

    def f(v: Any) -> Any:
        return _soft_threshold_formula(jnp.where, jnp.sign, jnp.abs, jnp.zeros_like, v)

    return jax_elementwise(jax, f, ELEMENTWISE_OUTPUTS, arrays)


def _composed(jax: Any, x: Any) -> Any:  # the formula as on paper: a tie in maximum at +-1
    jnp = jax.numpy
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - 1, 0)


def _soft_threshold(tangent: Fn) -> Fn:
    """A learner's soft_threshold: the composed value, `tangent(jnp, x, t)` in its JVP rule."""
    return custom_jvp_learner(
        "soft_threshold", _composed, lambda jax, f, x, t: tangent(jax.numpy, x, t)
    )


def _composed_learner() -> Fn:
    """No custom rule: JAX differentiates the composed formula."""
    return built_learner("soft_threshold", "x", lambda: lambda x: _composed(lazy_jax(), x))


ST_RULE_PRIMAL_HINT = (
    "The primal output of your JVP rule (the first value it returns) is not soft_threshold(x): "
    "jax.jvp, jax.vjp and jax.grad take the primal from the rule, not from the function. "
    "Return soft_threshold(x) from the rule."
)
DEAD_ZONE_ENDS = "The exercise puts the ends in the dead zone: a derivative of 0 at x = +-1."

SOFT_THRESHOLD = Exercise(
    signature="soft_threshold(x) -> y, a jax.custom_jvp function with its JVP rule",
    nudge=(
        "Where is the function flat, and where does it rise with slope one? The two kinks belong "
        "to one side by the exercise's convention: say so in the rule, so that the derivative no "
        "longer depends on how the value is written."
    ),
    outputs=ELEMENTWISE_OUTPUTS,
    cases=elementwise_cases(x=_kinks_and_between, t=10.0, g=10.0),
    edges=lambda: edges_at(5, "x", SOFT_THRESHOLD_EDGES, "t", "g"),
    reference=two_references(
        tf=_soft_threshold_tf,
        jax=_soft_threshold_jax,
        why=(
            "the convention's formula, a where whose mask has no derivative: TensorFlow calls "
            "that derivative unconnected (asked for as 0), JAX gives 0"
        ),
    ),
    references_text=(
        "JAX's and TensorFlow's derivatives of where(|x| > 1, x - sign(x), 0) (value, JVP, VJP, "
        "vmap of grad, second derivative)"
    ),
    invoke="ch05_custom_derivatives_jax:invoke_soft_threshold",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "composed_without_rule",
            "Your derivative at x = +-1 is 0.5: there abs(x) - 1 and 0 tie inside jnp.maximum, "
            "and JAX splits a tie between the two arguments half and half. "
            + DEAD_ZONE_ENDS
            + " State it in a jax.custom_jvp rule.",
            _composed_learner(),
        ),
        Mistake(
            "live_ends",
            "Your derivative at x = +-1 is 1: your rule counts the kinks outside the dead zone "
            "(as TensorFlow's derivative of the composed formula does: tf.maximum gives a tie "
            "to its first argument). " + DEAD_ZONE_ENDS,
            _soft_threshold(lambda jnp, x, t: jnp.where(jnp.abs(x) >= 1, t, 0.0)),
        ),
        Mistake(
            "ignores_tangent",
            "The tangent output must be the derivative TIMES the input tangent t, not the "
            "derivative alone.",
            _soft_threshold(lambda jnp, x, t: jnp.where(jnp.abs(x) > 1, 1.0, 0.0) + 0 * t),
        ),
        Mistake(
            "straight_through",
            "Your derivative is 1 inside the dead zone too: soft_threshold is 0 on the whole of "
            "[-1, 1], so its derivative there is 0.",
            _soft_threshold(lambda jnp, x, t: t),
        ),
        Mistake(
            "slope_follows_sign",
            "Your derivative is -1 for x < -1: there soft_threshold(x) is x + 1, which rises with "
            "x, so its slope is +1 on both sides.",
            _soft_threshold(lambda jnp, x, t: jnp.where(jnp.abs(x) > 1, jnp.sign(x) * t, 0.0)),
        ),
    ),
    hints_by_kind=jax_hints(
        primal_hints(("jvp_primal", "vjp_primal"), ST_RULE_PRIMAL_HINT),
        value="Right shape, wrong numbers: soft_threshold(x) is 0 on [-1, 1], x - 1 above it "
        "and x + 1 below it; its JVP rule returns (soft_threshold(x), the derivative times t), "
        "the derivative being 0 at x = +-1.",
        dtype="Keep x's dtype: build constants with jnp.zeros_like(x) or plain Python floats "
        "(weakly typed), not float64 numpy arrays.",
    ),
)


# ---------------------------------------------------------------- softmax_entropy (custom_vjp)


# logits are 2-D (rows of classes), each shape in one dtype: one class (the entropy is 0), a
# row, a block; when grading, more rows, a longer row, two classes. g has one entry per row.
ENTROPY_SHAPES: tuple[Shape, ...] = ((2, 1), (1, 5), (3, 4))
ENTROPY_GRADING: tuple[Shape, ...] = ((6, 3), (1, 9), (4, 2))


def _entropy_cases(profile: Profile) -> st.SearchStrategy[Case]:
    @st.composite
    def cases(draw: st.DrawFn) -> Case:
        dtype, shape = draw(dtype_and_shape(profile, ENTROPY_SHAPES, ENTROPY_GRADING))
        return Case(
            (
                ("logits", draw(float_arrays(dtype, shape, 30.0))),
                ("g", draw(float_arrays(dtype, shape[:-1], 10.0))),
            )
        )

    return cases()


ENTROPY_EDGES = [  # logits, their dtype, the label; g drawn, one per row
    (
        [[1000.0, -1000.0, 0.0, 999.0], [-1000.0, -999.0, -1000.0, -998.0], [3.0, -2.0, 0.5, 1.0]],
        np.float32,
        "logits of +-1000, float32",
    ),
    ([[745.0, 0.0, 0.0, -745.0, 1.0]], np.float64, "logits of +-745, float64"),
    ([[0.5], [-700.0]], np.float32, "one class: the entropy is zero"),
]


def _entropy_edges() -> list[Case]:
    rng = np.random.default_rng(11)
    return [
        Case(
            (
                ("logits", np.asarray(logits, dtype)),
                ("g", np.asarray(rng.uniform(-3, 3, len(logits)).round(2), dtype)),
            ),
            label=label,
        )
        for logits, dtype, label in ENTROPY_EDGES
    ]


def _entropy_formula(softmax: Fn, log_softmax: Fn, total: Fn, v: Any) -> Any:
    return -total(softmax(v) * log_softmax(v))


def _entropy_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    logits, g = (tf.constant(v) for v in case.values())
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        y = _entropy_formula(
            tf.nn.softmax, tf.nn.log_softmax, lambda v: tf.reduce_sum(v, axis=-1), logits
        )
    vjp = tape.gradient(y, logits, output_gradients=g)
    # Row by row, each row's VJP is that row of the whole VJP (each row's entropy is its own).
    rows = tf.stack(
        [
            tape.gradient(y, logits, output_gradients=g * mask)[i]
            for i, mask in enumerate(tf.eye(logits.shape[0], dtype=logits.dtype))
        ]
    )
    return y.numpy(), y.numpy(), vjp.numpy(), rows.numpy()


def _entropy_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    def entropy(v: Any) -> Any:
        return _entropy_formula(
            lambda u: jax.nn.softmax(u, axis=-1),
            lambda u: jax.nn.log_softmax(u, axis=-1),
            lambda u: jax.numpy.sum(u, axis=-1),
            v,
        )

    logits, g = arrays["logits"], arrays["g"]
    y, pullback = jax.vjp(entropy, logits)
    rows = jax.vmap(lambda r, rg: jax.vjp(entropy, r)[1](rg)[0])(logits, g)
    return y, y, pullback(g)[0], rows


def _stable_entropy(jax: Any, v: Any) -> Any:
    p, log_p = jax.nn.softmax(v, axis=-1), jax.nn.log_softmax(v, axis=-1)
    return -jax.numpy.sum(p * log_p, axis=-1)


def _naive_probabilities(jax: Any, v: Any) -> Any:  # as on paper: exp overflows at 1000
    e = jax.numpy.exp(v)
    return e / jax.numpy.sum(e, axis=-1, keepdims=True)


def _naive_entropy(jax: Any, v: Any) -> Any:
    p = _naive_probabilities(jax, v)
    return -jax.numpy.sum(p * jax.numpy.log(p), axis=-1)


def _entropy_cotangent(probabilities: Fn, logs: Fn, sign: float = -1.0, entropy: bool = True):
    """sign * p * (log p + H) * g for each row, from these p and log p (jax, v)."""

    def cotangent(jax: Any, v: Any, g: Any) -> Any:
        p, log_p = probabilities(jax, v), logs(jax, v)
        h = -jax.numpy.sum(p * log_p, axis=-1, keepdims=True) if entropy else 0.0
        return sign * p * (log_p + h) * g[..., None]

    return cotangent


def _softmax(jax: Any, v: Any) -> Any:
    return jax.nn.softmax(v, axis=-1)


def _log_softmax(jax: Any, v: Any) -> Any:
    return jax.nn.log_softmax(v, axis=-1)


def _naive_log(jax: Any, v: Any) -> Any:
    return jax.numpy.log(_naive_probabilities(jax, v))


def _log_of_softmax(jax: Any, v: Any) -> Any:  # a stable softmax, then its log: log(0) at 1000
    return jax.numpy.log(jax.nn.softmax(v, axis=-1))


def _entropy(value: Fn, cotangent: Fn) -> Fn:
    """A learner's softmax_entropy: a custom_vjp, value(jax, v) going forward (fwd too, the
    logits its residuals), cotangent(jax, v, g) the logits' cotangent in bwd."""

    def build() -> Fn:
        jax = lazy_jax()

        @jax.custom_vjp
        def softmax_entropy(logits: Any) -> Any:
            return value(jax, logits)

        def bwd(logits: Any, g: Any) -> tuple[Any]:
            return (cotangent(jax, logits, g),)

        softmax_entropy.defvjp(lambda logits: (value(jax, logits), logits), bwd)
        return softmax_entropy

    return built_learner("softmax_entropy", "logits", build)


ENTROPY_NAN_HINT = (
    "NaN or Inf at the edges: with logits around 1000, exp overflows (inf / inf is NaN), and "
    "where a probability underflows to 0, log(0) * 0 is NaN too. Never take the log of a "
    "probability: compute log p as v - logsumexp(v) (jax.nn.log_softmax), and p as exp(log p), "
    "in the value and in bwd alike."
)

SOFTMAX_ENTROPY = Exercise(
    signature=(
        "softmax_entropy(logits) -> the entropy of softmax(logits) over the last axis, one per "
        "row, a jax.custom_vjp function with its rule"
    ),
    nudge=(
        "Keep every quantity in log space until the last moment, so that nothing overflows or "
        "multiplies zero by infinity. On paper, remember that each probability depends on every "
        "logit of its row; the forward pass can save what the backward pass will need."
    ),
    outputs=("value", "vjp_primal", "vjp", "vmap_vjp"),
    cases=_entropy_cases,
    edges=_entropy_edges,
    reference=two_references(
        tf=_entropy_tf,
        jax=_entropy_jax,
        why=(
            "the VJP of each row on its own: JAX maps a row's VJP with jax.vmap, TensorFlow "
            "masks the cotangent row by row"
        ),
    ),
    references_text=(
        "JAX's and TensorFlow's derivatives of -sum(softmax(v) * log_softmax(v)) over the last "
        "axis (value, VJP, VJP of each row)"
    ),
    invoke="ch05_custom_derivatives_jax:invoke_softmax_entropy",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "naive_both",
            ENTROPY_NAN_HINT,
            _entropy(_naive_entropy, _entropy_cotangent(_naive_probabilities, _naive_log)),
        ),
        Mistake(
            "log_of_probabilities",
            ENTROPY_NAN_HINT,
            _entropy(_stable_entropy, _entropy_cotangent(_softmax, _log_of_softmax)),
        ),
        Mistake(
            "misses_the_shared_term",
            "Your cotangent misses the part every class of a row shares: a probability depends on "
            "every logit of its row (the derivative of p_j with respect to v_i is "
            "p_j * (delta_ij - p_i)), so the entropy's derivative is -p * (log p + H), H the "
            "row's entropy, not -p * log p.",
            _entropy(_stable_entropy, _entropy_cotangent(_softmax, _log_softmax, entropy=False)),
        ),
        Mistake(
            "wrong_sign",
            "Your cotangent has the wrong sign: the entropy is MINUS sum(p * log p), and the "
            "minus stays in its derivative.",
            _entropy(_stable_entropy, _entropy_cotangent(_softmax, _log_softmax, sign=1.0)),
        ),
        Mistake(
            "ignores_cotangent",
            "Your cotangent of the logits does not depend on g: bwd must multiply each row's "
            "derivative by that row's entry of the incoming cotangent g.",
            _entropy(
                _stable_entropy,
                lambda jax, v, g: _entropy_cotangent(_softmax, _log_softmax)(
                    jax, v, jax.numpy.ones_like(g)
                ),
            ),
        ),
    ),
    hints_by_kind=jax_hints(
        primal_hints(("vjp_primal",), FWD_PRIMAL_HINT),
        value="Right shape, wrong numbers: the entropy of a row is -sum(p * log p), p its "
        "softmax; bwd returns one cotangent per logit, each row's times that row's g.",
        nonfinite=ENTROPY_NAN_HINT,
        shape="softmax_entropy gives one number per row (the last axis summed away), and bwd "
        "one cotangent per logit: expand g with g[..., None] before multiplying.",
        dtype="Keep the logits' dtype: build constants with jnp.zeros_like or plain Python "
        "floats (weakly typed), not float64 numpy arrays.",
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


EXERCISES = (SOFT_THRESHOLD, SOFTMAX_ENTROPY, ARGMAX_STE)

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
        name="ch05_maximum_tie",
        question="At a tie, x = y = 1.0, what does jax.grad(jnp.maximum) (the derivative with "
        "respect to x) return?",
        choices={
            "a": "1.0: the first argument wins the tie",
            "b": "0.0: the second argument wins the tie",
            "c": "0.5: the tie is split between the two arguments",
            "d": "an error: maximum has no derivative at a tie",
        },
        answer="c",
        why="JAX's derivative of maximum gives each argument half of the derivative where the "
        "two are equal; other frameworks choose otherwise, as the next cell shows.",
    ),
    Prediction(
        name="ch05_none_cotangent",
        question="A custom_vjp scale(s, x) = s * x whose bwd returns (None, s * g): what does "
        "jax.grad of sum(scale(s, x)) return for s?",
        choices={
            "a": "an error: None is not a cotangent",
            "b": "0.0",
            "c": "None",
            "d": "nan",
        },
        answer="b",
        why="JAX reads None in bwd's tuple as a zero cotangent of that argument's shape and "
        "dtype: no error, no warning, and the loss's real dependence on s is dropped.",
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
    Prediction(
        name="ch05_straight_through_rounding",
        question="In float32, x = 3e7. What does x + stop_gradient(sign(x) - x) return, "
        "going forward?",
        choices={
            "a": "1.0, which is sign(x)",
            "b": "another number: the 1 is lost to rounding",
            "c": "nan",
        },
        answer="b",
        why="float32 keeps about 7 significant digits, so 1 - 3e7 rounds to -3e7, and "
        "x + (-3e7) is 0: x + (q - x) equals q only when q - x is exact.",
    ),
)

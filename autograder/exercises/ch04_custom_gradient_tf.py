"""Chapter 04 exercises: custom gradients in TensorFlow (`tf.custom_gradient`).

Each learner function takes tensors and returns a tensor; the invoke
(autograder/harness/ch04_custom_gradient_tf.py) calls it under a `tf.GradientTape` with a
random cotangent, once eagerly and once inside `tf.function`, insists that the two agree,
and returns the primal output and the cotangent of every input as numpy.
The references are the analytic or numerically stable formulas, written once for both
frameworks where they agree (`vjp_reference`), else by hand for each (`two_references`, whose
`why` says what differs: a rule no forward has, or two ways on purpose); the tests cross-check
them with `tf.test.compute_gradient`. The known wrong answers are learner functions, written
with tf.custom_gradient (`_custom`) or tf.stop_gradient as learners write them; where a demo
of the chapter is the nearest cell to an exercise, the demo copied is one of them. Drawn
cases come from `_cases` (a dtype, a shape from the exercise's menu, its arguments, a
cotangent whose elements all differ), hand-picked ones from tables (`_table`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.exercises.common import rng_array
from autograder.harness import english
from autograder.judging.cases import Case, Profile, Shape, dtypes, shape_menu
from autograder.judging.derived import two_references, vjp_reference
from autograder.judging.exercise import Exercise, Mistake, learner_function
from autograder.judging.prediction import Prediction

_random = functools.partial(rng_array, bound=3.0, decimals=2)  # (rng, shape, dtype)

FRAMEWORKS = ("tensorflow",)
EDGE_VALUES = (0.0, 100.0, -100.0, 1000.0, -1000.0)
# Most exercises run through the plain invoke; tanh_layer and clip_cotangent_norm name theirs.
_exercise = functools.partial(
    Exercise, invoke="ch04_custom_gradient_tf:invoke", frameworks=FRAMEWORKS
)


def _tf() -> Any:
    from autograder.judging.references import tensorflow

    return tensorflow()


def _learner(learner: str, body: Callable[..., Any]) -> Callable[..., Any]:
    """A learner's function `learner` ("quantize_ste(x, levels)") computing
    `body(tf, *arguments)`."""
    name, _, parameters = learner.rstrip(")").partition("(")
    return learner_function(name, parameters, lambda *args: body(_tf(), *args))


def _custom(
    learner: str, value: Callable[..., Any], gradient: Callable[..., Any], inputs: int = 0
) -> Callable[..., Any]:
    """A learner's function `learner` written with tf.custom_gradient: its value is
    `value(tf, *arguments)`, and its grad_fn returns `gradient(tf, g, *arguments)`. The
    decorated function takes the first `inputs` arguments (all when 0) and closes over the
    others (numbers such as max_norm, which have no gradient)."""

    def body(tf: Any, *args: Any) -> Any:
        split = inputs or len(args)

        @tf.custom_gradient
        def forward(*xs: Any) -> Any:
            full = (*xs, *args[split:])
            return value(tf, *full), lambda g: gradient(tf, g, *full)

        return forward(*args[:split])

    return _learner(learner, body)


def _plain(dtype: np.dtype, bound: float = 10.0) -> st.SearchStrategy[float]:
    return st.floats(-bound, bound, width=dtype.itemsize * 8, allow_subnormal=False)


def _floats(
    dtype: np.dtype, shape: Shape, bound: float = 10.0, unique: bool = False
) -> st.SearchStrategy[np.ndarray]:
    """Arrays in [-bound, bound], every element drawn on its own (`unique`: all different, as
    a cotangent's: never ones, never constant)."""
    return hnp.arrays(dtype, shape, elements=_plain(dtype, bound), fill=st.nothing(), unique=unique)


def _cases(
    notebook: tuple[Shape, ...],
    grading: tuple[Shape, ...],
    cotangent: Callable[[Shape], Shape] | None = None,
    **arguments: Any,
) -> Callable[[Profile], st.SearchStrategy[Case]]:
    """Cases as this chapter draws them: a dtype, a shape from the menu, then each argument by
    name, in order (`build(draw, dtype, shape)`, or a strategy), and last the cotangent g, of
    shape `cotangent(shape)`, its elements all different."""

    @st.composite
    def cases(draw: st.DrawFn, profile: Profile) -> Case:
        dtype = draw(dtypes())
        shape = draw(shape_menu(profile, notebook, grading))
        drawn = tuple(
            (name, build(draw, dtype, shape) if callable(build) else draw(build))
            for name, build in arguments.items()
        )
        return Case(
            (
                *drawn,
                ("g", draw(_floats(dtype, cotangent(shape) if cotangent else shape, unique=True))),
            )
        )

    return cases


def _table(names: str, *rows: tuple[Any, ...]) -> list[Case]:
    """A hand-picked case per row: the values of `names` ("x, max_norm, g"), then its label."""
    keys = names.split(", ")
    return [Case(tuple(zip(keys, row[:-1], strict=True)), label=row[-1]) for row in rows]


# The elementwise exercises' shapes. Each new input signature retraces the learner's
# tf.function (and eager TensorFlow caches kernels per shape), so the shapes come from a
# menu: a scalar, a length of one, a vector, a non-square matrix, a size-1 axis; grading adds
# a row and a larger matrix. The values are drawn afresh for every case.
ELEMENTWISE_SHAPES: tuple[Shape, ...] = ((), (1,), (5,), (3, 4), (4, 1))
ELEMENTWISE_GRADING: tuple[Shape, ...] = ((1, 6), (6, 5))
_elementwise = functools.partial(_cases, ELEMENTWISE_SHAPES, ELEMENTWISE_GRADING)


# ---------------------------------------------------------------- logaddexp


def _wide(draw: st.DrawFn, dtype: np.dtype, shape: Shape) -> np.ndarray:
    """Values of order 1 to 10, or (one array in three) of order 100 to 1000: large enough
    for exp() to overflow in float32 and in float64."""
    base = draw(_floats(dtype, shape))
    return np.asarray(base * draw(st.sampled_from([1, 1, 100])), dtype=dtype)


def _logaddexp_edges() -> list[Case]:
    rng = np.random.default_rng(40)
    a, b = (v.ravel() for v in np.meshgrid(EDGE_VALUES, EDGE_VALUES))
    return [
        Case(
            (("a", a.astype(dt)), ("b", b.astype(dt)), ("g", _random(rng, a.shape, dt))),
            label=english("every pair of 0, +-100, +-1000 ({dtype})", dtype=np.dtype(dt).name),
        )
        for dt in (np.float32, np.float64)
    ]


def _logsumexp(xp: Any, a: Any, b: Any) -> Any:
    """The stable form m + log(sum(exp(v - m))) of v = (a, b), m = max held constant, as
    tf.reduce_logsumexp and jax.nn.logsumexp write it (the same numbers, bit for bit).
    Differentiating max(a, b) + log1p(exp(-|a - b|)) instead (TensorFlow's logaddexp) is
    wrong at a == b: a tie in max sends the whole cotangent to one side, and |0|' = 0."""
    v = xp.stack([a, b])
    m = xp.stop_gradient(xp.max(v, axis=0))
    return xp.log(xp.sum(xp.exp(v - m), axis=0)) + m


def _stable(tf: Any, a: Any, b: Any) -> Any:
    return tf.maximum(a, b) + tf.math.log1p(tf.exp(-tf.abs(a - b)))


def _exp_ratios(tf: Any, g: Any, a: Any, b: Any) -> tuple[Any, Any]:
    total = tf.exp(a) + tf.exp(b)
    return g * tf.exp(a) / total, g * tf.exp(b) / total


def _sigmoids(tf: Any, g: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """The right gradients."""
    return g * tf.sigmoid(a - b), g * tf.sigmoid(b - a)


_logaddexp = functools.partial(_custom, "logaddexp(a, b)")

LOGADDEXP = _exercise(
    signature="logaddexp(a, b) -> tensor y (with a custom gradient for a and b)",
    nudge=(
        "Write the value so that exp never sees a large positive number. Then ask which familiar "
        "function each partial derivative turns out to be, and keep it finite too."
    ),
    outputs=("y", "g_a", "g_b"),
    cases=_elementwise(a=_wide, b=_wide),
    edges=_logaddexp_edges,
    reference=vjp_reference(_logsumexp, wrt=("a", "b"), value=True),
    references_text="jax.vjp and tf.GradientTape of the stable logsumexp of (a, b)",
    mistakes=(
        Mistake(
            "wrong_input",
            "Your grad_fn returns the gradient of the wrong input: g_a and g_b are swapped. "
            "grad_fn returns one gradient per input, in the order of the inputs (a first): d/da = "
            "sigmoid(a - b), d/db = sigmoid(b - a).",
            _logaddexp(_stable, lambda *args: _sigmoids(*args)[::-1]),
        ),
        Mistake(
            "naive_gradient",
            "NaN at the edges: exp(a) / (exp(a) + exp(b)) is inf / inf (or 0 / 0) once |a| or |b| "
            "is large (exp overflows float32 for arguments above about 88.7). Write the gradient "
            "without exp of a large number: sigmoid(a - b) = 1 / (1 + exp(b - a)), e.g. "
            "tf.sigmoid(a - b).",
            _logaddexp(_stable, _exp_ratios),
        ),
        Mistake(
            "naive_forward",
            "NaN or Inf at the edges in the forward value: log(exp(a) + exp(b)) overflows for a or "
            "b near 100 in float32 (and 1000 in float64). Use the stable form max(a, b) + "
            "log1p(exp(-|a - b|)).",
            _logaddexp(lambda tf, a, b: tf.math.log(tf.exp(a) + tf.exp(b)), _sigmoids),
        ),
        Mistake(
            "ignores_cotangent",
            "Your gradients do not depend on the incoming cotangent g (they equal what a cotangent "
            "of ones gives). Multiply by `g`, the cotangent grad_fn receives.",
            _logaddexp(_stable, lambda tf, g, a, b: _sigmoids(tf, 1, a, b)),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Build y and the "
        "gradients with tf ops on tensors (not numpy or Python if), so the function also runs "
        "inside tf.function, and return (y, grad_fn) from the @tf.custom_gradient function.",
        "exception": "grad_fn must return one gradient per input, in the order of the inputs: "
        "(g_a, g_b), each with the shape of its input.",
        "nonfinite": "NaN or Inf at the edges: somewhere exp() of a large number overflows. Keep "
        "every exp argument <= 0: max(a, b) + log1p(exp(-|a - b|)), gradient sigmoid(a - b).",
        "value": "For y = log(exp(a) + exp(b)): dy/da = exp(a - y) = sigmoid(a - b) and dy/db = "
        "sigmoid(b - a), each multiplied by the incoming cotangent g.",
    },
)


# ---------------------------------------------------------------- safe_normalize

# safe_normalize's shapes (..., k): a vector, one row, rows of one entry (k = 1), a batch of
# rows, a batch of batches; grading adds a larger matrix and a longer 3-d batch.
NORMALIZE_SHAPES: tuple[Shape, ...] = ((3,), (1, 4), (4, 1), (3, 4), (2, 2, 3))
NORMALIZE_GRADING: tuple[Shape, ...] = ((6, 5), (2, 3, 4))
# Rows whose squares float32 still represents (1e-12 .. 1e12): all zeros, one nonzero entry,
# tiny and huge norms, a 3-4-5 row.
# fmt: off
NORMALIZE_ROWS = np.array([
    [0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [0.0, -2.0, 0.0], [0.0, 0.0, 7.0], [1e-12, 0.0, 0.0],
    [-5e-13, 1e-12, 2e-12], [1e12, 0.0, 0.0], [-1e12, 2e12, 2e12], [0.0, 0.0, 0.0],
])
# fmt: on


def _rows(draw: st.DrawFn, dtype: np.dtype, shape: Shape) -> np.ndarray:
    """Entries 0, or of magnitude 0.5 to 10 of either sign (never so small that a square
    underflows, so every framework agrees on which rows are all zeros), some rows all zeros
    (the trap), the whole scaled by 1, 1e-3 or 1e3."""
    size = st.floats(0.5, 10, width=dtype.itemsize * 8)
    entries = st.one_of(st.just(0.0), size, size.map(lambda s: -s))
    v = draw(hnp.arrays(dtype, shape, elements=entries, fill=st.nothing()))
    zero_rows = draw(hnp.arrays(np.bool_, shape[:-1], fill=st.nothing()))
    scale = draw(st.sampled_from([1.0, 1.0, 1e-3, 1e3]))
    return np.asarray(np.where(zero_rows[..., None], 0, v) * scale, dtype=dtype)


def _normalize_edges() -> list[Case]:
    rng = np.random.default_rng(41)
    arrays = [
        (NORMALIZE_ROWS, "zero rows, one nonzero entry, norms 1e-12 to 1e12 ({dtype})"),
        (np.array([[0.0], [2.0], [-3.0], [1e-12], [0.0]]), "rows of one entry, k = 1 ({dtype})"),
        (
            np.stack([NORMALIZE_ROWS[:3], NORMALIZE_ROWS[6:]]),
            "a batch of 3 rows each, zero rows in both ({dtype})",
        ),
        (np.zeros(4), "one vector, all zeros ({dtype})"),
    ]
    return [
        Case(
            (("v", v.astype(dt)), ("g", _random(rng, v.shape, dt))),
            label=english(label, dtype=np.dtype(dt).name),
        )
        for v, label in arrays
        for dt in (np.float32, np.float64)
    ]


def _double_where(xp: Any, v: Any) -> Any:
    """v / norm(v) by rows, 0 for an all-zero row, with a safe input to the norm itself."""
    squares = xp.sum(v * v, axis=-1, keepdims=True)
    nonzero = squares > 0
    norm = xp.sqrt(xp.where(nonzero, squares, xp.ones_like(squares)))  # the double where
    return xp.where(nonzero, v / norm, xp.zeros_like(v))


def _copied_log(tf: Any, v: Any) -> Any:
    """The chapter's log demo, copied: log(v) where v > 0, nothing normalized."""
    positive = v > 0
    return tf.where(positive, tf.math.log(tf.where(positive, v, tf.ones_like(v))), tf.zeros_like(v))


def _where_on_output_only(tf: Any, v: Any) -> Any:
    """The branch not taken still computes v / 0 at a zero row: its VJP gives 0 / 0 = NaN."""
    norm = tf.norm(v, axis=-1, keepdims=True)
    return tf.where(norm > 0, v / norm, tf.zeros_like(v))


def _whole_norm(tf: Any, v: Any) -> Any:
    squares = tf.reduce_sum(v * v)
    return tf.where(squares > 0, v / tf.sqrt(tf.where(squares > 0, squares, 1)), tf.zeros_like(v))


def _masked(gradient: Callable[..., Any]) -> Callable[..., Any]:
    """A custom gradient around the right value: `gradient(tf, g, y, norm)` where a row is
    not all zeros, 0 where it is."""

    def masked(tf: Any, g: Any, v: Any) -> Any:
        nonzero, norm = _safe_norm(tf, v)
        return tf.where(nonzero, gradient(tf, g, _normalized(tf, v), norm), tf.zeros_like(g))

    return _custom("safe_normalize(v)", _normalized, masked)


def _safe_norm(tf: Any, v: Any) -> tuple[Any, Any]:
    """(rows that are not all zeros, each row's norm with 1 for an all-zero row)."""
    squares = tf.reduce_sum(v * v, axis=-1, keepdims=True)
    return squares > 0, tf.sqrt(tf.where(squares > 0, squares, tf.ones_like(squares)))


def _normalized(tf: Any, v: Any) -> Any:
    """The right value: each row divided by its safe norm, 0 for a row of zeros."""
    nonzero, norm = _safe_norm(tf, v)
    return tf.where(nonzero, v / norm, tf.zeros_like(v))


def _along(tf: Any, g: Any, y: Any) -> Any:
    return y * tf.reduce_sum(y * g, axis=-1, keepdims=True)


_normalize = functools.partial(_learner, "safe_normalize(v)")

SAFE_NORMALIZE = _exercise(
    signature=(
        "safe_normalize(v) -> tensor: each row of v divided by its norm, 0 for an all-zero row"
    ),
    nudge=(
        "At a row of zeros the division is 0 by 0, and the branch a where does not take is still "
        "differentiated. Think about what the division itself sees in those rows, not only what the"
        " output shows."
    ),
    outputs=("y", "g_v"),
    cases=_cases(NORMALIZE_SHAPES, NORMALIZE_GRADING, v=_rows),
    edges=_normalize_edges,
    reference=vjp_reference(_double_where, wrt=("v",), value=True),
    references_text="jax.vjp and tf.GradientTape of the double-where v / norm(v)",
    mistakes=(
        Mistake(
            "copied_log",
            "Your output is log(v) where v > 0: the log example above, copied. This function "
            "divides each row of v by its Euclidean norm (0 for a row of zeros); apply the same "
            "idea to it: the division meets 0 / 0 at a row of zeros.",
            _normalize(_copied_log),
        ),
        Mistake(
            "where_on_output_only",
            "NaN at the rows of zeros from the branch not taken: tf.where(n > 0, v / n, 0) still "
            "computes v / n there, and the division's VJP divides the zero cotangent tf.where sends"
            " it by n = 0: 0 / 0 = NaN. Give the division a safe norm (1 where a row is all "
            "zeros), and keep the where on the output.",
            _normalize(_where_on_output_only),
        ),
        Mistake(
            "plain_division",
            "NaN in the output at the rows of zeros: v / tf.norm(v) is 0 / 0 there. Such a row's "
            "output is 0: select it with tf.where, and divide by a safe norm (1 where a row is all"
            " zeros) so that the gradient is finite too.",
            _normalize(lambda tf, v: v / tf.norm(v, axis=-1, keepdims=True)),
        ),
        Mistake(
            "library_epsilon",
            "tf.math.l2_normalize keeps the norm away from 0 with an epsilon (1e-12 on the sum of "
            "squares): that changes the output of every row whose norm is below 1e-6, and at a row"
            " of zeros the gradient is g / 1e-6, not 0. Use a safe value only where the output is "
            "masked, never an epsilon.",
            _normalize(lambda tf, v: tf.math.l2_normalize(v, axis=-1)),
        ),
        Mistake(
            "no_output_where",
            "Your output is right, but at a row of zeros your gradient is g, not 0: dividing by a "
            "safe norm of 1 there makes that row the identity, whose gradient is g. Keep the where"
            " on the output, which sends a zero cotangent to those rows.",
            _normalize(lambda tf, v: v / _safe_norm(tf, v)[1]),  # 0 / 1 at a zero row: gradient g
        ),
        Mistake(
            "whole_norm",
            "You divided by the norm of the whole tensor: normalize each row on its own, by the "
            "norm over the last axis (keepdims=True, so that it broadcasts over the row).",
            _normalize(_whole_norm),
        ),
        Mistake(
            "no_projection",
            "Your gradient is g / n: it misses the term from the norm, which depends on v too. The "
            "VJP of v / n removes from g its component along the output y before dividing by n: (g"
            " - y * sum(y * g)) / n, the sum over the row.",
            _masked(lambda tf, g, y, norm: g / norm),
        ),
        Mistake(
            "ignores_cotangent",
            "Your gradient does not depend on the incoming cotangent g (it equals what a cotangent "
            "of ones gives). Use `g`, the cotangent grad_fn receives.",
            _masked(lambda tf, g, y, n: (tf.ones_like(g) - _along(tf, tf.ones_like(g), y)) / n),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Use tf ops on tensors "
        "(tf.where, tf.reduce_sum, tf.sqrt), not a Python if or numpy: the check also runs your "
        "function inside tf.function, where values are symbolic.",
        "nonfinite": "NaN or Inf at a row of zeros: the branch tf.where does not take is still "
        "differentiated, and there v / n is 0 / 0. Divide by a safe norm (1 where a row is all "
        "zeros, one value per row, kept with keepdims=True) and keep the where on the output, or "
        "write the gradient with tf.custom_gradient.",
        "shape": "y has v's shape: each row (the last axis) is divided by its own norm, computed "
        "with keepdims=True so that it broadcasts over the row.",
        "value": "For a row with norm n > 0, y = v / n and the gradient is (g - y * sum(y * g)) / "
        "n, the sum over the row; for a row of zeros, y = 0 and the gradient is 0.",
    },
)


# ---------------------------------------------------------------- clip_cotangent_norm


def _beyond_every_limit(draw: st.DrawFn, dtype: np.dtype, shape: Shape) -> np.ndarray:
    """|x| >= 3, beyond every max_norm: a learner who clips the forward value is always seen."""
    sizes = st.floats(3, 10, width=dtype.itemsize * 8)
    size = draw(hnp.arrays(dtype, shape, elements=sizes, fill=st.nothing()))
    negative = draw(hnp.arrays(np.bool_, shape, fill=st.nothing()))
    return np.asarray(np.where(negative, -size, size), dtype=dtype)


def _clip_edges() -> list[Case]:
    rng = np.random.default_rng(42)
    x = np.array([-1000.0, -100.0, -3.0, 0.0, 0.5, 3.0, 100.0, 1000.0], np.float32)
    g = np.array([-50.0, 0.2, -0.7, 4.0, -1.0, 1.0, 0.9, 30.0], np.float32)
    small = (0.9 - 0.01 * np.arange(16.0)).reshape(4, 4).astype(np.float32)  # the norm above 1
    x2 = _random(rng, (4, 4), np.float32)
    x3, g3 = _random(rng, (3, 4), np.float64), _random(rng, (3, 4), np.float64)
    return _table(
        "x, max_norm, g",
        (x, 1.0, g, "large and small inputs and cotangents, max_norm 1"),
        (x2, 1.0, small, "every element of g below max_norm, its norm above"),
        (x3, 40.0, g3, "a norm below max_norm"),
        (np.array([1.0, -2.0, 5.0]), 0.5, np.zeros(3), "a zero cotangent"),
    )


def _clip_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, max_norm, g = (tf.constant(v) if isinstance(v, np.ndarray) else v for v in case.values())
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.identity(x)
    return y.numpy(), tf.clip_by_norm(tape.gradient(y, x, output_gradients=g), max_norm).numpy()


def _clip_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp, max_norm = jax.numpy, params["max_norm"]
    clipped = jax.custom_vjp(lambda x: x)
    clipped.defvjp(
        lambda x: (x, None),
        lambda _, g: (g * (max_norm / jnp.maximum(jnp.sqrt(jnp.sum(g * g)), max_norm)),),
    )
    y, vjp = jax.vjp(clipped, arrays["x"])
    return (y, *vjp(arrays["g"]))


_clip = functools.partial(
    _custom, "clip_cotangent_norm(x, max_norm)", lambda tf, x, max_norm: tf.identity(x), inputs=1
)

CLIP_COTANGENT_NORM = _exercise(
    signature=(
        "clip_cotangent_norm(x, max_norm) -> tensor x, its cotangent rescaled to an L2 norm of at "
        "most max_norm"
    ),
    nudge=(
        "The forward pass changes nothing; only the cotangent is rescaled, as a whole and only when"
        " its length is too large, so that its direction survives."
    ),
    outputs=("y", "g_x"),
    cases=_elementwise(x=_beyond_every_limit, max_norm=st.sampled_from([0.5, 1.0, 2.5, 40.0])),
    edges=_clip_edges,
    reference=two_references(
        tf=_clip_tf,
        jax=_clip_jax,
        why="the identity with a rescaled cotangent is no forward's derivative: TensorFlow "
        "clips its tape's cotangent (tf.clip_by_norm), JAX declares a jax.custom_vjp",
    ),
    references_text="jax.custom_vjp (identity, rescaled cotangent) and tf.clip_by_norm",
    invoke="ch04_custom_gradient_tf:invoke_clip",
    mistakes=(
        Mistake(
            "clips_elementwise",
            "You clipped each element of the cotangent to [-max_norm, max_norm], as the example "
            "above does. Here the whole cotangent is rescaled: when its L2 norm (over all "
            "elements) exceeds max_norm, every element is multiplied by max_norm / norm, so its "
            "direction is kept.",
            _clip(lambda tf, g, x, max_norm: tf.clip_by_value(g, -max_norm, max_norm)),
        ),
        Mistake(
            "always_rescales",
            "You rescaled every cotangent to norm max_norm, also those already smaller (and a zero "
            "cotangent gives 0 / 0 = NaN). Rescale only when the norm exceeds max_norm; a smaller "
            "cotangent passes unchanged.",
            _clip(lambda tf, g, x, max_norm: g * max_norm / tf.norm(g)),
        ),
        Mistake(
            "clips_forward",
            "You clipped the forward value instead of the cotangent. The forward pass must be the "
            "identity (y = x, unchanged); only the cotangent is rescaled, inside grad_fn.",
            # no custom gradient: TensorFlow's own gradient of clip_by_norm
            _learner("clip_cotangent_norm(x, max_norm)", lambda tf, x, m: tf.clip_by_norm(x, m)),
        ),
        Mistake(
            "not_clipped",
            "The cotangent comes back unchanged: rescale it inside grad_fn when its norm exceeds "
            "max_norm.",
            _clip(lambda tf, g, x, max_norm: g),
        ),
        Mistake(
            "ignores_cotangent",
            "Your gradient does not depend on the incoming cotangent g (it equals a rescaled "
            "cotangent of ones). Rescale `g` itself.",
            _clip(lambda tf, g, x, max_norm: tf.clip_by_norm(tf.ones_like(g), max_norm)),
        ),
        Mistake(
            "fixed_limit",
            "Your cotangent is rescaled to a fixed norm, not to max_norm: use the `max_norm` "
            "argument (grad_fn can read it, as a closure).",
            _clip(lambda tf, g, x, max_norm: tf.clip_by_norm(g, 1.0)),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. max_norm is a Python "
        "number, not an input with a gradient: grad_fn returns one gradient, for x.",
        "nonfinite": "NaN where the cotangent is all zeros: its norm is 0, and dividing by it "
        "gives 0 / 0. A zero cotangent is below any max_norm and passes unchanged.",
        "value": "y must equal x; g_x must be g when its L2 norm (over all elements) is at most"
        " max_norm, else g * max_norm / norm.",
    },
)


# ---------------------------------------------------------------- quantize_ste


def _window_inputs(draw: st.DrawFn, dtype: np.dtype, shape: Shape) -> np.ndarray:
    """Within [-2, 2], or exactly at the window's edges 0 and 1."""
    elements = st.one_of(_plain(dtype, 2.0), st.sampled_from([0.0, 1.0]))
    return draw(hnp.arrays(dtype, shape, fill=st.nothing(), elements=elements))


def _quantize_edges() -> list[Case]:
    rng = np.random.default_rng(43)
    x = np.array([-1000.0, -100.0, -0.01, 0.0, 0.1, 0.3, 0.7, 1.0, 1.01, 100.0, 1000.0])
    return [
        Case(
            (("x", x.astype(dt)), ("levels", levels), ("g", _random(rng, x.shape, dt))),
            label=english(
                "the window edges 0 and 1, +-100, +-1000, {levels} levels ({dtype})",
                levels=levels,
                dtype=np.dtype(dt).name,
            ),
        )
        for dt, levels in ((np.float32, 4), (np.float64, 2))
    ] + [
        Case(
            (
                ("x", np.array(halves, dt)),
                ("levels", levels),
                ("g", _random(rng, (5,), dt)),
            ),
            label=english(
                "halfway between two levels: tf.round rounds halves to even ({levels} levels)",
                levels=levels,
            ),
        )
        for dt, levels, halves in (
            (np.float32, 5, [0.125, 0.375, 0.625, 0.875, 0.5]),  # times 4: 0.5, 1.5, 2.5, 3.5
            (np.float64, 3, [0.25, 0.75, 0.125, 0.5, 1.0]),  # times 2: 0.5, 1.5
        )
    ]


def _quantize_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, levels, g = case.values()
    x, g, steps = tf.constant(x), tf.constant(g), levels - 1
    with tf.GradientTape() as tape:
        tape.watch(x)
        clipped = tf.clip_by_value(x, 0, 1)  # its gradient is the window 0 <= x <= 1
        y = clipped + tf.stop_gradient(tf.round(clipped * steps) / steps - clipped)
    return y.numpy(), tape.gradient(y, x, output_gradients=g).numpy()


def _quantize_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp, x, steps = jax.numpy, arrays["x"], params["levels"] - 1
    window = ((x >= 0) & (x <= 1)).astype(x.dtype)
    _, vjp = jax.vjp(lambda x: x * window, x)  # the analytic STE: 1 on 0 <= x <= 1, else 0
    return (jnp.round(jnp.clip(x, 0, 1) * steps) / steps, *vjp(arrays["g"]))


def _quantized(tf: Any, x: Any, levels: int) -> Any:
    return tf.round(tf.clip_by_value(x, 0, 1) * (levels - 1)) / (levels - 1)


def _closed(tf: Any, x: Any) -> Any:
    """1 where 0 <= x <= 1, else 0, in x's dtype."""
    return tf.cast((x >= 0) & (x <= 1), x.dtype)


_quantize = functools.partial(_custom, "quantize_ste(x, levels)", _quantized, inputs=1)

QUANTIZE_STE = _exercise(
    signature=(
        "quantize_ste(x, levels) -> tensor: x clipped to [0, 1] and rounded to `levels` levels, "
        "straight through"
    ),
    nudge=(
        "Rounding has a zero derivative almost everywhere. The straight-through idea keeps the "
        "rounded value going forward and borrows a derivative: which part of this quantiser still "
        "has a true derivative?"
    ),
    outputs=("y", "g_x"),
    cases=_elementwise(x=_window_inputs, levels=st.sampled_from([2, 3, 5, 17])),
    edges=_quantize_edges,
    reference=two_references(
        tf=_quantize_tf,
        jax=_quantize_jax,
        why="two ways on purpose: TensorFlow's is the STE written with tf.stop_gradient, JAX's "
        "the analytic window (1 on 0 <= x <= 1) it must equal",
    ),
    references_text=(
        "tf.stop_gradient's straight-through form over tf.clip_by_value, and jax.vjp of "
        "the analytic window"
    ),
    mistakes=(
        Mistake(
            "no_window",
            "You passed the cotangent through everywhere, as round_ste does. This quantiser clips "
            "first: outside [0, 1] its input to the rounding no longer moves with x, so the "
            "straight-through gradient is that of the clip, g where 0 <= x <= 1 and 0 outside.",
            _quantize(lambda tf, g, x, levels: g),
        ),
        Mistake(
            "plain_round",
            "Your gradient is zero everywhere: tf.round has no gradient, so nothing before the "
            "quantiser would learn. Replace it with the straight-through estimator "
            "(tf.custom_gradient, or the exact stop_gradient form on the clipped value).",
            _learner("quantize_ste(x, levels)", _quantized),  # TensorFlow's own gradient: zero
        ),
        Mistake(
            "open_window",
            "Your gradient is 0 at x = 0 or x = 1 exactly, where it should be g: the range of x "
            "where the gradient passes must include its edges, since the clip's gradient there is "
            "1 (tf.clip_by_value passes it at its bounds). Pass g where 0 <= x <= 1.",
            _quantize(lambda tf, g, x, levels: g * tf.cast((x > 0) & (x < 1), x.dtype)),
        ),
        Mistake(
            "scaled",
            "Your gradient is levels - 1 times too large: the quantiser multiplies by levels - 1 "
            "before rounding and divides by it after, and the straight-through estimator treats "
            "the rounding alone as the identity, so the two factors cancel.",
            _quantize(lambda tf, g, x, levels: g * (levels - 1) * _closed(tf, x)),
        ),
        Mistake(
            "half_up",
            "Your value is one level too high where x lies exactly halfway between two levels "
            "and the lower one has an even index: you rounded halves up, and tf.round rounds "
            "halves to even (0.5 to 0, 2.5 to 2). Use tf.round.",
            _custom(
                "quantize_ste(x, levels)",
                lambda tf, x, levels: (
                    tf.floor(tf.clip_by_value(x, 0, 1) * (levels - 1) + 0.5) / (levels - 1)
                ),
                lambda tf, g, x, levels: g * _closed(tf, x),
                inputs=1,
            ),
        ),
        Mistake(
            "ignores_cotangent",
            "Your gradient does not depend on the incoming cotangent g (it equals what a cotangent "
            "of ones gives). Multiply by `g`: the gradient is g where 0 <= x <= 1 and 0 elsewhere.",
            _quantize(lambda tf, g, x, levels: _closed(tf, x)),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Use tf ops on tensors "
        "(tf.clip_by_value, tf.round, tf.where), not a Python if or numpy; levels is a Python "
        "int, not an input with a gradient.",
        "value": "Forward: clip x to [0, 1], then round to the nearest of the `levels` evenly "
        "spaced values; going backward, treat only the rounding as the identity and keep the "
        "clip's own gradient.",
    },
)


# ---------------------------------------------------------------- n_step_td_loss (tf.stop_gradient)

# The last axis is the trajectory's T steps (values, target_values, rewards and the loss all
# have this shape); leading axes are a batch. n runs from one step to past the trajectory's end.
TD_SHAPES: tuple[Shape, ...] = ((1,), (4,), (1, 3), (3, 5))
TD_GRADING: tuple[Shape, ...] = ((8,), (2, 7))


def _n_step_returns(xp: Any, target_values: Any, rewards: Any, gamma: float, n: int) -> Any:
    """G_t: up to n rewards from step t, then gamma^m times the target network's value of the
    state after the last of them (m = min(n, T - t)); as two matrix products with the
    discounts of _n_step_weights, a handful of operations whatever T and n (a loop of one
    operation per reward made JAX's reference about a quarter of preparing chapter 04)."""
    on_rewards, on_values = _n_step_weights(rewards.shape[-1], gamma, n)
    dtype = rewards.dtype
    return xp.matmul(rewards, xp.asarray(on_rewards, dtype=dtype)) + xp.matmul(
        target_values, xp.asarray(on_values, dtype=dtype)
    )


def _n_step_weights(steps: int, gamma: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Column t of the first: gamma^k on row t + k for k < m; of the second: gamma^m on row
    t + m - 1, where m = min(n, steps - t) is how many rewards step t's return sees."""
    on_rewards, on_values = np.zeros((steps, steps)), np.zeros((steps, steps))
    for t in range(steps):
        m = min(n, steps - t)
        for k in range(m):
            on_rewards[t + k, t] = gamma**k
        on_values[t + m - 1, t] = gamma**m
    return on_rewards, on_values


def _td_edges() -> list[Case]:
    rng = np.random.default_rng(45)
    rows = []
    for shape, gamma, n, dt, label in (
        ((1,), 0.9, 3, np.float32, "one step, n beyond the end"),
        ((5,), 0.0, 2, np.float64, "gamma = 0: the target is the reward alone"),
        ((3, 4), 1.0, 2, np.float32, "a batch of 3, gamma = 1"),
        ((6,), 0.9, 6, np.float64, "n = T: every return runs to the end of the trajectory"),
    ):
        values, target_values, rewards, g = (_random(rng, shape, dt) for _ in range(4))
        rows.append((values, target_values, rewards, gamma, n, g, label))
    return _table("values, target_values, rewards, gamma, n, g", *rows)


def _n_step(stopped: str = "target", horizon: str = "n", discount: str = "m") -> Callable[..., Any]:
    """A learner's n_step_td_loss: tf.stop_gradient on `stopped` ("target": the whole return,
    "bootstrap": the target network's term alone, "prediction": values, "": nothing);
    `horizon` "1" ignores n; `discount` "n" discounts the bootstrap by gamma^n even where
    fewer than n rewards are left. Always a wrong one: the module holds no answer."""
    if (stopped, horizon, discount) == ("target", "n", "m"):
        raise ValueError("_n_step makes mistakes only: change what it stops or how it discounts")

    def n_step_td_loss(
        tf: Any, values: Any, target_values: Any, rewards: Any, gamma: float, n: int
    ) -> Any:
        def term(name: str, t: Any) -> Any:
            return tf.stop_gradient(t) if name == stopped else t

        steps, reach = rewards.shape[-1], 1 if horizon == "1" else n
        returns = []
        for t in range(steps):
            m = min(reach, steps - t)
            bootstrap = gamma ** (reach if discount == "n" else m) * target_values[..., t + m - 1]
            rewards_ahead = sum(gamma**k * rewards[..., t + k] for k in range(m))
            returns.append(rewards_ahead + term("bootstrap", bootstrap))
        target = term("target", tf.stack(returns, axis=-1))
        return 0.5 * (term("prediction", values) - target) ** 2

    return _learner("n_step_td_loss(values, target_values, rewards, gamma, n)", n_step_td_loss)


N_STEP_TD_LOSS = _exercise(
    signature=(
        "n_step_td_loss(values, target_values, rewards, gamma, n) -> tensor: half the squared "
        "n-step TD error at each step, with gradient for values only"
    ),
    nudge=(
        "Ask of each input whether this update should train it: the online values, the frozen "
        "target network's values, the observed rewards. Only what should be trained may receive "
        "a cotangent; everything that builds the return is the aim, not something to move."
    ),
    outputs=("loss", "g_values", "g_target_values", "g_rewards"),
    cases=_cases(
        TD_SHAPES,
        TD_GRADING,
        values=lambda draw, dtype, shape: draw(_floats(dtype, shape)),
        target_values=lambda draw, dtype, shape: draw(_floats(dtype, shape)),
        rewards=lambda draw, dtype, shape: draw(_floats(dtype, shape)),
        gamma=st.sampled_from([0.5, 0.9, 0.99]),
        n=st.sampled_from([1, 2, 3, 5]),
    ),
    edges=_td_edges,
    reference=vjp_reference(
        lambda xp, values, target_values, rewards, gamma, n: (
            0.5
            * (values - xp.stop_gradient(_n_step_returns(xp, target_values, rewards, gamma, n)))
            ** 2
        ),
        wrt=("values", "target_values", "rewards"),
        value=True,
    ),
    references_text="tf.stop_gradient and jax.lax.stop_gradient on the n-step return",
    mistakes=(
        Mistake(
            "no_stop",
            "Your gradient flows through the return into target_values and the rewards. The "
            "target network is a frozen copy that this loss must not train, and rewards are data: "
            "the whole n-step return is the target, held constant with tf.stop_gradient.",
            _n_step(stopped=""),
        ),
        Mistake(
            "stops_bootstrap_only",
            "Your gradient reaches the rewards: you held the target network's term constant but "
            "not the rewards added to it. The return as a whole is the target; stop all of it.",
            _n_step(stopped="bootstrap"),
        ),
        Mistake(
            "stopped_prediction",
            "You stopped the prediction: with tf.stop_gradient on values nothing reaches them, and "
            "they are the one input this loss trains. Stop the return instead.",
            _n_step(stopped="prediction"),
        ),
        Mistake(
            "one_step",
            "Your targets are the one-step targets (a reward and the next value) whatever n is: "
            "the n-step return adds up to n discounted rewards before it uses the target "
            "network's value, gamma^m times the value after the last of them.",
            _n_step(horizon="1"),
        ),
        Mistake(
            "gamma_to_the_n",
            "Your targets are wrong only near the end of the trajectory, where fewer than n "
            "rewards are left: there the return takes the m = T - t rewards that remain, and the "
            "target network's value after the last of them is discounted by gamma^m, not gamma^n.",
            _n_step(discount="n"),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Index the last axis "
        "(rewards[..., t]) and use tf ops on tensors; gamma and n are Python numbers, and the "
        "number of steps T is the last entry of values.shape.",
        "shape": "The loss has one entry per step: the shape of values (and of rewards).",
        "value": "Each step's loss is half the square of values minus its n-step return; only "
        "values may receive a gradient: nothing flows back through the return, neither into "
        "target_values nor into the rewards.",
    },
)


# ---------------------------------------------------------------- tanh_layer (a tf.Variable)

# tanh_layer's (batch, features in, features out): ones, square (a transpose mistake
# cannot hide in the shapes) and non-square.
LAYER_SIZES: tuple[Shape, ...] = ((1, 1, 1), (1, 4, 2), (3, 3, 3), (4, 2, 1), (2, 3, 4))
LAYER_GRADING: tuple[Shape, ...] = ((6, 5, 4), (5, 1, 6))


def _tanh_edges() -> list[Case]:
    rng = np.random.default_rng(44)
    rows = []
    for xs, ws, dt, label in (
        ((4, 3), (3, 2), np.float32, "a batch of 4, 3 features in, 2 out"),
        ((1, 5), (5, 1), np.float64, "one row, one output"),
        ((3, 3), (3, 3), np.float32, "square: a transpose mistake cannot hide in shapes"),
    ):
        x, w, g = (_random(rng, s, dt) for s in (xs, ws, (xs[0], ws[1])))
        rows.append((x / 3, w / 3, g, label))
    return _table("x, w, g", *rows)


def _layer(value: Callable[..., Any], gradients: Callable[..., tuple[Any, Any]]) -> Callable:
    """A learner's tanh_layer(x, w): `value(tf, x, w)`, with a grad_fn(g, variables=None)
    returning (g_x, [g_w]) from `gradients(tf, g, x, w, y)`."""

    def tanh_layer(tf: Any, x: Any, w: Any) -> Any:
        @tf.custom_gradient
        def forward(x: Any) -> Any:
            y = value(tf, x, w)

            def grad_fn(g: Any, variables: Any = None) -> Any:
                g_x, g_w = gradients(tf, g, x, w, y)
                return g_x, [g_w]

            return y, grad_fn

        return forward(x)

    return _learner("tanh_layer(x, w)", tanh_layer)


def _tanh(tf: Any, x: Any, w: Any) -> Any:
    return tf.tanh(x @ w)


def _matmul_vjp(tf: Any, g: Any, x: Any, w: Any, y: Any = None) -> tuple[Any, Any]:
    return g @ tf.transpose(w), tf.transpose(x) @ g


TANH_LAYER = _exercise(
    signature=(
        "tanh_layer(x, w) -> tensor tanh(x @ w), w a tf.Variable read inside a custom gradient"
    ),
    nudge=(
        "Go backward in two steps: through tanh first, whose derivative its own output gives, then "
        "through the matrix product, where the shapes tell you where each transpose goes. The "
        "variable's gradient is returned apart from the input's."
    ),
    outputs=("y", "g_x", "g_w"),
    # |x|, |w| <= 1: x @ w stays within a few units, where tanh is not yet flat.
    cases=_cases(
        LAYER_SIZES,
        LAYER_GRADING,
        lambda nkm: (nkm[0], nkm[2]),
        x=lambda draw, dtype, nkm: draw(_floats(dtype, nkm[:2], 1)),
        w=lambda draw, dtype, nkm: draw(_floats(dtype, nkm[1:], 1)),
    ),
    edges=_tanh_edges,
    # The invoke hands the learner w as a tf.Variable; the values are those of tanh(x @ w).
    reference=vjp_reference(lambda xp, x, w: xp.tanh(x @ w), wrt=("x", "w"), value=True),
    references_text="jax.vjp and tf.GradientTape of tanh(x @ w)",
    invoke="ch04_custom_gradient_tf:invoke_layer",
    mistakes=(
        Mistake(
            "copied_linear",
            "Your output is x @ w: the linear layer above, copied. This layer applies tanh to x @ "
            "w, and going backward the cotangent passes through tanh's derivative before it "
            "reaches the matmul.",
            _layer(lambda tf, x, w: x @ w, _matmul_vjp),
        ),
        Mistake(
            "no_tanh_derivative",
            "Your gradients are those of x @ w alone: the chain rule through tanh is missing. "
            "Multiply g by tanh's derivative at x @ w (the output y, kept from the forward pass, "
            "gives it) before the matmul's VJP.",
            _layer(_tanh, _matmul_vjp),
        ),
        Mistake(
            "untransposed",
            "Transpose in the VJP of a matmul: for z = x @ w with cotangent g_z, g_x = g_z @ "
            "w^T and g_w = x^T @ g_z.",
            _layer(_tanh, lambda tf, g, x, w, y: (g * (1 - y**2) @ w, x @ (g * (1 - y**2)))),
        ),
        Mistake(
            "ignores_cotangent",
            "Your gradients do not depend on the incoming cotangent g (they equal what a "
            "cotangent of ones gives). Multiply by `g`.",
            _layer(_tanh, lambda tf, g, x, w, y: _matmul_vjp(tf, 1 - y**2, x, w)),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Inside "
        "@tf.custom_gradient, tanh_layer's forward returns (y, grad_fn), and grad_fn(g, "
        "variables=None) returns (g_x, [g_w]); use tf ops on tensors, not numpy.",
        "value": "Right shapes, wrong numbers: the cotangent of z = x @ w is g times tanh's "
        "derivative at z, and the matmul's VJP takes it from there (with transposes).",
        "exception": "With a tf.Variable read inside, grad_fn must be `def grad_fn(g, "
        "variables=None)` and return a pair: (gradient of x, [gradient of w]) -- the variable "
        "gradients in a list, one per variable in `variables`.",
        "shape": "g_x must have x's shape (n, k) and g_w w's shape (k, m): the matmul's VJP "
        "multiplies by w^T on the right for x, by x^T on the left for w.",
    },
)

EXERCISES = (
    TANH_LAYER,
    LOGADDEXP,
    SAFE_NORMALIZE,
    CLIP_COTANGENT_NORM,
    QUANTIZE_STE,
    N_STEP_TD_LOSS,
)

# ---------------------------------------------------------------- predictions (before the traps)

PREDICTIONS = (
    Prediction(
        name="ch04_softplus_gradient",
        question="In float32, what does tape.gradient give for log(1 + exp(x)) at x = 100?",
        choices={"a": "1.0 (sigmoid(100), rounded)", "b": "inf", "c": "NaN", "d": "0.0"},
        answer="c",
        why="exp(100) overflows to inf; the chain rule multiplies log's derivative at "
        "1 + inf, 1 / inf = 0, by exp's derivative, inf: 0 * inf = NaN.",
    ),
    Prediction(
        name="ch04_where_nan",
        question="y = tf.where(x > 0, tf.math.log(x), 0) is 0 at x = 0. What is its "
        "gradient there?",
        choices={
            "a": "0.0: tf.where takes the constant branch there",
            "b": "NaN",
            "c": "-inf",
            "d": "an error: tf.where is not differentiable",
        },
        answer="b",
        why="Both branches are differentiated. The branch not taken gets a zero cotangent, and "
        "log's VJP multiplies it by 1/0: 0 * inf = NaN, added into the gradient.",
    ),
    Prediction(
        name="ch04_round_gradient",
        question="What does tape.gradient(tf.round(x), x) return?",
        choices={
            "a": "zeros",
            "b": "None",
            "c": "ones",
            "d": "an error: round is not differentiable",
        },
        answer="b",
        why="TensorFlow registers no gradient for Round: x is not connected to the output, "
        "and tape.gradient returns None (tf.sign, by contrast, has a gradient of zeros).",
    ),
    Prediction(
        name="ch04_ste_short_form",
        question="In float32, at x = 3e7 (where neighbouring float32 numbers are 2 apart), what "
        "is the value of x + tf.stop_gradient(tf.sign(x) - x)?",
        choices={
            "a": "1.0, sign(x)",
            "b": "0.0",
            "c": "3e7, x itself",
            "d": "something else",
        },
        answer="b",
        why="sign(x) - x = 1 - 3e7 = -29999999 is not a float32 number: it rounds to -3e7 (a "
        "tie, to the even neighbour), and x + (-3e7) = 0. In the exact form, x - x is exactly 0 "
        "and 0 + sign(x) exactly 1.",
    ),
    Prediction(
        name="ch04_gather_repeated",
        question="tf.gather(table, [0, 2, 0]) reads row 0 twice, with cotangent rows g[0] and "
        "g[2]. Made dense, what is row 0 of the table's gradient?",
        choices={
            "a": "g[0], the first read's",
            "b": "g[2], the last read's",
            "c": "g[0] + g[2]",
            "d": "(g[0] + g[2]) / 2",
        },
        answer="c",
        why="The VJP of a gather is a scatter-add: each read sends its cotangent back to its row, "
        "and the reads of one row add up, as the chain rule adds the cotangents of every use of "
        "a value.",
    ),
)

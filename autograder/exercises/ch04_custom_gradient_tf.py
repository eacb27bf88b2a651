"""Chapter 04 exercises: custom gradients in TensorFlow (`tf.custom_gradient`).

Each learner function takes tensors and returns a tensor; the invoke
(autograder/harness/ch04_custom_gradient_tf.py) calls it under a `tf.GradientTape` with a
random cotangent, once eagerly and once inside `tf.function`, insists that the two agree,
and returns the primal output and the cotangent of every input as numpy.
The references are the analytic or numerically stable formulas differentiated by JAX
(`jax.vjp`) and by TensorFlow's own tape; the tests cross-check them with
`tf.test.compute_gradient`. The known wrong answers are learner functions, written with
tf.custom_gradient (or tf.stop_gradient) as learners write them; where a demo of the chapter
is the nearest cell to an exercise, the demo copied is one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.harness import english
from autograder.judging.cases import Case, Profile, Shape, dtypes, shape_menu
from autograder.judging.derived import two_references, vjp_reference
from autograder.judging.exercise import Exercise, Mistake, learner_function
from autograder.judging.prediction import Prediction

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
# tanh_layer's (batch, features in, features out): ones, square (a transpose mistake
# cannot hide in the shapes) and non-square.
LAYER_SIZES: tuple[Shape, ...] = ((1, 1, 1), (1, 4, 2), (3, 3, 3), (4, 2, 1), (2, 3, 4))
LAYER_GRADING: tuple[Shape, ...] = ((6, 5, 4), (5, 1, 6))


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
            label=english("every pair of 0, +-100, +-1000 ({dtype})", dtype=np.dtype(dtype).name),
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
    signature="logaddexp(a, b) -> tensor y (with a custom gradient for a and b)",
    outputs=("y", "grad_a", "grad_b"),
    cases=_logaddexp_case,
    edges=_logaddexp_edges,
    reference=two_references(
        tf=_logaddexp_tf, jax=_logaddexp_jax,
        why="each framework's logsumexp: the NumPy APIs' logaddexp differentiates max(a, b) + "
            "log1p(exp(-|a - b|)) in TensorFlow, which is wrong at a == b"),
    references_text="jax.vjp(jax.nn.logsumexp) and tf.GradientTape(tf.reduce_logsumexp)",
    invoke="ch04_custom_gradient_tf:invoke",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("wrong_input", "Your grad_fn returns the gradient of the wrong input: grad_a and "
                "grad_b are swapped. grad_fn returns one gradient per input, in the order of the "
                "inputs (a first): d/da = sigmoid(a - b), d/db = sigmoid(b - a).", _swapped_inputs),
        Mistake("naive_gradient", "NaN at the edges: exp(a) / (exp(a) + exp(b)) is inf / inf (or 0"
                " / 0) once |a| or |b| is large (exp overflows float32 for arguments above about "
                "88.7). Write the gradient without exp of a large number: sigmoid(a - b) = 1 / (1"
                " + exp(b - a)), e.g. tf.sigmoid(a - b).", _naive_gradient),
        Mistake("naive_forward", "NaN or Inf at the edges in the forward value: log(exp(a) + "
                "exp(b)) overflows for a or b near 100 in float32 (and 1000 in float64). Use the "
                "stable form max(a, b) + log1p(exp(-|a - b|)).", _naive_forward),
        Mistake("ignores_cotangent", "Your gradients do not depend on the incoming cotangent g "
                "(they equal what a cotangent of ones gives). Multiply by `g`, the cotangent "
                "grad_fn receives.", _logaddexp_ignores_cotangent),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Build y and the gradients"
                 " with tf ops on tensors (not numpy or Python if), so the function also runs "
                 "inside tf.function, and return (y, grad_fn) from the @tf.custom_gradient "
                 "function.",
        "exception": "grad_fn must return one gradient per input, in the order of the inputs: "
                     "(grad_a, grad_b), each with the shape of its input.",
        "nonfinite": "NaN or Inf at the edges: somewhere exp() of a large number overflows. Keep "
                     "every exp argument <= 0: max(a, b) + log1p(exp(-|a - b|)), gradient "
                     "sigmoid(a - b).",
        "value": "For y = log(exp(a) + exp(b)): dy/da = exp(a - y) = sigmoid(a - b) and dy/db = "
                 "sigmoid(b - a), each multiplied by the incoming cotangent g.",
    },
)


# ---------------------------------------------------------------- safe_normalize

# safe_normalize's shapes (..., k): a vector, one row, rows of one entry (k = 1), a batch of
# rows, a batch of batches; grading adds a larger matrix and a longer 3-d batch.
NORMALIZE_SHAPES: tuple[Shape, ...] = ((3,), (1, 4), (4, 1), (3, 4), (2, 2, 3))
NORMALIZE_GRADING: tuple[Shape, ...] = ((6, 5), (2, 3, 4))


def _entries(dtype: np.dtype) -> st.SearchStrategy[float]:
    """0, or a magnitude of 0.5 to 10 of either sign: never so small that its square
    underflows, so every framework agrees on which rows are all zeros."""
    size = st.floats(0.5, 10, width=dtype.itemsize * 8)
    return st.one_of(st.just(0.0), size, size.map(lambda s: -s))


@st.composite
def _normalize_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype = draw(dtypes())
    shape = draw(shape_menu(profile, NORMALIZE_SHAPES, NORMALIZE_GRADING))
    v = draw(hnp.arrays(dtype, shape, elements=_entries(dtype), fill=st.nothing()))
    zero_rows = draw(hnp.arrays(np.bool_, shape[:-1], fill=st.nothing()))  # the trap
    scale = draw(st.sampled_from([1.0, 1.0, 1e-3, 1e3]))
    v = np.asarray(np.where(zero_rows[..., None], 0, v) * scale, dtype=dtype)
    return Case((("v", v), ("g", _cotangent(draw, dtype, shape))))


# Rows whose squares float32 still represents (1e-12 .. 1e12): all zeros, one nonzero entry,
# tiny and huge norms, a 3-4-5 row.
NORMALIZE_ROWS = np.array([
    [0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [0.0, -2.0, 0.0], [0.0, 0.0, 7.0], [1e-12, 0.0, 0.0],
    [-5e-13, 1e-12, 2e-12], [1e12, 0.0, 0.0], [-1e12, 2e12, 2e12], [0.0, 0.0, 0.0],
])


def _normalize_edges() -> list[Case]:
    rng = np.random.default_rng(41)
    column = np.array([[0.0], [2.0], [-3.0], [1e-12], [0.0]])
    batch = np.stack([NORMALIZE_ROWS[:3], NORMALIZE_ROWS[6:]])
    arrays = [(NORMALIZE_ROWS, "zero rows, one nonzero entry, norms 1e-12 to 1e12 ({dtype})"),
              (column, "rows of one entry, k = 1 ({dtype})"),
              (batch, "a batch of 3 rows each, zero rows in both ({dtype})"),
              (np.zeros(4), "one vector, all zeros ({dtype})")]
    return [
        Case((("v", v.astype(dt)), ("g", _random(rng, v.shape, dt))),
             label=english(label, dtype=np.dtype(dt).name))
        for v, label in arrays for dt in (np.float32, np.float64)
    ]


def _row_norm(tf: Any, v: Any) -> Any:
    return tf.norm(v, axis=-1, keepdims=True)


def _safe_norm(tf: Any, v: Any) -> tuple[Any, Any]:
    """(rows that are not all zeros, each row's norm with 1 for an all-zero row)."""
    squares = tf.reduce_sum(v * v, axis=-1, keepdims=True)
    return squares > 0, tf.sqrt(tf.where(squares > 0, squares, tf.ones_like(squares)))


def _copied_log(v: Any) -> Any:
    """The chapter's log demo, copied: log(v) where v > 0, nothing normalized."""
    tf = _tf()
    positive = v > 0
    return tf.where(positive, tf.math.log(tf.where(positive, v, tf.ones_like(v))),
                    tf.zeros_like(v))


def _where_on_output_only(v: Any) -> Any:
    """The branch not taken still computes v / 0 at a zero row: its VJP gives 0 / 0 = NaN."""
    tf = _tf()
    norm = _row_norm(tf, v)
    return tf.where(norm > 0, v / norm, tf.zeros_like(v))


def _plain_division(v: Any) -> Any:
    tf = _tf()
    return v / _row_norm(tf, v)


def _library_epsilon(v: Any) -> Any:
    return _tf().math.l2_normalize(v, axis=-1)


def _no_output_where(v: Any) -> Any:
    """The safe norm alone: 0 / 1 = 0 at a zero row, whose gradient is then g / 1 = g."""
    _, norm = _safe_norm(_tf(), v)
    return v / norm


def _whole_norm(v: Any) -> Any:
    tf = _tf()
    squares = tf.reduce_sum(v * v)
    return tf.where(squares > 0, v / tf.sqrt(tf.where(squares > 0, squares, 1)),
                    tf.zeros_like(v))


def _normalize_mistake(gradient: Callable[..., Any]) -> Callable[..., Any]:
    """A custom gradient around the right value: `gradient(tf, g, y, norm)` where a row
    is not all zeros, 0 where it is."""

    def value(tf: Any, v: Any) -> Any:
        nonzero, norm = _safe_norm(tf, v)
        return tf.where(nonzero, v / norm, tf.zeros_like(v))

    def masked(tf: Any, g: Any, v: Any) -> Any:
        nonzero, norm = _safe_norm(tf, v)
        return tf.where(nonzero, gradient(tf, g, value(tf, v), norm), tf.zeros_like(g))

    return learner_function("safe_normalize", "v", _custom(value, masked))


def _along(tf: Any, g: Any, y: Any) -> Any:
    return y * tf.reduce_sum(y * g, axis=-1, keepdims=True)


_no_projection = _normalize_mistake(lambda tf, g, y, norm: g / norm)
_normalize_ignores_cotangent = _normalize_mistake(
    lambda tf, g, y, norm: (tf.ones_like(g) - _along(tf, tf.ones_like(g), y)) / norm)


def _double_where(xp: Any, v: Any) -> Any:
    """v / norm(v) by rows, 0 for an all-zero row, with a safe input to the norm itself."""
    squares = xp.sum(v * v, axis=-1, keepdims=True)
    nonzero = squares > 0
    norm = xp.sqrt(xp.where(nonzero, squares, xp.ones_like(squares)))  # the double where
    return xp.where(nonzero, v / norm, xp.zeros_like(v))


SAFE_NORMALIZE = Exercise(
    signature=(
        "safe_normalize(v) -> tensor: each row of v divided by its norm, 0 for an all-zero row"
    ),
    outputs=("y", "grad_v"),
    cases=_normalize_case,
    edges=_normalize_edges,
    reference=vjp_reference(_double_where, wrt=("v",), value=True),
    references_text="jax.vjp and tf.GradientTape of the double-where v / norm(v)",
    invoke="ch04_custom_gradient_tf:invoke",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("copied_log", "Your output is log(v) where v > 0: the log example above, copied. "
                "This function divides each row of v by its Euclidean norm (0 for a row of "
                "zeros); apply the same idea to it: the division meets 0 / 0 at a row of zeros.",
                learner_function("safe_normalize", "v", _copied_log)),
        Mistake("where_on_output_only", "NaN at the rows of zeros from the branch not taken: "
                "tf.where(n > 0, v / n, 0) still computes v / n there, and the division's VJP "
                "divides the zero cotangent tf.where sends it by n = 0: 0 / 0 = NaN. Give the "
                "division a safe norm (1 where a row is all zeros), and keep the where on the "
                "output.", learner_function("safe_normalize", "v", _where_on_output_only)),
        Mistake("plain_division", "NaN in the output at the rows of zeros: v / tf.norm(v) is 0 / 0"
                " there. Such a row's output is 0: select it with tf.where, and divide by a safe "
                "norm (1 where a row is all zeros) so that the gradient is finite too.",
                learner_function("safe_normalize", "v", _plain_division)),
        Mistake("library_epsilon", "tf.math.l2_normalize keeps the norm away from 0 with an "
                "epsilon (1e-12 on the sum of squares): that changes the output of every row "
                "whose norm is below 1e-6, and at a row of zeros the gradient is g / 1e-6, not 0."
                " Use a safe value only where the output is masked, never an epsilon.",
                learner_function("safe_normalize", "v", _library_epsilon)),
        Mistake("no_output_where", "Your output is right, but at a row of zeros your gradient is "
                "g, not 0: dividing by a safe norm of 1 there makes that row the identity, whose "
                "gradient is g. Keep the where on the output, which sends a zero cotangent to "
                "those rows.", learner_function("safe_normalize", "v", _no_output_where)),
        Mistake("whole_norm", "You divided by the norm of the whole tensor: normalize each row on "
                "its own, by the norm over the last axis (keepdims=True, so that it broadcasts "
                "over the row).", learner_function("safe_normalize", "v", _whole_norm)),
        Mistake("no_projection", "Your gradient is g / n: it misses the term from the norm, which "
                "depends on v too. The VJP of v / n removes from g its component along the output"
                " y before dividing by n: (g - y * sum(y * g)) / n, the sum over the row.",
                _no_projection),
        Mistake("ignores_cotangent", "Your gradient does not depend on the incoming cotangent g "
                "(it equals what a cotangent of ones gives). Use `g`, the cotangent grad_fn "
                "receives.", _normalize_ignores_cotangent),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Use tf ops on tensors "
                 "(tf.where, tf.reduce_sum, tf.sqrt), not a Python if or numpy: the check also "
                 "runs your function inside tf.function, where values are symbolic.",
        "nonfinite": "NaN or Inf at a row of zeros: the branch tf.where does not take is still "
                     "differentiated, and there v / n is 0 / 0. Divide by a safe norm (1 where a "
                     "row is all zeros, one value per row, kept with keepdims=True) and keep the "
                     "where on the output, or write the gradient with tf.custom_gradient.",
        "shape": "y has v's shape: each row (the last axis) is divided by its own norm, computed "
                 "with keepdims=True so that it broadcasts over the row.",
        "value": "For a row with norm n > 0, y = v / n and the gradient is (g - y * sum(y * g)) / "
                 "n, the sum over the row; for a row of zeros, y = 0 and the gradient is 0.",
    },
)


# ---------------------------------------------------------------- clip_cotangent_norm


@st.composite
def _clip_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(dtypes()), draw(_shapes(profile))
    # |x| >= 3, beyond every max_norm: a learner who clips the forward value is always seen.
    size = draw(hnp.arrays(dtype, shape, elements=st.floats(3, 10, width=dtype.itemsize * 8),
                           fill=st.nothing()))
    negative = draw(hnp.arrays(np.bool_, shape, fill=st.nothing()))
    x = np.asarray(np.where(negative, -size, size), dtype=dtype)
    max_norm = draw(st.sampled_from([0.5, 1.0, 2.5, 40.0]))
    return Case((("x", x), ("max_norm", max_norm), ("g", _cotangent(draw, dtype, shape))))


def _clip_edges() -> list[Case]:
    rng = np.random.default_rng(42)
    x = np.array([-1000.0, -100.0, -3.0, 0.0, 0.5, 3.0, 100.0, 1000.0])
    g = np.array([-50.0, 0.2, -0.7, 4.0, -1.0, 1.0, 0.9, 30.0])
    small = 0.9 - 0.01 * np.arange(16.0)  # every element below 1, the norm above it
    return [
        Case((("x", x.astype(np.float32)), ("max_norm", 1.0), ("g", g.astype(np.float32))),
             label="large and small inputs and cotangents, max_norm 1"),
        Case((("x", _random(rng, (4, 4), np.float32)), ("max_norm", 1.0),
              ("g", small.reshape(4, 4).astype(np.float32))),
             label="every element of g below max_norm, its norm above"),
        Case((("x", _random(rng, (3, 4), np.float64)), ("max_norm", 40.0),
              ("g", _random(rng, (3, 4), np.float64))), label="a norm below max_norm"),
        Case((("x", np.array([1.0, -2.0, 5.0])), ("max_norm", 0.5), ("g", np.zeros(3))),
             label="a zero cotangent"),
    ]


def _clip_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, max_norm, g = case.values()
    x, g = tf.constant(x), tf.constant(g)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.identity(x)
    g_x = tape.gradient(y, x, output_gradients=g)
    return _outputs(y, tf.clip_by_norm(g_x, max_norm))


def _clip_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy
    max_norm = params["max_norm"]

    @jax.custom_vjp
    def clipped(x):
        return x

    def bwd(_: Any, g: Any) -> tuple:
        return (g * (max_norm / jnp.maximum(jnp.sqrt(jnp.sum(g * g)), max_norm)),)

    clipped.defvjp(lambda x: (x, None), bwd)
    y, vjp = jax.vjp(clipped, arrays["x"])
    return (y, *vjp(arrays["g"]))


def _clip_learner(value: Callable[..., Any], gradient: Callable[..., Any]
                  ) -> Callable[..., Any]:
    """A learner's clip_cotangent_norm(x, max_norm): `value(tf, x, max_norm)` going forward,
    and a grad_fn returning `gradient(tf, g, max_norm)` (max_norm is a number, not an input)."""

    def clip_cotangent_norm(x: Any, max_norm: float) -> Any:
        tf = _tf()

        @tf.custom_gradient
        def forward(x: Any) -> Any:
            return value(tf, x, max_norm), lambda g: gradient(tf, g, max_norm)

        return forward(x)

    return clip_cotangent_norm


def _identity(tf: Any, x: Any, max_norm: float) -> Any:
    return tf.identity(x)


def _by_norm(tf: Any, t: Any, max_norm: float) -> Any:
    return tf.clip_by_norm(t, max_norm)


def _clips_forward(x: Any, max_norm: float) -> Any:
    """The value clipped, with no custom gradient: TF's own gradient of clip_by_norm."""
    return _tf().clip_by_norm(x, max_norm)


_clips_elementwise = _clip_learner(
    _identity, lambda tf, g, max_norm: tf.clip_by_value(g, -max_norm, max_norm))
_always_rescales = _clip_learner(
    _identity, lambda tf, g, max_norm: g * max_norm / tf.norm(g))
_not_clipped = _clip_learner(_identity, lambda tf, g, max_norm: g)
_clip_ignores_cotangent = _clip_learner(
    _identity, lambda tf, g, max_norm: _by_norm(tf, tf.ones_like(g), max_norm))
_clip_fixed_limit = _clip_learner(_identity, lambda tf, g, max_norm: _by_norm(tf, g, 1.0))


CLIP_COTANGENT_NORM = Exercise(
    signature=(
        "clip_cotangent_norm(x, max_norm) -> tensor x, its cotangent rescaled to an L2 norm of at "
        "most max_norm"
    ),
    outputs=("y", "grad_x"),
    cases=_clip_case,
    edges=_clip_edges,
    reference=two_references(
        tf=_clip_tf, jax=_clip_jax,
        why="the identity with a rescaled cotangent is no forward's derivative: TensorFlow "
            "clips its tape's cotangent (tf.clip_by_norm), JAX declares a jax.custom_vjp"),
    references_text="jax.custom_vjp (identity, rescaled cotangent) and tf.clip_by_norm",
    invoke="ch04_custom_gradient_tf:invoke_clip",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("clips_elementwise", "You clipped each element of the cotangent to [-max_norm, "
                "max_norm], as the example above does. Here the whole cotangent is rescaled: when"
                " its L2 norm (over all elements) exceeds max_norm, every element is multiplied "
                "by max_norm / norm, so its direction is kept.", _clips_elementwise),
        Mistake("always_rescales", "You rescaled every cotangent to norm max_norm, also those "
                "already smaller (and a zero cotangent gives 0 / 0 = NaN). Rescale only when the "
                "norm exceeds max_norm; a smaller cotangent passes unchanged.", _always_rescales),
        Mistake("clips_forward", "You clipped the forward value instead of the cotangent. The "
                "forward pass must be the identity (y = x, unchanged); only the cotangent is "
                "rescaled, inside grad_fn.", _clips_forward),
        Mistake("not_clipped", "The cotangent comes back unchanged: rescale it inside grad_fn when"
                " its norm exceeds max_norm.", _not_clipped),
        Mistake("ignores_cotangent", "Your gradient does not depend on the incoming cotangent g "
                "(it equals a rescaled cotangent of ones). Rescale `g` itself.",
                _clip_ignores_cotangent),
        Mistake("fixed_limit", "Your cotangent is rescaled to a fixed norm, not to max_norm: use "
                "the `max_norm` argument (grad_fn can read it, as a closure).", _clip_fixed_limit),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. max_norm is a Python "
                 "number, not an input with a gradient: grad_fn returns one gradient, for x.",
        "nonfinite": "NaN where the cotangent is all zeros: its norm is 0, and dividing by it "
                     "gives 0 / 0. A zero cotangent is below any max_norm and passes unchanged.",
        "value": "y must equal x; grad_x must be g when its L2 norm (over all elements) is at most"
                 " max_norm, else g * max_norm / norm.",
    },
)


# ---------------------------------------------------------------- quantize_ste


@st.composite
def _quantize_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype, shape = draw(dtypes()), draw(_shapes(profile))
    x = draw(hnp.arrays(dtype, shape, fill=st.nothing(), elements=st.one_of(
        _plain(dtype, 2.0), st.sampled_from([0.0, 1.0]))))  # the window's edges, exactly
    levels = draw(st.sampled_from([2, 3, 5, 17]))
    return Case((("x", x), ("levels", levels), ("g", _cotangent(draw, dtype, shape))))


def _quantize_edges() -> list[Case]:
    rng = np.random.default_rng(43)
    x = np.array([-1000.0, -100.0, -0.01, 0.0, 0.1, 0.3, 0.7, 1.0, 1.01, 100.0, 1000.0])
    return [
        Case((("x", x.astype(dt)), ("levels", levels), ("g", _random(rng, x.shape, dt))),
             label=english("the window edges 0 and 1, +-100, +-1000, {levels} levels ({dtype})",
                       levels=levels, dtype=np.dtype(dt).name))
        for dt, levels in ((np.float32, 4), (np.float64, 2))
    ]


def _quantize_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, levels, g = case.values()
    x, g = tf.constant(x), tf.constant(g)
    steps = levels - 1
    with tf.GradientTape() as tape:
        tape.watch(x)
        clipped = tf.clip_by_value(x, 0, 1)  # its gradient is the window 0 <= x <= 1
        y = clipped + tf.stop_gradient(tf.round(clipped * steps) / steps - clipped)
    return _outputs(y, tape.gradient(y, x, output_gradients=g))


def _quantize_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy
    x, steps = arrays["x"], params["levels"] - 1
    window = ((x >= 0) & (x <= 1)).astype(x.dtype)
    _, vjp = jax.vjp(lambda x: x * window, x)  # the analytic STE: 1 on 0 <= x <= 1, else 0
    return (jnp.round(jnp.clip(x, 0, 1) * steps) / steps, *vjp(arrays["g"]))


def _quantized(tf: Any, x: Any, levels: int) -> Any:
    return tf.round(tf.clip_by_value(x, 0, 1) * (levels - 1)) / (levels - 1)


def _plain_quantize(x: Any, levels: int) -> Any:
    """The quantiser with TensorFlow's own gradient: tf.round has none, so zero."""
    return _quantized(_tf(), x, levels)


def _window(tf: Any, x: Any, inside: Callable[[Any], Any]) -> Any:
    return tf.cast(inside(x), x.dtype)


def _quantize_learner(gradient: Callable[..., Any]) -> Callable[..., Any]:
    """A learner's quantize_ste(x, levels) whose grad_fn returns `gradient(tf, g, x, levels)`."""

    def quantize_ste(x: Any, levels: int) -> Any:
        tf = _tf()

        @tf.custom_gradient
        def forward(x: Any) -> Any:
            return _quantized(tf, x, levels), lambda g: gradient(tf, g, x, levels)

        return forward(x)

    return quantize_ste


def _closed(x: Any) -> Any:
    return (x >= 0) & (x <= 1)


_no_window = _quantize_learner(lambda tf, g, x, levels: g)
_open_window = _quantize_learner(
    lambda tf, g, x, levels: g * _window(tf, x, lambda v: (v > 0) & (v < 1)))
_scaled = _quantize_learner(
    lambda tf, g, x, levels: g * (levels - 1) * _window(tf, x, _closed))
_quantize_ignores_cotangent = _quantize_learner(
    lambda tf, g, x, levels: _window(tf, x, _closed))


QUANTIZE_STE = Exercise(
    signature=(
        "quantize_ste(x, levels) -> tensor: x clipped to [0, 1] and rounded to `levels` levels, "
        "straight through"
    ),
    outputs=("y", "grad_x"),
    cases=_quantize_case,
    edges=_quantize_edges,
    reference=two_references(
        tf=_quantize_tf, jax=_quantize_jax,
        why="two ways on purpose: TensorFlow's is the STE written with tf.stop_gradient, JAX's "
            "the analytic window (1 on 0 <= x <= 1) it must equal"),
    references_text=(
        "tf.stop_gradient's straight-through form over tf.clip_by_value, and jax.vjp of "
        "the analytic window"
    ),
    invoke="ch04_custom_gradient_tf:invoke",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("no_window", "You passed the cotangent through everywhere, as round_ste does. This"
                " quantiser clips first: outside [0, 1] its input to the rounding no longer moves"
                " with x, so the straight-through gradient is that of the clip, g where 0 <= x <="
                " 1 and 0 outside.", _no_window),
        Mistake("plain_round", "Your gradient is zero everywhere: tf.round has no gradient, so "
                "nothing before the quantiser would learn. Replace it with the straight-through "
                "estimator (tf.custom_gradient, or x + tf.stop_gradient(...) on the clipped "
                "value).", _plain_quantize),
        Mistake("open_window", "Your gradient is 0 at x = 0 or x = 1 exactly, where it should be "
                "g: the range of x where the gradient passes must include its edges, since the "
                "clip's gradient there is 1 (tf.clip_by_value passes it at its bounds). Pass g "
                "where 0 <= x <= 1.", _open_window),
        Mistake("scaled", "Your gradient is levels - 1 times too large: the quantiser multiplies "
                "by levels - 1 before rounding and divides by it after, and the straight-through "
                "estimator treats the rounding alone as the identity, so the two factors cancel.",
                _scaled),
        Mistake("ignores_cotangent", "Your gradient does not depend on the incoming cotangent g "
                "(it equals what a cotangent of ones gives). Multiply by `g`: the gradient is g "
                "where 0 <= x <= 1 and 0 elsewhere.", _quantize_ignores_cotangent),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Use tf ops on tensors "
                 "(tf.clip_by_value, tf.round, tf.where), not a Python if or numpy; levels is a "
                 "Python int, not an input with a gradient.",
        "value": "Forward: clip x to [0, 1], then round to the nearest of the `levels` evenly "
                 "spaced values; going backward, treat only the rounding as the identity and keep "
                 "the clip's own gradient.",
    },
)


# ---------------------------------------------------------------- td_loss (tf.stop_gradient)

TD_SHAPES: tuple[Shape, ...] = ((2,), (6,), (1, 2), (3, 4))
TD_GRADING: tuple[Shape, ...] = ((9,), (2, 7))


@st.composite
def _td_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype = draw(dtypes())
    shape = draw(shape_menu(profile, TD_SHAPES, TD_GRADING))
    steps = (*shape[:-1], shape[-1] - 1)
    values = draw(hnp.arrays(dtype, shape, elements=_plain(dtype), fill=st.nothing()))
    rewards = draw(hnp.arrays(dtype, steps, elements=_plain(dtype), fill=st.nothing()))
    gamma = draw(st.sampled_from([0.5, 0.9, 0.99]))
    return Case((("values", values), ("rewards", rewards), ("gamma", gamma),
                 ("g", _cotangent(draw, dtype, steps))))


def _td_edges() -> list[Case]:
    rng = np.random.default_rng(45)
    cases = []
    for shape, gamma, dt, label in (((2,), 0.9, np.float32, "one step"),
                                    ((5,), 0.0, np.float64, "gamma = 0: the target is the "
                                                            "reward alone"),
                                    ((3, 4), 1.0, np.float32, "a batch of 3, gamma = 1")):
        steps = (*shape[:-1], shape[-1] - 1)
        cases.append(Case((("values", _random(rng, shape, dt)),
                           ("rewards", _random(rng, steps, dt)), ("gamma", gamma),
                           ("g", _random(rng, steps, dt))), label=label))
    return cases


def _td_learner(stop_target: Callable[[Any], Any], stop_prediction: Callable[[Any], Any],
                stop_bootstrap: Callable[[Any], Any]) -> Callable[..., Any]:
    """A learner's td_loss with tf.stop_gradient (or nothing) on the target, the
    prediction, or the bootstrapped term alone."""

    def td_loss(values: Any, rewards: Any, gamma: float) -> Any:
        target = stop_target(rewards + stop_bootstrap(gamma * values[..., 1:]))
        return 0.5 * (stop_prediction(values[..., :-1]) - target) ** 2

    return td_loss


def _stop(t: Any) -> Any:
    return _tf().stop_gradient(t)


def _keep(t: Any) -> Any:
    return t


_td_no_stop = _td_learner(_keep, _keep, _keep)
_td_stopped_prediction = _td_learner(_keep, _stop, _keep)
_td_stops_bootstrap_only = _td_learner(_keep, _keep, _stop)


TD_LOSS = Exercise(
    signature=(
        "td_loss(values, rewards, gamma) -> tensor: the squared TD error at each step, its target "
        "held constant"
    ),
    outputs=("loss", "grad_values", "grad_rewards"),
    cases=_td_case,
    edges=_td_edges,
    reference=vjp_reference(
        lambda xp, values, rewards, gamma: 0.5 * (
            values[..., :-1] - xp.stop_gradient(rewards + gamma * values[..., 1:])) ** 2,
        wrt=("values", "rewards"), value=True),
    references_text="tf.stop_gradient and jax.lax.stop_gradient on the target",
    invoke="ch04_custom_gradient_tf:invoke",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("no_stop", "Your gradient also flows through the target, into values[..., 1:]: the"
                " model would move its next prediction toward its current one as much as the "
                "other way. The target is a constant: wrap it in tf.stop_gradient.", _td_no_stop),
        Mistake("stopped_prediction", "You stopped the wrong term: tf.stop_gradient on values[...,"
                " :-1] cuts the prediction, so only the target would learn. Stop the target, and "
                "let the gradient reach the prediction.", _td_stopped_prediction),
        Mistake("stops_bootstrap_only", "Your gradient reaches the rewards: you stopped gamma * "
                "values[..., 1:] but not the whole target. The target rewards + gamma * "
                "values[..., 1:] is one constant; stop all of it.", _td_stops_bootstrap_only),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Slice the last axis "
                 "(values[..., :-1], values[..., 1:]) and use tf ops on tensors; gamma is a Python"
                 " float.",
        "shape": "The loss has one entry per step: the shape of rewards, values' shape with one "
                 "fewer entry on the last axis.",
        "value": "Each step's loss is half its squared TD error; its gradient reaches the "
                 "prediction values[..., :-1] only: nothing may flow back through the target, "
                 "neither into values[..., 1:] nor into the rewards.",
    },
)


# ---------------------------------------------------------------- tanh_layer (a tf.Variable)


@st.composite
def _tanh_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype = draw(dtypes())
    n, k, m = draw(shape_menu(profile, LAYER_SIZES, LAYER_GRADING))
    # |x|, |w| <= 1: x @ w stays within a few units, where tanh is not yet flat.
    x = draw(hnp.arrays(dtype, (n, k), elements=_plain(dtype, 1), fill=st.nothing()))
    w = draw(hnp.arrays(dtype, (k, m), elements=_plain(dtype, 1), fill=st.nothing()))
    return Case((("x", x), ("w", w), ("g", _cotangent(draw, dtype, (n, m)))))


def _tanh_edges() -> list[Case]:
    rng = np.random.default_rng(44)
    shapes = [((4, 3), (3, 2), np.float32, "a batch of 4, 3 features in, 2 out"),
              ((1, 5), (5, 1), np.float64, "one row, one output"),
              ((3, 3), (3, 3), np.float32, "square: a transpose mistake cannot hide in shapes")]
    cases = []
    for xs, ws, dt, label in shapes:
        x, w = _random(rng, xs, dt) / 3, _random(rng, ws, dt) / 3
        cases.append(Case((("x", x), ("w", w), ("g", _random(rng, (xs[0], ws[1]), dt))),
                          label=label))
    return cases


def _tanh_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    x, w, g = case.values()
    x, w, g = tf.constant(x), tf.Variable(w), tf.constant(g)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.tanh(x @ w)
    grad_x, grad_w = tape.gradient(y, [x, w], output_gradients=g)
    return _outputs(y, grad_x, grad_w)


def _tanh_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    y, vjp = jax.vjp(lambda x, w: jax.numpy.tanh(x @ w), arrays["x"], arrays["w"])
    return (y, *vjp(arrays["g"]))


def _layer_learner(value: Callable[..., Any], gradients: Callable[..., tuple[Any, Any]]
                   ) -> Callable[..., Any]:
    """A learner's tanh_layer(x, w): `value(tf, x, w)`, with a grad_fn(g, variables=None)
    returning (grad_x, [grad_w]) from `gradients(tf, g, x, w, y)`."""

    def tanh_layer(x: Any, w: Any) -> Any:
        tf = _tf()

        @tf.custom_gradient
        def forward(x: Any) -> Any:
            y = value(tf, x, w)

            def grad_fn(g: Any, variables: Any = None) -> Any:
                grad_x, grad_w = gradients(tf, g, x, w, y)
                return grad_x, [grad_w]

            return y, grad_fn

        return forward(x)

    return tanh_layer


def _tanh(tf: Any, x: Any, w: Any) -> Any:
    return tf.tanh(x @ w)


def _matmul(tf: Any, x: Any, w: Any) -> Any:
    return x @ w


def _matmul_vjp(tf: Any, g: Any, x: Any, w: Any) -> tuple[Any, Any]:
    return g @ tf.transpose(w), tf.transpose(x) @ g


_layer_copied_linear = _layer_learner(_matmul, lambda tf, g, x, w, y: _matmul_vjp(tf, g, x, w))
_layer_no_tanh_derivative = _layer_learner(
    _tanh, lambda tf, g, x, w, y: _matmul_vjp(tf, g, x, w))
_layer_untransposed = _layer_learner(
    _tanh, lambda tf, g, x, w, y: (g * (1 - y**2) @ w, x @ (g * (1 - y**2))))
_layer_ignores_cotangent = _layer_learner(
    _tanh, lambda tf, g, x, w, y: _matmul_vjp(tf, 1 - y**2, x, w))


TANH_LAYER = Exercise(
    signature=(
        "tanh_layer(x, w) -> tensor tanh(x @ w), w a tf.Variable read inside a custom gradient"
    ),
    outputs=("y", "grad_x", "grad_w"),
    cases=_tanh_case,
    edges=_tanh_edges,
    reference=two_references(
        tf=_tanh_tf, jax=_tanh_jax,
        why="TensorFlow's reference reads w as a tf.Variable, as the learner's layer must (what "
            "the exercise is about); JAX has no variables"),
    references_text="jax.vjp(jnp.tanh(x @ w)) and tf.GradientTape over a tf.Variable",
    invoke="ch04_custom_gradient_tf:invoke_layer",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("copied_linear", "Your output is x @ w: the linear layer above, copied. This layer"
                " applies tanh to x @ w, and going backward the cotangent passes through tanh's "
                "derivative before it reaches the matmul.", _layer_copied_linear),
        Mistake("no_tanh_derivative", "Your gradients are those of x @ w alone: the chain rule "
                "through tanh is missing. Multiply g by tanh's derivative at x @ w (the output y,"
                " kept from the forward pass, gives it) before the matmul's VJP.",
                _layer_no_tanh_derivative),
        Mistake("untransposed", "Transpose in the VJP of a matmul: for z = x @ w with cotangent "
                "g_z, grad_x = g_z @ w^T and grad_w = x^T @ g_z.", _layer_untransposed),
        Mistake("ignores_cotangent", "Your gradients do not depend on the incoming cotangent g "
                "(they equal what a cotangent of ones gives). Multiply by `g`.",
                _layer_ignores_cotangent),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Inside "
                 "@tf.custom_gradient, tanh_layer's forward returns (y, grad_fn), and grad_fn(g, "
                 "variables=None) returns (grad_x, [grad_w]); use tf ops on tensors, not numpy.",
        "value": "Right shapes, wrong numbers: the cotangent of z = x @ w is g times tanh's "
                 "derivative at z, and the matmul's VJP takes it from there (with transposes).",
        "exception": "With a tf.Variable read inside, grad_fn must be `def grad_fn(g, "
                     "variables=None)` and return a pair: (gradient of x, [gradient of w]) -- the "
                     "variable gradients in a list, one per variable in `variables`.",
        "shape": "grad_x must have x's shape (n, k) and grad_w w's shape (k, m): the matmul's VJP "
                 "multiplies by w^T on the right for x, by x^T on the left for w.",
    },
)

EXERCISES = (TANH_LAYER, LOGADDEXP, SAFE_NORMALIZE, CLIP_COTANGENT_NORM, QUANTIZE_STE, TD_LOSS)

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
        choices={"a": "0.0: tf.where takes the constant branch there",
                 "b": "NaN", "c": "-inf",
                 "d": "an error: tf.where is not differentiable"},
        answer="b",
        why="Both branches are differentiated. The branch not taken gets a zero cotangent, and "
            "log's VJP multiplies it by 1/0: 0 * inf = NaN, added into the gradient.",
    ),
    Prediction(
        name="ch04_round_gradient",
        question="What does tape.gradient(tf.round(x), x) return?",
        choices={"a": "zeros", "b": "None", "c": "ones",
                 "d": "an error: round is not differentiable"},
        answer="b",
        why="TensorFlow registers no gradient for Round: x is not connected to the output, "
            "and tape.gradient returns None (tf.sign, by contrast, has a gradient of zeros).",
    ),
)

"""Chapter 07 exercises: Jacobians from VJPs and from JVPs, per-example Jacobians, and a
Gauss-Newton-vector product.

Each exercise takes functions, and a case cannot carry one (cases are data shipped to a sandbox).
So a case names a few fixed test functions ("tanh_mix", "outer", ...; a model and a loss for the
Gauss-Newton product): the exercise's invoke (autograder/harness/ch07_jacobians.py) builds them
with jax.numpy and hands them to the learner's code, and the references build the same functions
by name, once with TensorFlow and once with jax.numpy (the harness's own). The known wrong answers
are learner functions written with JAX; verdicts always come from TensorFlow and JAX."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np
from hypothesis import strategies as st

from autograder.exercises.common import lazy_jax, rng_array
from autograder.judging.cases import FLOAT_DTYPES, Case, Profile, Shape, float_arrays, grading_sized
from autograder.judging.derived import two_references
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction

# Why this chapter's references are written once per framework: the learner is handed the test
# functions as jax.numpy functions (autograder/harness/ch07_jacobians.py), which the JAX
# references differentiate themselves; TensorFlow differentiates twins of them written with tf
# ops, and builds Jacobians from one-hot tape.gradient calls (tape.jacobian's set-up dominates on
# cases this small).
TWO_REFERENCES = (
    "the learner is handed jax.numpy test functions, which JAX differentiates "
    "itself; TensorFlow differentiates twins written with tf ops"
)

FRAMEWORKS = ("jax",)
BOUND = 2.0

# ---------------------------------------------------------------- the test functions, three ways

VECTOR_NAMES = ("tanh_mix", "cumsum_sin", "outer", "logsumexp_rows")
ANY_RANK = ("tanh_mix", "cumsum_sin")  # these accept a scalar x; the others need an axis
BATCH_NAMES = ("dense_tanh", "softmax_rows", "batchnorm", "batch_centred")
GAUSS_NEWTON_MODELS = ("cumsum_sin", "outer")  # small inside: no array as large as J
LOSS_NAMES = ("coupled_squares", "squared_error", "quartic")


@cache
def _jnp_functions() -> ModuleType:
    """The jax.numpy test functions, and BATCH_NORM_EPS, from the module whose invokes hand
    them to the learner (autograder/harness/ch07_jacobians.py): the references see the very same
    functions. Imported only when needed, as it imports JAX."""
    return importlib.import_module("..harness.ch07_jacobians", __package__)


def _tf_mix_matrix(tf: Any, rows: int, cols: int, dtype: Any) -> Any:
    i = tf.range(rows, dtype=dtype)[:, None]
    j = tf.range(cols, dtype=dtype)[None, :]
    return tf.cos(1.3 * i - 0.7 * j + 0.5)


def _tf_vector_function(tf: Any, name: str, x: Any) -> Any:
    if name in ("tanh_mix", "cumsum_sin"):
        v = tf.reshape(x, [-1])
        n = int(v.shape[0])
        if name == "tanh_mix":
            return tf.tanh(tf.linalg.matvec(_tf_mix_matrix(tf, n + 1, n, x.dtype), v))
        return tf.cumsum(v * tf.sin(v))
    if name == "outer":
        return x[..., :, None] * tf.sin(x)[..., None, :]
    return tf.reduce_logsumexp(x, axis=-1)


def _tf_batch_function(tf: Any, name: str, x: Any) -> Any:
    n = int(x.shape[1])
    h = x @ _tf_mix_matrix(tf, n, n + 1, x.dtype)
    if name == "dense_tanh":
        return tf.tanh(h)
    if name == "softmax_rows":
        return tf.nn.softmax(h, axis=-1)
    if name == "batchnorm":
        centred = h - tf.reduce_mean(h, axis=0)
        eps = _jnp_functions().BATCH_NORM_EPS
        return centred / tf.sqrt(tf.reduce_mean(centred**2, axis=0) + eps)
    t = tf.tanh(h)
    return t - tf.reduce_mean(t, axis=0)


def _tf_loss_function(tf: Any, name: str, z: Any) -> Any:
    if name == "coupled_squares":
        return 0.5 * tf.reduce_sum(z**2) + 0.5 * tf.reduce_sum(z) ** 2
    if name == "squared_error":
        return 0.5 * tf.reduce_sum((z - 0.5) ** 2)
    return tf.reduce_sum(z**4) / 12


def _tf_jacobian(tf: Any, fn: Any, x: np.ndarray) -> np.ndarray:
    """TensorFlow's Jacobian, output axes first, one tape.gradient per output entry.

    Each row is the gradient for a one-hot `output_gradients` (cotangent); the rows are
    stacked in y's shape. This is what tape.jacobian(y, x) computes (the tests check that),
    but without its per-call set-up cost, which dominates for the small cases here.
    """
    x = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
    size = int(np.prod(y.shape))
    one_hots = tf.reshape(tf.eye(size, dtype=y.dtype), [size, *y.shape])
    rows = [tape.gradient(y, x, output_gradients=one_hots[i]) for i in range(size)]
    return tf.reshape(tf.stack(rows), [*y.shape, *x.shape]).numpy()


# ---------------------------------------------------------------- cases

# Shapes come from short menus: the learner's JAX code compiles once per new (shape, dtype),
# so a few shapes keep a check quick. Larger shapes are added when grading. Most cases are
# float32 (JAX's default precision); float64 cases (the learner's code then runs with x64
# enabled, and one-hot vectors built without dtype= are float64 too) have one shape per
# exercise, so they add one compilation per test function, not one per float32 shape.
VECTOR_SHAPES = ((3,), (2, 3), (2, 1, 2))
SCALAR_INPUT = ((),)  # only tanh_mix and cumsum_sin take a 0-d x; the others need an axis
BATCH_SHAPES = ((1, 3), (3, 2), (4, 3))
GAUSS_NEWTON_SHAPES = ((3,), (2, 3))
GRADING_EXTRA = {"vector": ((1, 4), (2, 2, 3)), "batch": ((2, 4), (6, 5)), "gn": ((1, 4), (3, 4))}
FLOAT64_SHAPES = {"vector": ((2, 1, 2),), "batch": ((4, 3),), "gn": ((4,),)}
FLOAT32, FLOAT64 = FLOAT_DTYPES

# The edge cases: (test function, shape, label[, dtype]); Gauss-Newton's name a model and a
# loss. In a notebook the drawn cases take these signatures too (function, shape, dtype) with
# other values: the learner's program is traced, lowered and compiled once per signature
# (about 70 ms each on 2 cores), so a first check compiles 5 to 7 programs, not 12 to 16 as
# when every function met every shape of the menu. Grading draws from the whole menus.
VECTOR_EDGES = (
    ("outer", (2, 3), "an output of higher rank than the input"),
    ("tanh_mix", (), "a scalar input"),
    ("logsumexp_rows", (3,), "a scalar output"),
    ("cumsum_sin", (2, 3), "a 2-D input, a 1-D output"),
    ("logsumexp_rows", (2, 1, 2), "rows of a 3-D input"),
    ("tanh_mix", (3,), "more outputs than inputs"),
    ("outer", (2, 1, 2), "a size-1 middle axis, float64", FLOAT64),
)
BATCH_EDGES = (
    ("batchnorm", (7, 6), "a batch-normalised layer, x:(7, 6)"),
    ("dense_tanh", (7, 6), "a dense layer, x:(7, 6)"),
    ("batch_centred", (3, 2), "outputs centred over the batch"),
    ("batchnorm", (1, 3), "a batch of one"),
    ("softmax_rows", (3, 2), "a softmax per row"),
    ("batchnorm", (4, 3), "a batch-normalised layer, float64", FLOAT64),
)
GAUSS_NEWTON_EDGES = (
    ("cumsum_sin", "coupled_squares", (4,), "a dense loss Hessian, I + 1 1^T"),
    ("outer", "quartic", (2, 3), "an output of higher rank than x"),
    ("cumsum_sin", "squared_error", (2, 3), "half a squared error: the loss Hessian is I"),
    ("cumsum_sin", "quartic", (), "a scalar x"),
    ("outer", "coupled_squares", (2, 1, 2), "a size-1 middle axis, float64", FLOAT64),
)


def _menu(kind: str, base: tuple[Shape, ...], profile: Profile) -> list[Shape]:
    return list(base) + (list(GRADING_EXTRA[kind]) if grading_sized(profile) else [])


def _signatures(edges: Sequence[tuple[Any, ...]], names: int) -> list[tuple[Any, ...]]:
    """Each edge case's (names..., shape, dtype), once: `names` leading strings, then the
    shape, the label (left out) and the dtype (float32 unless given)."""
    found = [(*pick[: names + 1], *(pick[names + 2 :] or (FLOAT32,))) for pick in edges]
    return list(dict.fromkeys(found))


@st.composite
def _shape_and_dtype(draw: st.DrawFn, kind: str, shapes: list[Shape]) -> tuple[Shape, np.dtype]:
    """A float32 case of any shape on the menu, or a float64 case of a float64 shape."""
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    return draw(st.sampled_from(shapes if dtype == FLOAT32 else FLOAT64_SHAPES[kind])), dtype


def _values(shape: Shape, dtype: np.dtype = FLOAT32) -> st.SearchStrategy[np.ndarray]:
    return float_arrays(dtype, shape, bound=BOUND)


def _named_cases(
    kind: str,
    names: Sequence[str],
    base: tuple[Shape, ...],
    edges: Sequence[tuple[Any, ...]],
    arrays: tuple[str, ...] = ("x",),
    any_rank: Sequence[str] = (),
) -> Any:
    """Cases of one test function of `names` and its arrays, all of one shape and dtype:
    in a notebook an edge case's signature, when grading any from the `kind` menu (plus a
    0-d x for the functions of `any_rank`)."""

    @st.composite
    def cases(draw: st.DrawFn, profile: Profile) -> Case:
        if grading_sized(profile):
            name = draw(st.sampled_from(names))
            shapes = _menu(kind, base, profile) + (list(SCALAR_INPUT) if name in any_rank else [])
            shape, dtype = draw(_shape_and_dtype(kind, shapes))
        else:
            name, shape, dtype = draw(st.sampled_from(_signatures(edges, 1)))
        return Case((("name", name), *((a, draw(_values(shape, dtype))) for a in arrays)))

    return cases


def _rng_array(rng: np.random.Generator, shape: Shape, dtype: np.dtype = FLOAT32) -> np.ndarray:
    return rng_array(rng, shape, dtype, BOUND, decimals=2)


def _named_edges(
    seed: int, picks: Sequence[tuple[Any, ...]], arrays: tuple[str, ...] = ("x",)
) -> list[Case]:
    """A case per pick (function name, shape, label[, dtype]); its `arrays` drawn in turn
    from one generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    return [
        Case((("name", name), *((a, _rng_array(rng, shape, *dtype)) for a in arrays)), label=label)
        for name, shape, label, *dtype in picks
    ]


def _vector_edges() -> list[Case]:
    return _named_edges(6, VECTOR_EDGES)


def _batch_edges() -> list[Case]:
    return _named_edges(7, BATCH_EDGES)


@st.composite
def _gauss_newton_cases(draw: st.DrawFn, profile: Profile) -> Case:
    """A model, a loss, and x and v of one shape and dtype: in a notebook an edge case's
    signature, when grading any from the menu (a 0-d x for cumsum_sin only: outer needs an
    axis)."""
    if grading_sized(profile):
        model = draw(st.sampled_from(GAUSS_NEWTON_MODELS))
        loss = draw(st.sampled_from(LOSS_NAMES))
        extra = list(SCALAR_INPUT) if model == "cumsum_sin" else []
        menu = _menu("gn", GAUSS_NEWTON_SHAPES, profile) + extra
        shape, dtype = draw(_shape_and_dtype("gn", menu))
    else:
        model, loss, shape, dtype = draw(st.sampled_from(_signatures(GAUSS_NEWTON_EDGES, 2)))
    x, v = draw(_values(shape, dtype)), draw(_values(shape, dtype))
    return Case((("model", model), ("loss", loss), ("x", x), ("v", v)))


def _gauss_newton_edges() -> list[Case]:
    rng = np.random.default_rng(8)
    return [
        Case(
            (
                ("model", model),
                ("loss", loss),
                ("x", _rng_array(rng, shape, *dtype)),
                ("v", _rng_array(rng, shape, *dtype)),
            ),
            label=label,
        )
        for model, loss, shape, label, *dtype in GAUSS_NEWTON_EDGES
    ]


# ---------------------------------------------------------------- references


def _vector_tf(tf: Any, case: Case) -> tuple[np.ndarray]:
    name, x = case.values()
    return (_tf_jacobian(tf, lambda t: _tf_vector_function(tf, name, t), x),)


def _vector_jax(mode: str) -> Any:
    """JAX's reference Jacobian by `mode`, "jacrev" or "jacfwd"."""

    def reference(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
        f = _jnp_functions().vector_function(params["name"])
        return (getattr(jax, mode)(f)(arrays["x"]),)

    return reference


def _per_example(full: Any, xnp: Any) -> tuple[Any, Any]:
    """Diagonal blocks J[b, :, b, :] of a (B, m, B, n) Jacobian, and whether the rest is 0."""
    batch = full.shape[0]
    blocks = xnp.einsum("bibj->bij", full)
    mask = xnp.eye(batch, dtype=bool)[:, None, :, None]
    return blocks, xnp.all(xnp.where(mask, 0, full) == 0)


def _batch_tf(tf: Any, case: Case) -> tuple[np.ndarray, np.ndarray]:
    name, x = case.values()
    full = _tf_jacobian(tf, lambda t: _tf_batch_function(tf, name, t), x)
    blocks, independent = _per_example(full, np)
    return blocks, np.asarray(independent)


def _batch_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    f = _jnp_functions().batch_function(params["name"])
    return _per_example(jax.jacrev(f)(arrays["x"]), jax.numpy)


def _gauss_newton_tf(tf: Any, case: Case) -> tuple[np.ndarray]:
    """TensorFlow's three products: J v by a ForwardAccumulator, the loss Hessian at z = f(x)
    on it by nested tapes, and J^T of that by a tape with output_gradients."""
    model, loss, x, v = case.values()
    x = tf.constant(x)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(v)) as acc:
        z_pushed = _tf_vector_function(tf, model, x)
    tangent = acc.jvp(z_pushed)
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = _tf_vector_function(tf, model, x)
    at = tf.constant(z)
    with tf.GradientTape() as outer:
        outer.watch(at)
        with tf.GradientTape() as inner:
            inner.watch(at)
            value = _tf_loss_function(tf, loss, at)
        g_z = inner.gradient(value, at)
    curved = outer.gradient(g_z, at, output_gradients=tangent)
    return (tape.gradient(z, x, output_gradients=curved).numpy(),)


def _gauss_newton_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    """JAX's matrices, built whole: J by jax.jacfwd, the loss Hessian by jax.hessian, then
    J^T H J v (a check refuses both builders; a reference may use them)."""
    functions = _jnp_functions()
    f = functions.vector_function(params["model"])
    loss = functions.loss_function(params["loss"])
    x, v = arrays["x"], arrays["v"]
    z = f(x)
    jacobian = jax.jacfwd(f)(x).reshape(z.size, x.size)
    hessian = jax.hessian(loss)(z).reshape(z.size, z.size)
    return ((jacobian.T @ (hessian @ (jacobian @ v.ravel()))).reshape(x.shape),)


# ---------------------------------------------------------------- known mistakes


def _jacobian(answer: Callable[..., Any]) -> Callable[..., Any]:
    """A learner's function of (f, x), written as answer(jax, f, x)."""
    return lambda f, x: answer(lazy_jax(), f, x)


def _axes_swapped(f: Any, x: Any) -> Any:
    """Input axes first, then output axes (each group in its own order)."""
    jacobian = lazy_jax().jacrev(f)(x)
    out = jacobian.ndim - x.ndim
    return lazy_jax().numpy.transpose(jacobian, (*range(out, jacobian.ndim), *range(out)))


_all_axes_reversed = _jacobian(lambda jax, f, x: jax.numpy.transpose(jax.jacrev(f)(x)))


def _ones_cotangent(f: Any, x: Any) -> Any:
    """One VJP with a cotangent of ones: the gradient of sum(y), shape x.shape."""
    y, pullback = lazy_jax().vjp(f, x)
    return pullback(lazy_jax().numpy.ones_like(y))[0]


def _ones_rows(f: Any, x: Any) -> Any:
    """Every row the same: a ones cotangent used for each of the m rows."""
    shape = lazy_jax().eval_shape(f, x).shape + x.shape
    return lazy_jax().numpy.broadcast_to(_ones_cotangent(f, x), shape)


def _ones_tangent(f: Any, x: Any) -> Any:
    """One JVP with a tangent of ones: the row sums, shape y.shape."""
    return lazy_jax().jvp(f, (x,), (lazy_jax().numpy.ones_like(x),))[1]


def _flattened(f: Any, x: Any) -> Any:
    """The right numbers as one (y.size, x.size) matrix: f and x flattened, as in a 1-D demo."""
    jax = lazy_jax()
    y_size = int(np.prod(jax.eval_shape(f, x).shape, dtype=np.int64))
    return jax.jacrev(f)(x).reshape(y_size, x.size)


def _columns_reshaped(f: Any, x: Any) -> Any:
    """Columns stacked as (n, *y.shape), then reshaped (not moved) to y.shape + x.shape."""
    jax = lazy_jax()
    eye = jax.numpy.eye(x.size, dtype=x.dtype).reshape((x.size, *x.shape))
    columns = jax.vmap(lambda t: jax.jvp(f, (x,), (t,))[1])(eye)
    return columns.reshape(columns.shape[1:] + x.shape)


AXES_SWAPPED_HINT = (
    "Your Jacobian is transposed: it has x's axes first and y's after (shape x.shape + "
    "y.shape). The convention of tf GradientTape.jacobian, jax.jacrev and jax.jacfwd is "
    "the output's axes first: J[i, j] = dy[i]/dx[j], shape y.shape + x.shape."
)
ALL_REVERSED_HINT = (
    "You reversed ALL the axes of the Jacobian (np.transpose(J) or J.T), which also reverses "
    "the order inside y's axes and inside x's. Keep y's axes first, each group in order: "
    "shape y.shape + x.shape."
)
FLATTENED_HINT = (
    "Your numbers are right, but as one flat (y.size, x.size) matrix, as for a function of a "
    "vector to a vector. With several axes the Jacobian keeps them all: J[i, j] with i a "
    "multi-index into y and j one into x, shape y.shape + x.shape (e.g. (3, 2, 2) for y:(3,) "
    "and x:(2, 2))."
)
JACOBIAN_HINTS = {
    "error": "The traceback names the line of your code that raised. A ValueError from the vjp "
    "function or from jax.jvp means a cotangent or tangent of the wrong shape or dtype: "
    "a cotangent has y's shape and dtype, a tangent x's. A TypeError from jnp.reshape means "
    "the sizes do not fit: the Jacobian has y.size * x.size entries.",
    "shape": "The Jacobian has shape y.shape + x.shape (output axes first), e.g. y:(3,) and "
    "x:(2, 2) give (3, 2, 2). Compute y = f(x) first to know y's shape.",
    "exception": "A one-hot vector stands for one entry of an array with several axes: it has that "
    "array's whole shape and dtype (a cotangent: y's; a tangent: x's), with a single 1. "
    "Check the shape of each one-hot vector you pass, and of what you stack.",
    "value": "Right shape, wrong numbers: check that entry [i, j] is dy[i]/dx[j] (not dy[j]/dx[i]) "
    "and that every row (or column) uses its own one-hot vector.",
}

JACOBIAN_VIA_VJP = Exercise(
    signature="jacobian_via_vjp(f, x) -> ndarray of shape y.shape + x.shape",
    nudge=(
        "A VJP whose cotangent is 1 at one output entry and 0 elsewhere gives one row of the "
        "Jacobian. How do you get all rows at once, and lay them out with the output's axes first?"
    ),
    outputs=("jacobian",),
    cases=_named_cases("vector", VECTOR_NAMES, VECTOR_SHAPES, VECTOR_EDGES, any_rank=ANY_RANK),
    edges=_vector_edges,
    reference=two_references(tf=_vector_tf, jax=_vector_jax("jacrev"), why=TWO_REFERENCES),
    references_text="jax.jacrev and tf.GradientTape",
    invoke="ch07_jacobians:invoke_jacobian_vjp",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("flattened", FLATTENED_HINT, _flattened),
        Mistake("axes_swapped", AXES_SWAPPED_HINT, _axes_swapped),
        Mistake("all_axes_reversed", ALL_REVERSED_HINT, _all_axes_reversed),
        Mistake(
            "ones_cotangent",
            "You pulled back a cotangent of ones: that gives one vector, the"
            " gradient of sum(y), which adds all rows of the Jacobian together. Pull back one"
            " ONE-HOT cotangent per output entry and stack the results.",
            _ones_cotangent,
        ),
        Mistake(
            "ones_rows",
            "Every row of your Jacobian is the same: each was pulled back from a "
            "cotangent of ones (the gradient of sum(y)). Row i needs the ONE-HOT cotangent "
            "e_i: 1 at output entry i, 0 elsewhere.",
            _ones_rows,
        ),
    ),
    hints_by_kind=JACOBIAN_HINTS,
)

JACOBIAN_VIA_JVP = Exercise(
    signature="jacobian_via_jvp(f, x) -> ndarray of shape y.shape + x.shape",
    nudge=(
        "A JVP whose tangent is 1 at one input entry and 0 elsewhere gives one column of the "
        "Jacobian. Once you have all columns, where must the column index end up, with the output's"
        " axes first?"
    ),
    outputs=("jacobian",),
    cases=_named_cases("vector", VECTOR_NAMES, VECTOR_SHAPES, VECTOR_EDGES, any_rank=ANY_RANK),
    edges=_vector_edges,
    reference=two_references(tf=_vector_tf, jax=_vector_jax("jacfwd"), why=TWO_REFERENCES),
    references_text="jax.jacfwd and tf.GradientTape",
    invoke="ch07_jacobians:invoke_jacobian_jvp",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake("flattened", FLATTENED_HINT, _flattened),
        Mistake(
            "columns_reshaped",
            "Your columns are right but land in the wrong places: the "
            "stacked JVPs have shape (x.size, *y.shape), column index FIRST, and reshape does"
            " not move axes. Move the column axis to the end (jnp.moveaxis(cols, 0, -1)) "
            "before reshaping to y.shape + x.shape.",
            _columns_reshaped,
        ),
        Mistake("axes_swapped", AXES_SWAPPED_HINT, _axes_swapped),
        Mistake("all_axes_reversed", ALL_REVERSED_HINT, _all_axes_reversed),
        Mistake(
            "ones_tangent",
            "You pushed forward a tangent of ones: that gives one vector, J @ "
            "ones (the sum of all columns). Push forward one ONE-HOT tangent per input entry "
            "and put each result in its column.",
            _ones_tangent,
        ),
    ),
    hints_by_kind=JACOBIAN_HINTS,
)


def _from_truth(answer: Callable[..., Any]) -> Callable[..., Any]:
    """A learner's batch_jacobian that breaks the right answer: answer(jax, blocks,
    independent)."""
    return lambda f, x: answer(lazy_jax(), *_truth(lazy_jax().jacrev(f)(x)))


def _truth(full: Any) -> tuple[Any, Any]:
    """The right (blocks, independent) from the full (B, m, B, n) Jacobian `full` (it takes the
    Jacobian, not f and x: it is no batch_jacobian a learner could import)."""
    return _per_example(full, lazy_jax().numpy)


def _summed_over_batch(f: Any, x: Any) -> tuple[Any, Any]:
    """What tape.batch_jacobian computes: sum over b' of dy[b']/dx[b]."""
    full = lazy_jax().jacrev(f)(x)
    return lazy_jax().numpy.swapaxes(full.sum(axis=0), 0, 1), _truth(full)[1]


def _batches_of_one(f: Any, x: Any) -> tuple[Any, Any]:
    """Each example differentiated alone, as a batch of one: f(x[b:b+1])."""
    jax = lazy_jax()
    blocks = jax.vmap(lambda row: jax.jacrev(lambda r: f(r[None])[0])(row))(x)
    return blocks, _truth(jax.jacrev(f)(x))[1]


BATCH_JACOBIAN = Exercise(
    signature="batch_jacobian(f, x) -> (jacobian (B, m, n), independent)",
    nudge=(
        "The full Jacobian of a batch has a block for every pair of examples. Which blocks are the "
        "per-example Jacobians, and what do the other blocks say about whether the examples "
        "interact?"
    ),
    outputs=("jacobian", "independent"),
    cases=_named_cases("batch", BATCH_NAMES, BATCH_SHAPES, BATCH_EDGES),
    edges=_batch_edges,
    reference=two_references(tf=_batch_tf, jax=_batch_jax, why=TWO_REFERENCES),
    references_text="the diagonal blocks of the Jacobian from jax.jacrev and from tf.GradientTape",
    invoke="ch07_jacobians:invoke_batch",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "summed_over_batch",
            "Your per-example Jacobians are the SUM over the batch of dy[b']/dx[b], which is what "
            "tape.batch_jacobian (and a VJP of the summed outputs) computes. That equals "
            "dy[b]/dx[b] only when rows are independent; here they are not. Take the diagonal "
            "blocks J[b, :, b, :] of the full Jacobian instead.",
            _summed_over_batch,
        ),
        Mistake(
            "batches_of_one",
            "You differentiated each example on its own, as a batch of one "
            "(f(x[b:b+1])). This function mixes the batch (a batch statistic such as a mean),"
            " so f on one example is a different function: differentiate f on the whole batch"
            " and keep the diagonal blocks J[b, :, b, :] of its (B, m, B, n) Jacobian.",
            _batches_of_one,
        ),
        Mistake(
            "always_independent",
            "You said the rows are independent, but this function mixes "
            "the batch: some off-diagonal block J[b, :, c, :] with b != c is not zero. "
            "Compute the flag from the full Jacobian, do not assume it.",
            _from_truth(lambda jax, blocks, independent: (blocks, jax.numpy.asarray(True))),
        ),
        Mistake(
            "flag_inverted",
            "Your `independent` flag is the opposite of the truth: it must be"
            " True exactly when every off-diagonal block J[b, :, c, :] (b != c) is zero.",
            _from_truth(
                lambda jax, blocks, independent: (blocks, jax.numpy.logical_not(independent))
            ),
        ),
        Mistake(
            "blocks_swapped",
            "Each of your per-example Jacobians is transposed, (B, n, m): keep the output's axis "
            "first, jacobian[b, i, j] = dy[b, i]/dx[b, j], shape (B, m, n).",
            _from_truth(
                lambda jax, blocks, independent: (jax.numpy.swapaxes(blocks, 1, 2), independent)
            ),
        ),
        Mistake(
            "full_returned",
            "You returned the full Jacobian (B, m, B, n). Return only its diagonal blocks J[b, :, "
            "b, :], stacked as (B, m, n), e.g. with jnp.einsum('bibj->bij', J).",
            _jacobian(lambda jax, f, x: (jax.jacrev(f)(x), _truth(jax.jacrev(f)(x))[1])),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. f maps a batch x:(B, n) "
        "to y:(B, m); take the Jacobian of the whole batch (or of one example, under "
        "jax.vmap) and keep one (m, n) block per example: jacobian has shape (B, m, n).",
        "value": "Right shapes, wrong numbers: jacobian[b] is the Jacobian of example b's output "
        "with respect to example b's own input (output axis first), and independent is "
        "True only when no example's output depends on another example's input.",
        "structure": "Return a tuple (jacobian, independent).",
        "shape": "jacobian has shape (B, m, n) for x:(B, n) and y:(B, m), and independent is a "
        "single boolean (a 0-d array or a Python bool).",
        "dtype": "jacobian keeps x's dtype, and independent is a boolean (True/False), not a "
        "number.",
    },
)


def _gauss_newton(answer: Callable[..., Any]) -> Callable[..., Any]:
    """A learner's gauss_newton_product(f, loss, x, v), written as answer(jax, f, loss, x, v)."""
    return lambda f, loss, x, v: answer(lazy_jax(), f, loss, x, v)


def _loss_curvature(jax: Any, loss: Any, z: Any, u: Any) -> Any:
    """The loss Hessian at z applied to u, for the mistakes (not a learner's signature)."""
    return jax.jvp(jax.grad(loss), (z,), (u,))[1]


def _sandwich(jax: Any, f: Any, loss: Any, x: Any, v: Any, middle: Any) -> Any:
    """J^T middle(z, J v) with J the Jacobian of f at x: the mistakes vary the middle."""
    z, pullback = jax.vjp(f, x)
    return pullback(middle(z, jax.jvp(f, (x,), (v,))[1]))[0]


GAUSS_NEWTON = Exercise(
    signature="gauss_newton_product(f, loss, x, v) -> ndarray of x's shape",
    nudge=(
        "The Gauss-Newton matrix is three linear maps in a row. Apply them to v one at a time, "
        "starting with the one that acts first: which of this chapter's products gives each, "
        "and at which point is the middle one evaluated?"
    ),
    outputs=("gv",),
    cases=_gauss_newton_cases,
    edges=_gauss_newton_edges,
    reference=two_references(tf=_gauss_newton_tf, jax=_gauss_newton_jax, why=TWO_REFERENCES),
    references_text=(
        "J^T H J v with J from jax.jacfwd and H from jax.hessian, and with TensorFlow's "
        "ForwardAccumulator and GradientTapes"
    ),
    invoke="ch07_jacobians:invoke_gauss_newton",
    frameworks=FRAMEWORKS,
    mistakes=(
        Mistake(
            "hessian_of_the_composition",
            "You applied the Hessian of loss(f(x)) to v. That Hessian has a second term, the "
            "loss's gradient times f's own second derivatives, which the Gauss-Newton matrix "
            "leaves out: f enters only through its linearisation J. Push v through f to get "
            "J v, apply the loss's curvature at z = f(x) to that, and pull the result back "
            "through f.",
            _gauss_newton(
                lambda jax, f, loss, x, v: _loss_curvature(jax, lambda t: loss(f(t)), x, v)
            ),
        ),
        Mistake(
            "loss_curvature_left_out",
            "You computed J^T J v, as if the loss's Hessian were the identity (it is only for "
            "half a squared error). Between pushing v forward and pulling back, apply the "
            "Hessian of the loss at z = f(x) to J v.",
            _gauss_newton(lambda jax, f, loss, x, v: _sandwich(jax, f, loss, x, v, lambda z, u: u)),
        ),
        Mistake(
            "gradient_pulled_back",
            "Your result does not depend on v: you pulled back the loss's gradient at z = f(x), "
            "which gives the gradient of loss(f(x)). G v is linear in v: the loss's curvature "
            "acts on J v, not its slope.",
            _gauss_newton(
                lambda jax, f, loss, x, v: _sandwich(
                    jax, f, loss, x, v, lambda z, u: jax.grad(loss)(z)
                )
            ),
        ),
        Mistake(
            "not_pulled_back",
            "You stopped at the output: H J v lives in z's space (z = f(x)), with z's shape. "
            "One more product takes it back to x's space: the transpose of J, a VJP of f.",
            _gauss_newton(
                lambda jax, f, loss, x, v: _loss_curvature(
                    jax, loss, f(x), jax.jvp(f, (x,), (v,))[1]
                )
            ),
        ),
        Mistake(
            "point_and_direction_swapped",
            "You swapped the point and the direction: f is linearised at v and x is pushed "
            "through it. The primal is the point x; the tangent is the direction v.",
            _gauss_newton(
                lambda jax, f, loss, x, v: _sandwich(
                    jax, f, loss, v, x, lambda z, u: _loss_curvature(jax, loss, z, u)
                )
            ),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. A ValueError from "
        "jax.jvp means primals and tangents differ: each tangent has the shape and dtype of "
        "its primal (v: x's; a tangent of z: z's, where z = f(x)). A pullback takes a "
        "cotangent of z's shape and returns a tuple.",
        "shape": "G v has x's shape (and v's): the last of the three maps takes z's space "
        "back to x's.",
        "value": "Right shape, wrong numbers: G v is J^T (H (J v)), with J the Jacobian of f "
        "at x and H the Hessian of the loss at z = f(x), not at x.",
    },
)

EXERCISES = (JACOBIAN_VIA_VJP, JACOBIAN_VIA_JVP, BATCH_JACOBIAN, GAUSS_NEWTON)

# ---------------------------------------------------------------- predictions, before the traps

PREDICTIONS = (
    Prediction(
        name="jacobians_batch_jacobian_batch_norm",
        question=(
            "y = batch_norm(x @ W) centres and scales each feature with the mean and variance "
            "of the whole batch, so every output row depends on every input row. What does "
            "tape.batch_jacobian(y, x) return?"
        ),
        choices={
            "a": "the true per-example Jacobians dy[b]/dx[b]",
            "b": "an error: the rows are not independent",
            "c": "a (B, m, n) array, without error, that is not the per-example Jacobians",
        },
        answer="c",
        why=(
            "batch_jacobian assumes independent rows and never checks it: it differentiates "
            "the outputs summed over the batch, so row b gets the sum over b' of dy[b']/dx[b]."
        ),
    ),
    Prediction(
        name="jacobians_cheaper_mode",
        question=(
            "f maps n = 1024 inputs to m = 64 outputs. Building its whole Jacobian, how do "
            "jax.jacfwd (forward mode) and jax.jacrev (reverse mode) compare in "
            "floating-point operations?"
        ),
        choices={
            "a": "about the same",
            "b": "jacfwd does about n / m = 16 times more",
            "c": "jacrev does about n / m = 16 times more",
        },
        answer="b",
        why=(
            "Each JVP or VJP costs about as much as f itself; jacfwd makes n = 1024 of them, "
            "jacrev m = 64 (plus one forward pass)."
        ),
    ),
)

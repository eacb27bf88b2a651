"""Case builders and helpers that several chapters' declarations share.

Edge cases are built from a seeded numpy generator (`rng_array`, `edges_at`), drawn cases from
Hypothesis (autograder/judging/cases.py; `menu_cases`); the learner-function builders, the
hints, the shapes and the references of chapters 05 and 06's elementwise exercises live here
too, so no chapter imports another's private helpers.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.judging.cases import Case, Profile, Shape, dtype_and_shape, dtypes, float_arrays
from autograder.judging.derived import Reference, two_references
from autograder.judging.exercise import learner_function


def rng_array(
    rng: np.random.Generator, shape: Shape, dtype: Any, bound: float = 3.0, decimals: int = 1
) -> np.ndarray:
    """Uniform in [-bound, bound], rounded to `decimals` (short numbers in feedback), always an
    array: numpy's rounding gives a 0-d shape back as a numpy scalar, which `Case` refuses
    (it cannot tell an array from a static parameter)."""
    return np.asarray(rng.uniform(-bound, bound, size=shape).round(decimals), dtype=dtype)


def same_shape_arrays(*names: str) -> Callable[[Profile], st.SearchStrategy[Case]]:
    """The cases of an elementwise rule: one array per name (`"g", "x"`), all of one drawn
    shape (0-d included) and dtype, each element drawn on its own."""

    @st.composite
    def cases(draw: st.DrawFn, profile: Profile) -> Case:
        shape = draw(
            hnp.array_shapes(min_dims=0, max_dims=profile.max_dims, max_side=profile.max_side)
        )
        dtype = draw(dtypes())
        return Case(tuple((name, draw(float_arrays(dtype, shape))) for name in names))

    return cases


def between(dtype: np.dtype, shape: Shape, low: float, high: float) -> st.SearchStrategy:
    """Arrays with every element drawn on its own from [low, high]."""
    elements = st.floats(low, high, width=dtype.itemsize * 8, allow_subnormal=False)
    return hnp.arrays(dtype, shape, elements=elements, fill=st.nothing())


# The elementwise exercises' shapes (chapters 05 and 06): each (shape, dtype) compiles the
# learner's function once per transformation, so the menu is short, and each shape comes in one
# dtype (cases.dtype_and_shape): a length of one and a 2-D array (a rule that assumes a vector
# fails) in float32, a vector in float64, and, when grading, a size-1 middle axis in float64 and
# a longer vector in float32.
ELEMENTWISE_SHAPES: tuple[Shape, ...] = ((1,), (6,), (2, 3))
ELEMENTWISE_GRADING: tuple[Shape, ...] = ((3, 1, 4), (16,))


def elementwise_dtype_and_shape(profile: Profile) -> st.SearchStrategy[tuple[np.dtype, Shape]]:
    return dtype_and_shape(profile, ELEMENTWISE_SHAPES, ELEMENTWISE_GRADING)


def elementwise(jax: Any, scalar_fn: Any, x: Any) -> Any:
    """scalar_fn of every element of x (of any shape), through jax.vmap, in x's shape."""
    return jax.vmap(scalar_fn)(x.reshape(-1)).reshape(x.shape)


@functools.cache
def lazy_jax() -> Any:
    """JAX, imported when a check first runs (as the references import it)."""
    from autograder.judging.references import jax_module

    return jax_module()


def built_learner(
    name: str, parameters: str, build: Callable[[], Callable[..., Any]]
) -> Callable[..., Any]:
    """A wrong learner function `name(parameters)` whose body, a function with a custom rule,
    is built by `build` on the first call, since JAX is imported only when a check runs."""
    built = functools.cache(build)
    return learner_function(name, parameters, lambda *args: built()(*args))


def primal_hints(outputs: tuple[str, ...], hint: str) -> dict[str, str]:
    """The hint for a wrong or non-finite primal from the rule, on each of these outputs."""
    return {f"{kind}:{output}": hint for kind in ("value", "nonfinite") for output in outputs}


# What the JAX chapters (05 and 06) say when JAX refuses a transformation, and of a custom_vjp
# whose fwd gives a wrong primal.
JAX_REFUSED_HINT = (
    "JAX refused one of the transformations the check applies (jit, jvp, vjp, vmap, grad); "
    "the message above names it and the likely mistake."
)
FWD_PRIMAL_HINT = (
    "The primal output of fwd (the first value it returns) is not the function's value: "
    "jax.vjp and jax.grad take the primal from fwd, not from the function. fwd must return "
    "(the same value the function returns, residuals)."
)


def jax_hints(*hints: Mapping[str, str], **by_kind: str) -> dict[str, str]:
    """A JAX exercise's hints_by_kind: JAX_REFUSED_HINT for an exception or an error, then
    these, in order (`primal_hints` for a wrong primal; a dict for "<kind>:<output>" keys)."""
    merged = {"exception": JAX_REFUSED_HINT, "error": JAX_REFUSED_HINT}
    for more in (*hints, by_kind):
        merged.update(more)
    return merged


ArraysFrom = float | Callable[[np.dtype, Shape], st.SearchStrategy[np.ndarray]]


def menu_cases(
    notebook: Sequence[Shape],
    grading: Sequence[Shape] = (),
    *,
    params: Callable[[Shape], Iterable[tuple[str, Any]]] | None = None,
    **arrays: ArraysFrom,
) -> Callable[[Profile], st.SearchStrategy[Case]]:
    """The cases of an exercise whose arrays share one shape and dtype from a menu
    (cases.dtype_and_shape): first the static parameters `params(shape)` gives, as (name,
    value) pairs, then each array by name, in order, drawn from float_arrays within the given
    bound, or from the strategy `build(dtype, shape)` gives."""

    @st.composite
    def cases(draw: st.DrawFn, profile: Profile) -> Case:
        dtype, shape = draw(dtype_and_shape(profile, notebook, grading))
        static = tuple(params(shape)) if params else ()
        return Case(
            static
            + tuple(
                (name, draw(a(dtype, shape) if callable(a) else float_arrays(dtype, shape, a)))
                for name, a in arrays.items()
            )
        )

    return cases


def elementwise_cases(**arrays: ArraysFrom) -> Callable[[Profile], st.SearchStrategy[Case]]:
    """menu_cases over the elementwise exercises' shapes (ELEMENTWISE_SHAPES)."""
    return menu_cases(ELEMENTWISE_SHAPES, ELEMENTWISE_GRADING, **arrays)


def edges_at(
    seed: int, given: str, rows: Iterable[tuple[Any, Any, str]], *drawn: str, bound: float = 3.0
) -> list[Case]:
    """A hand-picked case per row (values, dtype, label): `given` holds the values, in that
    dtype, and each `drawn` name an array of their shape (`rng_array`, within `bound`, to 2
    decimals), drawn in turn from one generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    return [
        Case(
            (
                (given, np.asarray(values, dtype)),
                *((name, rng_array(rng, np.shape(values), dtype, bound, 2)) for name in drawn),
            ),
            label=label,
        )
        for values, dtype, label in rows
    ]


def custom_jvp_learner(
    name: str,
    value: Callable[..., Any],
    tangent: Callable[..., Any],
    rule_primal: Callable[..., Any] | None = None,
) -> Callable[..., Any]:
    """A learner's `name(x)`, a jax.custom_jvp function: `value(jax, x)` going forward, and a
    JVP rule returning (`rule_primal(jax, x)`, or the function's own value when None, and
    `tangent(jax, f, x, t)`), f being the function itself. Built on the first call."""

    def build() -> Callable[..., Any]:
        jax = lazy_jax()

        def forward(x: Any) -> Any:
            return value(jax, x)

        forward.__name__ = forward.__qualname__ = name
        function = jax.custom_jvp(forward)

        @function.defjvp
        def rule(primals: Any, tangents: Any) -> Any:
            (x,), (t,) = primals, tangents
            primal = rule_primal(jax, x) if rule_primal else function(x)
            return primal, tangent(jax, function, x, t)

        return function

    return built_learner(name, "x", build)


# What the frameworks compute of an elementwise function at x, by output name: its value, its
# JVP along the case's tangent t (and that JVP's primal), its VJP with the case's cotangent g
# (and that VJP's primal), its derivative and its second derivative at each element.
ELEMENTWISE_OUTPUTS = (
    "value",
    "jvp_primal",
    "jvp",
    "vjp_primal",
    "vjp",
    "grad",
    "second_derivative",
)


def tf_elementwise(
    tf: Any, fn: Callable[[Any], Any], outputs: Sequence[str], case: Case, wrt: str = "x"
) -> tuple[np.ndarray, ...]:
    """TensorFlow's `outputs` (of ELEMENTWISE_OUTPUTS) of the elementwise `fn` at the case's
    `wrt`: nested tapes for the derivatives, a ForwardAccumulator for the JVP."""
    named = dict(case.args)
    x = tf.constant(named[wrt])
    wanted = set(outputs)
    second = "second_derivative" in wanted
    with tf.GradientTape() if second else contextlib.nullcontext() as outer:
        if second:
            outer.watch(x)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = fn(x)
        grad = tape.gradient(y, x) if wanted & {"grad", "second_derivative"} else None
    found = {"value": y, "vjp_primal": y, "grad": grad}
    if "vjp" in wanted:
        found["vjp"] = tape.gradient(y, x, output_gradients=tf.constant(named["g"]))
    if second:
        found["second_derivative"] = outer.gradient(grad, x)
    if wanted & {"jvp", "jvp_primal"}:
        with tf.autodiff.ForwardAccumulator(x, tf.constant(named["t"])) as accumulator:
            found["jvp_primal"] = fn(x)
        found["jvp"] = accumulator.jvp(found["jvp_primal"])
    return tuple(found[name].numpy() for name in outputs)


def jax_elementwise(
    jax: Any,
    fn: Callable[[Any], Any],
    outputs: Sequence[str],
    arrays: dict[str, Any],
    wrt: str = "x",
) -> tuple[Any, ...]:
    """JAX's `outputs` (of ELEMENTWISE_OUTPUTS) of the elementwise `fn` at the case's `wrt`:
    jax.vjp, jax.jvp (whose primal is the value when both are asked for), jax.grad per
    element."""
    x, wanted = arrays[wrt], set(outputs)
    found: dict[str, Any] = {}
    if wanted & {"vjp", "vjp_primal"}:
        y, pullback = jax.vjp(fn, x)
        found.update(
            value=y, vjp_primal=y, vjp=pullback(arrays["g"])[0] if "vjp" in wanted else None
        )
    if wanted & {"jvp", "jvp_primal"}:
        y, jvp = jax.jvp(fn, (x,), (arrays["t"],))
        found.update(value=y, jvp_primal=y, vjp_primal=y, jvp=jvp)
    if "grad" in wanted:
        found["grad"] = elementwise(jax, jax.grad(fn), x)
    if "second_derivative" in wanted:
        found["second_derivative"] = elementwise(jax, jax.grad(jax.grad(fn)), x)
    return tuple(found[name] for name in outputs)


def elementwise_references(
    *,
    tf: Callable[[Any], Callable[[Any], Any]],
    jax: Callable[[Any], Callable[[Any], Any]],
    outputs: Sequence[str],
    why: str,
    wrt: str = "x",
) -> Reference:
    """Both references of an elementwise function's `outputs` (of ELEMENTWISE_OUTPUTS), each
    framework's own derivatives of its own function, `tf(tf)` and `jax(jax)`: two hand-written
    references (derived.two_references), `why` saying why."""
    return two_references(
        tf=lambda tf_module, case: tf_elementwise(tf_module, tf(tf_module), outputs, case, wrt),
        jax=lambda jax_module, params, arrays: jax_elementwise(
            jax_module, jax(jax_module), outputs, arrays, wrt
        ),
        why=why,
    )


def seeded_arrays(
    draw: st.DrawFn, shapes: list[Shape], dtype: Any, bound: float = 3.0, decimals: int = 1
) -> list[np.ndarray]:
    """Arrays of generic values (`rng_array`'s, one per shape) from a drawn seed: Hypothesis
    draws (and shrinks) the shapes and the seed, never the values themselves.

    Shrinking values would end at zeros and ones, where many different mistakes give the same
    output (tanh(0) = 0, a transpose of a constant matrix...), so the hint could not tell them
    apart. Values from a seed stay generic on the smallest failing case too.
    """
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return [rng_array(rng, shape, dtype, bound, decimals) for shape in shapes]


def broadcastable_shapes(profile: Profile, signature: str | None = None) -> st.SearchStrategy:
    """Two mutually broadcastable shapes (`.input_shapes`, `.result_shape`; 0-d included)
    within the profile's bounds; or, for a gufunc `signature` (matmul's "(m,n),(n,p)->(m,p)"),
    one per input, whose batch axes leave room within max_dims for their core axes."""
    bounds = {"min_dims": 0, "max_side": profile.max_side}
    if signature is None:
        return hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=profile.max_dims, **bounds)
    inputs = re.findall(r"\(([^()]*)\)", signature.split("->")[0])
    core = max(len(axes.split(",")) for axes in inputs)
    return hnp.mutually_broadcastable_shapes(
        signature=signature, max_dims=profile.max_dims - core, **bounds
    )


def broadcast_cases(
    result: str, *inputs: str, signature: str | None = None
) -> Callable[[Profile], st.SearchStrategy[Case]]:
    """The cases of a broadcasting operation's VJP: the cotangent `result` ("g"), shaped like
    the broadcast result, then one array per input name, shaped like that input
    (`broadcastable_shapes`), all of one drawn dtype."""

    @st.composite
    def cases(draw: st.DrawFn, profile: Profile) -> Case:
        shapes = draw(broadcastable_shapes(profile, signature))
        dtype = draw(dtypes())
        named = zip((result, *inputs), (shapes.result_shape, *shapes.input_shapes), strict=True)
        return Case(tuple((name, draw(float_arrays(dtype, shape))) for name, shape in named))

    return cases

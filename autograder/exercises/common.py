"""Case builders and helpers that several chapters' declarations share.

Edge cases are built from a seeded numpy generator (`rng_array`), drawn cases from Hypothesis
(autograder/judging/cases.py); the learner-function builder and the shapes of chapters 05 and
06's elementwise exercises live here too, so no chapter imports another's private helpers.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.judging.cases import Case, Profile, Shape, dtype_and_shape, dtypes, float_arrays
from autograder.judging.exercise import learner_function


def rng_array(rng: np.random.Generator, shape: Shape, dtype: Any, bound: float = 3.0,
              decimals: int = 1) -> np.ndarray:
    """Uniform in [-bound, bound], rounded to `decimals` (short numbers in feedback), always an
    array: numpy's rounding gives a 0-d shape back as a numpy scalar, which `Case` refuses
    (it cannot tell an array from a static parameter)."""
    return np.asarray(rng.uniform(-bound, bound, size=shape).round(decimals), dtype=dtype)


def same_shape_arrays(*names: str) -> Callable[[Profile], st.SearchStrategy[Case]]:
    """The cases of an elementwise rule: one array per name (`"g", "x"`), all of one drawn
    shape (0-d included) and dtype, each element drawn on its own."""

    @st.composite
    def cases(draw: st.DrawFn, profile: Profile) -> Case:
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=profile.max_dims,
                                      max_side=profile.max_side))
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


def built_learner(name: str, parameters: str, build: Callable[[], Callable[..., Any]]
                  ) -> Callable[..., Any]:
    """A wrong learner function `name(parameters)` whose body, a function with a custom rule,
    is built by `build` on the first call, since JAX is imported only when a check runs."""
    built = functools.cache(build)
    return learner_function(name, parameters, lambda *args: built()(*args))


def primal_hints(outputs: tuple[str, ...], hint: str) -> dict[str, str]:
    """The hint for a wrong or non-finite primal from the rule, on each of these outputs."""
    return {f"{kind}:{output}": hint for kind in ("value", "nonfinite") for output in outputs}


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

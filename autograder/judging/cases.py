"""Cases: the inputs one exercise function is called with, and how they are drawn.

A case is plain data (named numpy arrays and small static parameters such as a target
shape), so the same case can be shown to a learner, passed to a sandboxed child process as
`.npz` + JSON, and keyed for caching. Drawing goes through Hypothesis so that notebook
checks are deterministic and classroom grading can reseed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.locale import say

Params = tuple[tuple[str, Any], ...]
Shape = tuple[int, ...]
T = TypeVar("T")


@dataclass(frozen=True)
class Profile:
    """How many and how large cases are: small and seeded in notebooks, larger when grading."""

    name: str
    max_examples: int
    max_side: int
    max_dims: int
    seed: int | None = None  # None: derandomized (the same cases on every run)


NOTEBOOK = Profile("notebook", max_examples=30, max_side=4, max_dims=4)


def grading_profile(grading_seed: int) -> Profile:
    """The classroom profile: more and larger cases than the notebook shows, reseeded."""
    return Profile("grading", max_examples=120, max_side=6, max_dims=5, seed=grading_seed)


class AmbiguousArgument(ValueError):
    """A case argument that is a numpy scalar (np.float32(1.5), or what numpy's rounding of a
    0-d array gives): it is no np.ndarray, so it would be taken for a static parameter (closed
    over, never traced) although it is meant as an array. The exercise that built the case
    adds its name to the message (Exercise.edge_cases, Exercise.strategy)."""

    def __init__(self, name: str, value: Any, exercise: str = "") -> None:
        self.name, self.value = name, value
        where = f"Exercise {exercise}: " if exercise else ""
        super().__init__(
            f"{where}case argument {name!r} is a numpy scalar ({value.dtype} {value!r}), which "
            "could be an array or a static parameter: write np.asarray(value) for an array "
            "(e.g. a 0-d cotangent), or a Python number (float(value), int(value)) for a "
            "static parameter."
        )

    def naming(self, exercise: str) -> AmbiguousArgument:
        """The same error, its message naming the exercise."""
        return AmbiguousArgument(self.name, self.value, exercise)


@dataclass(frozen=True, eq=False)
class Case:
    """One call of a learner's function: positional arguments by name, in order.

    `args` holds (name, value) pairs; values are numpy arrays or static parameters
    (shapes, ints). `label` names a hand-picked case ("the Q&A case") so feedback can say so.
    """

    args: Params
    label: str = ""

    def __post_init__(self) -> None:
        for name, value in self.args:
            if isinstance(value, np.generic):
                raise AmbiguousArgument(name, value)

    def values(self) -> tuple[Any, ...]:
        return tuple(value for _, value in self.args)

    def fresh_values(self) -> tuple[Any, ...]:
        """Copies, so a function that writes into its inputs cannot corrupt the case."""
        return tuple(np.copy(v) if isinstance(v, np.ndarray) else v for _, v in self.args)

    def arg(self, name: str) -> Any:
        return dict(self.args)[name]

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: v for k, v in self.args if isinstance(v, np.ndarray)}

    def params(self) -> dict[str, Any]:
        return {k: v for k, v in self.args if not isinstance(v, np.ndarray)}

    def size(self) -> int:
        """Total number of array elements: smaller cases are easier to read in feedback."""
        return sum(v.size for v in self.arrays().values())

    def signature(self) -> tuple[tuple[str, Shape, str], ...]:
        """Each array's name, shape and dtype: what a framework compiles or traces the
        learner's function for, so the number of distinct signatures bounds that cost."""
        return tuple((k, v.shape, str(v.dtype)) for k, v in self.arrays().items())

    def key(self) -> str:
        """A content hash, so references can be cached and duplicate draws dropped."""
        digest = hashlib.sha256()
        for name, value in self.args:
            digest.update(name.encode())
            if isinstance(value, np.ndarray):
                digest.update(f"{value.dtype}{value.shape}".encode())
                digest.update(np.ascontiguousarray(value).tobytes())
            else:
                digest.update(repr(value).encode())
        return digest.hexdigest()

    def describe(self) -> str:
        """One line per argument, with dtype and shape for arrays."""
        lines = []
        for name, value in self.args:
            if isinstance(value, np.ndarray):
                lines.append(
                    say(
                        "{name}: {dtype} array of shape {shape}",
                        name=name,
                        dtype=value.dtype,
                        shape=value.shape,
                    )
                )
            else:
                lines.append(f"{name} = {value!r}")
        return "\n".join(lines)


FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def grading_sized(profile: Profile) -> bool:
    """Whether this profile is the classroom's, which adds larger shapes to each menu."""
    return profile.max_side >= 6


def shape_menu(
    profile: Profile, notebook: Sequence[T], grading: Sequence[T] = ()
) -> st.SearchStrategy[T]:
    """One of a few fixed shapes (or tuples of sizes, or of shapes): `notebook`'s, plus
    `grading`'s when grading.

    A framework compiles (JAX) or traces (tf.function) the learner's function once per new
    input shape and dtype, so a bounded menu pays that once per shape, not once per case;
    the values in each case are still drawn afresh. A menu should cover the structure that
    catches mistakes: size-1 axes, missing leading axes, non-square, a length of one, and
    something larger.
    """
    return st.sampled_from(tuple(notebook) + (tuple(grading) if grading_sized(profile) else ()))


def dtype_and_shape(
    profile: Profile, notebook: Sequence[Shape], grading: Sequence[Shape] = ()
) -> st.SearchStrategy[tuple[np.dtype, Shape]]:
    """One of a menu's shapes (as shape_menu) with the one dtype it comes in: float32 and
    float64 in turn along the menu.

    JAX compiles the learner's function (or traces and lowers it, and reads the compiled
    program from the grader's cache) once per shape and dtype, about 30-50 ms each in a
    fresh child. Every shape in both dtypes would be twice the programs of the menu. A
    mistake shows in a shape (a rule written for vectors fails on a matrix) or in a dtype
    (float32 in, float64 out), not in one pairing of the two: every shape is still drawn,
    and each dtype with half of them, so a menu should give each dtype a shape with more
    than one axis.
    """
    shapes = tuple(notebook) + (tuple(grading) if grading_sized(profile) else ())
    return st.sampled_from([(FLOAT_DTYPES[i % 2], shape) for i, shape in enumerate(shapes)])


def dtypes() -> st.SearchStrategy[np.dtype]:
    return st.sampled_from(FLOAT_DTYPES)


def float_arrays(dtype: np.dtype, shape: tuple[int, ...], bound: float = 10.0) -> st.SearchStrategy:
    """Arrays whose every element is drawn on its own (fill=nothing), never a constant array.

    A constant cotangent hides a rule that ignores its incoming cotangent's structure, so
    each element is drawn independently.
    """
    elements = st.floats(
        -bound,
        bound,
        width=dtype.itemsize * 8,
        allow_nan=False,
        allow_infinity=False,
        allow_subnormal=False,
    )
    return hnp.arrays(dtype, shape, elements=elements, fill=st.nothing())


def _hypothesis_settings(profile: Profile, phases: tuple[Phase, ...]) -> settings:
    return settings(
        max_examples=profile.max_examples,
        derandomize=profile.seed is None,
        database=None,
        deadline=None,
        phases=phases,
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Keep Hypothesis from mixing literals of the process's own modules into its draws.

    Hypothesis seeds its generators with constants found in whatever "local" modules the
    process has imported, so the same seed gave different cases in a notebook kernel, a
    test run and a fresh clone. Cases must depend on the seed alone (nbval compares the
    stored reports; a grading seed must reproduce its hidden cases), so that pool is emptied
    while we draw. It is an internal of the pinned Hypothesis version;
    tests/judging/test_cases.py fails if it stops working.
    """
    from hypothesis.internal.conjecture import providers

    original = providers._get_local_constants
    providers._get_local_constants = providers.Constants
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = original
        providers.CONSTANTS_CACHE.cache.clear()


def run_property(
    strategy: st.SearchStrategy[Case],
    body: Callable[[Case], None],
    profile: Profile,
    phases: tuple[Phase, ...],
) -> None:
    """Run `body` on cases Hypothesis draws from `strategy`; failures propagate, shrunk."""

    @_hypothesis_settings(profile, phases)
    @given(strategy)
    def property_body(case: Case) -> None:
        body(case)

    if profile.seed is not None:
        property_body = seed(profile.seed)(property_body)
    with without_local_constants():
        property_body()


def draw_cases(strategy: st.SearchStrategy[Case], profile: Profile) -> list[Case]:
    """The cases Hypothesis generates for this profile, duplicates dropped, in draw order."""
    drawn: dict[str, Case] = {}

    def collect(case: Case) -> None:
        drawn.setdefault(case.key(), case)

    run_property(strategy, collect, profile, phases=(Phase.generate,))
    return list(drawn.values())


def param_to_json(value: Any) -> Any:
    """A static parameter as JSON keeps it: tuples as {"tuple": [...]}, so a shape comes back
    a tuple (the grader's reference cache and the notebook's stored cases both write them)."""
    if isinstance(value, tuple):
        return {"tuple": [param_to_json(v) for v in value]}
    if isinstance(value, list):
        return [param_to_json(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def param_from_json(value: Any) -> Any:
    """What param_to_json wrote, back as the parameter."""
    if isinstance(value, dict) and set(value) == {"tuple"}:
        return tuple(param_from_json(v) for v in value["tuple"])
    if isinstance(value, list):
        return [param_from_json(v) for v in value]
    return value

"""Nothing a learner's kernel can import is an exercise's answer.

Every exercise's check (`check_function`, what `check.<name>` runs) is run on every function
and class that the installed packages define, and none passes. The candidates are every
function, class and `functools.partial` object found in the namespace of a module of the
packages below, private names included, deduplicated by identity (an alias, `ts = toposort`,
is checked once), together with the static and class methods of those classes; a candidate is
tried on an exercise when its signature takes the exercise's parameters
(`inspect.signature(obj).bind(*exercise.parameters)`).

Walked: `autograder` itself, `autograder.exercises`, `autograder.harness`, `autograder.judging`,
`autograder.check` and `coursekit` (where the math is), and every module that a learner's copy
of a notebook (course/*.ipynb, course/zh-CN/*.ipynb) imports, read from its code cells
(`import x`, `from x import y`: x, and x.y where that is a module), walked the same way. A
learner's own notebook imports are the first place to look, whatever package they come from.
Not walked among those: the standard library, and the third-party packages of `TOOLS` (numpy,
JAX, TensorFlow, matplotlib, scikit-learn, ipywidgets): the frameworks are the references an
exercise is judged against, and a numpy exercise's check refuses an answer that calls them
(judging/numpy_only.py); the others are tools, with no exercise's math. A notebook import of
anything else (a new third-party package) fails `test_every_notebook_import_is_walked_or_left_out`
until it is added to `TOOLS` or walked. Left out, because calling their
functions with arrays is not safe in the test's process and none of them computes an
exercise's math:
- `autograder.sandbox`: starts and kills processes, changes uids, rlimits and seccomp filters,
  makes and deletes folders;
- `autograder.grading`: grades folders of submissions through the sandbox, writes gradebooks;
- `autograder.authoring`: rewrites notebooks and course/ on disk (sync, reset, bundle);
- `autograder.cli` (and `__main__`): parses arguments and exits, running the above;
- `autograder.notebook`: Jupyter display, widgets, reading the saved notebooks;
- `autograder.locale` and `autograder.catalogue`: the message catalogue; changing the language
  changes every later message, and the catalogue writes .po files.
(Not walked when a notebook imports them either: `LEFT_OUT`.)

About 10,000 (exercise, candidate) pairs, so each is screened first: the candidate is called
through the exercise's own invoke (`call_learner`, as a check calls a learner's function) on
the exercise's first hand-picked cases, under a short alarm, in an empty working directory,
with its output captured, and compared with the references (computed once per exercise). Only
a candidate that matches every screened case gets the full check, which must not pass.
`test_a_planted_answer_is_found` shows that the screen finds a right answer.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import importlib.util
import inspect
import io
import operator
import pkgutil
import signal
import sys
import types
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from autograder.exercises import EXERCISES
from autograder.judging.attempts import call_learner, fails
from autograder.judging.cases import NOTEBOOK, Case, draw_cases
from autograder.judging.engine import check_function
from autograder.judging.exercise import Exercise, Outputs
from autograder.judging.references import reference_outputs

WALKED = (
    "autograder",
    "autograder.exercises",
    "autograder.harness",
    "autograder.judging",
    "autograder.check",
    "coursekit",
)
# Where a walked module's own objects are defined (an object imported from elsewhere, numpy's
# or the standard library's, is not the course's). autograder's other subpackages are left out.
ROOTS = tuple(name for name in WALKED if name != "autograder")
# Not walked, even where a notebook imports them: not safe to call in the test's process.
LEFT_OUT = (
    "autograder.sandbox",
    "autograder.grading",
    "autograder.authoring",
    "autograder.cli",
    "autograder.__main__",
    "autograder.notebook",
    "autograder.locale",
    "autograder.catalogue",
)
# The course's own packages: a notebook import of one of these is walked (but not LEFT_OUT ones).
FIRST_PARTY = ("autograder", "coursekit")
# Third-party packages a notebook may import that are not walked: the frameworks (the
# references) and tools (arrays, plots, data sets, widgets, the kernel).
TOOLS = (
    "numpy",
    "jax",
    "jaxlib",
    "tensorflow",
    "keras",
    "matplotlib",
    "sklearn",
    "scipy",
    "ipywidgets",
    "IPython",
)
COURSE = Path(__file__).resolve().parents[2] / "course"
LEARNER_NOTEBOOKS = ("*.ipynb", "zh-CN/*.ipynb")  # the learner's copies, in each language
SCREENED_CASES = 2
SCREEN_SECONDS = 0.5  # one call on one hand-picked case
CHECK_SECONDS = 120.0  # the full check of a candidate that passed the screen


@dataclass(frozen=True)
class Candidate:
    """A callable the packages define, and where it was first found ("module.name")."""

    where: str
    obj: Any


class _Timeout(BaseException):
    """Raised by the alarm: a BaseException, so that call_learner does not take it for the
    candidate's own error."""


def _under(name: str, packages: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _modules(names: Iterable[str]) -> list[types.ModuleType]:
    """The modules named, and those inside the packages among them (not `autograder`'s
    own, nor any LEFT_OUT), once each."""
    found: dict[str, types.ModuleType] = {}
    for name in names:
        module = found.get(name) or importlib.import_module(name)
        found[name] = module
        if name != "autograder" and hasattr(module, "__path__"):
            for info in pkgutil.walk_packages(module.__path__, prefix=f"{name}."):
                if info.name not in found and not _under(info.name, LEFT_OUT):
                    found[info.name] = importlib.import_module(info.name)
    return list(found.values())


@functools.cache  # read once per run: the slow test and the quick one both need it
def notebook_imports(folder: Path = COURSE) -> dict[str, set[str]]:
    """What the learner's notebooks in `folder` import, from their code cells (magics
    translated as IPython runs them): each module `import`ed or `from`-imported, with the
    names taken from it (`from x import y`: {"x": {"y"}}; `import x.y`: {"x.y": set()})."""
    imported: dict[str, set[str]] = {}
    for pattern in LEARNER_NOTEBOOKS:
        for path in sorted(folder.glob(pattern)):
            for cell in nbformat.read(path, as_version=4).cells:
                if cell.cell_type != "code":
                    continue
                for node in ast.walk(ast.parse(TransformerManager().transform_cell(cell.source))):
                    if isinstance(node, ast.Import):
                        for alias in node.names:
                            imported.setdefault(alias.name, set())
                    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                        names = imported.setdefault(node.module, set())
                        names.update(alias.name for alias in node.names if alias.name != "*")
    return imported


def notebook_modules(imported: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    """The modules of `imported` (notebook_imports) to walk: the course's own, not LEFT_OUT,
    and the submodules `from x import y` names; and the top-level names it imports that are
    neither the course's, nor the standard library, nor TOOLS (which must be none)."""
    walked: list[str] = []
    unknown: list[str] = []
    for module, names in sorted(imported.items()):
        top = module.partition(".")[0]
        if top in sys.stdlib_module_names or top in TOOLS:
            continue
        if top not in FIRST_PARTY:
            unknown.append(top)
            continue
        for name in [module, *(f"{module}.{n}" for n in sorted(names) if _is_submodule(module, n))]:
            if not _under(name, LEFT_OUT) and name not in walked:
                walked.append(name)
    return walked, sorted(set(unknown))


def _is_submodule(package: str, name: str) -> bool:
    """Whether `from package import name` imports a module (found without importing it)."""
    try:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.submodule_search_locations is None:
            return False
        return importlib.util.find_spec(f"{package}.{name}") is not None
    except ImportError:
        return False


def _defined_in(obj: Any, roots: tuple[str, ...]) -> bool:
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and any(
        module == root or module.startswith(root + ".") for root in roots
    )


def _found_in(namespace: dict[str, Any], roots: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    for name, value in namespace.items():
        if isinstance(value, functools.partial):
            yield name, value
        elif (inspect.isfunction(value) or inspect.isclass(value)) and _defined_in(value, roots):
            yield name, value
            if inspect.isclass(value):
                for attribute, member in vars(value).items():
                    if isinstance(member, staticmethod | classmethod):
                        yield f"{name}.{attribute}", getattr(value, attribute)


def candidates(modules: Iterable[types.ModuleType], roots: tuple[str, ...] = ROOTS) -> list:
    """Every function, class and partial of these modules, once each (by identity)."""
    found: dict[int, Candidate] = {}
    for module in modules:
        for name, obj in _found_in(vars(module), roots):
            key = id(obj.__func__) if inspect.ismethod(obj) else id(obj)
            found.setdefault(key, Candidate(f"{module.__name__}.{name}", obj))
    return list(found.values())


def takes(obj: Any, parameters: tuple[str, ...]) -> bool:
    try:
        inspect.signature(obj).bind(*parameters)
    except (TypeError, ValueError):
        return False
    return True


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    def ring(signum: int, frame: Any) -> None:
        # Rung again shortly: a _Timeout raised inside a finalizer or a weakref callback is
        # printed and dropped by Python (unraisable), and the candidate would run on.
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _quietly() -> Iterator[None]:
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        warnings.catch_warnings(),
        np.errstate(all="ignore"),
    ):
        warnings.simplefilter("ignore")
        yield


@functools.cache
def screening_table(
    exercise: Exercise, first: int | None = SCREENED_CASES
) -> tuple[list[Case], list[Outputs]]:
    """The exercise's `first` hand-picked cases (all: None; none: drawn ones instead) and
    their references."""
    cases = exercise.edge_cases()[:first] or draw_cases(exercise.strategy(NOTEBOOK), NOTEBOOK)[:2]
    return cases, reference_outputs(exercise, cases)


def matches_screen(exercise: Exercise, obj: Any, first: int | None = SCREENED_CASES) -> bool:
    """Whether `obj`, called as a check calls the learner's function, gives the references on
    the `first` screened cases (all hand-picked ones: None)."""
    for case, expected in zip(*screening_table(exercise, first), strict=True):
        try:
            with _quietly(), _alarm(SCREEN_SECONDS):
                attempt = call_learner(obj, case, exercise)
            if fails(exercise, attempt, expected):
                return False
        except BaseException:  # a timeout, SystemExit, anything: not an answer
            return False
    return True


def passes_check(exercise: Exercise, obj: Any) -> str:
    """ "passed", "failed", or why the check could not decide."""
    try:
        with _quietly(), _alarm(CHECK_SECONDS):
            return "passed" if check_function(exercise, obj).passed else "failed"
    except _Timeout:
        return f"did not finish in {CHECK_SECONDS:.0f} s"
    except BaseException as error:
        return f"the check raised {type(error).__name__}: {error}"


class _State:
    """The module-level state of the walked modules (their namespaces, and the dicts, lists and
    sets they hold), put back after each candidate: a candidate called with a case's values
    may register it somewhere (`per_check(root)`) or rebind a global, and the next candidate
    must be judged as if it were alone."""

    def __init__(self, modules: Iterable[types.ModuleType]) -> None:
        self.namespaces = [(vars(m), dict(vars(m))) for m in modules]
        held = {
            id(value): value
            for _, saved in self.namespaces
            for value in saved.values()
            if type(value) in (dict, list, set)
        }
        self.held = [(value, value.copy()) for value in held.values()]

    def restore(self) -> None:
        for namespace, saved in self.namespaces:
            if _changed(namespace, saved):
                namespace.clear()
                namespace.update(saved)
        for value, saved in self.held:
            if _changed(value, saved):
                value.clear()
                (value.update if not isinstance(value, list) else value.extend)(saved)


def _changed(now: Any, saved: Any) -> bool:
    """Whether a namespace, dict, list or set differs from its saved copy: the same keys
    holding the very same objects (compared in C, as restore runs after every call)."""
    if len(now) != len(saved):
        return True
    if isinstance(now, dict):
        return now.keys() != saved.keys() or not all(
            map(operator.is_, now.values(), saved.values())
        )
    if isinstance(now, list):
        return not all(map(operator.is_, now, saved))
    return now != saved


def answers(
    exercises: Iterable[Exercise], found: list[Candidate], state: _State | None = None
) -> list[str]:
    """Each (exercise, candidate) whose full check does not fail, as a line to read."""
    exercises = list(exercises)
    hits = []
    with _jax_errors_unfiltered():
        for candidate in found:
            hits += _answers_among(exercises, candidate, state)
    return hits


@contextlib.contextmanager
def _jax_errors_unfiltered() -> Iterator[None]:
    """JAX filters the traceback of every error a candidate raises under a transformation,
    which is most of the screen's time: not while screening (no traceback is read)."""
    import jax

    before = jax.config.jax_traceback_filtering
    jax.config.update("jax_traceback_filtering", "off")
    try:
        yield
    finally:
        jax.config.update("jax_traceback_filtering", before)


def _answers_among(
    exercises: list[Exercise], candidate: Candidate, state: _State | None
) -> list[str]:
    """The exercises whose full check `candidate` does not fail, as lines to read; the state
    of the walked modules is put back after each call."""
    hits = []
    for exercise in exercises:
        if not takes(candidate.obj, exercise.parameters):
            continue
        # The first cases for every candidate; every hand-picked case for the few that pass
        # those, before the full check (which draws cases, and shrinks a failure: seconds).
        screened = matches_screen(exercise, candidate.obj) and matches_screen(
            exercise, candidate.obj, None
        )
        if state is not None:
            state.restore()
        if not screened:
            continue
        verdict = passes_check(exercise, candidate.obj)
        if state is not None:
            state.restore()
        if verdict != "failed":
            hits.append(f"{candidate.where} as {exercise.name}: {verdict}")
    return hits


@pytest.mark.slow  # about 75 s on the 2-core machine: ~9,000 calls through the invokes
# A candidate's own finalizers, and an alarm that lands in one, raise where nothing can catch.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_nothing_importable_passes_a_check(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    imported = notebook_imports()
    from_notebooks, _ = notebook_modules(imported)
    modules = _modules((*WALKED, *from_notebooks))
    roots = (*ROOTS, *(name for name in from_notebooks if not _under(name, ROOTS)))
    roots = tuple(name for name in roots if name != "autograder")
    found = candidates(modules, roots)
    assert len(found) > 500, "the walk found too few candidates: is a package missing?"
    _assert_notebook_names_are_candidates(imported, found, roots)
    for exercise in EXERCISES.values():
        screening_table(exercise)  # before any candidate runs
    monkeypatch.chdir(tmp_path)
    hits = answers(EXERCISES.values(), found, _State(modules))
    assert not hits, "These pass an exercise's check (they are answers):\n" + "\n".join(hits)


def _assert_notebook_names_are_candidates(
    imported: dict[str, set[str]], found: list[Candidate], roots: tuple[str, ...]
) -> None:
    """Every function, class and partial that a notebook imports by name from the course's
    own modules (`from coursekit.tape import draw_tape`) is among the candidates."""
    ids = {id(c.obj) for c in found}
    missing = []
    for module, names in imported.items():
        if module.partition(".")[0] not in FIRST_PARTY or _under(module, LEFT_OUT):
            continue
        namespace = vars(importlib.import_module(module))
        for name, value in _found_in({n: namespace[n] for n in names if n in namespace}, roots):
            if "." not in name and id(value) not in ids:
                missing.append(f"{module}.{name}")
    assert not missing, f"imported by a notebook but not tried: {missing}"


def test_every_notebook_import_is_walked_or_left_out() -> None:
    """The learner's notebooks import the course's packages, the standard library and
    TOOLS only; what they import from the course is walked (chapter 02's handed-out rule
    table, chapter 05's exercise, coursekit's demonstrations), and nothing LEFT_OUT is."""
    imported = notebook_imports()
    walked, unknown = notebook_modules(imported)
    assert not unknown, (
        f"A learner's notebook imports {unknown}: walk it (FIRST_PARTY), or, for a framework "
        "or a tool with no exercise's math, add it to TOOLS (and say so in the docstring)."
    )
    assert {"coursekit.tape", "autograder.harness.ch02_reverse_mode_tape", "numpy"} <= {*imported}
    assert {"coursekit.tape", "autograder.harness.ch02_reverse_mode_tape"} <= set(walked)
    assert "autograder.check" in walked  # `from autograder import check`: a module
    assert not any(_under(name, (*TOOLS, *LEFT_OUT)) for name in walked)


def test_a_notebook_import_is_classified(tmp_path: Path) -> None:
    """Magics are read as IPython runs them; an unknown package is reported, a course
    module is walked with the submodules named, and LEFT_OUT ones are not."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%matplotlib inline\nimport numpy as np, somepackage.sub"),
        nbformat.v4.new_code_cell("from autograder import check, sandbox\nx = 1\nx?"),
        nbformat.v4.new_code_cell("from coursekit.tape import draw_tape\nimport os.path"),
        nbformat.v4.new_markdown_cell("import notcode"),
    ]
    nbformat.write(notebook, tmp_path / "01_x.ipynb")
    imported = notebook_imports(tmp_path)
    assert imported == {
        "numpy": set(),
        "somepackage.sub": set(),
        "autograder": {"check", "sandbox"},
        "coursekit.tape": {"draw_tape"},
        "os.path": set(),
    }
    assert notebook_modules(imported) == (
        ["autograder", "autograder.check", "coursekit.tape"],
        ["somepackage"],
    )


# ---------------------------------------------------------------- the test can fail


def _planted_unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    summed = g.sum(axis=tuple(range(g.ndim - len(shape))))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
    return np.asarray(summed.sum(axis=stretched, keepdims=True))


def _planted_sum_back(g: np.ndarray, shape: tuple[int, ...], keep: bool) -> np.ndarray:
    return _planted_unbroadcast(g, shape) if keep else g


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_planted_answer_is_found(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A right unbroadcast in a module of the candidates (and a partial object that is one)
    is found; a wrong one beside them is not."""
    fake = types.ModuleType("fake_course.answers")
    fake.__dict__.update(
        unbroadcast=_planted_unbroadcast,
        alias=_planted_unbroadcast,  # the same object: checked once
        _private=functools.partial(_planted_sum_back, keep=True),
        wrong=functools.partial(_planted_sum_back, keep=False),
    )
    for name in ("_planted_unbroadcast", "_planted_sum_back"):
        monkeypatch.setattr(globals()[name], "__module__", "fake_course.answers")
    found = candidates([fake], roots=("fake_course",))
    assert sorted(c.where for c in found) == [
        "fake_course.answers._private",
        "fake_course.answers.unbroadcast",
        "fake_course.answers.wrong",
    ]
    monkeypatch.chdir(tmp_path)
    assert answers([EXERCISES["unbroadcast"]], found) == [
        "fake_course.answers.unbroadcast as unbroadcast: passed",
        "fake_course.answers._private as unbroadcast: passed",
    ]


def test_the_walked_modules_state_is_put_back_after_a_candidate() -> None:
    """What a candidate rebinds, adds, deletes or appends in a walked module is undone; a
    namespace holding the very same objects (an equal but new one is a change) is left as is."""
    module = types.ModuleType("fake_course.state")
    registry: list[Any] = [1, 2]
    first = np.zeros(2)
    table = {"a": first}
    module.__dict__.update(registry=registry, table=table, value=np.ones(3))
    original = dict(vars(module))
    state = _State([module])
    assert not any(_changed(now, saved) for now, saved in state.namespaces)
    module.value = np.ones(3)  # equal, but another object
    module.added = "x"
    del module.table
    registry.append(3)
    table["a"] = np.zeros(2)
    state.restore()
    assert vars(module).keys() == original.keys()
    assert all(vars(module)[k] is v for k, v in original.items())
    assert registry == [1, 2] and module.registry is registry
    assert table["a"] is first
    assert not _changed(dict(b=1, a=2), dict(b=1, a=2)) and _changed({"a": 1}, {"b": 1})

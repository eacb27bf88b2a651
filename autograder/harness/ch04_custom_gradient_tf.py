"""Chapter 04's invokes: a custom-gradient function under a GradientTape, eagerly and in graph.

The case's last array is the cotangent g fed to tape.gradient(output_gradients=g); the
other arrays become tensors (or tf.Variables, the weights a layer reads) and are passed to
the learner's function with the case's static parameters. It runs eagerly and, for the
first GRAPH_SIGNATURES input signatures of each function, inside tf.function too, and the
two runs must agree. `tanh_layer`'s invoke also checks that a
@tf.custom_gradient function computed the output and read the variable inside (so that its
grad_fn received `variables`), as the exercise asks, and `clip_cotangent_norm`'s that the
learner computed the norm's scaling, not a library call (under any name).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from . import english, method

# id(fn) -> (fn, tf.function, signatures), forgotten when a check starts (method.per_check)
_GRAPHS: dict[int, tuple[Callable, Callable, set]] = method.per_check({})
# Input signatures per function that are also run inside tf.function. Each new one traces
# the learner's function again (30-40 ms, with AutoGraph), and a function that breaks in
# graph mode (.numpy(), Python state) breaks on any signature, so a few suffice: 6 made
# tracing about a third of chapter 04's grading (30 traces per submission); 3 took 0.2 s off
# grading one submission. Once a signature is admitted, every case with it runs in both
# modes, so a case's verdict never depends on which cases ran before it (shrinking needs it).
GRAPH_SIGNATURES = 3


def invoke(fn: Callable[..., Any], *args: Any) -> tuple[np.ndarray, ...]:
    """(y, cotangent of each array argument) of a function of tensors."""
    return _invoke(fn, args, variables=())


def invoke_layer(fn: Callable[..., Any], *args: Any) -> tuple[np.ndarray, ...]:
    """The same, with the second argument handed over as a tf.Variable (a layer's weights),
    and the method: the output must come from a function decorated with
    @tf.custom_gradient, or the learner's gradient rule never ran; and that function must
    read the variable inside, so that TensorFlow hands it to grad_fn in `variables` (what
    the exercise teaches). A w passed in as an input gets right values too: its gradient
    then flows through TensorFlow's own read of the variable, and `variables` stays empty."""
    with _custom_gradients() as calls:
        result = _invoke(fn, args, variables=(1,))
    if calls.count == 0:
        raise method.MethodNotFollowed(
            english(
                "tanh_layer must compute its output with a "
                "function decorated with @tf.custom_gradient (def forward(x): ... return y, "
                "grad_fn) and return forward(x), but no custom gradient was called: TensorFlow "
                "differentiated your code itself and your gradient rule never ran."
            ),
            result,
        )
    if calls.variables_seen and calls.with_variables == 0:
        raise method.MethodNotFollowed(
            english(
                "tanh_layer's custom-gradient function must read the tf.Variable w inside "
                "(def forward(x): ..., with w from tanh_layer's arguments) and take x alone as "
                "its input, but your grad_fn never received `variables`: w was an input of "
                "forward (or its value was read before the call), so TensorFlow took w's gradient "
                "through its own read of the variable. Call forward(x), and return "
                "(g_x, [g_w]) from grad_fn(g, variables=None)."
            ),
            result,
        )
    return result


# The library calls that do clip_cotangent_norm's whole backward rule in one line.
CLIP_CALLS = ("clip_by_norm", "clip_by_global_norm")
CLIP_METHOD = (
    "clip_cotangent_norm must compute the scaling itself, but your grad_fn called {found}: "
    "that call is the whole exercise in one line. Compute the cotangent's L2 norm, and from "
    "it the factor that leaves a small cotangent unchanged and scales a large one down to "
    "norm max_norm (a zero cotangent must stay zero, not NaN)."
)


def invoke_clip(fn: Callable[..., Any], *args: Any) -> tuple[np.ndarray, ...]:
    """invoke, refusing a right answer that called tf.clip_by_norm or tf.clip_by_global_norm
    (the exercise is the scaling those calls compute), under whatever name."""
    with _library_calls(CLIP_CALLS, fn) as used:
        result = _invoke(fn, args, variables=())
    if used:
        found = " and ".join(f"tf.{name}" for name in sorted(set(used)))
        raise method.MethodNotFollowed(english(CLIP_METHOD, found=found), result)
    return result


@contextlib.contextmanager
def _library_calls(
    names: Sequence[str], fn: Callable[..., Any] | None = None
) -> Iterator[list[str]]:
    """Record the calls of tf.<name> (and tf.compat.v1.<name>) while the body runs, wherever
    the function is found: on those modules and the one that defines it, and under any name
    of `fn`'s globals bound to it (`from tensorflow import clip_by_norm`, bound before the
    check, is that function under the learner's own name; no name is looked up there, so
    the grader's child needs none kept). The calls still work, so the values are judged as
    usual."""
    used: list[str] = []
    learner_globals = getattr(fn, "__globals__", None)

    def recorded(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*a: Any, **k: Any) -> Any:
            used.append(name)
            return original(*a, **k)

        return call

    originals = _library_functions(names)
    wrappers = {id(original): recorded(name, original) for original, name in originals}
    saved = list(_holders(originals, learner_globals if isinstance(learner_globals, dict) else {}))
    for owner, key, original in saved:
        _put(owner, key, wrappers[id(original)])
    try:
        yield used
    finally:
        for owner, key, original in reversed(saved):
            _put(owner, key, original)


def _library_functions(names: Sequence[str]) -> list[tuple[Callable[..., Any], str]]:
    """(function, name) of tf.<name> and tf.compat.v1.<name>, each function once."""
    found: dict[int, tuple[Callable[..., Any], str]] = {}
    for owner in (tf, tf.compat.v1):
        for name in names:
            function = getattr(owner, name, None)
            if function is not None:
                found.setdefault(id(function), (function, name))
    return list(found.values())


def _holders(
    originals: list[tuple[Callable[..., Any], str]], learner_globals: dict
) -> Iterator[tuple[Any, str, Callable[..., Any]]]:
    """(owner, key, function) wherever one of the functions is bound: tf, tf.compat.v1 and
    its defining module by its name, and the learner's globals under any name (as
    method.py's _apply replaces a builder bound under the learner's name)."""
    by_id = {id(function): function for function, _ in originals}
    for function, name in originals:
        modules = (tf, tf.compat.v1, sys.modules.get(getattr(function, "__module__", "")))
        for owner in dict.fromkeys(module for module in modules if module is not None):
            if getattr(owner, name, None) is function:
                yield owner, name, function
    for key, value in list(learner_globals.items()):
        if id(value) in by_id and by_id[id(value)] is value:  # never a None, say, by .get
            yield learner_globals, key, value


def _put(owner: Any, key: str, value: Any) -> None:
    if isinstance(owner, dict):
        owner[key] = value
    else:
        setattr(owner, key, value)


@dataclass
class CustomGradientCalls:
    """The calls of @tf.custom_gradient functions seen while a learner's function ran."""

    count: int = 0  # -1: this TensorFlow has no hooks to count them (the method is not checked)
    # Whether the variable reads inside each function could be watched (TensorFlow's
    # VariableWatcher), and how many calls read a tf.Variable that is not one of their
    # inputs: the calls whose grad_fn TensorFlow hands `variables`.
    variables_seen: bool = False
    with_variables: int = 0


@contextlib.contextmanager
def _custom_gradients() -> Iterator[CustomGradientCalls]:
    """Count the calls of @tf.custom_gradient functions while the body runs: the decorator
    looks up TensorFlow's `_eager_mode_decorator` (`_graph_mode_decorator` in a graph) at
    each call, wherever and whenever the learner applied it. Each call's function is run
    under a VariableWatcher as well, the way TensorFlow finds the `variables` it passes to
    grad_fn: the variables read inside that are not inputs."""
    module = sys.modules.get("tensorflow.python.ops.custom_gradient")
    hooks = ("_eager_mode_decorator", "_graph_mode_decorator")
    originals = {name: getattr(module, name, None) for name in hooks}
    if None in originals.values():
        yield CustomGradientCalls(count=-1)
        return
    watcher = getattr(getattr(module, "record", None), "VariableWatcher", None)
    calls = CustomGradientCalls(variables_seen=watcher is not None)

    def counting(original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            calls.count += 1
            watched = f if watcher is None else _watching_variables(f, watcher, calls)
            return original(watched, *args, **kwargs)

        return counted

    for name, original in originals.items():
        setattr(module, name, counting(original))
    try:
        yield calls
    finally:
        for name, original in originals.items():
            setattr(module, name, original)


def _watching_variables(
    f: Callable[..., Any], watcher: Callable[[], Any], calls: CustomGradientCalls
) -> Callable[..., Any]:
    """f, counting in `calls` a run that reads a tf.Variable other than its inputs."""

    @functools.wraps(f)  # TensorFlow names the recorded operation after f
    def watched(*args: Any, **kwargs: Any) -> Any:
        with watcher() as variables:
            result = f(*args, **kwargs)
        inputs = tf.nest.flatten((args, kwargs))
        if any(all(v is not i for i in inputs) for v in variables.watched_variables()):
            calls.with_variables += 1
        return result

    return watched


def _invoke(
    fn: Callable[..., Any], args: Sequence[Any], variables: tuple[int, ...]
) -> tuple[np.ndarray, ...]:
    *values, g = args
    values = [
        tf.Variable(v) if i in variables else tf.constant(v) if isinstance(v, np.ndarray) else v
        for i, v in enumerate(values)
    ]
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.ERROR)  # many input signatures: quiet TF's retracing notes
    try:
        with method.every_call_seen():  # a learner's own tf.function runs its Python in both
            eager = [np.asarray(t) for t in _explained(_forward_backward, fn, values, g)]
            graph_run = _graph(fn, _signature(values, g))
            graph = (
                []
                if graph_run is None
                else [np.asarray(t) for t in _explained(graph_run, fn, values, g)]
            )
    finally:
        logger.setLevel(level)
    for e, h in zip(eager, graph, strict=False):
        if e.shape != h.shape or not np.allclose(e, h, rtol=1e-4, atol=1e-5, equal_nan=True):
            raise AssertionError(
                english(
                    "The result differs between the eager run and the run inside tf.function: "
                    "your function must not depend on Python state or on .numpy() values."
                )
            )
    return tuple(eager)


def _forward_backward(fn: Callable[..., Any], values: list[Any], g: np.ndarray) -> tuple:
    sources = [v for v in values if isinstance(v, (tf.Tensor, tf.Variable))]
    with tf.GradientTape() as tape:
        tape.watch([v for v in sources if not isinstance(v, tf.Variable)])
        y = fn(*values)
    if len(tf.nest.flatten(y)) != 1:  # TensorFlow 2.21 crashes the process (a segfault) on
        # several targets with one output gradient: the learner's kernel would die.
        raise TypeError(
            english(
                "Return one tensor, your function's output; it returned a {type} of {count}.",
                type=type(y).__name__,
                count=len(tf.nest.flatten(y)),
            )
        )
    grads = tape.gradient(
        y,
        sources,
        output_gradients=tf.convert_to_tensor(g),
        unconnected_gradients=tf.UnconnectedGradients.ZERO,
    )
    return (y, *grads)


def _signature(values: list[Any], g: np.ndarray) -> tuple:
    """What tf.function traces on: each tensor's shape and dtype, each other value itself."""

    def key(value: Any) -> Any:
        if isinstance(value, (tf.Tensor, tf.Variable)):
            return (type(value).__name__, tuple(value.shape), value.dtype.name)
        return repr(value)

    return (*map(key, values), np.shape(g), np.asarray(g).dtype.name)


def _graph(fn: Callable[..., Any], signature: tuple) -> Callable[..., tuple] | None:
    """_forward_backward inside tf.function, traced once per input signature, not per call;
    None when this signature is not one of the GRAPH_SIGNATURES this function runs in graph."""
    entry = _GRAPHS.get(id(fn))
    if entry is None or entry[0] is not fn:
        if len(_GRAPHS) > 64:
            _GRAPHS.clear()
        graph = tf.function(lambda values, g: _forward_backward(fn, values, g))
        setattr(graph, method.HARNESS_OWN, True)  # traced once per signature and check
        entry = _GRAPHS[id(fn)] = (fn, graph, set())
    admitted = entry[2]
    if signature not in admitted:
        if len(admitted) >= GRAPH_SIGNATURES:
            return None
        admitted.add(signature)
    return lambda fn, values, g: entry[1](values, g)


def _explained(
    run: Callable[..., tuple], fn: Callable[..., Any], values: list[Any], g: np.ndarray
) -> tuple:
    """Run; say plainly what TensorFlow's errors about grad_fn's return value mean."""
    try:
        return run(fn, values, g)
    except Exception as error:
        text = str(error)
        for clue, meaning in _MEANINGS:
            if clue in text:
                kind = TypeError if isinstance(error, TypeError) else ValueError
                raise kind(
                    english("{meaning} (TensorFlow said: {said})", meaning=meaning, said=text[:300])
                ) from None
        raise


_VARIABLE_GRADS = english(
    "grad_fn must return (input_grads, variable_grads): the variable gradients in a list, "
    "one per variable in `variables`, e.g. (g_x, [g_w])."
)
_MEANINGS = [
    (
        "keyword argument 'variables'",
        english(
            "Your grad_fn does not accept `variables`. The function reads a tf.Variable, "
            "so TensorFlow calls grad_fn(g, variables=[w]) and expects "
            "(input_grads, variable_grads) back. Define it as `def grad_fn(g, "
            "variables=None)`."
        ),
    ),
    ("gradient for each variable", _VARIABLE_GRADS),
    ("too few gradients", _VARIABLE_GRADS),
    (
        "expected to return",
        english(
            "grad_fn must return one gradient per input of the custom-gradient function, in order."
        ),
    ),
]

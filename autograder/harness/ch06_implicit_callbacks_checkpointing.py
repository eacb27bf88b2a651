"""Chapter 06's invokes: a solver differentiated implicitly, and a callback made differentiable,
under JAX's transformations (chapter 05's stages: a refusal names the transformation and the
likely mistake)."""

from __future__ import annotations

import weakref
from typing import Any

import jax
import numpy as np
from jax.extend.core import Literal

from . import english
from .ch05_custom_derivatives_jax import (
    Fn,
    double_precision,
    elementwise,
    numpy_arrays,
    stage,
    vjp_of,
)
from .compiling import device_arrays, fast_jit
from .method import MethodNotFollowed


@fast_jit(static_argnums=0)
def _fixed_point_program(fn: Fn, a: Any, g: Any) -> tuple[Any, ...]:
    return (
        stage("jax.jit(fn)(a)", lambda: jax.jit(fn)(a)),
        *stage("jax.vjp(jax.jit(fn))", lambda: vjp_of(jax.jit(fn), a, g)),
        stage("jax.jit(jax.vmap(jax.grad(fn)))", lambda: elementwise(jax.grad(fn), a)),
    )


# bessel_i0e calls back into Python (jax.pure_callback), and this JAX never caches a program
# with a host callback on disk, so each of its programs is compiled for every submission, one
# per shape and dtype. Only the value, jax.jit(fn)(x), runs on the case's own shape (a small
# program: the callback alone), which is what tests the callback's handling of shapes. The
# derivatives (JVP, vmap of grad, and of grad of grad) are elementwise, so they run in one
# program on x flattened and padded to a bucket: one compiled program per dtype instead of one
# per shape, the same values (XLA's code for another length may round the last bit
# differently).
DERIVATIVE_BUCKET = 16


@fast_jit(static_argnums=0)
def _bessel_i0e_program(fn: Fn, x: Any) -> Any:
    return stage("jax.jit(fn)(x)", lambda: jax.jit(fn)(x))


@fast_jit(static_argnums=0)
def _bessel_i0e_derivatives(fn: Fn, flat: Any, flat_t: Any) -> tuple[Any, ...]:
    return (
        *stage("jax.jit(jax.jvp(fn))", lambda: jax.jvp(fn, (flat,), (flat_t,))),
        stage("jax.jit(jax.vmap(jax.grad(fn)))", lambda: jax.vmap(jax.grad(fn))(flat)),
        stage(
            "jax.jit(jax.vmap(jax.grad(jax.grad(fn))))",
            lambda: jax.vmap(jax.grad(jax.grad(fn)))(flat),
        ),
    )


def bucketed(x: Any) -> np.ndarray:
    """x flattened and padded (repeating its last element) to DERIVATIVE_BUCKET elements, or
    the next power of two above: few lengths, so few compiled programs. In numpy: JAX would
    compile a program for each new shape it pads."""
    flat = np.asarray(x).reshape(-1)
    if flat.size == 0:
        return flat
    size = max(DERIVATIVE_BUCKET, 1 << (flat.size - 1).bit_length())
    return np.pad(flat, (0, size - flat.size), mode="edge")


# ---------------------------------------------------------------- one invoke per exercise


# The notebook's accuracy and memory demonstrations (after the exercise) import two finished
# solvers for any map f; either one, called in a learner's fixed_point, answers the exercise
# without deriving the implicit rule.
REFERENCE_SOLVERS_MODULE = "coursekit.custom_derivatives"
REFERENCE_SOLVERS = (
    "fixed_point_implicit",
    "fixed_point_unrolled",
    "_implicit_bwd",
    "_implicit_fwd",
    "iterate",
)


def _is_reference_solver(value: Any) -> bool:
    if getattr(value, "__name__", None) in ("coursekit", REFERENCE_SOLVERS_MODULE):
        return True  # the module itself, used as `custom_derivatives.fixed_point_implicit`
    wrapped = getattr(value, "__wrapped__", value)  # jax.custom_vjp keeps the function
    return any(
        getattr(v, "__module__", None) == REFERENCE_SOLVERS_MODULE
        and getattr(v, "__name__", None) in REFERENCE_SOLVERS
        for v in (value, wrapped)
    )


def _functions_of(fn: Any) -> list[Any]:
    """fn and, for a jax.custom_vjp/custom_jvp object, the Python functions it holds."""
    held = [getattr(fn, name, None) for name in ("fun", "fwd", "bwd", "jvp", "__wrapped__")]
    return [fn, *(f for f in held if f is not None)]


def _uses_reference_solver(fn: Any, seen: set[int] | None = None) -> bool:
    """Whether fn is, or calls (through the names its code reads, following the learner's own
    functions), one of the reference solvers."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return False
    seen.add(id(fn))
    if _is_reference_solver(fn):
        return True
    for function in _functions_of(fn):
        code = getattr(function, "__code__", None)
        if code is None or (function is not fn and id(function) in seen):
            continue
        seen.add(id(function))
        namespace = getattr(function, "__globals__", {})
        cells = [
            c.cell_contents for c in (getattr(function, "__closure__", None) or ()) if _filled(c)
        ]
        names = {name for c in _codes(code) for name in c.co_names}
        for value in [namespace.get(name) for name in names] + cells:
            if _is_reference_solver(value) or (
                callable(value)
                and getattr(value, "__module__", None) == function.__module__
                and _uses_reference_solver(value, seen)
            ):
                return True
    return False


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _codes(code: Any) -> Any:
    """A code object and those of the functions (lambdas included) defined inside it."""
    yield code
    for constant in code.co_consts:
        if hasattr(constant, "co_names"):
            yield from _codes(constant)


def refuse_reference_solver(fn: Fn) -> None:
    """Refuse a fixed_point that calls the demonstrations' finished solvers: with them, bwd is
    one jax.vjp call and nothing is derived."""
    if _uses_reference_solver(fn):
        raise ValueError(
            english(
                "Your fixed_point uses the course's finished solvers "
                "(coursekit.custom_derivatives: "
                "fixed_point_implicit or fixed_point_unrolled, which the demonstrations after the "
                "exercise compare): the check needs your own rule. Write fixed_point_bwd from the "
                "partial derivatives of f(a, x) = a / (1 + x) at the solution."
            )
        )


def invoke_fixed_point(fn: Fn, a: Any, g: Any) -> tuple[np.ndarray, ...]:
    refuse_reference_solver(fn)
    with double_precision():
        values = numpy_arrays(
            stage(
                "running the compiled jit/vjp/grad program", lambda: _fixed_point_program(fn, a, g)
            )
        )
        found = stage(
            "looking for the closed form in jax.vjp(fn) and its pullback",
            lambda: verdict_once(_CLOSED_FORMS, _closed_form_operation, fn, a, g),
        )
    if found is not None:
        raise MethodNotFollowed(english(CLOSED_FORM_METHOD, operation=found), values)
    return values


def invoke_bessel_i0e(fn: Fn, x: Any, t: Any) -> tuple[np.ndarray, ...]:
    with double_precision():
        value = stage("running the compiled jit program", lambda: _bessel_i0e_program(fn, x))
        derivatives = stage(
            "running the compiled jvp and grad program",
            lambda: _bessel_i0e_derivatives(fn, bucketed(x), bucketed(t)),
        )
        derivatives = (d[: np.size(x)].reshape(np.shape(x)) for d in numpy_arrays(derivatives))
        values = (np.asarray(value), *derivatives)
        callbacks = stage(
            "counting the callbacks in jax.make_jaxpr(fn)(x)",
            lambda: verdict_once(_CALLBACKS, _callback_count, fn, x),
        )
    if not callbacks:
        raise MethodNotFollowed(english(NO_CALLBACK_METHOD), values)
    return values


# ---------------------------------------------------------------- the methods in the jaxpr


def verdict_once(verdicts: weakref.WeakKeyDictionary, judge: Fn, fn: Fn, *arrays: Any) -> Any:
    """judge(fn, *arrays), once per function and input shapes and dtypes: the verdicts read a
    traced program, which the values do not change, and tracing it for every case was most
    of a grading's time for remat_net. A custom_vjp/custom_jvp given new rules (defvjp run
    again in the notebook) is judged again."""
    rules = tuple(id(f) for f in _functions_of(fn)[1:])
    key = (rules, *((a.shape, str(a.dtype)) for a in arrays))
    try:
        known = verdicts.setdefault(fn, {})
    except TypeError:  # a callable that takes no weak reference: judge every time
        return judge(fn, *arrays)
    if key not in known:
        known[key] = judge(fn, *arrays)
    return known[key]


def _all_eqns(jaxpr: Any) -> Any:
    """(eqn, the jaxpr it is in) for every equation, inside nested calls and loops too."""
    for eqn in jaxpr.eqns:
        yield eqn, jaxpr
        for sub in _subjaxprs(eqn):
            yield from _all_eqns(getattr(sub, "jaxpr", sub))


# The closed form x* = 2a / (1 + sqrt(1 + 4a)) and its derivative 1 / sqrt(1 + 4a), which the
# chapter prints after the exercise, need a root; the given solver and the implicit rule,
# g * (df/da) / (1 - df/dx) with f(a, x) = a / (1 + x) (or g / (1 + 2x), from x**2 + x = a),
# need only +, -, *, / and whole powers. A root written as exp(log(v) / 2) is one too.
CLOSED_FORM_PRIMITIVES = ("sqrt", "rsqrt", "cbrt", "exp", "exp2", "log", "log1p", "expm1")
# What only moves or casts a value: an exponent made by one of these from a literal is known.
_KEEPS_VALUE = (
    "broadcast_in_dim",
    "convert_element_type",
    "reshape",
    "squeeze",
    "expand_dims",
    "copy",
)

CLOSED_FORM_METHOD = (
    "Right values, but jax.vjp of your fixed_point computes {operation}: that comes from the "
    "closed form x* = 2a / (1 + sqrt(1 + 4a)) or its derivative 1 / sqrt(1 + 4a), not from the "
    "implicit function theorem, which needs no root. Keep the solver for x*, and write "
    "fixed_point_bwd from the residuals a and x: the cotangent of a is g * (df/da) / "
    "(1 - df/dx), both partial derivatives of f(a, x) = a / (1 + x) taken at the solution."
)


def _known_value(var: Any, jaxpr: Any) -> Any:
    """The value of a jaxpr variable known without running anything: a literal, or one
    broadcast, reshaped or cast from a literal; None otherwise."""
    if isinstance(var, Literal):
        return var.val
    for eqn in jaxpr.eqns:
        if var in eqn.outvars:
            if eqn.primitive.name in _KEEPS_VALUE and eqn.invars:
                return _known_value(eqn.invars[0], jaxpr)
            return None
    return None


def _closed_form_operation(fn: Fn, a: Any, g: Any) -> str | None:
    """The first root, exp/log or fractional power that jax.vjp(fn) and its pullback applied
    to g compute (both are one jaxpr: the learner's bwd is traced into it), or None. An
    exponent that is not known before running (computed from the inputs) is let pass."""
    jaxpr = jax.make_jaxpr(lambda a, g: jax.vjp(fn, a)[1](g))(a, g).jaxpr
    for eqn, inside in _all_eqns(jaxpr):
        name = eqn.primitive.name
        if name in CLOSED_FORM_PRIMITIVES:
            return name
        if name == "pow" and len(eqn.invars) == 2:
            exponent = _known_value(eqn.invars[1], inside)
            if exponent is not None and not np.all(np.mod(np.asarray(exponent), 1) == 0):
                return f"v ** {np.asarray(exponent).reshape(-1)[0]:g}"
    return None


NO_CALLBACK_METHOD = (
    "Right values, but your bessel_i0e never calls jax.pure_callback: JAX computes the value "
    "itself (jax.scipy.special.i0e, for one), and the exercise is to make a routine JAX "
    "cannot trace differentiable. Compute the value as jax.pure_callback(external_i0e, "
    'jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="expand_dims") inside the '
    "jax.custom_jvp function (cast in the callback: external_i0e(v).astype(v.dtype)), and "
    "give it the JVP rule."
)


def _callback_count(fn: Fn, x: Any) -> int:
    """How many jax.pure_callback calls the traced primal jax.make_jaxpr(fn)(x) makes."""
    jaxpr = jax.make_jaxpr(fn)(x).jaxpr
    return sum(eqn.primitive.name == "pure_callback" for eqn, _ in _all_eqns(jaxpr))


_CLOSED_FORMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CALLBACKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# ---------------------------------------------------------------- checkpointing: a method check


# The notebook's net applies DEPTH layers tanh(h @ w). The exercise sets a memory budget with
# two parts, both counted here: the pullback keeps at most MAX_RESIDUALS arrays (no checkpoint
# saves 15; one per layer saves every layer's input, DEPTH + 2), and no checkpointed piece
# recomputes more than MAX_PIECE layers (a piece's recomputation saves its own residuals until
# its backward pass is done: one checkpoint around the whole net holds as much, at that moment,
# as no checkpoint at all). And each layer runs at most twice, forward and recomputed once
# (nested checkpoints recompute the inner layers again). A layer is counted as its tanh.
DEPTH = 6
MAX_RESIDUALS = 4
MAX_PIECE = 3
MAX_LAYER_RUNS = 2 * DEPTH


def saved_residual_count(fn: Fn, *args: Any) -> int:
    """How many arrays jax.vjp's pullback of fn keeps, as print_saved_residuals lists them."""
    import contextlib
    import io

    from jax.ad_checkpoint import print_saved_residuals

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_saved_residuals(fn, *args)
    return len([line for line in printed.getvalue().splitlines() if line.strip()])


def _subjaxprs(eqn: Any) -> list[Any]:
    from jax.extend.core import jaxprs_in_params

    return list(jaxprs_in_params(eqn.params))


def layer_count(jaxpr: Any) -> int:
    """How many layers (tanh operations) a jaxpr runs, inside nested calls included."""
    return sum(
        (eqn.primitive.name == "tanh") + sum(layer_count(j) for j in _subjaxprs(eqn))
        for eqn in jaxpr.eqns
    )


def checkpointed_pieces(jaxpr: Any) -> list[int]:
    """The layer count of every jax.checkpoint region in a jaxpr, nested ones included."""
    pieces = []
    for eqn in jaxpr.eqns:
        subs = _subjaxprs(eqn)
        if eqn.primitive.name in ("checkpoint", "remat", "remat2"):
            pieces.append(sum(layer_count(j) for j in subs))
        for sub in subs:
            pieces.extend(checkpointed_pieces(sub))
    return pieces


def _forward_and_backward(fn: Fn, w: Any, x: Any, g: Any) -> Any:
    """The jaxpr of jax.vjp(fn, w, x) and its pullback applied to g: every layer that runs.
    It is the program the check runs for the case (_remat_program), whose trace its call
    has kept: read here, not traced a second time."""
    return _remat_program.trace(fn, w, x, g).jaxpr.jaxpr


def budget_broken(fn: Fn, w: Any, x: Any, g: Any) -> str | None:
    """Why fn's backward pass breaks the exercise's memory budget, or None."""
    saved = saved_residual_count(fn, w, x)
    if saved > MAX_RESIDUALS:
        return english(
            "jax.vjp's pullback of your function keeps {saved} arrays "
            "(print_saved_residuals lists them); this exercise asks for at most "
            "{most}. Each jax.checkpoint saves the input of its piece: one around "
            "each layer still saves every layer's input.",
            saved=saved,
            most=MAX_RESIDUALS,
        )
    pieces = checkpointed_pieces(jax.make_jaxpr(fn)(w, x).jaxpr)
    if pieces and max(pieces) > MAX_PIECE:
        return english(
            "a checkpointed piece of your net spans {layers} layers; this exercise "
            "allows at most {most}. The pullback saves little, but in the backward "
            "pass the piece runs again and saves the residuals of all its layers "
            "until its own backward pass is done: with one checkpoint around the "
            "whole net, that is as much, at that moment, as no checkpoint at all. "
            "Cut the net into pieces, so that both counts stay small.",
            layers=max(pieces),
            most=MAX_PIECE,
        )
    runs = layer_count(_forward_and_backward(fn, w, x, g))
    if runs > MAX_LAYER_RUNS:
        return english(
            "the forward and backward passes of your function run {runs} layers; "
            "this exercise allows {most}, each of the {depth} layers once forward "
            "and recomputed at most once. A checkpoint inside a checkpointed piece "
            "recomputes its layers a second time.",
            runs=runs,
            most=MAX_LAYER_RUNS,
            depth=DEPTH,
        )
    return None


_VERDICTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def budget_verdict(fn: Fn, w: Any, x: Any, g: Any) -> str | None:
    """budget_broken, once per function and the shapes and dtypes of w and x (the counts
    read the traced program; tracing it three times per case was most of a grading's time
    for this chapter)."""
    return verdict_once(_VERDICTS, lambda fn, w, x: budget_broken(fn, w, x, g), fn, w, x)


def _remat_vjp(fn: Fn, w: Any, x: Any, g: Any) -> tuple[Any, Any, Any]:
    value, pullback = stage("jax.vjp(fn, w, x)", lambda: jax.vjp(fn, w, x))
    g_w, g_x = stage("the pullback of jax.vjp(fn, w, x)", lambda: pullback(g))
    return value, g_w, g_x


# The same, compiled once per function, shape and dtype: run op by op, the net's six layers and
# their checkpoints were traced and dispatched again for every case (about 10 ms each, most of
# a submission's remat_net).
_remat_program = fast_jit(_remat_vjp, static_argnums=0)


def invoke_remat_net(fn: Fn, w: Any, x: Any, g: Any) -> tuple[np.ndarray, ...]:
    with double_precision():
        g = np.asarray(g, np.asarray(x).dtype)  # the loss's cotangent, in the net's dtype
        try:
            value, g_w, g_x = _remat_program(fn, w, x, g)
        except Exception:  # not traceable under jit (Python on values): run it as written
            value, g_w, g_x = _remat_vjp(fn, *device_arrays(w, x, g))
        values = numpy_arrays((value, value, g_w, g_x))
        broken = stage(
            "counting what the backward pass saves and recomputes",
            lambda: budget_verdict(fn, w, x, g),
        )
    if broken is not None:
        raise MethodNotFollowed(english("Right values, but {broken}", broken=broken), values)
    return values

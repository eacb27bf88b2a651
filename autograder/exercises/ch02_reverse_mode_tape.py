"""Chapter 02 exercises: the learner's own engine, and checking a gradient without a framework.

`grad` is the random-program check of the learner's whole engine (engine_programs.py has its
contract, engine_reports.py its declaration and report): the learner writes the Tensor, its
operations, one VJP rule per operation (each an exercise of ch02_rules.py), the order, the
backward pass and `grad`, and the package ships no engine, right or wrong.
`directional_derivative` and `find_wrong_rule` check gradients by finite differences; they are
numpy exercises too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from autograder.exercises.ch02_rules import EXERCISES as RULES
from autograder.exercises.engine_programs import (
    _jax_functions,
    _tf_functions,
    _tf_index,
    program_edges,
    programs,
)
from autograder.exercises.engine_reports import NO_ENGINE, engine_exercise
from autograder.exercises.wrong_rule_answers import make_find_wrong_rule, primals_for
from autograder.harness.ch02_reverse_mode_tape import (
    FLAGS,
    FORWARD,
    JOINED,
    RIGHT_TABLE,
    SCALAR_FUNCTIONS,
    SCALAR_GRADIENTS,
    WRONG_RULES,
    rule_table,
    scalar_function,
)
from autograder.harness.programs import INPUTS, NAMESPACE, run
from autograder.judging.cases import Case, Profile, dtypes
from autograder.judging.compare import excess, tolerance
from autograder.judging.derived import two_references
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction

# ---------------------------------------------------------------- grad: the whole engine

GRAD = engine_exercise()


# ---------------------------------------------------------------- gradients of gradients


def _with_direction(case: Case, seed: int) -> Case:
    """A program case and a random direction v of x0's shape (never ones)."""
    v = np.random.default_rng(seed).normal(size=case.arg("x0").shape)
    return Case((*case.args, ("v", v)), label=case.label)


@st.composite
def _hvp_strategy(draw: st.DrawFn, profile: Profile) -> Case:
    return _with_direction(draw(programs(profile)), draw(st.integers(0, 2**32 - 1)))


def _hvp_edges() -> list[Case]:
    return [_with_direction(case, seed) for seed, case in enumerate(program_edges())]


def _hvp_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    functions = _jax_functions(jax)

    def f(x0: Any) -> Any:
        return run(params["program"], functions, [x0, arrays["x1"], arrays["x2"]])[-1]

    _, tangent = jax.jvp(jax.grad(f), (arrays["x0"],), (arrays["v"],))
    return (tangent,)


def _hvp_tf(tf: Any, case: Case) -> tuple[np.ndarray]:
    """Reverse over reverse: the gradient of (grad f(x) . v), nested GradientTapes. A second
    method beside JAX's forward over reverse, and no tf.function tracing: TensorFlow's
    ForwardAccumulator traces one per operation and case (8.8 s for the 33 notebook cases
    against 0.36 s; the values agree to 4e-16)."""
    x0, x1, x2 = (tf.constant(case.arg(name)) for name in INPUTS)
    zero = tf.UnconnectedGradients.ZERO
    with tf.GradientTape() as outer:
        outer.watch(x0)
        with tf.GradientTape() as inner:
            inner.watch(x0)
            y = run(case.arg("program"), _tf_functions(tf), [x0, x1, x2], index=_tf_index(tf))[-1]
        gradient = tf.convert_to_tensor(inner.gradient(y, x0, unconnected_gradients=zero))
        along_v = tf.reduce_sum(gradient * tf.constant(case.arg("v")))
    return (tf.convert_to_tensor(outer.gradient(along_v, x0, unconnected_gradients=zero)).numpy(),)


HESSIAN_VECTOR_PRODUCT = Exercise(
    signature="hessian_vector_product(f, x, v) -> the Hessian of f at x times v",
    nudge=(
        "Which scalar function of x has the Hessian times v as its gradient? Rules written with "
        "your engine's own operations can be differentiated again."
    ),
    outputs=("hvp",),
    cases=_hvp_strategy,
    edges=_hvp_edges,
    reference=two_references(
        tf=_hvp_tf,
        jax=_hvp_jax,
        why="two methods: TensorFlow reverse over reverse (nested GradientTapes), JAX "
        "forward over reverse (jax.jvp of jax.grad); TensorFlow indexes with tf.gather",
    ),
    references_text="jax.jvp(jax.grad(f), (x,), (v,)) and two nested tf.GradientTapes (the "
    "gradient of grad(f)(x) . v), for f a random program of x (x1 and x2 held fixed)",
    hints_by_kind={
        "error": "The traceback names the line of your engine that raised, on the program "
        "shown. hessian_vector_product(f, x, v) differentiates grad(f)(x) again, so "
        "grad must accept Tensors: keep a Tensor argument as it is, and seed the "
        "backward pass with Tensor(ones) when the arguments are Tensors.",
        "value": "A wrong Hessian-vector product while check.grad passes: the second "
        "derivative misses what a rule computed outside the engine. Write every rule "
        "with the engine's own operations (exp(x), not np.exp(x.value)), let the VJP "
        "closure hand the rule the parent Tensors when its cotangent is a Tensor, and "
        "accumulate with node.grad = node.grad + c.",
    },
    invoke="ch02_reverse_mode_tape:invoke_hessian_vector_product",
    namespace_reads=NAMESPACE,
    answers_outside=NO_ENGINE,
)


# ---------------------------------------------------------------- the ops find_wrong_rule checks


def _apply(lib: Any, op: str, axis: Any, *primals: Any) -> Any:
    """The op in TensorFlow (lib = tf) or JAX (lib = jax.numpy)."""
    is_tf = hasattr(lib, "GradientTape")
    if op == "sum":
        return (lib.reduce_sum if is_tf else lib.sum)(primals[0], axis=axis)
    if op == "matmul":
        return lib.linalg.matmul(*primals) if is_tf else lib.matmul(*primals)
    if op == "neg":
        return -primals[0]
    if op in ("exp", "tanh"):
        return getattr(lib, op)(primals[0]) if not is_tf else getattr(lib.math, op)(primals[0])
    if op == "log":
        return (lib.math.log if is_tf else lib.log)(primals[0])
    x, y = primals
    return {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y}[op]


# ---------------------------------------------------------------- directional_derivative

FUNCTION_POINTS = {  # where each function's points are drawn, at magnitude 1
    "tanh_x2": (-2.0, 2.0),
    "softplus": (-3.0, 3.0),
    "log": (0.8, 3.0),
    "norm": (-2.0, 2.0),
}
LARGE = ("log", "norm")  # the functions that vary on the scale of x itself


def _well_conditioned(f: str, x: np.ndarray, v: np.ndarray) -> bool:
    """A case where a central difference with a step chosen for the dtype is accurate well
    within the judge's tolerance (ten times over): the directional derivative is not small
    beside f's own rounding noise, so the check judges the method, not luck."""
    exact = np.asarray(
        np.dot(SCALAR_GRADIENTS[f](x.astype(np.float64)).ravel(), v.astype(np.float64).ravel()),
        x.dtype,
    )
    # The reference's central difference, written out here: the reference itself runs only
    # in place of a learner's (harness.stand_in_only).
    function = scalar_function(f, x.dtype)
    h = np.finfo(x.dtype).eps ** (1 / 3) * max(1.0, float(np.abs(x).max(initial=0.0)))
    central = np.asarray(
        (np.asarray(function(x + h * v)) - np.asarray(function(x - h * v))) / (2 * h), x.dtype
    )
    return bool(excess(central, exact, tolerance(x.dtype)) < 0.1)


def derivative_case(
    f: str, shape: tuple[int, ...], magnitude: float, dtype: Any, seed: int, label: str = ""
) -> Case:
    """x drawn for f at `magnitude`, v a unit direction leaning towards f's gradient (so
    that the derivative along it is not close to zero), redrawn until well conditioned."""
    low, high = FUNCTION_POINTS[f]
    rng = np.random.default_rng(seed)
    for _ in range(100):
        x = np.asarray(rng.uniform(low, high, size=shape) * magnitude, dtype)
        gradient = SCALAR_GRADIENTS[f](x.astype(np.float64))
        lean = gradient / max(float(np.linalg.norm(gradient)), 1e-12)
        v = lean + rng.normal(size=shape) * 0.5
        v = np.asarray(v / np.linalg.norm(v), dtype)
        if _well_conditioned(f, x, v):
            break
    return Case((("f", f), ("x", x), ("v", v)), label=label)


@st.composite
def _derivative_strategy(draw: st.DrawFn, profile: Profile) -> Case:
    f = draw(st.sampled_from(sorted(SCALAR_FUNCTIONS)))
    shape = draw(st.sampled_from([(), (1,), (3,), (min(4, profile.max_side),)]))
    magnitude = draw(st.sampled_from([1.0, 1e3, 1e5])) if f in LARGE else 1.0
    return derivative_case(f, shape, magnitude, draw(dtypes()), draw(st.integers(0, 2**32 - 1)))


def _zero_case() -> Case:
    """A 0-d x at 0, where softplus's derivative along v is -1/2: a step relative to |x|
    with no floor of 1 is 0 there, and the difference divided by it NaN."""
    x, v = np.zeros((), np.float64), np.full((), -1.0)  # 0-d arrays, not numpy scalars
    return Case(
        (("f", "softplus"), ("x", x), ("v", v)),
        label="a 0-d x at 0: the step must not vanish with x",
    )


def _derivative_edges() -> list[Case]:
    f32, f64 = np.float32, np.float64
    return [
        derivative_case("tanh_x2", (3,), 1.0, f32, 1, "float32: the step must suit float32"),
        derivative_case(
            "softplus", (3,), 1.0, f64, 2, "float64: a forward difference is not accurate enough"
        ),
        _zero_case(),
        derivative_case(
            "log", (2,), 1e4, f32, 4, "float32 at x ~ 1e4: the step must grow with |x|"
        ),
        derivative_case("norm", (3,), 1e6, f64, 5, "float64 at x ~ 1e6"),
    ]


def _math_tf(tf: Any) -> dict[str, Callable[..., Any]]:
    return {
        "tanh": tf.math.tanh,
        "exp": tf.math.exp,
        "log": tf.math.log,
        "sqrt": tf.math.sqrt,
        "sum": tf.reduce_sum,
    }


def _derivative_tf(tf: Any, case: Case) -> tuple[np.ndarray]:
    f, x, v = case.values()
    primal = tf.constant(x)
    with tf.autodiff.ForwardAccumulator(primal, tf.constant(v)) as accumulator:
        out = SCALAR_FUNCTIONS[f](_math_tf(tf), primal)
    return (np.asarray(accumulator.jvp(out).numpy(), x.dtype),)


def _derivative_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy
    math = {"tanh": jnp.tanh, "exp": jnp.exp, "log": jnp.log, "sqrt": jnp.sqrt, "sum": jnp.sum}
    _, tangent = jax.jvp(
        lambda x: SCALAR_FUNCTIONS[params["f"]](math, x), (arrays["x"],), (arrays["v"],)
    )
    return (tangent,)


def _h(x: np.ndarray, power: float, eps: float | None = None, scaled: bool = True) -> float:
    base = np.finfo(x.dtype).eps if eps is None else eps
    return base**power * (max(1.0, float(np.abs(x).max(initial=0.0))) if scaled else 1.0)


def _forward_difference(f: Callable, x: np.ndarray, v: np.ndarray) -> Any:
    h = _h(x, 1 / 2)
    return (f(x + h * v) - f(x)) / h


def _forward_difference_cbrt(f: Callable, x: np.ndarray, v: np.ndarray) -> Any:
    h = _h(x, 1 / 3)
    return (f(x + h * v) - f(x)) / h


def _tiny_step(f: Callable, x: np.ndarray, v: np.ndarray) -> Any:
    h = 1e-8
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def _float64_step(f: Callable, x: np.ndarray, v: np.ndarray) -> Any:
    h = _h(x, 1 / 3, eps=float(np.finfo(np.float64).eps))
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def _unscaled_step(f: Callable, x: np.ndarray, v: np.ndarray) -> Any:
    h = _h(x, 1 / 3, scaled=False)
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def _step_without_floor(f: Callable, x: np.ndarray, v: np.ndarray) -> Any:
    h = np.finfo(x.dtype).eps ** (1 / 3) * float(np.abs(x).max(initial=0.0))
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 / 0 at x = 0, quietly
        return (f(x + h * v) - f(x - h * v)) / (2 * h)


FORWARD_HINT = (
    "A forward difference (f(x + h v) - f(x)) / h is off by about h/2 times the second "
    "derivative: too much for this check. Step both ways, (f(x + h v) - f(x - h v)) / (2 h): "
    "the h terms cancel and what is left is of order h**2."
)
DIRECTIONAL_DERIVATIVE = Exercise(
    signature="directional_derivative(f, x, v) -> the derivative of f at x along v (one number)",
    nudge=(
        "A finite difference trades two errors: truncation, which shrinks with the step, and "
        "rounding, which grows as the step shrinks. Which difference and which step balance them, "
        "in float32 and in float64, at any magnitude of x?"
    ),
    outputs=("directional_derivative",),
    cases=_derivative_strategy,
    edges=_derivative_edges,
    reference=two_references(
        tf=_derivative_tf,
        jax=_derivative_jax,
        why="a directional derivative is a JVP: tf.autodiff.ForwardAccumulator and jax.jvp",
    ),
    references_text="jax.jvp and tf.autodiff.ForwardAccumulator (the exact derivative of f at "
    "x along v, a JVP)",
    mistakes=(
        Mistake("forward_difference", FORWARD_HINT, _forward_difference),
        Mistake("forward_difference_cbrt", FORWARD_HINT, _forward_difference_cbrt),
        Mistake(
            "tiny_step",
            "Your step is too small: f is only known to about eps * |f| (eps = "
            "np.finfo(x.dtype).eps), and dividing that rounding noise by 2 h makes it huge "
            "when h is tiny (in float32, x + 1e-8 * v is often x itself). The total error is "
            "about h**2 (truncation) plus eps / h (rounding): choose the h that balances "
            "them.",
            _tiny_step,
        ),
        Mistake(
            "float64_step",
            "Your step suits float64, not float32: float32 rounds at eps = "
            "1.2e-7, so eps / h is large for a step that small. Take eps from x's dtype, "
            "np.finfo(x.dtype).eps, and balance h**2 against eps / h.",
            _float64_step,
        ),
        Mistake(
            "unscaled_step",
            "Your step does not grow with |x|: near x = 1e4, x + h * v with h"
            " = 5e-3 rounds (float32 holds about 7 digits), so the step you divide by is not "
            "the step that was taken, and f's rounding noise (eps * |f|) is large beside the "
            "change h makes. Scale h by the magnitude of x (at least 1).",
            _unscaled_step,
        ),
        Mistake(
            "step_without_floor",
            "Your step is relative to |x| with no floor: at x = 0 it is "
            "0, and (f(x) - f(x)) / 0 is NaN. Scale it by the magnitude of x, but at least 1:"
            " `h = eps ** (1 / 3) * max(1.0, float(np.abs(x).max()))`.",
            _step_without_floor,
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. directional_derivative(f,"
        " x, v) calls f on points like x + h * v (arrays of x's shape) and returns one "
        "number.",
        "value": "Your derivative is off by more than rounding allows. Use a central difference, "
        "with a step of about eps**(1/3) (eps = np.finfo(x.dtype).eps) times the "
        "magnitude of x (at least 1): the truncation error is of order h**2 and the "
        "rounding error of order eps / h.",
        "exception": "directional_derivative returns one number: f(...) is a scalar, and so "
        "is their difference divided by the step.",
    },
    invoke="ch02_reverse_mode_tape:invoke_directional_derivative",
    reference_implementation="ch02_reverse_mode_tape:directional_derivative",
)


# ---------------------------------------------------------------- find_wrong_rule


def _wrong_rule_case(table: str, dtype: str, label: str = "") -> Case:
    return Case((("table", table), ("dtype", dtype)), label=label)


@st.composite
def _wrong_rule_strategy(draw: st.DrawFn, profile: Profile) -> Case:
    table = draw(st.sampled_from([RIGHT_TABLE, *WRONG_RULES]))
    return _wrong_rule_case(table, draw(dtypes()).name)


# Tables with several wrong rules: each wrong rule of WRONG_RULES but the two edge cases of
# their own (matmul_transposed, sum_axis_lost) first, then one or two of later ops. The answer
# is the first, so each is the same flag as its first rule's table alone, and a check that
# returns the last op it flags fails on every one. (Every one-wrong-rule table is drawn in
# both dtypes too.)
SEVERAL_WRONG = (
    ("div_sign", "log_squared"),
    ("exp_forgotten", "sum_axis_lost"),
    ("log_squared", "tanh_of_input"),
    ("mul_swapped", "matmul_transposed"),
    ("neg_sign", "exp_forgotten"),
    ("sub_sign", "tanh_of_input", "sum_axis_lost"),
    ("tanh_of_input", "sum_axis_lost"),
)


def _wrong_rule_edges() -> list[Case]:
    return [
        _wrong_rule_case(RIGHT_TABLE, "float32", "every rule right, in float32"),
        _wrong_rule_case(RIGHT_TABLE, "float64", "every rule right, in float64"),
        _wrong_rule_case(
            "matmul_transposed",
            "float32",
            "matmul's second cotangent transposed (right shape for 3 x 3)",
        ),
        _wrong_rule_case("sum_axis_lost", "float64", "sum's cotangent right for axis 0 only"),
        *(
            _wrong_rule_case(
                JOINED.join(names),
                "float64" if k % 2 else "float32",
                label="several wrong rules: the answer is the first, in the order of `forward`",
            )
            for k, names in enumerate(SEVERAL_WRONG)
        ),
    ]


def _fixed_primals(op: str) -> list[np.ndarray]:
    """3 x 3 float64 primals where every wrong rule differs from the framework's VJP."""
    return primals_for(op, np.random.default_rng(7), np.float64)


CHECKS = tuple(
    (op, params)
    for op in FORWARD
    for params in ([{"axis": a} for a in (None, 0, 1)] if op == "sum" else [{}])
)


def _rule_errors(
    np_like: Any, vjp_rule: Callable[..., tuple], framework_vjp: Callable[..., tuple]
) -> list[Any]:
    """For each op (and sum axis) of CHECKS, the largest difference between the table's rule
    and the framework's VJP on fixed inputs (`np_like`: numpy, or jax.numpy under jit)."""
    rng, errors = np.random.default_rng(8), []
    for op, params in CHECKS:
        primals = _fixed_primals(op)
        g = rng.normal(size=np.shape(FORWARD[op](*primals, **params)))
        theirs = framework_vjp(op, params.get("axis"), g, primals)
        mine = vjp_rule(op, g, *primals, **params)
        errors.append(
            np_like.max(
                np_like.stack(
                    [np_like.max(np_like.abs(m - t)) for m, t in zip(mine, theirs, strict=True)]
                )
            )
        )
    return errors


def _first_flagged(np_like: Any, errors: list[Any]) -> Any:
    """One flag per op and one for "none": at the first op whose rule differs."""
    wrong = np_like.stack(errors) > 1e-9
    ops = np_like.asarray([list(FORWARD).index(op) for op, _ in CHECKS])
    first = np_like.where(wrong.any(), ops[np_like.argmax(wrong)], len(FORWARD))
    return (np_like.arange(len(FLAGS)) == first).astype(np.float64)


def _wrong_rule_tf(tf: Any, case: Case) -> tuple[np.ndarray]:
    table, _ = case.values()

    def tf_vjp(op: str, axis: Any, g: np.ndarray, primals: list[np.ndarray]) -> list:
        variables = [tf.constant(p) for p in primals]
        with tf.GradientTape() as tape:
            tape.watch(variables)
            out = _apply(tf, op, axis, *variables)
        return [c.numpy() for c in tape.gradient(out, variables, output_gradients=g)]

    return (_first_flagged(np, _rule_errors(np, rule_table(table), tf_vjp)),)


def _wrong_rule_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy

    def jax_vjp(op: str, axis: Any, g: np.ndarray, primals: list[np.ndarray]) -> tuple:
        _, pullback = jax.vjp(lambda *p: _apply(jnp, op, axis, *p), *primals)
        return pullback(g)

    return (_first_flagged(jnp, _rule_errors(jnp, rule_table(params["table"]), jax_vjp)),)


FIND_WRONG_RULE = Exercise(
    signature=(
        "find_wrong_rule(vjp_rule, forward, dtype) -> the name of the first op whose rule fails "
        "your check, or None"
    ),
    nudge=(
        "Compare each rule with a finite difference of its own forward function, one input entry at"
        " a time, with a random cotangent and a tolerance the dtype can meet, and report the first "
        "rule that disagrees."
    ),
    outputs=("wrong_rule",),
    cases=_wrong_rule_strategy,
    edges=_wrong_rule_edges,
    reference=two_references(
        tf=_wrong_rule_tf,
        jax=_wrong_rule_jax,
        why=(
            "the check runs every rule of a table against each framework's VJP of the shared "
            "forward (_apply)"
        ),
    ),
    references_text="each rule of the table against tf.GradientTape (output_gradients=g) and "
    "jax.vjp of its op: the first op where they differ (compared as one flag "
    "per op, and one for None)",
    mistakes=(
        Mistake(
            "float64_tolerance",
            "Your check flags a right rule in float32: a finite "
            "difference in float32 is only good to about eps**(2/3) ~ 1e-5 relative (and the "
            "cotangents' own rounding adds to that), so a tolerance made for float64 (1e-6 or"
            " less) fails every rule. Take the tolerance from the dtype: about 1e-3 for "
            "float32, 1e-6 for float64.",
            make_find_wrong_rule(tolerances={"float32": 1e-6, "float64": 1e-6}),
        ),
        Mistake(
            "sum_one_axis",
            "Your check misses a wrong rule for sum: check sum with axis=None,"
            " 0 and 1 (a rule that forgets to put the summed axis back is right for axis 0 of"
            " a 3 x 3 input, by broadcasting, and wrong for axis 1), with a random g (a g of "
            "ones hides where each entry of g goes).",
            make_find_wrong_rule(axes=(None,)),
        ),
        Mistake(
            "last_flagged",
            "Your check returns the LAST op it flags: right when one rule is "
            "wrong, wrong when several are. Return the FIRST op whose rule fails, in the "
            "order of `forward` (return as soon as one fails).",
            make_find_wrong_rule(first=False),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Call the table as "
        "vjp_rule(op, g, *primals, **params), forward[op](*primals, **params) for the "
        "op's output, and your directional_derivative(f, x, v) with arrays of one dtype.",
        "value": "Your check names the wrong op. Compare each rule entry by entry with finite "
        "differences: entry j of a primal's cotangent is the derivative of sum(g * "
        "forward[op](*primals)) along that primal's j-th basis direction. Scale the "
        "difference by the largest cotangent (at least 1), flag an op when it exceeds the"
        " dtype's tolerance, and return the FIRST flagged op, in the order of `forward`.",
        "exception": "find_wrong_rule returns an op's name (a key of `forward`) or None.",
    },
    invoke="ch02_reverse_mode_tape:invoke_find_wrong_rule",
    depends_on=("directional_derivative",),
)


# The notebook asks each rule's exercise (ch02_rules.py) first, then the whole engine.
EXERCISES = (*RULES, GRAD, HESSIAN_VECTOR_PRODUCT, DIRECTIONAL_DERIVATIVE, FIND_WRONG_RULE)

PREDICTIONS = (
    Prediction(
        name="tape_breadth_first_order",
        question="On the fan-out graph v6 = v3 + v3 * exp(v3), v3 = tanh(x), what does a "
        "breadth-first backward pass give for dv6/dx, beside jax.grad?",
        choices={"a": "the same as jax.grad", "b": "less than jax.grad", "c": "more than jax.grad"},
        answer="b",
        why="The queue visits v3 right after v6, holding only v6's share, and passes that on "
        "to x; the shares v5 and v4 add to v3 later never reach x.",
    ),
    Prediction(
        name="tape_backward_twice",
        question="After a second backward pass on the same graph, without zeroing, x.grad is "
        "how many times what it was after the first?",
        choices={"a": "1", "b": "2", "c": "4"},
        answer="c",
        why="The intermediate nodes still hold their first cotangents: z holds 2, y three "
        "shares, and x gets those three on top of its first one.",
    ),
    Prediction(
        name="tape_float32_tiny_step",
        question="In float32 at x = 1, what is (tanh(x + h) - tanh(x)) / h with h = 1e-8?",
        choices={"a": "close to tanh'(1) = 0.42", "b": "exactly 0", "c": "NaN or infinity"},
        answer="b",
        why="float32 numbers near 1 are 1.2e-7 apart, so 1 + 1e-8 rounds to 1 and the "
        "difference is exactly zero: a step must be large beside the dtype's rounding.",
    ),
)

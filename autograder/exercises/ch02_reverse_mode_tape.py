"""Chapter 02 exercises: the learner's own reverse-mode tape, piece by piece.

`vjp_rule` is the table of derivative rules, `toposort` orders a traced graph, `backward`
pulls a cotangent through it, and `grad` mirrors `jax.grad`. All are numpy exercises.

The tape exercises are checked on random *programs*: small DAGs over three input arrays, with
fan-out and reuse of values, written as readable text ("v3 = mul(v0, v1); v4 = ..."). Each program
is differentiated by TensorFlow and JAX (the verdict) and by the learner's tape. The invokes
(autograder/harness/ch02_reverse_mode_tape.py) build the program from the learner's own `Tensor` and
operations, found in the notebook namespace where the learner's function was defined
(`fn.__globals__`). The known wrong answers are learner functions over a small tape of their own
(tape_answers.py); `toposort`'s invoke runs the harness's numpy tape in the learner's order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from autograder.exercises.tape_answers import (
    breadth_first,
    make_backward,
    make_find_wrong_rule,
    make_grad,
    primals_for,
    requeue,
    reverse_topological_other_way,
    toposort_breadth_first,
    toposort_pre_order,
)
from autograder.harness.ch02_reverse_mode_tape import (
    FLAGS,
    FORWARD,
    JOINED,
    RIGHT_TABLE,
    RULES,
    SCALAR_FUNCTIONS,
    SCALAR_GRADIENTS,
    UNARY,
    WRONG_RULES,
    flat_nodes,
    forward,
    invoke_backward,
    parse_program,
    rule_table,
    scalar_function,
)
from autograder.harness.ch02_reverse_mode_tape import (
    directional_derivative as reference_directional_derivative,
)
from autograder.judging.cases import Case, Profile, dtypes
from autograder.judging.compare import excess, tolerance
from autograder.judging.derived import two_references
from autograder.judging.exercise import Evidence, Exercise, KnownOutputs, Mistake
from autograder.judging.prediction import Prediction
from autograder.locale import say

BINARY = ("add", "sub", "mul", "div", "matmul")
OPS = ("add", "mul", "sub", "div", "tanh", "exp", "log", "neg", "sum", "matmul")
INPUTS = ("x0", "x1", "x2")



# ---------------------------------------------------------------- vjp_rule



def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return np.asarray(rng.uniform(-1.5, 1.5, size=shape).round(2), dtype=dtype)


def _away_from_zero(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    sign = rng.choice([-1.0, 1.0], size=shape)
    return np.asarray((sign * rng.uniform(0.5, 2.0, size=shape)).round(2), dtype=dtype)


def _rule_case(op: str, shape: tuple[int, ...], inner: int, axis: Any, dtype: Any,
               seed: int, label: str = "") -> Case:
    rng = np.random.default_rng(seed)
    empty = np.zeros((0,), dtype)
    if op == "matmul":
        x = _values(rng, (shape[0], inner), dtype)
        y = _values(rng, (inner, shape[1]), dtype)
        out_shape = (shape[0], shape[1])
    elif op == "sum":
        x, y = _values(rng, shape, dtype), empty
        out_shape = () if axis is None else shape[:axis] + shape[axis + 1:]
    else:
        x = np.asarray(np.abs(_away_from_zero(rng, shape, dtype))) if op == "log" else _values(
            rng, shape, dtype)
        y = empty if op in UNARY else (
            _away_from_zero(rng, shape, dtype) if op == "div" else _values(rng, shape, dtype))
        out_shape = shape
    g = _values(rng, out_shape, dtype)
    args = (("op", op), ("axis", axis), ("g", g), ("x", x), ("y", y))
    return Case(args, label=label)


@st.composite
def _rule_strategy(draw: st.DrawFn, profile: Profile) -> Case:
    op = draw(st.sampled_from(OPS))
    side = st.integers(1, profile.max_side)
    ndim = 2 if op == "matmul" else draw(st.integers(0 if op != "sum" else 1, 3))
    shape = tuple(draw(side) for _ in range(ndim))
    axis = draw(st.sampled_from([None, *range(ndim)])) if op == "sum" else None
    return _rule_case(op, shape, draw(side), axis, draw(dtypes()),
                      draw(st.integers(0, 2**32 - 1)))


def _rule_edges() -> list[Case]:
    f32, f64 = np.float32, np.float64
    return [
        _rule_case("sub", (2, 3), 0, None, f32, 1, "sub: the second operand's sign"),
        _rule_case("div", (3,), 0, None, f64, 2, "div: both cotangents"),
        _rule_case("mul", (2, 2), 0, None, f32, 3, "mul of two square matrices"),
        _rule_case("matmul", (2, 4), 3, None, f32, 4, "matmul (2, 3) @ (3, 4)"),
        _rule_case("sum", (2, 3), 0, 1, f64, 5, "sum over axis 1"),
        _rule_case("sum", (2, 3), 0, None, f32, 6, "sum of everything: a scalar g"),
        _rule_case("tanh", (4,), 0, None, f32, 7, "tanh"),
        _rule_case("exp", (), 0, None, f64, 8, "exp of a scalar"),
        _rule_case("log", (3,), 0, None, f32, 9, "log"),
        _rule_case("neg", (2, 2), 0, None, f64, 10, "neg"),
        _rule_case("add", (3, 1), 0, None, f32, 11, "add"),
    ]


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


def _arity(op: str) -> int:
    return 2 if op in BINARY else 1


def _rule_tf(tf: Any, case: Case) -> tuple[np.ndarray, np.ndarray]:
    op, axis, g, x, y = case.values()
    primals = [tf.constant(v) for v in (x, y)[: _arity(op)]]
    with tf.GradientTape() as tape:
        tape.watch(primals)
        out = _apply(tf, op, axis, *primals)
    cotangents = tape.gradient(out, primals, output_gradients=tf.constant(g))
    result = [c.numpy() for c in cotangents]
    return (result[0], result[1]) if len(result) == 2 else (result[0], y)


def _rule_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    op, axis = params["op"], params["axis"]
    primals = [arrays["x"], arrays["y"]][: _arity(op)]
    _, pullback = jax.vjp(lambda *p: _apply(jax.numpy, op, axis, *p), *primals)
    result = pullback(arrays["g"])
    return (result[0], result[1]) if len(result) == 2 else (result[0], arrays["y"])


def _rule_mistake(ops: tuple[str, ...], rule: Callable[..., tuple]) -> Callable[..., tuple]:
    """A learner's vjp_rule, right for every op but `ops`, where it is `rule`."""

    def vjp_rule(op: str, g: np.ndarray, *primals: np.ndarray, **params: Any) -> tuple:
        return (rule(op, g, *primals, **params) if op in ops
                else RULES[op](g, *primals, **params))

    return vjp_rule


def _ignores_cotangent(op: str, g: Any, *primals: Any, **params: Any) -> tuple:
    return RULES[op](np.ones_like(g), *primals, **params)


VJP_RULE = Exercise(
    signature="vjp_rule(op, g, *primals, **params) -> tuple of cotangents",
    outputs=("cotangent_x", "cotangent_y"),
    cases=_rule_strategy,
    edges=_rule_edges,
    reference=two_references(
        tf=_rule_tf, jax=_rule_jax,
        why=("the forward is shared (_apply, on tf or jax.numpy), but the op's arity is a case "
             "parameter: a unary op's second output is y, unchanged")),
    references_text="tf.GradientTape (output_gradients=g) and jax.vjp of the same operation",
    mistakes=(
        Mistake("sub_sign", "Wrong sign in sub: x - y decreases when y grows, so y's cotangent is "
                "-g (x's is g).", _rule_mistake(("sub",), lambda op, g, x, y: (g, g))),
        Mistake("div_sign", "Wrong sign in div: d(x/y)/dy = -x/y**2, so y's cotangent is -g * x / "
                "y**2.", _rule_mistake(("div",), lambda op, g, x, y: (g / y, g * x / y**2))),
        Mistake("div_quotient", "In div, y's cotangent is -g * x / y**2 (the quotient rule), not "
                "-g / y**2: you dropped the x.",
                _rule_mistake(("div",), lambda op, g, x, y: (g / y, -g / y**2))),
        Mistake("ignores_cotangent", "Your rule ignores the incoming cotangent g: it returns the "
                "local derivative alone (as if g were ones). A VJP multiplies g by the local "
                "derivative: mul gives (g * y, g * x), tanh gives g * (1 - tanh(x)**2), ...",
                _rule_mistake(OPS, _ignores_cotangent)),
        Mistake("mul_swapped", "mul's cotangents are swapped: x's cotangent is g * y (the OTHER "
                "operand), y's is g * x.",
                _rule_mistake(("mul",), lambda op, g, x, y: (g * x, g * y))),
        Mistake("tanh_of_input", "tanh's derivative is 1 - tanh(x)**2, the squared OUTPUT; you "
                "used 1 - x**2.", _rule_mistake(("tanh",), lambda op, g, x: (g * (1 - x**2),))),
        Mistake("tanh_not_squared", "tanh's derivative is 1 - tanh(x)**2: square the output.",
                _rule_mistake(("tanh",), lambda op, g, x: (g * (1 - np.tanh(x)),))),
        Mistake("exp_forgotten", "exp's derivative is exp(x) itself: its cotangent is g * exp(x), "
                "not g.", _rule_mistake(("exp",), lambda op, g, x: (g,))),
        Mistake("exp_times_x", "exp's derivative is exp(x), not x (nor x * exp(x)): the cotangent "
                "is g * exp(x).", _rule_mistake(("exp",), lambda op, g, x: (g * x,))),
        Mistake("log_wrong", "log's derivative is 1 / x: the cotangent is g / x.",
                _rule_mistake(("log",), lambda op, g, x: (g * x,))),
        Mistake("matmul_untransposed", "Transpose the other operand: for out = x @ y the "
                "cotangents are g @ y.T (x's shape) and x.T @ g (y's shape), not g @ y and x @ g.",
                _rule_mistake(("matmul",), lambda op, g, x, y: (g @ y, x @ g))),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. vjp_rule(op, g, *primals,"
                 " **params) returns one cotangent per primal, in order, each with its primal's "
                 "shape. A ValueError from numpy means two shapes do not broadcast or multiply: "
                 "print g's and the primals' shapes for the op in the failing case.",
        "value": "Wrong cotangents for the op in the failing case: each is g times that op's "
                 "derivative with respect to that input (for out = x @ y: g @ y.T and x.T @ g), "
                 "and it must use g, not ones. Check the order too: x's cotangent first.",
        "shape": "Every cotangent has its primal's shape. For sum(x, axis) put the summed axis "
                 "back into g (np.expand_dims(g, axis)) and broadcast it to x.shape; for out = x @"
                 " y the cotangents are g @ y.T and x.T @ g.",
        "dtype": "Keep the dtype of g and the primals (np.ones(shape) is float64: use "
                 "np.ones_like, or dtype=g.dtype).",
        "exception:TypeError": "vjp_rule is called as vjp_rule(op, g, x), vjp_rule(op, g, x, y) or"
                               " vjp_rule('sum', g, x, axis=axis), and returns a tuple with one "
                               "cotangent per primal: (cx,) for one primal, (cx, cy) for two.",
    },
    invoke="ch02_reverse_mode_tape:invoke_vjp_rule",
    # The learner's Tensor operations record it.
    reference_implementation="ch02_reverse_mode_tape:vjp_rule",
)


# ---------------------------------------------------------------- random programs


def _valid(op: str, operands: list[np.ndarray], result: np.ndarray) -> bool:
    """Well-conditioned steps only, so that float32 TensorFlow and JAX agree closely: log
    and div away from zero, tanh away from saturation, every value of order 1 to 10."""
    if op == "log" and operands[0].min(initial=1.0) < 0.2:
        return False
    if op == "div" and np.abs(operands[1]).min(initial=1.0) < 0.3:
        return False
    if op == "tanh" and np.abs(operands[0]).max(initial=0.0) > 3:
        return False
    return bool(np.all(np.isfinite(result)) and np.abs(result).max(initial=0.0) < 10)


def _operand(draw: st.DrawFn, candidates: list[int]) -> int:
    """Any earlier value (fan-out, reuse), the most recent first when shrinking."""
    return candidates[len(candidates) - 1 - draw(st.integers(0, len(candidates) - 1))]


def _step(draw: st.DrawFn, values: list[np.ndarray]) -> tuple[str, tuple[int, ...], dict]:
    op = draw(st.sampled_from(OPS))
    first = len(values) - 1  # the latest value: every step is on the way to the output
    x = values[first]
    if op in BINARY:
        if op == "matmul":  # every 2-D value is (n, n): any two of them can be multiplied
            fits = [i for i, v in enumerate(values) if v.ndim == 2 and x.ndim == 2]
        else:
            fits = [i for i, v in enumerate(values) if v.shape == x.shape]
        if not fits:
            return "tanh", (first,), {}
        return op, (first, _operand(draw, fits)), {}
    if op == "sum":
        if x.ndim == 0:
            return "tanh", (first,), {}
        axis = draw(st.sampled_from([None, *range(x.ndim)]))
        return op, (first,), {} if axis is None else {"axis": axis}
    return op, (first,), {}


def program_text(steps: list[tuple[str, tuple[int, ...], dict]], n_inputs: int = 3) -> str:
    parts = []
    for k, (op, operands, params) in enumerate(steps, start=n_inputs):
        args = [f"v{i}" for i in operands] + [f"{key}={value}" for key, value in params.items()]
        parts.append(f"v{k} = {op}({', '.join(args)})")
    return "; ".join(parts)


def program_case(length: int, n: int, dtype: Any, seed: int,
                  draw: st.DrawFn | None = None, program: str = "", label: str = "") -> Case:
    rng = np.random.default_rng(seed)
    inputs = [rng.uniform(0.5, 1.5, size=(n, n)).round(2).astype(dtype) for _ in INPUTS]
    values = [x.astype(np.float64) for x in inputs]
    steps = parse_program(program) if program else []
    if draw is not None:
        for _ in range(length):
            op, operands, params = _step(draw, values)
            with np.errstate(all="ignore"):  # an invalid step is replaced just below
                result = FORWARD[op](*(values[i] for i in operands), **params)
            if not _valid(op, [values[i] for i in operands], result):
                op, operands, params = "neg", operands[:1], {}  # always well-conditioned
                result = -values[operands[0]]
            steps.append((op, operands, params))
            values.append(result)
    else:
        values = forward(steps, values)
    g = _values(rng, values[-1].shape, dtype)
    args = (("program", program_text(steps)), *zip(INPUTS, inputs, strict=True), ("g", g))
    return Case(args, label=label)


@st.composite
def _program_strategy(draw: st.DrawFn, profile: Profile) -> Case:
    length = draw(st.integers(1, 4 + profile.max_side))
    n = draw(st.integers(1, min(3, profile.max_side)))
    return program_case(length, n, draw(dtypes()), draw(st.integers(0, 2**32 - 1)), draw)


BFS_TRAP = "v3 = tanh(v0); v4 = exp(v3); v5 = mul(v3, v4); v6 = add(v3, v5)"


def _program_edges() -> list[Case]:
    f32, f64 = np.float32, np.float64
    return [
        program_case(0, 2, f32, 1, program=BFS_TRAP,
                      label="v3 feeds v4, v5 and v6: breadth-first order visits it too early"),
        program_case(0, 2, f64, 2, program="v3 = mul(v0, v0)",
                      label="one value used twice by one operation"),
        program_case(0, 2, f32, 3, program="v3 = sub(v0, v1); v4 = div(v3, v2)",
                      label="sub and div"),
        program_case(0, 3, f64, 4, program="v3 = matmul(v0, v1); v4 = sum(v3, axis=0); "
                      "v5 = log(v4); v6 = sum(v5)", label="matmul, sum over an axis, log"),
        program_case(0, 2, f32, 5, program="v3 = exp(v1); v4 = neg(v3); v5 = add(v4, v3)",
                      label="fan-out of an exp; x0 and x2 unused: zero cotangents"),
    ]


def _evaluate(lib: Any, program: str, inputs: list[Any], nudges: list[Any] | None = None
              ) -> list[Any]:
    """Every value of the program; `nudges[k]` (zeros) is added to value k after the inputs,
    so that JAX can give the cotangent of each intermediate value."""
    values = list(inputs)
    for k, (op, operands, params) in enumerate(parse_program(program)):
        value = _apply(lib, op, params.get("axis"), *(values[i] for i in operands))
        values.append(value if nudges is None else value + nudges[k])
    return values


def _program_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    program, *inputs, g = case.values()
    inputs = [tf.constant(x) for x in inputs]
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        values = _evaluate(tf, program, inputs)
    grads = tape.gradient(values[-1], values, output_gradients=tf.constant(g),
                          unconnected_gradients=tf.UnconnectedGradients.ZERO)
    grads = [grad.numpy() for grad in grads]
    return (*grads[: len(INPUTS)], flat_nodes(grads[len(INPUTS):]))


def _program_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp, inputs = jax.numpy, [arrays[name] for name in INPUTS]
    shaped = _evaluate(jnp, params["program"], inputs)[len(INPUTS):]

    def program(*args: Any) -> Any:
        return _evaluate(jnp, params["program"], list(args[: len(INPUTS)]),
                         list(args[len(INPUTS):]))[-1]

    nudges = [jnp.zeros_like(v) for v in shaped]
    _, pullback = jax.vjp(program, *inputs, *nudges)
    grads = pullback(arrays["g"])
    flat = jnp.concatenate([jnp.ravel(grad) for grad in grads[len(INPUTS):]])
    return (*grads[: len(INPUTS)], flat)


# ---------------------------------------------------------------- the tape's known mistakes
# (written as learner functions in tape_answers.py)


def _right_answer(case: Case) -> tuple:
    """The right cotangents of a program case (for first_difference): the right backward
    pass of the tape in tape_answers.py, run as the learner's would be."""
    return invoke_backward(make_backward(), *case.values())


BFS_HINT = (
    "Your backward pass visits the nodes in breadth-first (queue) order. Then a node can "
    "pass its cotangent on before all its consumers have added their share (a value used by "
    "an operation further from the output is visited too early). Visit the nodes in reverse "
    "topological order: a node only after every node that uses it."
)
REQUEUE_HINT = (
    "Your backward pass works through a queue and puts a node back into it whenever it is "
    "not waiting there, so a node can be visited again after its visit and pass its whole "
    "cotangent on a second time (and before the first visit, its cotangent may still be "
    "incomplete). Visit each node exactly once, in reverse topological order: after every "
    "node that uses it."
)
ASSIGN_HINT = (
    "A value used more than once (fan-out) must collect the SUM of the cotangents from all "
    "its consumers: accumulate with `parent.grad += c`, not `parent.grad = c` (which keeps "
    "only the last contribution)."
)
LOST_COTANGENT_HINT = (
    "The incoming cotangent is lost: each node must pass ITS OWN cotangent (node.grad) "
    "to its VJP, and the root's cotangent is the one given, not ones."
)


def _tape_mistakes(learner: Callable[[Callable[..., None]], Callable[..., Any]]
                   ) -> tuple[Mistake, ...]:
    """The known wrong backward passes, each as `learner(backward)`: the backward itself, or
    a grad built on it. A wrong VJP rule is vjp_rule's mistake only: backward and grad are
    checked with the correct rules (depends_on)."""
    variants = [
        ("bfs_order", BFS_HINT, make_backward(breadth_first)),
        ("queue_requeue", REQUEUE_HINT, make_backward(requeue)),
        ("assign_not_accumulate", ASSIGN_HINT, make_backward(accumulate=False)),
        ("assign_not_accumulate_reversed", ASSIGN_HINT,
         make_backward(reverse_topological_other_way, accumulate=False)),
        ("forgets_node_cotangent", LOST_COTANGENT_HINT, make_backward(node_cotangent=False)),
    ]
    return tuple(Mistake(name, hint, learner(backward)) for name, hint, backward in variants)


def first_difference(case: Case, got: Any) -> str:
    """Where the learner's cotangents first go wrong, walking back from the output: the
    first value (v3, v4, ...) whose cotangent differs, else a note that only the inputs'
    do. The right cotangents come from the numpy tape (verdicts come from the frameworks)."""
    if not isinstance(got, tuple | list) or len(got) != len(TAPE_OUTPUTS):
        return ""
    nodes, answer = got[-1], _right_answer(case)
    right = answer[-1]
    if not isinstance(nodes, np.ndarray) or nodes.shape != right.shape:
        return ""
    program, *inputs, _ = case.values()
    steps = parse_program(program)
    values = forward(steps, inputs)[len(INPUTS):]
    statements = [statement.strip() for statement in program.split(";")]
    ends = np.cumsum([v.size for v in values])
    for k in reversed(range(len(steps))):
        part = slice(ends[k] - values[k].size, ends[k])
        expected = right[part].reshape(values[k].shape)
        mine = nodes[part].astype(np.float64).reshape(values[k].shape)
        scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
        if not np.all(np.abs(mine - expected) <= 1e-3 * scale):
            return say("Walking back from the output, the cotangents first differ at "
                       "{statement}: expected {expected}, got {got}.", statement=statements[k],
                       expected=np.array2string(expected, precision=4),
                       got=np.array2string(mine, precision=4))
    wrong = [f"v{i} ({name})" for i, (name, mine, expected)
             in enumerate(zip(INPUTS, got[: len(INPUTS)], answer[: len(INPUTS)], strict=True))
             if not np.allclose(np.asarray(mine, dtype=np.float64), expected, rtol=1e-3,
                                atol=1e-3)]
    return say(
        "Walking back from the output, every value from v3 on ends with the right "
        "cotangent; the first to differ are those of the inputs: {inputs}. Look at what was "
        "passed on to them: too early, not in full, or not scaled by the incoming cotangent.",
        inputs=", ".join(wrong)) if wrong else ""


@dataclass(frozen=True, eq=False)
class TapeExercise(Exercise):
    """A tape exercise: its hint also says at which value the cotangents first differ."""

    def diagnose(self, case: Case, got: Any, mismatch: Any,
                 others: Sequence[Evidence] = (), known: KnownOutputs | None = None) -> str:
        hint = super().diagnose(case, got, mismatch, others, known)
        try:
            where = first_difference(case, got)
        except Exception:  # a learner's output too broken to locate: the hint alone
            where = ""
        return f"{hint}\n{where}".strip()


TAPE_HINTS = {
    "error": (
        "The traceback names the line of your code that raised. Check that every node has a "
        "cotangent (zeros of its value's shape to start) before its rule reads it, and that "
        "each VJP rule is called with that node's own inputs and parameters."
    ),
    "shape": "Each input's cotangent has that input's shape (and is zeros for an input the "
             "output does not use).",
    "dtype": "Keep the inputs' dtype: start cotangents with np.zeros_like(value).",
    "value": (
        "Wrong cotangents. Check, in order: every VJP rule (vjp_rule's check), that each "
        "node is visited only after all the nodes that use it, and that cotangents are "
        "accumulated with +=."
    ),
}

TAPE_OUTPUTS = ("cotangent_x0", "cotangent_x1", "cotangent_x2", "node_cotangents")

PROGRAM_REFERENCE = two_references(
    tf=_program_tf, jax=_program_jax,
    why=("the cotangent of every intermediate value: TensorFlow's tape gives them, JAX only "
         "through a zero nudge added to each value"))
PROGRAM_REFERENCES = (
    "tf.GradientTape (output_gradients=g) and jax.vjp of the same program: the "
    "cotangents of x0, x1, x2 and of every value v3, v4, ..."
)


# ---------------------------------------------------------------- toposort


TOPOSORT = TapeExercise(
    signature="toposort(root) -> list of nodes, each after all of its parents",
    outputs=TAPE_OUTPUTS,
    cases=_program_strategy,
    edges=_program_edges,
    reference=PROGRAM_REFERENCE,
    references_text=PROGRAM_REFERENCES + " (the check runs a correct backward pass in the "
                    "reverse of your order)",
    mistakes=(
        Mistake("bfs_order", BFS_HINT + " (Your order is a breadth-first one, reversed.)",
                toposort_breadth_first),
        Mistake("dfs_pre_order", "Your order is a depth-first PRE-order, reversed: you list a node"
                " before visiting its parents. A value reached by two paths can then come before "
                "one of its parents. Append a node AFTER visiting all its parents (post-order).",
                toposort_pre_order),
    ),
    hints_by_kind={
        **TAPE_HINTS,
        "value": "A correct backward pass run in the reverse of your order gives wrong cotangents:"
                 " some node comes before one of its parents in your list. Use a depth-first "
                 "search that appends a node after visiting all its parents (post-order).",
        "exception": "See the message: toposort must list every node of the graph once.",
    },
    invoke="ch02_reverse_mode_tape:invoke_toposort",
    reference_implementation="ch02_reverse_mode_tape:toposort",  # backward calls it
)


# ---------------------------------------------------------------- backward and grad





# What the invokes of backward and grad look up by name in the learner's namespace: they trace
# each program with the learner's own Tensor and operations (harness.ch02_reverse_mode_tape.build).
TAPE_NAMESPACE = ("Tensor", "reduce_sum", "add", "sub", "mul", "div", "matmul", "neg", "exp",
                  "log", "tanh")


def _tape_exercise(signature: str, invoke: str, mistakes: tuple[Mistake, ...],
                   depends_on: tuple[str, ...] = (), reference_implementation: str = "",
                   hints: dict[str, str] | None = None) -> Exercise:
    return TapeExercise(
        signature=signature,
        outputs=TAPE_OUTPUTS,
        cases=_program_strategy,
        edges=_program_edges,
        reference=PROGRAM_REFERENCE,
        references_text=PROGRAM_REFERENCES,
        mistakes=mistakes,
        hints_by_kind=TAPE_HINTS if hints is None else hints,
        invoke=invoke,
        depends_on=depends_on,
        reference_implementation=reference_implementation,
        namespace_reads=TAPE_NAMESPACE,
    )


BACKWARD = _tape_exercise(
    "backward(root, g) -> None (accumulates .grad on every node)",
    "ch02_reverse_mode_tape:invoke_backward",
    (*_tape_mistakes(lambda backward: backward),
     Mistake("seeded_with_ones", LOST_COTANGENT_HINT + " (Start with root.grad += g.)",
             make_backward(seed_with_ones=True))),
    # The learner's Tensor operations record vjp_rule; backward calls toposort.
    depends_on=("toposort", "vjp_rule"),
    reference_implementation="ch02_reverse_mode_tape:backward",  # grad calls it
)
# grad's TypeErrors are about what it is called with and what it gives back (the check
# raises one for a tuple where an int argnums asks for one array): the backward pass's node
# cotangents, which TAPE_HINTS["error"] speaks of, are backward's exercise.
GRAD_HINTS = {
    **TAPE_HINTS,
    "exception:TypeError": (
        "grad(f, argnums) returns what jax.grad returns: for an int argnums (grad(f), "
        "grad(f, argnums=1)) the one array of that argument, not a tuple; for a tuple "
        "argnums (grad(f, argnums=(0, 1, 2))) a tuple of arrays, in that order. The function "
        "it returns takes numpy arrays, wraps each in a Tensor and calls f(*tensors)."
    ),
}
GRAD = _tape_exercise(
    "grad(f, argnums=0) -> function returning the gradient(s) of a scalar f",
    "ch02_reverse_mode_tape:invoke_grad",
    _tape_mistakes(make_grad),
    depends_on=("backward", "toposort", "vjp_rule"),
    hints=GRAD_HINTS,
)


# ---------------------------------------------------------------- directional_derivative

FUNCTION_POINTS = {  # where each function's points are drawn, at magnitude 1
    "tanh_x2": (-2.0, 2.0), "softplus": (-3.0, 3.0), "log": (0.8, 3.0), "norm": (-2.0, 2.0)}
LARGE = ("log", "norm")  # the functions that vary on the scale of x itself


def _well_conditioned(f: str, x: np.ndarray, v: np.ndarray) -> bool:
    """A case where a central difference with a step chosen for the dtype is accurate well
    within the judge's tolerance (ten times over): the directional derivative is not small
    beside f's own rounding noise, so the check judges the method, not luck."""
    exact = np.asarray(np.dot(SCALAR_GRADIENTS[f](x.astype(np.float64)).ravel(),
                              v.astype(np.float64).ravel()), x.dtype)
    central = np.asarray(reference_directional_derivative(scalar_function(f, x.dtype), x, v),
                         x.dtype)
    return bool(excess(central, exact, tolerance(x.dtype)) < 0.1)


def derivative_case(f: str, shape: tuple[int, ...], magnitude: float, dtype: Any, seed: int,
                    label: str = "") -> Case:
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
    return Case((("f", "softplus"), ("x", x), ("v", v)),
                label="a 0-d x at 0: the step must not vanish with x")


def _derivative_edges() -> list[Case]:
    f32, f64 = np.float32, np.float64
    return [
        derivative_case("tanh_x2", (3,), 1.0, f32, 1, "float32: the step must suit float32"),
        derivative_case("softplus", (3,), 1.0, f64, 2, "float64: a forward difference is "
                        "not accurate enough"),
        _zero_case(),
        derivative_case("log", (2,), 1e4, f32, 4, "float32 at x ~ 1e4: the step must grow "
                        "with |x|"),
        derivative_case("norm", (3,), 1e6, f64, 5, "float64 at x ~ 1e6"),
    ]


def _math_tf(tf: Any) -> dict[str, Callable[..., Any]]:
    return {"tanh": tf.math.tanh, "exp": tf.math.exp, "log": tf.math.log,
            "sqrt": tf.math.sqrt, "sum": tf.reduce_sum}


def _derivative_tf(tf: Any, case: Case) -> tuple[np.ndarray]:
    f, x, v = case.values()
    primal = tf.constant(x)
    with tf.autodiff.ForwardAccumulator(primal, tf.constant(v)) as accumulator:
        out = SCALAR_FUNCTIONS[f](_math_tf(tf), primal)
    return (np.asarray(accumulator.jvp(out).numpy(), x.dtype),)


def _derivative_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    jnp = jax.numpy
    math = {"tanh": jnp.tanh, "exp": jnp.exp, "log": jnp.log, "sqrt": jnp.sqrt, "sum": jnp.sum}
    _, tangent = jax.jvp(lambda x: SCALAR_FUNCTIONS[params["f"]](math, x), (arrays["x"],),
                         (arrays["v"],))
    return (tangent,)


def _h(x: np.ndarray, power: float, eps: float | None = None, scaled: bool = True) -> float:
    base = np.finfo(x.dtype).eps if eps is None else eps
    return base ** power * (max(1.0, float(np.abs(x).max(initial=0.0))) if scaled else 1.0)


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
    outputs=("directional_derivative",),
    cases=_derivative_strategy,
    edges=_derivative_edges,
    reference=two_references(
        tf=_derivative_tf, jax=_derivative_jax,
        why="a directional derivative is a JVP: tf.autodiff.ForwardAccumulator and jax.jvp"),
    references_text="jax.jvp and tf.autodiff.ForwardAccumulator (the exact derivative of f at "
                    "x along v, a JVP)",
    mistakes=(
        Mistake("forward_difference", FORWARD_HINT, _forward_difference),
        Mistake("forward_difference_cbrt", FORWARD_HINT, _forward_difference_cbrt),
        Mistake("tiny_step", "Your step is too small: f is only known to about eps * |f| (eps = "
                "np.finfo(x.dtype).eps), and dividing that rounding noise by 2 h makes it huge "
                "when h is tiny (in float32, x + 1e-8 * v is often x itself). The total error is "
                "about h**2 (truncation) plus eps / h (rounding): choose the h that balances "
                "them.", _tiny_step),
        Mistake("float64_step", "Your step suits float64, not float32: float32 rounds at eps = "
                "1.2e-7, so eps / h is large for a step that small. Take eps from x's dtype, "
                "np.finfo(x.dtype).eps, and balance h**2 against eps / h.", _float64_step),
        Mistake("unscaled_step", "Your step does not grow with |x|: near x = 1e4, x + h * v with h"
                " = 5e-3 rounds (float32 holds about 7 digits), so the step you divide by is not "
                "the step that was taken, and f's rounding noise (eps * |f|) is large beside the "
                "change h makes. Scale h by the magnitude of x (at least 1).", _unscaled_step),
        Mistake("step_without_floor", "Your step is relative to |x| with no floor: at x = 0 it is "
                "0, and (f(x) - f(x)) / 0 is NaN. Scale it by the magnitude of x, but at least 1:"
                " `h = eps ** (1 / 3) * max(1.0, float(np.abs(x).max()))`.", _step_without_floor),
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
        _wrong_rule_case("matmul_transposed", "float32",
                         "matmul's second cotangent transposed (right shape for 3 x 3)"),
        _wrong_rule_case("sum_axis_lost", "float64", "sum's cotangent right for axis 0 only"),
        *(_wrong_rule_case(JOINED.join(names), "float64" if k % 2 else "float32",
                           label="several wrong rules: the answer is the first, in the order "
                                 "of `forward`")
          for k, names in enumerate(SEVERAL_WRONG)),
    ]


def _fixed_primals(op: str) -> list[np.ndarray]:
    """3 x 3 float64 primals where every wrong rule differs from the framework's VJP."""
    return primals_for(op, np.random.default_rng(7), np.float64)


CHECKS = tuple((op, params) for op in FORWARD
               for params in ([{"axis": a} for a in (None, 0, 1)] if op == "sum" else [{}]))


def _rule_errors(np_like: Any, vjp_rule: Callable[..., tuple],
                 framework_vjp: Callable[..., tuple]) -> list[Any]:
    """For each op (and sum axis) of CHECKS, the largest difference between the table's rule
    and the framework's VJP on fixed inputs (`np_like`: numpy, or jax.numpy under jit)."""
    rng, errors = np.random.default_rng(8), []
    for op, params in CHECKS:
        primals = _fixed_primals(op)
        g = rng.normal(size=np.shape(FORWARD[op](*primals, **params)))
        theirs = framework_vjp(op, params.get("axis"), g, primals)
        mine = vjp_rule(op, g, *primals, **params)
        errors.append(np_like.max(np_like.stack(
            [np_like.max(np_like.abs(m - t)) for m, t in zip(mine, theirs, strict=True)])))
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
    outputs=("wrong_rule",),
    cases=_wrong_rule_strategy,
    edges=_wrong_rule_edges,
    reference=two_references(
        tf=_wrong_rule_tf, jax=_wrong_rule_jax,
        why=("the check runs every rule of a table against each framework's VJP of the shared "
             "forward (_apply)")),
    references_text="each rule of the table against tf.GradientTape (output_gradients=g) and "
                    "jax.vjp of its op: the first op where they differ (compared as one flag "
                    "per op, and one for None)",
    mistakes=(
        Mistake("float64_tolerance", "Your check flags a right rule in float32: a finite "
                "difference in float32 is only good to about eps**(2/3) ~ 1e-5 relative (and the "
                "cotangents' own rounding adds to that), so a tolerance made for float64 (1e-6 or"
                " less) fails every rule. Take the tolerance from the dtype: about 1e-3 for "
                "float32, 1e-6 for float64.",
                make_find_wrong_rule(tolerances={"float32": 1e-6, "float64": 1e-6})),
        Mistake("sum_one_axis", "Your check misses a wrong rule for sum: check sum with axis=None,"
                " 0 and 1 (a rule that forgets to put the summed axis back is right for axis 0 of"
                " a 3 x 3 input, by broadcasting, and wrong for axis 1), with a random g (a g of "
                "ones hides where each entry of g goes).", make_find_wrong_rule(axes=(None,))),
        Mistake("last_flagged", "Your check returns the LAST op it flags: right when one rule is "
                "wrong, wrong when several are. Return the FIRST op whose rule fails, in the "
                "order of `forward` (return as soon as one fails).",
                make_find_wrong_rule(first=False)),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Call vjp_rule(op, g, "
                 "*primals, **params) as exercise 1 does, forward[op](*primals, **params) for the "
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


EXERCISES = (VJP_RULE, TOPOSORT, BACKWARD, GRAD, DIRECTIONAL_DERIVATIVE, FIND_WRONG_RULE)

PREDICTIONS = (
    Prediction(
        name="tape_breadth_first_order",
        question="On the fan-out graph v6 = v3 + v3 * exp(v3), v3 = tanh(x), what does a "
                 "breadth-first backward pass give for dv6/dx, beside jax.grad?",
        choices={"a": "the same as jax.grad", "b": "less than jax.grad",
                 "c": "more than jax.grad"},
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

"""Chapter 02: the VJP rule table, a numpy tape over programs, and the tape exercises' invokes.

`RULES` is the one copy of the chapter's derivative rules: the grader's known wrong answers
(autograder.exercises.ch02_reverse_mode_tape) and the teaching tape (coursekit.tape) both import it.

A *program* is a small DAG over three input arrays, written as readable text
("v3 = mul(v0, v1); v4 = sum(v3, axis=0)"). The numpy tape here runs it forward and
backward in any visiting order: `toposort`'s invoke runs a correct backward pass in the
learner's order. (The known wrong answers are learner functions, in
autograder/exercises/tape_answers.py.) The invokes of `backward` and
`grad` build the program from the learner's own `Tensor` and operations instead, found in
the notebook namespace where the learner's function was defined (`fn.__globals__`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import english, learner_name
from .course_helpers import helpers_used
from .method import MethodNotFollowed

UNARY = ("neg", "exp", "log", "tanh")
STATEMENT = re.compile(r"\s*v(\d+) = (\w+)\((.*)\)\s*")
FUNCTION_NAMES = {"sum": "reduce_sum"}  # op "sum" is the learner's reduce_sum

Step = tuple[str, tuple[int, ...], dict[str, int]]


def _unsum(g: np.ndarray, x: np.ndarray, axis: int | None = None) -> np.ndarray:
    return np.broadcast_to(g if axis is None else np.expand_dims(g, axis), x.shape).copy()


RULES: dict[str, Callable[..., tuple]] = {
    "add": lambda g, x, y: (g, g),
    "sub": lambda g, x, y: (g, -g),
    "mul": lambda g, x, y: (g * y, g * x),
    "div": lambda g, x, y: (g / y, -g * x / y**2),
    "matmul": lambda g, x, y: (g @ y.T, x.T @ g),
    "neg": lambda g, x: (-g,),
    "exp": lambda g, x: (g * np.exp(x),),
    "log": lambda g, x: (g / x,),
    "tanh": lambda g, x: (g * (1 - np.tanh(x) ** 2),),
    "sum": lambda g, x, axis=None: (_unsum(g, x, axis),),
}

FORWARD: dict[str, Callable[..., np.ndarray]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "matmul": np.matmul, "neg": np.negative, "exp": np.exp, "log": np.log, "tanh": np.tanh,
    "sum": lambda x, axis=None: np.asarray(np.sum(x, axis=axis)),
}


# ---------------------------------------------------------------- the numpy program tape


def parse_program(program: str) -> list[Step]:
    """[(op, operand indices, params)] from "v3 = mul(v0, v1); v4 = sum(v3, axis=0)"."""
    steps = []
    for statement in program.split(";"):
        _, op, inside = STATEMENT.fullmatch(statement).groups()
        args = [a.strip() for a in inside.split(",")]
        operands = tuple(int(a[1:]) for a in args if a.startswith("v"))
        params = {a.split("=")[0]: int(a.split("=")[1]) for a in args if "=" in a}
        steps.append((op, operands, params))
    return steps


def forward(steps: list[Step], inputs: Iterable[np.ndarray]) -> list[np.ndarray]:
    """The inputs followed by every value the program computes, in order."""
    values = list(inputs)
    for op, operands, params in steps:
        values.append(FORWARD[op](*(values[i] for i in operands), **params))
    return values


def backward_in_order(steps: list[Step], values: list[np.ndarray], order: Iterable[int],
                      g: np.ndarray) -> tuple:
    """The inputs' cotangents and flat_nodes of the others, visiting the nodes (indices,
    root first) in `order`: each node pushes the cotangent it holds when visited through its
    rule to its operands, and keeps receiving what later nodes send it (so a wrong order
    shows up as wrong cotangents)."""
    n_inputs = len(values) - len(steps)
    held = {len(values) - 1: g}
    for index in order:
        if index < n_inputs:
            continue
        op, operands, params = steps[index - n_inputs]
        g_node = held.get(index, np.zeros_like(values[index]))
        pulled = RULES[op](g_node, *(values[i] for i in operands), **params)
        for i, c in zip(operands, pulled, strict=False):
            held[i] = held[i] + c if i in held else c
    cotangents = [np.asarray(held.get(i, np.zeros_like(v)), dtype=v.dtype)
                  for i, v in enumerate(values)]
    return (*cotangents[:n_inputs], flat_nodes(cotangents[n_inputs:]))


def flat_nodes(cotangents: Iterable[Any]) -> np.ndarray:
    """The cotangents of v3, v4, ... (every value after the inputs), flattened, in order."""
    return np.concatenate([np.ravel(np.asarray(c)) for c in cotangents])


# ---------------------------------------------------------------- the learner's own tape

REFERENCE_TAPE = "coursekit.tape"  # the complete tape the notebook's demonstrations use
REFERENCE_ANSWERS = ("vjp_rule", "toposort", "reverse_topological", "backward",
                     "backward_steps", "visit_steps", "grad")


def _is_reference_answer(value: Any) -> bool:
    if getattr(value, "__name__", None) in ("coursekit", REFERENCE_TAPE):  # `reference.`
        return True
    return (getattr(value, "__module__", None) == REFERENCE_TAPE
            and getattr(value, "__name__", None) in REFERENCE_ANSWERS)


def refuse_reference_tape(fn: Callable[..., Any], exercise: str) -> None:
    """Refuse an answer that is, or calls, the reference tape's own answer: the demonstrations
    use `reference` (coursekit.tape), a complete tape, so `reference.toposort` is on screen,
    and handing it back would pass without deriving anything."""
    handed_back = fn in (vjp_rule, toposort, backward)
    if handed_back or helpers_used(fn, _is_reference_answer):
        raise ValueError(english(
            "Your {exercise} uses the course's reference tape ({tape}, imported as "
            "`reference` for the demonstrations): the check needs your own code. Write "
            "{exercise} without `reference.`.", exercise=exercise, tape=REFERENCE_TAPE))


# ---------------------------------------------------------------- vjp_rule


def invoke_vjp_rule(fn: Callable[..., Any], op: str, axis: int | None, g: np.ndarray,
                    x: np.ndarray, y: np.ndarray) -> tuple:
    """Call vjp_rule with the primals `op` has: (g, x), (g, x, y) or (g, x, axis=...)."""
    refuse_reference_tape(fn, "vjp_rule")
    if op == "sum":
        result = fn(op, g, x, axis=axis)
    elif op in UNARY:
        result = fn(op, g, x)
    else:
        result = fn(op, g, x, y)
    if not isinstance(result, tuple | list):
        raise TypeError(english("vjp_rule({op}, ...) must return a tuple of cotangents, one "
                                "per primal; it returned a {type}.", op=repr(op),
                                type=type(result).__name__))
    wanted = 1 if op == "sum" or op in UNARY else 2
    if len(result) != wanted:
        raise ValueError(english("{op} has {wanted} primal(s), so vjp_rule must return a tuple "
                                 "of {wanted} cotangent(s); it returned {count}.", op=op,
                                 wanted=wanted, count=len(result)))
    return (result[0], result[1]) if wanted == 2 else (result[0], y)


# ---------------------------------------------------------------- toposort


class Node:
    """A traced value as toposort sees it: its parents (the values it was computed from)."""

    def __init__(self, index: int, op: str, parents: Iterable[Node]) -> None:
        self.index, self.op, self.parents = index, op, tuple(parents)

    def __repr__(self) -> str:
        return f"Node(v{self.index} = {self.op})"


def _reachable(root: Node) -> dict[int, Node]:
    seen, stack = {}, [root]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            stack.extend(node.parents)
    return seen


def _checked_order(order: list[Node], root: Node) -> list[Node]:
    """The learner's order, refused unless it lists every node of the graph exactly once."""
    wanted = _reachable(root)
    seen = set()
    for node in order:
        if id(node) not in wanted:
            raise ValueError(english("toposort returned {node}, which is not a node of the "
                                     "graph.", node=repr(node)))
        if id(node) in seen:
            raise ValueError(english("toposort returned {node} twice: list each node once.",
                                     node=repr(node)))
        seen.add(id(node))
    missing = [repr(node) for key, node in wanted.items() if key not in seen]
    if missing:
        raise ValueError(english("toposort left out {nodes}: list every node the root depends "
                                 "on, the inputs and the root included.",
                                 nodes=", ".join(missing)))
    return order


def invoke_toposort(fn: Callable[..., Any], program: str, x0: np.ndarray, x1: np.ndarray,
                    x2: np.ndarray, g: np.ndarray) -> tuple:
    """Backward through the program, visiting the nodes in the reverse of toposort's order."""
    refuse_reference_tape(fn, "toposort")
    steps = parse_program(program)
    values = forward(steps, [x0, x1, x2])
    nodes = [Node(i, "input", ()) for i in range(3)]
    for op, operands, _ in steps:
        nodes.append(Node(len(nodes), op, [nodes[i] for i in operands]))
    order = _checked_order(list(fn(nodes[-1])), nodes[-1])
    return backward_in_order(steps, values, [node.index for node in reversed(order)], g)


# ---------------------------------------------------------------- backward and grad


def build(ops: dict[str, Any], program: str, inputs: Iterable[Any]) -> list[Any]:
    """The program traced with the learner's own Tensor and operations (from the notebook
    namespace `ops`) on `inputs` (arrays are wrapped in Tensors): all its values."""
    tensor = learner_name(ops, "Tensor")
    values = [x if isinstance(x, tensor) else tensor(x) for x in inputs]
    for op, operands, params in parse_program(program):
        function = learner_name(ops, FUNCTION_NAMES.get(op, op))
        values.append(function(*(values[i] for i in operands), **params))
    return values


def invoke_backward(fn: Callable[..., Any], program: str, x0: np.ndarray, x1: np.ndarray,
                    x2: np.ndarray, g: np.ndarray) -> tuple:
    """The .grad of every value after the learner's backward(root, g)."""
    refuse_reference_tape(fn, "backward")
    values = build(fn.__globals__, program, [x0, x1, x2])
    fn(values[-1], g)
    return (*(x.grad for x in values[:3]), flat_nodes([v.grad for v in values[3:]]))


def invoke_grad(fn: Callable[..., Any], program: str, x0: np.ndarray, x1: np.ndarray,
                x2: np.ndarray, g: np.ndarray) -> tuple:
    """grad of f(x0, x1, x2) = reduce_sum(program(x0, x1, x2) * g), three ways."""
    refuse_reference_tape(fn, "grad")
    ops = fn.__globals__
    traced = []

    def f(*inputs: Any) -> Any:
        values = build(ops, program, inputs)
        traced.append(values)
        return learner_name(ops, "reduce_sum")(
            learner_name(ops, "mul")(values[-1], learner_name(ops, "Tensor")(g)))

    together = fn(f, argnums=(0, 1, 2))(x0, x1, x2)
    nodes = flat_nodes([v.grad for v in traced[0][3:]]) if traced else None
    if not isinstance(together, tuple):
        raise TypeError(english("grad(f, argnums=(0, 1, 2)) must return a tuple of three "
                                "gradients, as jax.grad does; it returned a {type}.",
                                type=type(together).__name__))
    first, second = fn(f)(x0, x1, x2), fn(f, argnums=1)(x0, x1, x2)
    _same_alone(together, first, 0)
    _same_alone(together, second, 1)
    refused = _scalar_refusal(fn, ops, program, [x0, x1, x2])
    if refused:  # the values are judged first, then the TypeError the exercise asks for
        raise MethodNotFollowed(refused, (*together, nodes))
    return (*together, nodes)


def _scalar_refusal(fn: Callable[..., Any], ops: dict[str, Any], program: str,
                    inputs: list[np.ndarray]) -> str:
    """What is wrong ("" if nothing) with grad(f) for f = the program itself, when its output
    has more than one entry ((1, 1) is left to the learner): jax.grad raises TypeError."""
    shape = np.shape(forward(parse_program(program), inputs)[-1])
    try:
        if int(np.prod(shape)) > 1:
            fn(lambda *tensors: build(ops, program, tensors)[-1])(*map(np.copy, inputs))
            return english("grad(f) returned gradients for an f whose output has shape "
                           "{shape}, not a scalar: like jax.grad, raise a TypeError there, "
                           "before the backward pass.", shape=shape)
    except TypeError:
        pass
    except Exception as error:
        return english("grad(f) raised {error} for an f whose output has shape {shape}: like "
                       "jax.grad, raise a TypeError when f's output is not a scalar.",
                       error=type(error).__name__, shape=shape)
    return ""


def _same_alone(together: tuple, alone: Any, index: int) -> None:
    """An int argnums gives the one array a tuple argnums gives at that position."""
    call = "grad(f)" if index == 0 else "grad(f, argnums=1)"
    if isinstance(alone, tuple | list):  # a TypeError, whose hint speaks of argnums
        raise TypeError(english("{call} returned a {type}: an int argnums gives one array, as "
                                "jax.grad does (a tuple argnums, a tuple of arrays).",
                                call=call, type=type(alone).__name__))
    same = (isinstance(alone, np.ndarray) and isinstance(together[index], np.ndarray)
            and alone.shape == together[index].shape
            and np.allclose(alone, together[index], rtol=1e-5, atol=1e-6))
    if not same:
        raise ValueError(english(
            "{call} should return the array grad(f, argnums=(0, 1, 2)) gives at position "
            "{index}, as jax.grad does (an int argnums: one array; a tuple: a tuple of arrays).",
            call=call, index=index))


# ---------------------------------------------------------------- references for dependents


def vjp_rule(op: str, g: np.ndarray, *primals: np.ndarray, **params: Any) -> tuple:
    """The reference of the exercise vjp_rule: the learner's tape records it in each node's
    VJP closure, so backward and grad are checked with it in place of the learner's."""
    return RULES[op](g, *primals, **params)


def toposort(root: Any) -> list[Any]:
    """The reference of the exercise toposort: a depth-first post-order over `.parents`."""
    order: list[Any] = []
    seen: set[int] = set()

    def visit(node: Any) -> None:
        if id(node) not in seen:
            seen.add(id(node))
            for parent in node.parents:
                visit(parent)
            order.append(node)

    visit(root)
    return order


def backward(root: Any, g: np.ndarray) -> None:
    """The reference of the exercise backward, on the learner's own Tensors."""
    root.grad += g
    for node in reversed(toposort(root)):
        if node.vjp is not None:
            for parent, c in zip(node.parents, node.vjp(node.grad), strict=True):
                parent.grad += c


# ---------------------------------------------------------------- gradient checking


def _numpy_math() -> dict[str, Callable[..., Any]]:
    return {"tanh": np.tanh, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sum": np.sum}


# The scalar functions directional_derivative is checked on, over any array library `m`
# (numpy, jax.numpy, or TensorFlow through the same five names): smooth where the cases
# draw their points ("log" on positive values only), each with its numpy gradient.
SCALAR_FUNCTIONS: dict[str, Callable[[dict, Any], Any]] = {
    "tanh_x2": lambda m, x: m["sum"](m["tanh"](x) * x * x),
    "softplus": lambda m, x: m["sum"](m["log"](1 + m["exp"](x))),
    "log": lambda m, x: m["sum"](m["log"](x)),
    "norm": lambda m, x: m["sqrt"](m["sum"](x * x)),
}
SCALAR_GRADIENTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh_x2": lambda x: (1 - np.tanh(x) ** 2) * x * x + 2 * x * np.tanh(x),
    "softplus": lambda x: 1 / (1 + np.exp(-x)),
    "log": lambda x: 1 / x,
    "norm": lambda x: x / np.sqrt(np.sum(x * x)),
}


def scalar_function(name: str, dtype: Any) -> Callable[[Any], np.ndarray]:
    """The numpy function `name`, computed in `dtype` whatever the point it is given: a
    learner who widens x to float64 still differentiates a float32 function."""

    def f(x: Any) -> np.ndarray:
        return np.asarray(SCALAR_FUNCTIONS[name](_numpy_math(), np.asarray(x, dtype)), dtype)

    return f


def invoke_directional_derivative(fn: Callable[..., Any], f: str, x: np.ndarray,
                                  v: np.ndarray) -> np.ndarray:
    """The learner's directional_derivative(f, x, v) of the named function, in x's dtype."""
    result = fn(scalar_function(f, x.dtype), x, v)
    if np.ndim(result) != 0:
        raise ValueError(english("directional_derivative must return one number (the "
                                 "derivative of f along v), not an array of shape {shape}.",
                                 shape=np.shape(result)))
    return np.asarray(result, dtype=x.dtype)


def directional_derivative(f: Callable[[np.ndarray], Any], x: np.ndarray,
                           v: np.ndarray) -> np.ndarray:
    """The reference of the exercise directional_derivative: a central difference whose
    step balances truncation (h**2) against rounding (eps / h) for x's dtype, relative to
    x's magnitude."""
    x = np.asarray(x)
    h = np.finfo(x.dtype).eps ** (1 / 3) * max(1.0, float(np.abs(x).max(initial=0.0)))
    return (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))) / (2 * h)


# ---------------------------------------------------------------- find_wrong_rule

# Rule tables with one wrong rule each, as learners write them (seed 001's kind first: a
# transpose in the wrong place, whose shape is right for square matrices): the op, its rule.
WRONG_RULES: dict[str, tuple[str, Callable[..., tuple]]] = {
    "matmul_transposed": ("matmul", lambda g, x, y: (g @ y.T, (x.T @ g).T)),
    "sub_sign": ("sub", lambda g, x, y: (g, g)),
    "div_sign": ("div", lambda g, x, y: (g / y, g * x / y**2)),
    "mul_swapped": ("mul", lambda g, x, y: (g * x, g * y)),
    "neg_sign": ("neg", lambda g, x: (g,)),
    "exp_forgotten": ("exp", lambda g, x: (g,)),
    "log_squared": ("log", lambda g, x: (g / x**2,)),
    "tanh_of_input": ("tanh", lambda g, x: (g * (1 - x**2),)),
    "sum_axis_lost": ("sum", lambda g, x, axis=None: (np.broadcast_to(g, x.shape).copy(),)),
}
RIGHT_TABLE = "right"
FLAGS = (*FORWARD, "none")  # what find_wrong_rule's answer is compared as: one flag each
JOINED = "+"  # "sub_sign+tanh_of_input": several wrong rules; the first op is the answer


def rule_table(table: str) -> Callable[..., tuple]:
    """A vjp_rule whose rules are RULES but for those the WRONG_RULES in `table` replace."""
    rules = dict(RULES)
    if table != RIGHT_TABLE:
        for name in table.split(JOINED):
            op, rule = WRONG_RULES[name]
            rules[op] = rule

    def vjp_rule(op: str, g: np.ndarray, *primals: np.ndarray, **params: Any) -> tuple:
        return rules[op](g, *primals, **params)

    return vjp_rule


def flags(answer: str | None) -> np.ndarray:
    """One flag per op (and one for "no rule is wrong"): 1.0 at the answer."""
    return np.array([float(name == (answer or "none")) for name in FLAGS])


def invoke_find_wrong_rule(fn: Callable[..., Any], table: str, dtype: str) -> np.ndarray:
    """The learner's find_wrong_rule(vjp_rule, forward, dtype) on a rule table, as flags."""
    answer = fn(rule_table(table), dict(FORWARD), np.dtype(dtype))
    if answer is not None and answer not in FORWARD:
        raise ValueError(english("find_wrong_rule returned {answer}: return the name of an op, "
                                 "one of {ops}, or None when every rule passes.",
                                 answer=repr(answer), ops=", ".join(FORWARD)))
    return flags(answer)


def handed_out_vjp_rule() -> Callable[..., tuple]:
    """The rule table of the tape chapter 02 hands out to be checked: one rule in it is
    wrong, of the kind seed 001's learner could not find (the notebook does not say which)."""
    return rule_table("matmul_transposed")

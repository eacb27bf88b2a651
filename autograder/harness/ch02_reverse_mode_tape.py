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


# ---------------------------------------------------------------- vjp_rule


def invoke_vjp_rule(fn: Callable[..., Any], op: str, axis: int | None, g: np.ndarray,
                    x: np.ndarray, y: np.ndarray) -> tuple:
    """Call vjp_rule with the primals `op` has: (g, x), (g, x, y) or (g, x, axis=...)."""
    if op == "sum":
        result = fn(op, g, x, axis=axis)
    elif op in UNARY:
        result = fn(op, g, x)
    else:
        result = fn(op, g, x, y)
    if not isinstance(result, tuple | list):
        raise TypeError(f"vjp_rule({op!r}, ...) must return a tuple of cotangents, one per "
                        f"primal; it returned a {type(result).__name__}.")
    wanted = 1 if op == "sum" or op in UNARY else 2
    if len(result) != wanted:
        raise ValueError(f"{op} has {wanted} primal(s), so vjp_rule must return a tuple of "
                         f"{wanted} cotangent(s); it returned {len(result)}.")
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
            raise ValueError(f"toposort returned {node!r}, which is not a node of the graph.")
        if id(node) in seen:
            raise ValueError(f"toposort returned {node!r} twice: list each node once.")
        seen.add(id(node))
    missing = [repr(node) for key, node in wanted.items() if key not in seen]
    if missing:
        raise ValueError(f"toposort left out {', '.join(missing)}: list every node the "
                         "root depends on, the inputs and the root included.")
    return order


def invoke_toposort(fn: Callable[..., Any], program: str, x0: np.ndarray, x1: np.ndarray,
                    x2: np.ndarray, g: np.ndarray) -> tuple:
    """Backward through the program, visiting the nodes in the reverse of toposort's order."""
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
    values = [x if isinstance(x, ops["Tensor"]) else ops["Tensor"](x) for x in inputs]
    for op, operands, params in parse_program(program):
        function = ops[FUNCTION_NAMES.get(op, op)]
        values.append(function(*(values[i] for i in operands), **params))
    return values


def invoke_backward(fn: Callable[..., Any], program: str, x0: np.ndarray, x1: np.ndarray,
                    x2: np.ndarray, g: np.ndarray) -> tuple:
    """The .grad of every value after the learner's backward(root, g)."""
    values = build(fn.__globals__, program, [x0, x1, x2])
    fn(values[-1], g)
    return (*(x.grad for x in values[:3]), flat_nodes([v.grad for v in values[3:]]))


def invoke_grad(fn: Callable[..., Any], program: str, x0: np.ndarray, x1: np.ndarray,
                x2: np.ndarray, g: np.ndarray) -> tuple:
    """grad of f(x0, x1, x2) = reduce_sum(program(x0, x1, x2) * g), three ways."""
    ops = fn.__globals__
    traced = []

    def f(*inputs: Any) -> Any:
        values = build(ops, program, inputs)
        traced.append(values)
        return ops["reduce_sum"](ops["mul"](values[-1], ops["Tensor"](g)))

    together = fn(f, argnums=(0, 1, 2))(x0, x1, x2)
    nodes = flat_nodes([v.grad for v in traced[0][3:]]) if traced else None
    if not isinstance(together, tuple):
        raise TypeError("grad(f, argnums=(0, 1, 2)) must return a tuple of three "
                        f"gradients, as jax.grad does; it returned a {type(together).__name__}.")
    first, second = fn(f)(x0, x1, x2), fn(f, argnums=1)(x0, x1, x2)
    _same_alone(together, first, 0)
    _same_alone(together, second, 1)
    return (*together, nodes)


def _same_alone(together: tuple, alone: Any, index: int) -> None:
    """An int argnums gives the one array a tuple argnums gives at that position."""
    same = (isinstance(alone, np.ndarray) and isinstance(together[index], np.ndarray)
            and alone.shape == together[index].shape
            and np.allclose(alone, together[index], rtol=1e-5, atol=1e-6))
    if not same:
        raise ValueError(
            f"grad(f{'' if index == 0 else ', argnums=1'}) should return the array "
            f"grad(f, argnums=(0, 1, 2)) gives at position {index}, as jax.grad does "
            "(an int argnums: one array; a tuple: a tuple of arrays).")


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

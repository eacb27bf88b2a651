"""The chapter 02 checks: right tapes written in different ways pass, and each wrong tape
learners write (breadth-first order, `=` instead of `+=`, a lost incoming cotangent, a wrong
sign in sub or div) fails with the hint that names it."""

from __future__ import annotations

import importlib.util
import sys
from collections import deque

import numpy as np
import pytest

import coursekit.tape
from autograder import check
from autograder.exercises.ch02_reverse_mode_tape import (
    BACKWARD,
    BFS_TRAP,
    DIRECTIONAL_DERIVATIVE,
    FIND_WRONG_RULE,
    GRAD,
    TOPOSORT,
    VJP_RULE,
    first_difference,
    parse_program,
    program_case,
    program_text,
)
from autograder.harness.ch02_reverse_mode_tape import toposort, vjp_rule
from autograder.judging.engine import check_function

# The learner's namespace: the tape's type and operations, found by the checks in
# fn.__globals__ (here, this module's globals).
from coursekit.tape import (  # noqa: F401
    Tensor,
    add,
    bfs_order,
    div,
    exp,
    log,
    matmul,
    mul,
    neg,
    reduce_sum,
    sub,
    tanh,
)


def tape_with_rule(op, rule, name):
    """A fresh copy of the reference tape whose rule for `op` is replaced (a learner's tape
    with one wrong rule: its own Tensor, operations, backward and grad)."""
    spec = importlib.util.spec_from_file_location(name, coursekit.tape.__file__)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.RULES[op] = rule
    return module


def failed_with(report, words):
    assert not report.passed, str(report)
    assert report.failure is not None and words in report.failure.hint, str(report)


# ---------------------------------------------------------------- vjp_rule


def vjp_rule_branches(op, g, *primals, axis=None):
    if op == "add":
        return g, g
    if op == "sub":
        return g, np.negative(g)
    if op == "mul":
        x, y = primals
        return y * g, x * g
    if op == "div":
        x, y = primals
        return g / y, -(g * x) / (y * y)
    if op == "matmul":
        x, y = primals
        return np.einsum("ik,jk->ij", g, y), np.einsum("ki,kj->ij", x, g)
    (x,) = primals
    if op == "sum":
        shape = list(x.shape)
        if axis is not None:
            shape[axis] = 1
            return (np.broadcast_to(np.reshape(g, shape), x.shape).copy(),)
        return (np.full(x.shape, g, dtype=x.dtype),)
    t = np.tanh(x)
    local = {"neg": -np.ones_like(x), "exp": np.exp(x), "log": 1 / x, "tanh": 1 - t * t}[op]
    return (g * local,)


def vjp_rule_table(op, g, *primals, **params):
    table = {
        "add": lambda g, x, y: (g, g), "sub": lambda g, x, y: (g, -g),
        "mul": lambda g, x, y: (g * y, g * x), "div": lambda g, x, y: (g / y, -g * x / y**2),
        "matmul": lambda g, x, y: (g @ y.T, x.T @ g), "neg": lambda g, x: (-g,),
        "exp": lambda g, x: (g * np.exp(x),), "log": lambda g, x: (g / x,),
        "tanh": lambda g, x: (g * (1 - np.tanh(x) ** 2),),
        "sum": lambda g, x, axis=None: (np.broadcast_to(
            g if axis is None else np.expand_dims(g, axis), x.shape).copy(),),
    }
    return table[op](g, *primals, **params)


@pytest.mark.parametrize("fn", [vjp_rule_table, vjp_rule_branches])
def test_right_vjp_rules_pass(fn):
    report = check.vjp_rule(fn)
    assert report.passed, str(report)


# The wrong rules learners write are declared mistakes of vjp_rule, run by
# tests/judging/test_mistakes.py.


def test_vjp_rule_returning_a_bare_array_is_explained():
    def bare(op, g, *primals, **params):
        result = vjp_rule(op, g, *primals, **params)
        return result[0] if len(result) == 1 else result

    report = check.vjp_rule(bare)
    assert not report.passed
    assert "tuple of cotangents" in report.failure.message


# ---------------------------------------------------------------- toposort


def toposort_kahn(root):
    """Kahn's algorithm on the graph reversed: consumers counted, then peeled from the root."""
    nodes, stack, seen = [], [root], set()
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            nodes.append(node)
            stack.extend(node.parents)
    consumers = {id(n): 0 for n in nodes}
    for node in nodes:
        for parent in node.parents:
            consumers[id(parent)] += 1
    ready, order = deque([root]), []
    while ready:
        node = ready.popleft()
        order.append(node)
        for parent in node.parents:
            consumers[id(parent)] -= 1
            if consumers[id(parent)] == 0:
                ready.append(parent)
    return order[::-1]


def toposort_bfs(root):
    return bfs_order(root)[::-1]


def toposort_without_inputs(root):
    return [node for node in toposort(root) if node.parents]


def toposort_post_order(root):
    order, seen = [], set()

    def visit(node):
        if id(node) not in seen:
            seen.add(id(node))
            for parent in node.parents:
                visit(parent)
            order.append(node)

    visit(root)
    return order


@pytest.mark.parametrize("fn", [toposort_post_order, toposort_kahn])
def test_right_toposorts_pass(fn):
    report = check.toposort(fn)
    assert report.passed, str(report)


def test_breadth_first_toposort_fails_with_its_hint():
    report = check.toposort(toposort_bfs)
    failed_with(report, "breadth-first")


def test_toposort_missing_nodes_is_explained():
    report = check.toposort(toposort_without_inputs)
    assert not report.passed
    assert "left out" in report.failure.message


# ---------------------------------------------------------------- backward


def backward_right(root, g):
    root.grad += g
    for node in reversed(toposort(root)):
        if node.parents:
            for parent, c in zip(node.parents, node.vjp(node.grad), strict=True):
                parent.grad += c


def backward_recursive(root, g):
    """The same pass with the order built by a different search (Kahn's algorithm)."""
    root.grad = root.grad + g
    for node in reversed(toposort_kahn(root)):
        for parent, c in zip(node.parents, node.vjp(node.grad) if node.parents else (),
                             strict=True):
            parent.grad = parent.grad + c


def backward_bfs(root, g):
    root.grad += g
    queue, seen = deque([root]), {id(root)}
    while queue:
        node = queue.popleft()
        if node.parents:
            for parent, c in zip(node.parents, node.vjp(node.grad), strict=True):
                parent.grad += c
                if id(parent) not in seen:
                    seen.add(id(parent))
                    queue.append(parent)


def backward_queue(root, g):
    """A queue that takes a node back in whenever it is not waiting in it (no visited set)."""
    root.grad += g
    working = [root]
    while working:
        node = working.pop(0)
        if node.parents:
            for parent, c in zip(node.parents, node.vjp(node.grad), strict=True):
                parent.grad += c
                if parent not in working:
                    working.append(parent)


def backward_assign(root, g):
    root.grad = g
    for node in reversed(toposort(root)):
        if node.parents:
            for parent, c in zip(node.parents, node.vjp(node.grad), strict=True):
                parent.grad = c


def backward_forgets_node_cotangent(root, g):
    root.grad += g
    for node in reversed(toposort(root)):
        if node.parents:
            for parent, c in zip(node.parents, node.vjp(np.ones_like(node.grad)), strict=True):
                parent.grad += c


def backward_seeded_with_ones(root, g):
    backward_right(root, np.ones_like(g))


@pytest.mark.parametrize("fn", [backward_right, backward_recursive])
def test_right_backward_passes(fn):
    report = check.backward(fn)
    assert report.passed, str(report)


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        (backward_bfs, "breadth-first"),
        (backward_queue, "puts a node back into it"),
        (backward_assign, "accumulate with `parent.grad += c`"),
        (backward_forgets_node_cotangent, "incoming cotangent is lost"),
        (backward_seeded_with_ones, "incoming cotangent is lost"),
    ],
)
def test_wrong_backward_fails_with_its_hint(fn, words):
    failed_with(check.backward(fn), words)


@pytest.mark.parametrize(
    ("op", "rule", "words"),
    [
        ("sub", lambda g, x, y: (g, g), "Wrong sign in sub"),
        ("div", lambda g, x, y: (g / y, g * x / y**2), "Wrong sign in div"),
    ],
)
def test_a_wrong_rule_costs_vjp_rule_only_and_is_named(op, rule, words):
    """A tape with one wrong rule: vjp_rule fails with its hint; backward and grad, which
    call it, are checked with the correct rule in its place, pass, and say so: one wrong
    rule costs one exercise."""
    learner = tape_with_rule(op, rule, f"learner_tape_{op}")
    own = learner.vjp_rule
    failed_with(check_function(VJP_RULE, own), words)
    for exercise, fn in ((BACKWARD, learner.backward), (GRAD, learner.grad)):
        report = check_function(exercise, fn)
        assert report.passed, str(report)
        # (this tape's toposort is the grader's own, re-exported by coursekit.tape, and is
        # refused as the learner's: it is named beside vjp_rule)
        assert "vjp_rule are not right yet" in report.dependencies, str(report)
        assert learner.vjp_rule is own  # the learner's own is put back after the check


def test_failures_show_the_smallest_program():
    report = check.backward(backward_bfs)
    assert report.failure.shrunk or report.failure.case.label
    program = report.failure.case.arg("program")
    steps = parse_program(program)
    assert len(steps) <= 4, program  # the trap needs a value with consumers at two depths
    assert "program = " in str(report)


def test_failures_name_the_value_where_the_cotangents_first_differ():
    case = program_case(0, 2, np.float64, 7, program="v3 = tanh(v2); v4 = exp(v3); "
                        "v5 = mul(v4, v1)")
    forgets = next(m for m in BACKWARD.mistakes if m.name == "forgets_node_cotangent")
    wrong = BACKWARD.run_mistake(forgets, case)
    where = first_difference(case, wrong)
    assert where.startswith("Walking back from the output, the cotangents first differ at "
                            "v4 = exp(v3)"), where
    report = check.backward(backward_bfs)
    assert "the first to differ are those of the inputs" in report.failure.hint, str(report)


def test_a_tape_that_frees_node_cotangents_is_told_to_keep_them():
    def backward_freeing(root, g):
        backward_right(root, g)
        for node in toposort(root):
            if node.parents:
                node.grad = np.zeros_like(node.grad)

    report = check.backward(backward_freeing)
    assert not report.passed and "node_cotangents" in report.failure.message


# ---------------------------------------------------------------- grad


def grad_right(f, argnums=0):
    def gradient(*args):
        inputs = [Tensor(a) for a in args]
        out = f(*inputs)
        if out.value.shape != ():
            raise TypeError(f"grad needs a scalar output, got shape {out.value.shape}")
        backward_right(out, np.ones_like(out.value))
        picked = [inputs[i].grad for i in np.atleast_1d(argnums)]
        return picked[0] if isinstance(argnums, int) else tuple(picked)

    return gradient


def grad_scalar_by_size(f, argnums=0):
    """Right, written differently: "not a scalar" read as more than one entry."""
    def gradient(*args):
        inputs = [Tensor(a) for a in args]
        out = f(*inputs)
        if out.value.size != 1:
            raise TypeError("grad is defined for scalar outputs only")
        backward_right(out, np.ones_like(out.value))
        if isinstance(argnums, int):
            return inputs[argnums].grad
        return tuple(inputs[i].grad for i in argnums)

    return gradient


def grad_without_scalar_check(f, argnums=0):
    """Right gradients of scalar functions, but no TypeError for a non-scalar output: the
    backward pass is seeded with ones of the output's shape instead; it must fail."""
    def gradient(*args):
        inputs = [Tensor(a) for a in args]
        out = f(*inputs)
        backward_right(out, np.ones_like(out.value))
        picked = [inputs[i].grad for i in np.atleast_1d(argnums)]
        return picked[0] if isinstance(argnums, int) else tuple(picked)

    return gradient


def grad_assign(f, argnums=0):
    def gradient(*args):
        inputs = [Tensor(a) for a in args]
        backward_assign(f(*inputs), np.ones((), args[0].dtype))
        return inputs[argnums].grad if isinstance(argnums, int) else tuple(
            inputs[i].grad for i in argnums)

    return gradient


def grad_always_tuple(f, argnums=0):
    argnums = (argnums,) if isinstance(argnums, int) else argnums
    return grad_right(f, argnums)


@pytest.mark.parametrize("fn", [grad_right, grad_scalar_by_size])
def test_right_grad_passes(fn):
    report = check.grad(fn)
    assert report.passed, str(report)


def test_grad_with_assignment_fails_with_its_hint():
    failed_with(check.grad(grad_assign), "accumulate with `parent.grad += c`")


def test_grad_must_mirror_jax_argnums():
    report = check.grad(grad_always_tuple)
    assert not report.passed
    assert "as jax.grad does" in report.failure.message


def test_a_tuple_for_an_int_argnums_gets_a_hint_about_argnums():
    """The error names the call; the hint under it speaks of argnums, not of the backward
    pass's node cotangents."""
    report = check.grad(grad_always_tuple)
    failed_with(report, "argnums")
    assert "cotangent" not in report.failure.hint, report.failure.hint


def test_grad_must_raise_type_error_for_a_non_scalar_output():
    """jax.grad refuses an f whose output is not a scalar, and the exercise asks for that
    TypeError: a grad that differentiates such an f anyway fails."""
    report = check.grad(grad_without_scalar_check)
    assert not report.passed, str(report)
    assert "TypeError" in report.failure.message, str(report)
    assert "not a scalar" in report.failure.message, str(report)


def test_grad_must_raise_type_error_not_another_error():
    def grad_value_error(f, argnums=0):
        right = grad_right(f, argnums)

        def gradient(*args):
            try:
                return right(*args)
            except TypeError as error:
                raise ValueError(str(error)) from None

        return gradient

    report = check.grad(grad_value_error)
    assert not report.passed, str(report)
    assert "raised ValueError" in report.failure.message, str(report)


# ---------------------------------------------------------------- the cases themselves


def test_the_bfs_trap_is_an_edge_case_and_breadth_first_is_wrong_there():
    case = next(c for c in TOPOSORT.edge_cases() if c.arg("program") == BFS_TRAP)
    steps = parse_program(BFS_TRAP)
    assert program_text(steps) == BFS_TRAP
    mistake = next(m for m in BACKWARD.mistakes if m.name == "bfs_order")
    wrong = BACKWARD.run_mistake(mistake, case)
    assert len(wrong) == 4  # x0, x1, x2 and the node cotangents
    assert first_difference(case, wrong)  # the breadth-first cotangents are wrong here


def test_programs_have_fan_out():
    from autograder.judging.cases import NOTEBOOK, draw_cases

    cases = draw_cases(BACKWARD.strategy(NOTEBOOK), NOTEBOOK)
    reused = 0
    for case in cases:
        operands = [i for _, ops, _ in parse_program(case.arg("program")) for i in ops]
        reused += len(operands) != len(set(operands))
    assert reused >= len(cases) // 4


def test_every_rule_exercise_has_the_four_exercises():
    assert [e.name for e in (VJP_RULE, TOPOSORT, BACKWARD, GRAD)] == [
        "vjp_rule", "toposort", "backward", "grad"]
    assert all(e.frameworks == () for e in (VJP_RULE, TOPOSORT, BACKWARD, GRAD))


# ---------------------------------------------------------------- directional_derivative


def central_by_norm(f, x, v):
    """Right, written differently: the step scaled by 1 + the norm of x."""
    h = np.cbrt(np.finfo(x.dtype).eps) * (1 + np.linalg.norm(x))
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def central_in_float64(f, x, v):
    """Right, written differently: the step taken on float64 points (f computes in its own
    dtype), the difference divided by the step actually taken along v."""
    wide = x.astype(np.float64)
    h = np.finfo(x.dtype).eps ** (1 / 3) * max(1.0, float(np.abs(wide).max(initial=0.0)))
    ahead, behind = (wide + h * v).astype(x.dtype), (wide - h * v).astype(x.dtype)
    taken = float(np.dot((ahead - behind).astype(np.float64).ravel(), v.ravel()))
    return (np.float64(f(ahead)) - np.float64(f(behind))) / taken


@pytest.mark.parametrize("fn", [central_by_norm, central_in_float64])
def test_right_directional_derivatives_pass(fn):
    report = check.directional_derivative(fn)
    assert report.passed, str(report)


def test_a_step_relative_to_x_alone_fails_at_zero():
    """h = eps**(1/3) * max|x| with no floor is 0 at x = 0, and 0 / 0 is NaN: an edge case
    draws x = 0, and the hint names the missing floor."""
    def relative_step(f, x, v):
        h = np.cbrt(np.finfo(x.dtype).eps) * np.abs(x).max()
        return (f(x + h * v) - f(x - h * v)) / (2 * h)

    assert any(not np.any(case.arg("x")) for case in DIRECTIONAL_DERIVATIVE.edge_cases())
    with np.errstate(divide="ignore", invalid="ignore"):
        report = check.directional_derivative(relative_step)
    failed_with(report, "x = 0")


def test_a_forward_difference_fails_with_its_hint():
    def forward(f, x, v):
        h = np.sqrt(np.finfo(x.dtype).eps) * max(1.0, float(np.abs(x).max(initial=0.0)))
        return (f(x + h * v) - f(x)) / h

    failed_with(check.directional_derivative(forward), "Step both ways")


def test_derivative_cases_are_well_conditioned_and_unit():
    for case in DIRECTIONAL_DERIVATIVE.edge_cases():
        _, x, v = case.values()
        assert np.isclose(np.linalg.norm(v.astype(np.float64)), 1, rtol=1e-6)
        assert x.dtype == v.dtype


# ---------------------------------------------------------------- find_wrong_rule


def find_wrong_rule_by_columns(vjp_rule, forward, dtype):
    """Right, written differently: another seed, other inputs and tolerances, and the
    finite differences gathered into a whole cotangent before comparing."""
    rng = np.random.default_rng(42)
    tol = 3e-3 if np.dtype(dtype) == np.float32 else 1e-7
    for op, function in forward.items():
        for params in ([{"axis": a} for a in (0, 1, None)] if op == "sum" else [{}]):
            primals = [rng.uniform(0.7, 1.9, (3, 3)).astype(dtype)
                       for _ in range(2 if op in ("add", "sub", "mul", "div", "matmul") else 1)]
            g = rng.standard_normal(np.shape(function(*primals, **params))).astype(dtype)
            for i, (primal, c) in enumerate(zip(primals, vjp_rule(op, g, *primals, **params),
                                                strict=True)):
                numeric = np.zeros(primal.shape)
                for j in np.ndindex(primal.shape):
                    e = np.zeros_like(primal)
                    e[j] = 1

                    def f(t, i=i, e=e, params=params, function=function, g=g, primals=primals):
                        moved = [p + t * e if k == i else p for k, p in enumerate(primals)]
                        return np.sum(g * function(*moved, **params)).astype(dtype)

                    numeric[j] = directional_derivative(f, np.zeros((), dtype),
                                                        np.ones((), dtype))
                if np.abs(numeric - c).max() > tol * max(1.0, np.abs(c).max()):
                    return op
    return None


def directional_derivative(f, x, v):  # the learner's own, found by find_wrong_rule
    h = np.finfo(x.dtype).eps ** (1 / 3) * max(1.0, float(np.abs(x).max(initial=0.0)))
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def test_right_find_wrong_rule_passes():
    report = check.find_wrong_rule(find_wrong_rule_by_columns)
    assert report.passed, str(report)


def test_a_check_that_never_flags_fails():
    failed_with(check.find_wrong_rule(lambda vjp_rule, forward, dtype: None), "wrong op")


def find_wrong_rule_last(vjp_rule, forward, dtype):
    """Every rule checked, and the LAST op flagged returned: right whenever only one rule
    of the table is wrong."""
    flagged = None
    for op in forward:
        one = {op: forward[op]}  # the right check, on this op alone
        if find_wrong_rule_by_columns(vjp_rule, one, dtype) is not None:
            flagged = op
    return flagged


def test_a_check_that_returns_the_last_wrong_rule_fails():
    """Tables with two and three wrong rules, where the first in `forward`'s order is the
    answer: a check that reports only the last wrong rule it met fails them."""
    assert any("+" in case.arg("table") for case in FIND_WRONG_RULE.edge_cases())
    failed_with(check.find_wrong_rule(find_wrong_rule_last), "LAST op it flags")



# ---------------------------------------------------------------- the learner's own tape


@pytest.mark.parametrize(("exercise", "fn"), [
    ("toposort", coursekit.tape.toposort),
    ("toposort", lambda root: coursekit.tape.reverse_topological(root)[::-1]),
    ("vjp_rule", coursekit.tape.vjp_rule),
    ("backward", coursekit.tape.backward),
    ("grad", coursekit.tape.grad),
    ("toposort", toposort),  # the grader's own reference, which coursekit.tape re-exports
])
def test_the_reference_tape_handed_back_is_refused(exercise, fn):
    report = getattr(check, exercise)(fn)
    assert not report.passed
    assert "reference tape" in str(report), str(report)

"""A declaration is checked when it is made: its signature against its mistakes and its
reference, its hints' keys against the kinds a check reports, its cases against values that
would be ambiguous; and a reference written once gives both frameworks' references."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import strategies as st

from autograder.exercises.ch03_unbroadcasting import MATMUL_VJP, UNBROADCAST
from autograder.exercises.common import rng_array
from autograder.judging.cases import NOTEBOOK, AmbiguousArgument, Case, draw_cases
from autograder.judging.declaration import read_signature
from autograder.judging.derived import jacobian_reference, two_references, vjp_reference
from autograder.judging.exercise import Mistake
from autograder.judging.references import (
    ensure_agreement,
    jax_references,
    tensorflow_references,
)

# ---------------------------------------------------------------- ambiguous case arguments


def test_a_numpy_scalar_argument_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="case argument 'g' is a numpy scalar"):
        Case((("g", np.float32(1.5)), ("x", np.ones(3, np.float32))))


def test_zero_d_arrays_and_python_numbers_are_accepted():
    case = Case((("g", np.asarray(1.5, np.float32)), ("max_norm", 0.5)))
    assert list(case.arrays()) == ["g"] and case.params() == {"max_norm": 0.5}


def test_rng_array_of_a_zero_d_shape_is_an_array():
    value = rng_array(np.random.default_rng(0), (), np.float32)
    assert isinstance(value, np.ndarray) and value.shape == () and value.dtype == np.float32
    # what numpy's rounding gives a 0-d array: the value that used to reach Case
    assert not isinstance(np.random.default_rng(0).uniform(size=()).round(1), np.ndarray)


def _scalar_edges() -> list[Case]:
    rng = np.random.default_rng(3)
    g = rng.uniform(-3, 3, size=()).round(1).astype(np.float32)  # a numpy scalar
    return [Case((("g", g), ("shape", ())), label="a scalar")]


def test_an_edge_case_with_a_numpy_scalar_names_the_exercise_and_the_field():
    broken = dataclasses.replace(UNBROADCAST, edges=_scalar_edges)
    with pytest.raises(
        AmbiguousArgument, match=r"Exercise unbroadcast: case argument 'g' is a numpy scalar"
    ):
        broken.edge_cases()


def test_a_drawn_case_with_a_numpy_scalar_names_the_exercise_and_the_field():
    def cases(profile):
        return st.floats(-1, 1).map(lambda v: Case((("g", np.float64(v)), ("shape", ()))))

    broken = dataclasses.replace(UNBROADCAST, cases=cases)
    with pytest.raises(
        AmbiguousArgument, match=r"Exercise unbroadcast: case argument 'g' is a numpy scalar"
    ):
        draw_cases(broken.strategy(NOTEBOOK), NOTEBOOK)


# ---------------------------------------------------------------- the declared signature


def test_the_signature_gives_name_parameters_and_returns():
    assert read_signature("grad(f, argnums=0) -> a function") == (
        "grad",
        ("f", "argnums"),
        "a function",
    )
    assert read_signature("vjp_rule(op, g, *primals, **params) -> cotangents")[1] == (
        "op",
        "g",
        "primals",
        "params",
    )
    assert (MATMUL_VJP.name, MATMUL_VJP.parameters, MATMUL_VJP.returns) == (
        "matmul_vjp",
        ("g", "a", "b"),
        "(g_a, g_b)",
    )


@pytest.mark.parametrize("signature", ["unbroadcast(g, shape)", "unbroadcast g -> x", "(g) -> x"])
def test_a_malformed_signature_shows_the_form(signature):
    with pytest.raises(ValueError, match=r"name\(parameter, \.\.\.\) -> what it returns"):
        dataclasses.replace(UNBROADCAST, signature=signature)


def test_a_mistake_with_other_parameters_is_refused_naming_exercise_and_mistake():
    wrong = Mistake("swapped", "hint", lambda shape, g: g)
    with pytest.raises(
        ValueError,
        match=r"Exercise unbroadcast: the mistake 'swapped' takes "
        r"\(shape, g\), but the signature",
    ):
        dataclasses.replace(UNBROADCAST, mistakes=(*UNBROADCAST.mistakes, wrong))


def test_a_reference_implementation_with_other_parameters_is_refused():
    with pytest.raises(
        ValueError,
        match=r"Exercise matmul_vjp: its reference_implementation "
        r"'ch03_unbroadcasting:unbroadcast' takes \(g, shape\)",
    ):
        dataclasses.replace(MATMUL_VJP, reference_implementation="ch03_unbroadcasting:unbroadcast")


def test_a_reference_reading_an_undeclared_argument_is_refused():
    with pytest.raises(ValueError, match=r"Exercise matmul_vjp: the reference reads \(c\)"):
        dataclasses.replace(
            MATMUL_VJP, reference=vjp_reference(lambda xp, a, c: xp.matmul(a, c), wrt=("a",))
        )


# ---------------------------------------------------------------- hints keyed by checked kinds


@pytest.mark.parametrize(
    "key",
    [
        "shape",
        "value:result",
        "exception:TypeError",
        "exception:InvalidArgumentError",
        "nonfinite:result",
    ],
)
def test_hint_keys_a_check_reports_are_accepted(key):
    dataclasses.replace(UNBROADCAST, hints_by_kind={key: "a hint"})


@pytest.mark.parametrize("key", ["vale", "value:grad_x", "Shape", "exception:not an error"])
def test_an_unknown_hint_key_is_refused_naming_the_exercise(key):
    with pytest.raises(
        ValueError,
        match=rf"Exercise unbroadcast: hints_by_kind has \({key}\), "
        "which no check reports",
    ):
        dataclasses.replace(UNBROADCAST, hints_by_kind={key: "a hint"})


# ---------------------------------------------------------------- references written once


def _both(reference, names, cases):
    tf_outputs = tensorflow_references(reference.tf, cases)
    jax_outputs = jax_references(reference.jax, cases)
    ensure_agreement(names, cases, tf_outputs, jax_outputs)
    return tf_outputs


def test_a_vjp_reference_gives_the_same_cotangents_in_both_frameworks():
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    w = np.array([[2.0, 0.0], [1.0, -1.0]])
    g = np.array([[1.0, 2.0], [-1.0, 0.5]])
    reference = vjp_reference(lambda xp, x, w: xp.tanh(x @ w), wrt=("x", "w"), value=True)
    assert reference.reads == ("x", "w") and reference.why_two == ""
    y, grad_x, grad_w = _both(
        reference, ("y", "grad_x", "grad_w"), [Case((("x", x), ("w", w), ("g", g)))]
    )[0]
    np.testing.assert_allclose(y, np.tanh(x @ w))
    local = g * (1 - np.tanh(x @ w) ** 2)
    np.testing.assert_allclose(grad_x, local @ w.T)
    np.testing.assert_allclose(grad_w, x.T @ local)


def test_a_vjp_reference_without_a_cotangent_uses_ones_and_inputs_build_a_primal():
    reference = vjp_reference(
        lambda xp, x, n: xp.broadcast_to(x, (n, 2)),
        wrt=("x",),
        cotangent=None,
        inputs={"x": lambda xp, n: xp.zeros((2,))},
    )
    (grad,) = _both(reference, ("grad",), [Case((("n", 3),))])[0]
    np.testing.assert_array_equal(grad, [3.0, 3.0])


def test_a_jacobian_reference_has_the_outputs_axes_first():
    x = np.array([1.0, 2.0, 3.0])
    reference = jacobian_reference(lambda xp, x: xp.stack([xp.sum(x), xp.sum(x * x)]), wrt="x")
    (jacobian,) = _both(reference, ("jacobian",), [Case((("x", x),))])[0]
    np.testing.assert_allclose(jacobian, [[1, 1, 1], [2, 4, 6]])


def test_two_hand_written_references_must_say_why():
    with pytest.raises(ValueError, match="needs why="):
        two_references(tf=UNBROADCAST.tf_reference, jax=UNBROADCAST.jax_reference, why=" ")


def test_vjp_reference_refuses_a_wrt_the_forward_does_not_take():
    with pytest.raises(ValueError, match=r"wrt=\('y',\) must name parameters"):
        vjp_reference(lambda xp, x: x, wrt=("y",))

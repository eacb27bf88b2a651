"""A report in JupyterLab: prose wraps between words, arrays keep their columns and scroll.

JupyterLab styles output `<pre>` with `word-break: break-all`; prose inside a `<pre>` is split
mid-word ("incoming cotange|nt g"). Each element's own style must say how it breaks.
"""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np

from autograder.judging.cases import Case
from autograder.judging.report import FAILED, Failure, Report

HINT = "You did not multiply by the incoming cotangent g: sum those with keepdims=True."


class Elements(HTMLParser):
    """(tag, style, text) of every element that holds text directly."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[tuple[str, str]] = []
        self.found: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        self.open.append((tag, dict(attrs).get("style") or ""))

    def handle_endtag(self, tag):
        self.open.pop()

    def handle_data(self, data):
        if data.strip() and self.open:
            self.found.append((*self.open[-1], data))


TOLERANCE = "grad_x[0, 0] is off by 1; 1e-12 is allowed there."


def failed_report() -> Report:
    case = Case(
        (("g", np.arange(24.0).reshape(2, 3, 4)), ("shape", (3, 1))), label="the sizes are 2 and 3"
    )
    failure = Failure(
        case=case,
        message="grad_x differs from the reference",
        hint=HINT,
        expected=(np.ones((3, 1)),),
        got=np.zeros((3, 1)),
        output_names=("grad_x",),
        shrunk=True,
        tolerance=TOLERANCE,
    )
    return Report("unbroadcast", "unbroadcast", FAILED, 12, "jax.vjp", failure)


def elements() -> list[tuple[str, str, str]]:
    parser = Elements()
    parser.feed(failed_report()._repr_html_())
    return parser.found


def style_of(text: str) -> tuple[str, str]:
    return next((tag, style) for tag, style, data in elements() if text in data)


def test_headline_hint_and_titles_wrap_between_words():
    for text in ("FAILED unbroadcast", HINT, "Smallest failing case", TOLERANCE):
        tag, style = style_of(text)
        assert tag != "pre", text
        assert "word-break:normal" in style and "white-space:normal" in style, text


def test_arrays_keep_their_columns_and_scroll():
    for text in ("[[[ 0.  1.  2.  3.]", "[[1.]"):
        tag, style = style_of(text)
        assert tag == "pre" and "white-space:pre" in style and "overflow-x:auto" in style
        assert "word-break:normal" in style  # JupyterLab's break-all would split numbers


def test_the_text_rendering_is_unchanged_by_the_html():
    text = str(failed_report())
    assert text.splitlines()[0] == "FAILED unbroadcast: grad_x differs from the reference"
    assert f"Hint:\n  {HINT}" in text
    assert text.endswith(f"Tolerance:\n  {TOLERANCE}")  # the arithmetic comes last

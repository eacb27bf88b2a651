"""Figures in the notebook's language: Chinese labels draw with a CJK font, without a
missing-glyph warning, and English figures are left exactly as they were."""

from __future__ import annotations

import warnings

import matplotlib as mpl
import pytest

from coursekit.fonts import chinese_font, use_fonts_for

mpl.use("Agg")


def draw(title: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_title(title)
    fig.canvas.draw()
    plt.close(fig)


def test_english_leaves_the_fonts_as_they_are():
    with mpl.rc_context():
        before = list(mpl.rcParams["font.family"])
        use_fonts_for("en")
        assert list(mpl.rcParams["font.family"]) == before


def test_chinese_labels_draw_without_a_missing_glyph():
    if chinese_font() is None:
        pytest.skip("no CJK font on this machine (apt-get install fonts-noto-cjk)")
    with mpl.rc_context():
        use_fonts_for("zh-CN")
        assert mpl.rcParams["font.family"][-1] == chinese_font()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            draw("tanh 在 x = 1 处的前向差分")
    with mpl.rc_context(), pytest.warns(UserWarning, match="missing from font"):
        draw("前向差分")  # the check can fail: without the CJK font the glyphs are missing


def test_without_a_chinese_font_a_figure_prints_no_warning(monkeypatch):
    """A machine without a CJK font (Colab, a bare Linux) draws boxes, but a cell's output stays
    the same as on a machine with one: matplotlib's missing-glyph warnings are silenced."""
    monkeypatch.setattr("coursekit.fonts.chinese_font", lambda: None)
    with mpl.rc_context(), warnings.catch_warnings():
        warnings.simplefilter("error")
        before = list(mpl.rcParams["font.family"])
        use_fonts_for("zh-CN")
        assert list(mpl.rcParams["font.family"]) == before
        draw("前向差分")

"""Figures in the notebook's language: Chinese labels need a font that has the characters.

`use_fonts_for(language)` (each chapter with figures calls it once, with `check.language()`)
does nothing for English; for Chinese it puts the first CJK font this machine has behind
matplotlib's own font family, so Latin text draws as before and each Chinese character falls
back to the CJK font (matplotlib draws each glyph from the first family of `font.family` whose
font has it): Microsoft YaHei or SimHei on Windows, PingFang SC or Hiragino Sans GB on macOS, Noto
Sans CJK SC or WenQuanYi on Linux (`apt-get install fonts-noto-cjk`). A font installed after
matplotlib wrote its font cache is found by its file. Without any, a figure's Chinese shows as
boxes (README.zh-CN.md says which font to install), and matplotlib's warning for each missing
glyph is silenced, so a cell's output does not depend on the fonts a machine has.
"""

from __future__ import annotations

import warnings
from pathlib import Path

CJK_FONTS = (
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "Microsoft YaHei",
    "SimHei",
    "PingFang SC",
    "Hiragino Sans GB",
    "Heiti SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Noto Sans SC",
)
# File names of those fonts, for one installed after matplotlib's cache was written.
CJK_FILES = ("NotoSansCJK", "SourceHanSans", "msyh", "simhei", "PingFang", "Hiragino", "wqy")


def chinese_font() -> str | None:
    """The first of CJK_FONTS that matplotlib can use here, or None."""
    from matplotlib import font_manager

    def known() -> set[str]:
        return {font.name for font in font_manager.fontManager.ttflist}

    if not known() & set(CJK_FONTS):
        for path in font_manager.findSystemFonts():
            if any(part.lower() in Path(path).name.lower() for part in CJK_FILES):
                font_manager.fontManager.addfont(path)
    names = known()
    return next((name for name in CJK_FONTS if name in names), None)


def use_fonts_for(language: str | None) -> None:
    """Make matplotlib draw `language`'s labels (returns nothing: a notebook's last line shows
    no machine-dependent font name; `chinese_font()` says which)."""
    if not language or not language.lower().startswith("zh"):
        return
    import matplotlib as mpl

    font = chinese_font()
    if font is None:
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
        return
    families = list(mpl.rcParams["font.family"])
    if font and font not in families:
        mpl.rcParams["font.family"] = [*families, font]

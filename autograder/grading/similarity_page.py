"""similarity.html: the similarity report's most alike pairs, each answer beside the other.

One self-contained page (its style inline, no script, nothing fetched), so it opens from the
folder it was written to, offline, and shows nothing a student wrote as markup: every piece
of submitted text (code, and the names taken from file names) goes through html.escape.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autograder.grading.similarity import Pair, Report

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 110em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
mark { background: #ffd76e; }
.note { background: #eef4ff; padding: 0.6em 1em; border-left: 4px solid #4a7bd0; }
"""


def page(report: Report, top: int) -> str:
    """The whole page: what it is (and is not), the ranking, then the top pairs' code."""
    shown = report.pairs[:top]
    code = {(entry.name, ex): text for entry in report.entries for ex, text in entry.code.items()}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Similar exercise code, chapter {_e(report.chapter)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Similar exercise code, chapter {_e(report.chapter)}</h1>",
        _introduction(report, len(shown)),
        _ranking(shown),
        *(_side_by_side(rank, pair, code) for rank, pair in enumerate(shown, 1)),
        _not_compared(report),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _introduction(report: Report, shown: int) -> str:
    from autograder.grading.similarity import NOISE

    medians = ", ".join(
        f"{_e(exercise)} {median:.0%}" for exercise, median in report.medians.items()
    )
    templates = ", ".join(_e(str(path)) for path in report.template.notebooks)
    return (
        '<p class="note">This is a list of answers to read side by side, not a finding of '
        "copying. Answers to a short exercise can coincide by themselves, and students may "
        "work together where the course allows it. Read both answers, and what you know of "
        "the students, before drawing any conclusion.</p>"
        f"<p>Each exercise's answers were compared in pairs with copydetect (winnowing, as "
        f"MOSS does: names and comments do not count; runs shorter than {NOISE} tokenized "
        f"characters are ignored), after removing every piece of the handed-out notebook "
        f"({templates}). <em>Similarity</em> is the smaller of the two answers' shares of "
        f"their own code found in the other; the median pair of each exercise: {medians}. "
        f"{len(report.pairs)} pair(s) share anything; the {shown} most alike are shown "
        "below, and similarity.csv beside this page lists them all.</p>"
    )


def _ranking(pairs: list[Pair]) -> str:
    if not pairs:
        return "<p>No two answers share code beyond the handed-out notebook.</p>"
    head = (
        "<tr><th>#</th><th>submission a</th><th>submission b</th><th>exercise</th>"
        "<th>similarity</th><th>share of a</th><th>share of b</th><th>shared tokens</th></tr>"
    )
    rows = [
        f'<tr><td class="n"><a href="#pair-{rank}">{rank}</a></td><td>{_e(p.a)}</td>'
        f'<td>{_e(p.b)}</td><td>{_e(p.exercise)}</td><td class="n">{p.score:.0%}</td>'
        f'<td class="n">{p.score_a:.0%}</td><td class="n">{p.score_b:.0%}</td>'
        f'<td class="n">{p.shared}</td></tr>'
        for rank, p in enumerate(pairs, 1)
    ]
    return "<table>" + head + "".join(rows) + "</table>"


def _side_by_side(rank: int, pair: Pair, code: dict[tuple[str, str], str]) -> str:
    sides = [
        f"<div><h3>{_e(name)}</h3><pre>{highlighted(code[name, pair.exercise], spans)}</pre></div>"
        for name, spans in ((pair.a, pair.slices_a), (pair.b, pair.slices_b))
    ]
    return (
        f'<h2 id="pair-{rank}">{rank}. {_e(pair.exercise)}: {pair.score:.0%} '
        f"(marked: the code found in both)</h2>"
        f'<div class="side">{"".join(sides)}</div>'
    )


def highlighted(code: str, spans: tuple[tuple[int, int], ...]) -> str:
    """The code escaped, each shared span inside <mark>; spans out of order or overlapping
    are clipped, never trusted to be well formed."""
    parts, cursor = [], 0
    for start, end in sorted(spans):
        start, end = max(start, cursor), min(end, len(code))
        if start >= end:
            continue
        parts += [_e(code[cursor:start]), "<mark>", _e(code[start:end]), "</mark>"]
        cursor = end
    parts.append(_e(code[cursor:]))
    return "".join(parts)


def _not_compared(report: Report) -> str:
    skipped = [entry for entry in report.entries if entry.problem]
    if not skipped:
        return ""
    items = "".join(f"<li>{_e(entry.name)}: {_e(entry.problem)}</li>" for entry in skipped)
    return f"<h2>Not compared ({len(skipped)})</h2><ul>{items}</ul>"


def _e(text: str) -> str:
    return html.escape(text, quote=True)

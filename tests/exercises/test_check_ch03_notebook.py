"""Chapter 03's notebooks say nothing their outputs contradict, and set each exercise as
Goal / Given / Return / Checked by.

Section 6 times three fixes. A learner copy once stored a table where reshape was the slowest
(15.9 ms against unbroadcast's 8.4 ms) and printed "fastest in this run: unbroadcast" under a
conclusion to reach for reshape. Now the cell's sentence about time is chosen from the numbers it
prints, and the tests below run that cell on such a table and read every stored copy.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from coursekit.fixes import FIXES, Measurement

ROOT = Path(__file__).resolve().parents[2]
STEM = "03_unbroadcasting.ipynb"
NOTEBOOKS = [
    ROOT / "solutions" / STEM,
    ROOT / "course" / STEM,
    ROOT / "solutions" / "zh-CN" / STEM,
    ROOT / "course" / "zh-CN" / STEM,
]
TABLE_CELL, SUMMARY_CELL = "769e8fa8", "98352e50"

# The table a learner copy stored (course/zh-CN, 2026-11-26): fix, batch, ms, peak KiB, KiB
# beyond the output. Reshape is the slowest at the largest batch.
RESHAPE_SLOWEST = """
       tile     16      0.033       21.9               17.9
    reshape     16      0.012        5.5                1.5
unbroadcast     16      0.023       13.6                9.6
       tile    128      0.091      161.9              129.9
    reshape    128      0.027       33.5                1.5
unbroadcast    128      0.085       97.6               65.6
       tile   1024      0.549     1281.9             1025.9
    reshape   1024      0.115      257.5                1.5
unbroadcast   1024      0.484      769.6              513.6
       tile   8192     10.659    10242.1             8194.1
    reshape   8192     15.949     2049.5                1.5
unbroadcast   8192      8.366     6145.6             4097.6
"""


def cells(path: Path) -> dict[str, nbformat.NotebookNode]:
    return {cell.id: cell for cell in nbformat.read(path, as_version=4).cells}


def stdout(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


def parse_table(text: str) -> list[Measurement]:
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 5 and fields[0] in FIXES:
            name, batch, ms, peak, work = fields
            seconds = float(ms) / 1e3
            rows.append(
                Measurement(
                    name, int(batch), seconds, *(round(float(v) * 1024) for v in (peak, work))
                )
            )
    return rows


def run_summary(rows: list[Measurement]) -> str:
    """What the solution notebook's summary cell prints for these measurements."""
    source = cells(ROOT / "solutions" / STEM)[SUMMARY_CELL].source
    printed: list[str] = []
    namespace = {
        "rows": rows,
        "FIXES": FIXES,
        "print": lambda *a, **k: printed.append(" ".join(map(str, a))),
    }
    exec(compile(source, "summary cell", "exec"), namespace)
    return "\n".join(printed)


def fastest_line(text: str, start: str = "Fastest in this run: ") -> str:
    lines = [line for line in text.splitlines() if line.startswith(start)]
    assert len(lines) == 1, text
    return lines[0]


def test_a_run_where_reshape_is_slowest_says_so_instead_of_what_the_counts_predict():
    rows = parse_table(RESHAPE_SLOWEST)
    line = fastest_line(run_summary(rows))
    assert line.startswith("Fastest in this run: unbroadcast, not reshape, against what the counts")
    assert "as the counts above predict." not in run_summary(rows)


def test_a_run_where_reshape_is_fastest_says_the_counts_predicted_it():
    rows = [
        Measurement(
            r.fix,
            r.batch,
            r.seconds / 100 if r.fix == "reshape" else r.seconds,
            r.peak_bytes,
            r.work_bytes,
        )
        for r in parse_table(RESHAPE_SLOWEST)
    ]
    assert (
        fastest_line(run_summary(rows))
        == "Fastest in this run: reshape, as the counts above predict."
    )


# What the summary cell prints, in each edition: the start of the sentence naming the fastest
# fix, its comma, the words of a run that contradicts the counts, the lead-in to the ratios
# and one ratio (the Chinese edition's words come from translations/zh-CN/03_unbroadcasting.md).
SUMMARY_WORDS = {
    "en": (
        "Fastest in this run: ",
        ",",
        "not reshape",
        r"relative to reshape: (.*)",
        r"(\w+) ([\d.]+)x",
    ),
    "zh-CN": (
        "这次运行中最快的是 ",
        "，",
        "而不是 reshape",
        r"是 reshape 的多少倍：(.*)",
        r"(\w+) ([\d.]+) 倍",
    ),
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_stored_time_sentence_agrees_with_the_table_above_it(path):
    notebook = cells(path)
    language = nbformat.read(path, as_version=4).metadata["course"]["language"]
    fastest_words, comma, contradicted, lead_in, ratio = SUMMARY_WORDS[language]
    rows = parse_table(stdout(notebook[TABLE_CELL]))
    assert len(rows) == 4 * len(FIXES), stdout(notebook[TABLE_CELL])
    largest = max(r.batch for r in rows)
    times = {r.fix: r.seconds for r in rows if r.batch == largest}
    summary = stdout(notebook[SUMMARY_CELL])
    fastest = min(times, key=times.get)
    line = fastest_line(summary, fastest_words)
    assert line.startswith(f"{fastest_words}{fastest}{comma}"), (line, times)
    assert (contradicted in line) == (fastest != "reshape"), line
    ratios = re.search(lead_in, summary).group(1)
    printed_ratios = re.findall(ratio, ratios)
    assert {name for name, _ in printed_ratios} == set(FIXES), ratios
    for name, printed in printed_ratios:
        assert float(printed) == pytest.approx(times[name] / times["reshape"], rel=0.02, abs=0.01)


def test_the_measuring_cells_time_on_one_thread_and_keep_the_fastest_round():
    notebook = cells(ROOT / "solutions" / STEM)
    assert "fastest ms" in notebook[TABLE_CELL].source
    prose = "\n".join(c.source for c in notebook.values() if c.cell_type == "markdown")
    assert "numpy's BLAS is held to one thread" in prose
    assert "median" not in prose


def statement(notebook: list, exercise: str) -> str:
    """The markdown that sets `exercise`: every markdown cell since the previous code cell."""
    index = next(
        i
        for i, c in enumerate(notebook)
        if c.cell_type == "code" and f"def {exercise}(" in c.source
    )
    text = []
    for cell in reversed(notebook[:index]):
        if cell.cell_type != "markdown":
            break
        text.insert(0, cell.source)
    return "\n".join(text)


@pytest.mark.parametrize("exercise", ["unbroadcast", "matmul_vjp"])
@pytest.mark.parametrize(
    ("path", "headings"),
    [
        (ROOT / "solutions" / STEM, ["**Goal.**", "**Given.**", "**Return.**", "**Checked by.**"]),
        (
            ROOT / "solutions" / "zh-CN" / STEM,
            ["**目标。**", "**已知。**", "**返回。**", "**检查方式。**"],
        ),
    ],
    ids=["en", "zh-CN"],
)
def test_each_exercise_is_set_as_goal_given_return_checked_by(path, headings, exercise):
    text = statement(nbformat.read(path, as_version=4).cells, exercise)
    places = [text.find(heading) for heading in headings]
    assert all(place >= 0 for place in places) and places == sorted(places), (exercise, text)
    assert f"check.{exercise}({exercise})" in text[places[-1] :]


def test_outside_names_are_linked_at_first_mention_and_no_reference_is_anonymous():
    notebook = nbformat.read(ROOT / "solutions" / STEM, as_version=4).cells
    prose = "\n".join(c.source for c in notebook if c.cell_type == "markdown")
    prose = re.sub(r"<!-- badges:start -->.*?<!-- badges:end -->", "", prose, flags=re.S)
    for name in ("TensorFlow.js", "Node.js"):
        match = re.search(rf"(?<![\w.]){re.escape(name)}(?![\w.])", prose)
        assert match, name
        around = prose[match.start() - 1 : match.end() + 10]
        assert re.match(rf"\[{re.escape(name)}\]\(https?://", around), around
    assert not re.search(r"a forum|well-known|every textbook|a Q&A", prose, flags=re.I)

"""The course as a learner uses it: JupyterLab in a real (headless) Chromium.

Starts JupyterLab on localhost in a temporary folder holding chapter 00's learner notebook as
course/ holds it before execution (no outputs, so whatever renders comes from this run). In the
browser it runs all cells, checks that the check reports render (the unanswered exercise and the
failing example), moves the widget's slider and watches its text follow, then types the answer
into the exercise cell, runs it and its check, and waits for the green PASSED report.
Then a second notebook, made of chapter 02's own cells, shows the backward-pass stepper at
step 0 and step 1, and `check.progress()` over the folder, where chapters 01-07 are the
solution notebooks (all passed, from their saved outputs) and chapter 00 is unanswered. Last,
chapter 00's Chinese learner copy runs, and its check reports must read in Chinese.

Screenshots go to test-artifacts/browser/ (with JupyterLab's log). Needs Playwright for Python
(pinned in requirements.txt) and a Chromium: the system's (/usr/bin/chromium, or the binary
COURSE_CHROMIUM names) or one Playwright has already downloaded. Without a browser the test is
skipped, naming the command that installs one, unless COURSE_REQUIRE_BROWSER=1 (set by .ci/run,
which installs chromium): then a missing browser fails, so CI never skips this test.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from autograder.authoring.notebooks import BEGIN, END, learner_copy
from tests import warm_kernels

pytestmark = pytest.mark.e2e  # JupyterLab in headless Chromium

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))
REQUIRE_BROWSER = os.environ.get("COURSE_REQUIRE_BROWSER") == "1"
INSTALL_BROWSER = "apt-get install -y chromium"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
NOTEBOOK = "00_start_here.ipynb"
EXERCISE = "warmup_cube_vjp"
VIEWS = "browser_views.ipynb"  # not a chapter name: progress() does not list it
TAPE_CHAPTER = "02_reverse_mode_tape.ipynb"
STEPPER = "display(step_through(out, toposort, backward))"
STEP_0 = "step 0: only the root holds a cotangent"
STEP_1 = "step 1: v6 (add) holds 1. -> v3 += 1., v5 += 1."
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# No news or update checks: they would reach for the web (absent here) and cover the page.
QUIET_NOTIFICATIONS = {"fetchNews": "false", "checkForUpdates": False}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_server(url: str, server: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(
                f"JupyterLab exited with code {server.returncode} before it was ready; "
                f"see {ARTIFACTS / 'jupyterlab.log'}"
            )
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"JupyterLab did not answer {url.split('?')[0]} within {timeout:.0f} s")


def _artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(autouse=True)
def _fresh_artifacts():
    """Screenshots from an earlier run must not pass for this run's."""
    shutil.rmtree(ARTIFACTS, ignore_errors=True)


def _solution_notebook() -> nbformat.NotebookNode:
    return nbformat.read(ROOT / "solutions" / NOTEBOOK, as_version=4)


def _write_learner_copy(folder: Path) -> None:
    """What course/ holds before it is executed (the pipeline's own learner_copy; check-sync
    keeps course/ equal to it): no outputs, so the browser shows only this run's."""
    notebook = learner_copy(_solution_notebook(), NOTEBOOK)
    notebook.metadata.pop("widgets", None)
    nbformat.write(notebook, folder / NOTEBOOK)


def _engine_cells(notebook: nbformat.NotebookNode) -> list[str]:
    """Chapter 02's code from its imports to the stepper (the engine the learner writes, the
    trap graph), without its check and prediction cells."""
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    start = next(i for i, source in enumerate(code) if source.startswith("import os"))
    end = next(i for i, source in enumerate(code) if STEPPER in source)
    return [
        source
        for source in code[start : end + 1]
        if not source.startswith(("check.", "prediction ="))
    ]


def _write_chinese_copy(folder: Path) -> None:
    """Chapter 00's Chinese learner copy, unexecuted, as the build makes it (check-sync keeps
    course/zh-CN equal to it), in the folder zh-CN/ beside the English one."""
    from autograder.authoring import translations

    edition = next(e for e in translations.editions(ROOT) if e.source.name == NOTEBOOK)
    notebook = learner_copy(translations.edition_notebook(ROOT, edition), NOTEBOOK)
    notebook.metadata.pop("widgets", None)
    (folder / "zh-CN").mkdir()
    nbformat.write(notebook, folder / "zh-CN" / NOTEBOOK)


def _write_views(folder: Path) -> None:
    """The stepper from chapter 02's own cells, and the progress view, in one small notebook;
    beside it chapters 01-07 as solved (saved outputs: all passed) for progress() to read."""
    chapter = nbformat.read(ROOT / "solutions" / TAPE_CHAPTER, as_version=4)
    cells = [*_engine_cells(chapter), "check.progress()"]
    views = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    views.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
    }
    nbformat.write(views, folder / VIEWS)
    for solved in sorted((ROOT / "solutions").glob("0[1-7]_*.ipynb")):
        shutil.copy(solved, folder / solved.name)


def _write_quiet_settings(settings: Path) -> None:
    target = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(QUIET_NOTIFICATIONS))


def _solution_source() -> str:
    """What the learner types: the solution's exercise cell without its solution markers."""
    source = next(
        cell.source
        for cell in _solution_notebook().cells
        if cell.cell_type == "code" and cell.source.startswith(f"def {EXERCISE}(")
    )
    return "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN, END))


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on localhost serving the learner copy of chapter 00.

    Yields (base URL, token). The server's log is copied to the artifacts folder afterwards.
    """
    served = tmp_path / "served"
    served.mkdir()
    _write_learner_copy(served)
    _write_chinese_copy(served)
    _write_views(served)
    _write_quiet_settings(tmp_path / "settings")
    port, token = _free_port(), secrets.token_hex(16)
    log_path = tmp_path / "jupyterlab.log"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    # Its kernels forked from this worker's server where it has one (started as a fresh one
    # would be, tests/warm_kernels.py; COURSE_COLD_KERNELS=1 for fresh ones): what is tested
    # here is JupyterLab and the notebook in the browser, not TensorFlow's import.
    env = warm_kernels.with_warm_python3(env)
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={served}",
        "--LabApp.expose_app_in_browser=True",
        f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
        f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
        "--ServerApp.terminals_enabled=False",
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            command, cwd=served, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            _wait_for_server(f"http://127.0.0.1:{port}/api/status?token={token}", server, 60)
            yield f"http://127.0.0.1:{port}", token
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=5)
            shutil.copy(log_path, _artifacts() / "jupyterlab.log")


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "Playwright for Python is not installed: pip install -r requirements.txt "
            f"(it needs a Chromium too: {INSTALL_BROWSER})"
        )
    return sync_playwright


def _playwright_browser(sync_playwright) -> Path | None:
    """The Chromium Playwright has downloaded (`playwright install chromium`), if any."""
    with sync_playwright() as playwright:
        path = Path(playwright.chromium.executable_path)
    return path if path.is_file() else None


def _find_browser(sync_playwright) -> Path | None:
    if CHROMIUM.is_file():
        return CHROMIUM
    if "COURSE_CHROMIUM" in os.environ:  # named on purpose: do not quietly use another
        pytest.fail(f"COURSE_CHROMIUM={CHROMIUM} is not a file: point it at a Chromium binary")
    return _playwright_browser(sync_playwright)


@pytest.fixture
def browser_binary():
    """(sync_playwright, Chromium path). Before the lab fixture, so a skip starts no server."""
    sync_playwright = _playwright()
    found = _find_browser(sync_playwright)
    if found is None:
        message = (
            f"no Chromium for the browser test: install one with `{INSTALL_BROWSER}` "
            "(Debian/Ubuntu, as root), or set COURSE_CHROMIUM to a Chromium binary"
        )
        if REQUIRE_BROWSER:
            pytest.fail(f"{message}; COURSE_REQUIRE_BROWSER=1 forbids skipping it")
        pytest.skip(message)
    return sync_playwright, found


def _wait_for_idle_kernel(page) -> None:
    page.wait_for_function(
        "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel;"
        " return k && k.status === 'idle'; }",
        timeout=60_000,
    )


# Records every "checking ...: N cases…" line the page shows, however briefly.
WATCH_WAITING_JS = """() => {
  window.waitingLines = [];
  new MutationObserver(() => {
    for (const e of document.querySelectorAll('.autograder-waiting')) {
      if (!window.waitingLines.includes(e.innerText)) window.waitingLines.push(e.innerText);
    }
  }).observe(document.body, {childList: true, subtree: true, characterData: true});
}"""


def _run_all_and_read_reports(page, shots: Path) -> list[str]:
    page.evaluate(WATCH_WAITING_JS)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    reports = page.locator(".jp-OutputArea-output .autograder-report")
    try:
        reports.nth(1).wait_for(state="attached", timeout=120_000)
    finally:
        page.screenshot(path=str(shots / "02-ran-all.png"), full_page=True)
    reports.first.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "03-reports.png"))
    return reports.all_inner_texts()


# Every word of the element's text whose letters land on more than one line (hyphens and
# slashes are allowed break points, so they separate words here).
SPLIT_WORDS_JS = """(element) => {
  const split = [];
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    for (const match of node.data.matchAll(/[^\\s\\-\\/]+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const tops = new Set([...range.getClientRects()].filter(r => r.width > 0)
                           .map(r => Math.round(r.top)));
      if (tops.size > 1) split.push(match[0]);
    }
  }
  return split;
}"""


def _failed_report_splits_no_word(page, shots: Path) -> None:
    """At a narrow width, where the hint must wrap, no word of the FAILED report is split."""
    page.set_viewport_size({"width": 720, "height": 1000})
    report = page.locator(".autograder-report", has_text="FAILED forgets_the_cotangent").first
    report.scroll_into_view_if_needed()
    page.wait_for_timeout(500)  # let the notebook re-lay out at the new width
    report.screenshot(path=str(shots / "03b-failed-report.png"))
    hint = report.locator(".autograder-prose").first
    lines = hint.evaluate(
        "e => { const r = document.createRange(); r.selectNodeContents(e);"
        " return new Set([...r.getClientRects()]"
        ".map(x => Math.round(x.top))).size; }"
    )
    assert lines >= 2, "the hint does not wrap at this width: the check would prove nothing"
    assert report.evaluate(SPLIT_WORDS_JS) == []
    page.set_viewport_size({"width": 1280, "height": 1000})


def _move_slider_right(page, shots: Path) -> None:
    readout = page.locator(".widget-html-content", has_text="x = ")
    readout.wait_for(timeout=60_000)
    assert "x = 3, x**2 = 9, d(x**2)/dx = 6" in readout.inner_text()
    handle = page.locator(".widget-slider .noUi-handle").first
    handle.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "04-widget-before.png"))
    handle.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.widget-html-content')]"
        ".some(e => e.innerText.includes('x = 4, x**2 = 16, d(x**2)/dx = 8'))",
        timeout=30_000,
    )
    page.screenshot(path=str(shots / "05-widget-after.png"))


def _answer_the_exercise(page, shots: Path) -> str:
    """Type the answer into the exercise cell, run it and its check cell; return the report."""
    cell = page.locator(".jp-CodeCell", has_text=f"def {EXERCISE}(").first
    cell.scroll_into_view_if_needed()
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(_solution_source())  # no key events: no auto-indent or brackets
    page.keyboard.press("Shift+Enter")  # runs the exercise cell, selects the check cell
    page.keyboard.press("Shift+Enter")  # runs the check cell
    passed = page.locator(".autograder-report", has_text=f"PASSED {EXERCISE}")
    passed.wait_for(timeout=120_000)
    passed.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "06-answered.png"))
    passed.screenshot(path=str(shots / "06b-passed-report.png"))
    # "checking ...: N cases…" was shown while it ran; it is gone now that the report is here.
    assert page.locator(".autograder-waiting").count() == 0
    return passed.inner_text()


def _open_views(page, base: str, token: str) -> None:
    page.goto(f"{base}/lab/tree/{VIEWS}?token={token}", timeout=60_000)
    page.wait_for_function(  # the views notebook, not chapter 00, is the one in front
        "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        f" return w && w.context && w.context.path === '{VIEWS}'; }}",
        timeout=60_000,
    )
    _wait_for_idle_kernel(page)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")


def _stepper_at_steps_0_and_1(page, shots: Path) -> None:
    """The caption follows the slider, one step at a time (it was once one step ahead)."""
    stepper = page.locator(".widget-vbox", has=page.locator(".widget-slider")).first
    stepper.locator(".jp-OutputArea-output", has_text=STEP_0).wait_for(timeout=120_000)
    assert stepper.locator("img").count() == 1  # the graph is drawn
    assert "step 1" not in stepper.inner_text()
    stepper.scroll_into_view_if_needed()
    stepper.screenshot(path=str(shots / "07-stepper-step-0.png"))
    stepper.locator(".noUi-handle").first.focus()
    page.keyboard.press("ArrowRight")
    stepper.locator(".jp-OutputArea-output", has_text=STEP_1).wait_for(timeout=30_000)
    text = stepper.inner_text()
    assert STEP_0 not in text and "v4 +=" not in text  # v4 gets its cotangent at step 2
    stepper.screenshot(path=str(shots / "08-stepper-step-1.png"))


def _progress_view(page, shots: Path) -> list[str]:
    """The rows of check.progress(): one per exercise, chapter and status."""
    view = page.locator(".autograder-progress")
    view.wait_for(timeout=60_000)
    view.scroll_into_view_if_needed()
    view.screenshot(path=str(shots / "09-progress.png"))
    return view.locator("tbody tr").all_inner_texts()


def _read_a_chinese_chapter(page, base: str, token: str, shots: Path) -> None:
    """The Chinese chapter 00: its prose and its check reports are Chinese, with the same
    exercise and function names as the English ones."""
    # `reset`: a fresh workspace, so the English notebooks opened before are not in the page
    # (their hidden cells and reports would be found too).
    page.goto(f"{base}/lab/tree/zh-CN/{NOTEBOOK}?reset&token={token}", timeout=60_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell >> visible=true", timeout=60_000)
    _wait_for_idle_kernel(page)
    heading = page.locator(".jp-RenderedMarkdown h1").first.inner_text()
    assert heading.startswith("00") and re.search("[\u4e00-\u9fff]", heading), heading
    texts = _run_all_and_read_reports(page, shots)
    page.screenshot(path=str(shots / "10-chinese-reports.png"), full_page=True)
    assert any(t.startswith(f"尚未作答 {EXERCISE}") for t in texts), texts
    assert any(t.startswith("未通过 forgets_the_cotangent") for t in texts), texts
    assert all(re.search("[\u4e00-\u9fff]", t) for t in texts), texts


def test_chapter_00_runs_in_jupyterlab_in_chromium(browser_binary, lab):
    sync_playwright, chromium = browser_binary
    base, token = lab
    shots = _artifacts()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(chromium), headless=True, args=CHROMIUM_ARGS, timeout=30_000
        )
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(30_000)
        try:
            page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}", timeout=60_000)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            _wait_for_idle_kernel(page)
            page.screenshot(path=str(shots / "01-opened.png"))

            texts = _run_all_and_read_reports(page, shots)
            assert any(t.startswith(f"NOT ANSWERED YET {EXERCISE}") for t in texts), texts
            assert any(t.startswith("FAILED forgets_the_cotangent") for t in texts), texts
            assert any("did not multiply by the incoming cotangent g" in t for t in texts), texts
            waiting = page.evaluate("window.waitingLines")
            assert any(re.fullmatch(r"checking \w+: \d+ cases…", w) for w in waiting), waiting
            _failed_report_splits_no_word(page, shots)

            _move_slider_right(page, shots)

            assert "matches jax.vjp and tf.GradientTape" in _answer_the_exercise(page, shots)

            _open_views(page, base, token)
            _stepper_at_steps_0_and_1(page, shots)
            rows = _progress_view(page, shots)
            chapters = {row.split()[0] for row in rows}
            assert chapters == {f"{n:02d}" for n in range(8)}, rows
            assert all("passed" in row for row in rows if not row.startswith("00")), rows
            assert any(row.startswith("00") and "not answered" in row for row in rows), rows

            _read_a_chinese_chapter(page, base, token, shots)
        except Exception:
            page.screenshot(path=str(shots / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()

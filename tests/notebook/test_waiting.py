"""While a check runs in a notebook, the cell says "checking unbroadcast: 31 cases…", and the
line is gone when the report comes."""

from __future__ import annotations

import os
import queue
from pathlib import Path

import pytest

from autograder import check
from autograder.exercises import EXERCISES
from autograder.judging.engine import notebook_case_count
from autograder.notebook import waiting

from ..answers import unbroadcast

ROOT = Path(__file__).resolve().parents[2]


class Recorder:
    """A stand-in for IPython's `display`: records what the cell would show, in order."""

    def __init__(self):
        self.shown: list[tuple[str, dict]] = []

    def __call__(self, data, *, raw, display_id):
        assert raw and display_id
        self.shown.append(("display", data))
        return self

    def update(self, data, *, raw):
        assert raw
        self.shown.append(("update", data))


def test_a_check_shows_its_real_case_count_then_clears_it(monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(waiting, "kernel_display", lambda: recorder)
    report = check.unbroadcast(unbroadcast)
    assert report.passed
    texts = [data.get("text/plain") for _, data in recorder.shown]
    assert texts == [None, f"checking unbroadcast: {report.cases_checked} cases…", None]
    assert [kind for kind, _ in recorder.shown] == ["display", "update", "update"]
    assert recorder.shown[0][1] == {} and recorder.shown[-1][1] == {}
    assert "autograder-waiting" in recorder.shown[1][1]["text/html"]


def test_the_line_is_cleared_when_the_check_raises():
    recorder = Recorder()
    with pytest.raises(RuntimeError), waiting.waiting("checking x: 3 cases…", recorder):
        raise RuntimeError("a reference disagreement, say")
    assert recorder.shown[-1] == ("update", {})


def test_outside_a_kernel_nothing_is_shown(capsys):
    assert waiting.kernel_display() is None  # pytest is plain python, not a Jupyter kernel
    assert check.unbroadcast(unbroadcast).passed
    assert capsys.readouterr().out == ""


def test_the_count_is_the_number_of_cases_the_check_runs():
    exercise = EXERCISES["matmul_vjp"]
    assert notebook_case_count(exercise) == check.matmul_vjp(lambda g, a, b: None).cases_checked


def _iopub_until_idle(client, msg_id):
    messages = []
    while True:
        try:
            msg = client.get_iopub_msg(timeout=120)
        except queue.Empty:
            pytest.fail(f"no idle from the kernel; got {[m['msg_type'] for m in messages]}")
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return messages
        messages.append(msg)


def test_a_real_kernel_gets_an_empty_output_updated_to_the_line_and_back():
    """What JupyterLab receives: display_data {} (with a display id), the line as an update,
    {} again, then the report as the cell's result. nbval ignores updates and compares no
    mime type of an empty output, so stored notebooks are unchanged."""
    from jupyter_client.manager import start_new_kernel

    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(ROOT))
    try:
        code = (
            "from autograder import check\n"
            "def unbroadcast(g, shape):\n"
            "    return g\n"
            "check.unbroadcast(unbroadcast)\n"
        )
        messages = _iopub_until_idle(client, client.execute(code))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    outputs = [
        m
        for m in messages
        if m["msg_type"] in ("display_data", "update_display_data", "execute_result")
    ]
    kinds = [m["msg_type"] for m in outputs]
    assert kinds == [
        "display_data",
        "update_display_data",
        "update_display_data",
        "execute_result",
    ], kinds
    display_ids = {m["content"]["transient"]["display_id"] for m in outputs[:3]}
    assert len(display_ids) == 1
    count = notebook_case_count(EXERCISES["unbroadcast"])
    assert outputs[0]["content"]["data"] == {} == outputs[2]["content"]["data"]
    assert outputs[1]["content"]["data"]["text/plain"] == f"checking unbroadcast: {count} cases…"
    assert outputs[3]["content"]["data"]["text/plain"].startswith("FAILED unbroadcast")

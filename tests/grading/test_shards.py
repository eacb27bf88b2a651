"""A batch graded in shards, as a Kubernetes Indexed Job or a Slurm array grades it, and merged.

The shards run as local processes, each with its index in the environment as the engine sets
it; their merge must be the gradebook of one run over the whole batch (scores, feedback and
results alike; only the times differ). Merge must refuse, saying what to do, whatever would
not give that gradebook, and never lose a result. The shipped Job manifests are validated
against the Kubernetes schema, offline (kubernetes-validate bundles it).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import nbformat
import pytest
import yaml

from autograder.grading import cache_folders, shards
from autograder.grading.merge import merge

from ..submissions import CHINESE_COPY, LEARNER_COPY, ROOT, VARIANTS, fill

pytestmark = pytest.mark.e2e  # the grade command through the sandbox, in other processes

SEED = "11"
SHARDS = 3
DEPLOY = ROOT / "deploy"


def write_batch(folder: Path) -> None:
    """Six chapter-03 notebooks: right, wrong in different ways, Chinese, unreadable."""
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    for name in ("good", "forgets_keepdims", "syntax_error", "returns_nan"):
        unbroadcast, matmul, extra, _ = VARIANTS[name]
        nbformat.write(fill(learner, unbroadcast, matmul, extra), folder / f"{name}.ipynb")
    chinese = nbformat.read(CHINESE_COPY, as_version=4)
    unbroadcast, matmul, extra, _ = VARIANTS["good"]
    nbformat.write(fill(chinese, unbroadcast, matmul, extra), folder / "zh_good.ipynb")
    (folder / "invalid_json.ipynb").write_text('{"cells": [ not json')


def grade(paths: list[Path], out: Path, cache: Path, *extra: str, env=None) -> subprocess.Popen:
    command = [sys.executable, "-m", "autograder", "grade", *map(str, paths), "--out", str(out)]
    command += ["--seed", SEED, "--assignment", "03", "--jobs", "1", "--timeout", "20", *extra]
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", cache_folders.ENV: str(cache)}
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={**environment, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finished(process: subprocess.Popen) -> tuple[int, str]:
    output, _ = process.communicate(timeout=600)
    return process.returncode, output


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The batch graded once whole, then as SHARDS processes at once, each told its index
    by JOB_COMPLETION_INDEX and the count by AUTOGRADER_SHARDS, as the Job's pods are."""
    folder = tmp_path_factory.mktemp("submissions")
    write_batch(folder)
    paths = sorted(folder.glob("*.ipynb"))
    base = tmp_path_factory.mktemp("graded")
    cache = tmp_path_factory.mktemp("references")
    whole = finished(grade(paths, base / "whole", cache))
    assert whole[0] == 0, whole[1]
    running = [
        grade(
            paths,
            base / f"shard-{index}",
            cache,
            env={"JOB_COMPLETION_INDEX": str(index), shards.COUNT_VARIABLE: str(SHARDS)},
        )
        for index in range(SHARDS)
    ]
    for process in running:
        code, output = finished(process)
        assert code == 0, output
    parts = [base / f"shard-{index}" for index in range(SHARDS)]
    return {"paths": paths, "whole": base / "whole", "shards": parts, "base": base}


def rows(gradebook: Path) -> list[dict[str, str]]:
    """The gradebook's rows without what timing decides: the seconds and the slow notes."""
    with gradebook.open(encoding="utf-8", newline="") as file:
        table = list(csv.DictReader(file))
    for row in table:
        del row["seconds"]
        notes = row["review"].split("; ")
        row["review"] = "; ".join(note for note in notes if not note.startswith("slow: "))
    return table


def results_without_time(path: Path) -> dict:
    results = json.loads(path.read_text(encoding="utf-8"))
    results.pop("execution_time")
    return results


def folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def test_shards_merge_into_the_gradebook_of_one_run(graded, tmp_path):
    out = tmp_path / "merged"
    assert merge(out=out, shards=list(reversed(graded["shards"]))) == 0
    whole = graded["whole"]
    assert rows(out / "grades.csv") == rows(whole / "grades.csv")
    folders = sorted(p.name for p in whole.iterdir() if p.is_dir())
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == folders
    assert len(folders) == len(graded["paths"])
    for name in folders:
        assert (out / name / "feedback.txt").read_text(encoding="utf-8") == (
            whole / name / "feedback.txt"
        ).read_text(encoding="utf-8")
        assert results_without_time(out / name / "results.json") == results_without_time(
            whole / name / "results.json"
        )
    scores = {row["submission"]: row["total"] for row in rows(out / "grades.csv")}
    assert scores["002-good"] == "2.0" and scores["003-invalid_json"] == "0.0"


def test_each_submission_is_graded_in_exactly_one_shard(graded):
    records = [json.loads((s / shards.RECORD).read_text()) for s in graded["shards"]]
    positions = sorted(row["position"] for r in records for row in r["submissions"])
    assert positions == list(range(len(graded["paths"])))
    assert [r["shard"] for r in records] == list(range(SHARDS))


def refused(tmp_path: Path, folders: list[Path], out: Path | None = None) -> None:
    """Merge refuses: exit 2, OUT as it was (absent, or unchanged), no shard folder changed."""
    out = out or tmp_path / "merged"
    existed = out.exists()
    before = [folder_digest(f) for f in [*folders, out] if f.is_dir()]
    assert merge(out=out, shards=folders) == 2
    assert out.exists() == existed
    assert [folder_digest(f) for f in [*folders, out] if f.is_dir()] == before


def copies(graded, tmp_path: Path) -> list[Path]:
    copied = [tmp_path / s.name for s in graded["shards"]]
    for source, target in zip(graded["shards"], copied, strict=True):
        shutil.copytree(source, target)
    return copied


def edit_record(folder: Path, **changes) -> None:
    path = folder / shards.RECORD
    record = json.loads(path.read_text())
    record.update(changes)
    path.write_text(json.dumps(record))


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"seed": 12}, "different seeds"),
        ({"assignment": "04"}, "different assignments"),
        ({"grader": "0" * 16}, "different grader versions"),
        ({"timeout": 99.0}, "different time limits"),
        ({"batch": {"size": 6, "fingerprint": "f" * 64}}, "different lists of submissions"),
    ],
)
def test_merge_refuses_shards_of_another_run(graded, tmp_path, capsys, change, said):
    folders = copies(graded, tmp_path)
    edit_record(folders[1], **change)
    refused(tmp_path, folders)
    message = capsys.readouterr().err
    assert said in message and str(folders[1]) in message and "To merge," in message


def test_merge_refuses_a_missing_or_repeated_shard(graded, tmp_path, capsys):
    first, second, _ = graded["shards"]
    refused(tmp_path, [first, second])
    assert f"shard(s) 2/{SHARDS} missing" in capsys.readouterr().err
    refused(tmp_path, [first, second, second])
    assert f"shard 1/{SHARDS} is given more than once" in capsys.readouterr().err


def test_merge_refuses_a_folder_that_is_not_a_finished_shard(graded, tmp_path, capsys):
    refused(tmp_path, [graded["whole"]])
    assert "holds no shard.json" in capsys.readouterr().err
    folders = copies(graded, tmp_path)
    (folders[0] / shards.RECORD).write_text("{not json")
    refused(tmp_path, folders)
    assert "not a shard record" in capsys.readouterr().err


def test_merge_refuses_a_shard_whose_results_are_missing(graded, tmp_path, capsys):
    folders = copies(graded, tmp_path)
    record = json.loads((folders[2] / shards.RECORD).read_text())
    (folders[2] / record["submissions"][0]["stem"] / "results.json").unlink()
    refused(tmp_path, folders)
    assert "lacks" in capsys.readouterr().err


def test_merge_never_overwrites_results(graded, tmp_path, capsys):
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "grades.csv").write_text("an earlier gradebook")
    refused(tmp_path, graded["shards"], out=earlier)
    assert "not an empty folder" in capsys.readouterr().err
    assert (earlier / "grades.csv").read_text() == "an earlier gradebook"
    refused(tmp_path, graded["shards"], out=graded["shards"][0] / "merged")
    assert "inside the shard folder" in capsys.readouterr().err


def test_an_index_without_a_seed_is_refused_before_grading(graded, tmp_path):
    command = [sys.executable, "-m", "autograder", "grade", *map(str, graded["paths"])]
    command += ["--out", str(tmp_path / "out"), "--assignment", "03", "--shard", "0/2"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "needs --seed" in run.stderr
    assert not (tmp_path / "out").exists()


def test_the_shard_comes_from_the_flag_or_the_engine():
    assert shards.resolve("1/4", None, {}) == shards.Shard(1, 4)
    assert shards.resolve(None, None, {"JOB_COMPLETION_INDEX": "2"}) is None
    job = {"JOB_COMPLETION_INDEX": "2", shards.COUNT_VARIABLE: "3"}
    assert shards.resolve(None, None, job) == shards.Shard(2, 3)
    assert shards.resolve(None, 5, {"SLURM_ARRAY_TASK_ID": "4"}) == shards.Shard(4, 5)
    assert shards.resolve("0/2", 5, {"SLURM_ARRAY_TASK_ID": "4"}) == shards.Shard(0, 2)
    assert shards.Shard(1, 3).positions(7) == [1, 4]
    for shard, count, environ in (
        ("4/4", None, {}),  # 0-based: 0/4 to 3/4
        ("one/4", None, {}),
        (None, 3, {}),  # a count, and no index anywhere
        (None, 3, {"SLURM_ARRAY_TASK_ID": "3"}),
        (None, 0, {"SLURM_ARRAY_TASK_ID": "0"}),
    ):
        with pytest.raises(shards.ShardError):
            shards.resolve(shard, count, environ)


# ---------------------------------------------------------------- what an instructor copies


def job_documents() -> list[dict]:
    return [yaml.safe_load(path.read_text()) for path in sorted(DEPLOY.glob("*-job.yaml"))]


@pytest.mark.parametrize("version", ["1.25.0", "1.37.0"])
def test_the_job_manifests_validate_against_the_kubernetes_schema(version):
    documents = job_documents()
    assert len(documents) == 2
    for document in documents:
        kubernetes_validate.validate(document, version, strict=True)


def test_the_grading_job_is_indexed_with_as_many_shards_as_pods():
    grade_job = yaml.safe_load((DEPLOY / "grade-job.yaml").read_text())
    spec = grade_job["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    environment = {item["name"]: item["value"] for item in container["env"]}
    assert spec["completionMode"] == "Indexed"
    assert int(environment[shards.COUNT_VARIABLE]) == spec["completions"] == spec["parallelism"]
    command = " ".join(container["args"])
    assert "--seed" in command and "--assignment" in command and "$JOB_COMPLETION_INDEX" in command


def test_the_slurm_script_and_the_image_are_the_documented_ones():
    script = (DEPLOY / "grade-array.sbatch").read_text()
    assert subprocess.run(["bash", "-n", str(DEPLOY / "grade-array.sbatch")]).returncode == 0
    count = int(next(line for line in script.splitlines() if line.startswith("SHARDS="))[7:])
    assert f"#SBATCH --array=0-{count - 1}\n" in script
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "FROM ubuntu:22.04" in dockerfile  # Gradescope's base image, as its setup.sh expects
    assert "bash /autograder/source/setup.sh" in dockerfile

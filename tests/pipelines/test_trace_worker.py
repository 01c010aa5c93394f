"""The trace-ahead worker process on its own: its protocol (a job per line in, an answer per
job out, in the order traced), the first job traced in the worker and later ones in forked
children, a child that dies answered for, a long error cut to one atomic line, the end of its
input ending it."""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import sys

import pytest

from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load
from dali_gallery.pipelines.trace_ahead import TraceAhead, _environment
from dali_gallery.pipelines.trace_worker import ANSWER, MAX_ERROR, WARM, TraceJob
from tests.support import cpu_engine, preset_dict, sample_arrays

POLICY = [{"op": "rand_augment", "params": {"n": 2, "m": 12}}]
SUICIDE = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"


@pytest.fixture(scope="module")
def code():
    engine = cpu_engine(sample_arrays(2, max_side=48), PipelineCache(None))
    yield engine.code(load(preset_dict(POLICY, seed=5)))
    engine.close()


def _job(key: str, code: str, folder, seed: int = 5) -> TraceJob:
    return TraceJob(key * 40, code, seed, 2, "cpu", 1, True, True, str(folder))


def test_the_worker_answers_each_job_and_exits_when_its_input_ends(code, tmp_path):
    long = "raise ValueError('x' * 5000)\n"
    jobs = [_job("a", code, tmp_path), _job("b", long, tmp_path),
            _job("c", code, tmp_path, seed=6)]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    lines = b"".join(json.dumps(dataclasses.asdict(j)).encode() + b"\n" for j in jobs)
    done = subprocess.run(
        [sys.executable, "-m", "dali_gallery.pipelines.trace_worker", "--children", "2"],
        input=lines, capture_output=True, env=_environment(str(scratch)), timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    answers = {a["key"]: a["error"] for a in (
        json.loads(line[len(ANSWER):]) for line in done.stdout.splitlines()
        if line.startswith(ANSWER))}
    assert set(answers) == {j.key for j in jobs}
    assert answers[jobs[0].key] is None and answers[jobs[2].key] is None
    error = answers[jobs[1].key]
    assert error.startswith("ValueError: xxx") and len(error) == MAX_ERROR
    cache = PipelineCache(tmp_path)
    assert cache.has(jobs[0].key) and cache.has(jobs[2].key) and not cache.has(jobs[1].key)
    assert not list(scratch.iterdir()), "a child left its temporary folder behind"


def test_a_child_killed_mid_trace_is_answered_for(code, tmp_path, caplog):
    """A job's child that dies without answering (killed, crashed) is answered for by the
    worker, with how it ended: the render traces the pipeline itself, the other jobs go on."""
    jobs = [_job("f", code, tmp_path), _job("h", SUICIDE, tmp_path),
            _job("i", code, tmp_path, seed=6)]
    ahead = TraceAhead(workers=2)
    assert ahead.start(jobs) == 3
    with caplog.at_level(logging.WARNING):
        assert [ahead.wait(job.key) for job in jobs] == [True, False, True]
    assert "ended (signal 9) before it answered" in caplog.text
    assert ahead._worker.process.poll() is None  # the worker lives on
    ahead.close()
    assert PipelineCache(tmp_path).has(jobs[2].key)


@pytest.mark.parametrize("argv", [[], ["--children"], ["--children", "0"], ["--kids", "2"]])
def test_the_worker_refuses_a_wrong_command_line(argv):
    done = subprocess.run([sys.executable, "-m", "dali_gallery.pipelines.trace_worker", *argv],
                          capture_output=True, timeout=60, input=b"")
    assert done.returncode != 0 and b"usage:" in done.stderr


def test_a_worker_started_ahead_lets_a_waiting_job_go_first(code, tmp_path):
    """A job already waiting when DALI is imported: no warm-up chain is traced (the job would
    wait for them), the job is traced in the worker as in one started cold."""
    job = _job("w", code, tmp_path)
    worker = subprocess.Popen(
        [sys.executable, "-m", "dali_gallery.pipelines.trace_worker", "--children", "1",
         "--warm"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=_environment(str(tmp_path)))
    worker.stdin.write(json.dumps(dataclasses.asdict(job)).encode() + b"\n")
    worker.stdin.flush()
    warm, answer = worker.stdout.readline(), worker.stdout.readline()
    worker.stdin.close()
    assert worker.wait(60) == 0
    assert warm.startswith(WARM) and json.loads(warm[len(WARM):])["chains"] == 0
    assert answer.startswith(ANSWER)
    assert json.loads(answer[len(ANSWER):]) == {"key": job.key, "error": None}


def test_a_worker_started_ahead_that_gets_no_job_leaves(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "dali_gallery.pipelines.trace_worker", "--children", "1",
         "--idle-exit", "0"], stdin=subprocess.PIPE, capture_output=True, timeout=60,
        env=_environment(str(tmp_path)))
    assert done.returncode == 0 and done.stdout == b""

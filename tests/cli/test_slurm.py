"""`nsighttk submit` and job tracking, against a real single-node Slurm (tests/tools/slurm.sh starts
slurmctld + slurmd + munge over loopback; make setup installs them): an array of 4 CPU-only tasks
lands 4 runs in the database; a failing task and cancelled jobs (running and pending) are recorded
as such with their partial run directories; the batch script, sweeps and the parsers of Slurm's
output are checked exactly; sbatch missing and bad job commands are one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import capture, fixture, run_cli

from nsighttk.errors import UsageError
from nsighttk.hpc import slurm
from nsighttk.runs.db import RunsDB

TOOLS = Path(__file__).parents[1] / "tools"


# ----------------------------------------------------------------------------- without Slurm


def test_sweeps_multiply_and_fill_placeholders_or_add_options() -> None:
    spec = slurm.JobSpec(["nsighttk", "bench", "add", "--device", "cpu"],
                         sweeps=[("sizes", ["4096", "65536"]), ("variants", ["torch_add", "operator"])])
    spec.check()
    assert slurm.task_commands(spec) == [
        ["bench", "add", "--device", "cpu", "--sizes", "4096", "--variants", "torch_add"],
        ["bench", "add", "--device", "cpu", "--sizes", "4096", "--variants", "operator"],
        ["bench", "add", "--device", "cpu", "--sizes", "65536", "--variants", "torch_add"],
        ["bench", "add", "--device", "cpu", "--sizes", "65536", "--variants", "operator"]]
    assert slurm.array_spec(spec) == "0-3"
    spec = slurm.JobSpec(["analyze", "{capture}"], sweeps=[("capture", ["a.sqlite", "b.sqlite"])], array="%1")
    spec.check()
    assert slurm.task_commands(spec) == [["analyze", "a.sqlite"], ["analyze", "b.sqlite"]]
    assert slurm.array_spec(spec) == "0-1%1"


def test_batch_script(tmp_path: Path) -> None:
    spec = slurm.JobSpec(["nsighttk", "nsys", "add"], partition="gpu", gpus=1, time="00:10:00", account="proj",
                         setup=["module load cuda/13.0", "source ~/venv/bin/activate"], sbatch_args=["--exclusive"])
    spec.check()
    text = slurm.script(spec, tmp_path / "job", python="/opt/py/bin/python", workdir=Path("/home/u/work"))
    lines = text.splitlines()
    assert lines[:9] == ["#!/bin/bash", "#SBATCH --job-name=nsighttk-nsys-add",
                         f"#SBATCH --output={tmp_path}/job/logs/%j.out", "#SBATCH --chdir=/home/u/work",
                         "#SBATCH --partition=gpu", "#SBATCH --gpus=1", "#SBATCH --time=00:10:00",
                         "#SBATCH --account=proj", "#SBATCH --exclusive"]
    assert lines[-4:] == ["set -eo pipefail", "module load cuda/13.0", "source ~/venv/bin/activate",
                          f"exec /opt/py/bin/python -m nsighttk.hpc.task {tmp_path}/job -- nsys add"]
    swept = slurm.JobSpec(["bench", "add"], sweeps=[("sizes", ["1", "2"])])
    swept.check()
    text = slurm.script(swept, tmp_path / "j", python="py")
    assert "#SBATCH --array=0-1" in text and f"#SBATCH --output={tmp_path}/j/logs/%A_%a.out" in text
    assert f"  1) exec py -m nsighttk.hpc.task {tmp_path}/j -- bench add --sizes 2 ;;" in text.splitlines()
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0  # valid shell


def test_slurm_output_parsers() -> None:
    # `scontrol show job -o` of a 4-task array with two tasks done and two pending (Slurm 22.05)
    text = ("JobId=7 ArrayJobId=5 ArrayTaskId=2-3 JobName=x UserId=root(0) JobState=PENDING Reason=Resources "
            "ExitCode=0:0\nJobId=6 ArrayJobId=5 ArrayTaskId=1 JobName=x JobState=FAILED Reason=NonZeroExitCode "
            "ExitCode=2:0\nJobId=5 ArrayJobId=5 ArrayTaskId=0 JobName=x JobState=COMPLETED ExitCode=0:0\n")
    states = slurm.parse_scontrol(text)
    assert states == {"0": ("COMPLETED", "0:0"), "1": ("FAILED", "2:0"), "2": ("PENDING", "0:0"),
                      "3": ("PENDING", "0:0")}
    assert not slurm.finished(states) and slurm.overall(states) == "PENDING"
    assert slurm.parse_scontrol("JobId=9 JobName=y JobState=CANCELLED Reason=None ExitCode=0:15") == {
        "-": ("CANCELLED", "0:15")}
    sacct = "5_0|COMPLETED|0:0\n5_1|FAILED|2:0\n5_[2-3]|CANCELLED by 0|0:0\n6|COMPLETED|0:0\n"
    states = slurm.parse_sacct(sacct, "5")
    assert states == {"0": ("COMPLETED", "0:0"), "1": ("FAILED", "2:0"), "2": ("CANCELLED", "0:0"),
                      "3": ("CANCELLED", "0:0")}
    assert slurm.finished(states) and slurm.overall(states) == "MIXED (2 CANCELLED, 1 COMPLETED, 1 FAILED)"
    assert slurm.expand_array("0-9:4,12%2") == [0, 4, 8, 12]


@pytest.mark.parametrize(("args", "message"), [
    (["submit", "--", "ls", "-l"], "cannot submit 'ls -l': jobs run nsighttk commands"),
    (["submit", "--", "nsighttk", "bench", "add", "--nope"], "`nsighttk bench add --nope` is wrong: No such option"),
    (["submit", "--time", "soon", "--", "nsighttk", "bench", "add"], "--time 'soon': not a Slurm time"),
    (["submit", "--array", "1-x", "--", "nsighttk", "bench", "add"], "--array '1-x': not a Slurm array"),
    (["submit", "--gpus", "0", "--", "nsighttk", "nsys", "add"], "--gpus 0: must be 1 or more"),
    (["submit", "--array", "%2", "--", "nsighttk", "bench", "add"], "--array %2: a limit, but no tasks to limit"),
    (["submit", "--array", "0-3", "--sweep", "sizes=1,2", "--", "nsighttk", "bench", "add"],
     "--array 0-3: --sweep/--tasks already make one task per value or line"),
    (["submit", "--", "nsighttk", "nsys"], "the job's command `nsighttk nsys` is wrong: Missing argument 'TARGET'"),
    (["submit", "--tasks", "missing.txt"], "--tasks missing.txt: no such file"),
    (["submit", "--sweep", "sizes", "--", "nsighttk", "bench", "add"], "--sweep 'sizes': expected NAME=V1,V2"),
    (["submit"], "nothing to submit"),
    (["submit", "--", "nsighttk", "bench", "add"], "sbatch not found: nsighttk submit needs Slurm"),  # exit 3
])
def test_submit_mistakes_are_one_line_and_write_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        args: list[str], message: str) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no sbatch anywhere
    err = run_cli(args, code=3 if "sbatch" in message else 2)  # a missing tool exits 3, as everywhere
    assert err.startswith("nsighttk: error: ") and len(err.strip().splitlines()) == 1 and message in err
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(("content", "message"), [
    (b"nsighttk bench add\n\x00\x01\x02ELF", "a binary file (a NUL byte at offset 19), not text"),
    (b"nsighttk bench add --sizes 1\nnsighttk bench \xff\xfe\n", "not UTF-8 text (byte 44 cannot be decoded)"),
    (b"# " + b"x" * (slurm.MAX_TASKS_BYTES - 1) + b"\n", "more than the 1,048,576"),
    (b"nsighttk bench " + b"a" * 5000 + b"\n", "5,000 characters, more than 4,096"),
])
def test_a_task_list_that_is_not_a_short_text_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          content: bytes, message: str) -> None:
    """--tasks takes a text file of bounded size, in UTF-8, with words of bounded length: a
    binary file, another encoding or a huge file is one line, before anything is written."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    tasks = tmp_path / "tasks.bin"
    tasks.write_bytes(content)
    err = run_cli(["submit", "--tasks", str(tasks), "--dry-run"], code=2)
    assert err.startswith("nsighttk: error: ") and len(err.strip().splitlines()) == 1 and message in err, err
    assert len(err) < 400 and not (tmp_path / "reports").exists()


def test_dry_run_needs_no_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = run_cli(["submit", "--dry-run", "-p", "gpu", "--sweep", "sizes=4096,65536", "--", "nsighttk", "bench", "add"])
    assert out.startswith("#!/bin/bash\n") and "#SBATCH --array=0-1" in out
    (job_dir,) = (tmp_path / "reports").glob("*-slurm-bench-add")
    assert (job_dir / "job.sbatch").read_text() == out
    assert json.loads((job_dir / "job.json").read_text())["job_id"] is None


# ----------------------------------------------------------------------------- a real Slurm


@pytest.fixture(scope="session")
def cluster() -> None:
    """A running single-node Slurm: the one already up, else started by tests/tools/slurm.sh (root)."""
    def idle() -> bool:
        if not shutil.which("sinfo"):
            return False
        r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
        return r.returncode == 0 and bool({"idle", "mixed"} & set(r.stdout.split()))

    started = False
    if not idle():
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            if os.environ.get("NSIGHTTK_REQUIRE_SLURM") == "1":
                pytest.fail("no Slurm here and cannot start one (needs root and apt: tests/tools/slurm.sh up)")
            pytest.skip("no Slurm (tests/tools/slurm.sh up starts one, as root)")
        subprocess.run(["bash", str(TOOLS / "slurm.sh"), "up"], check=True, timeout=900)
        started = True
    yield
    if started:
        subprocess.run(["bash", str(TOOLS / "slurm.sh"), "down"], timeout=60)


def _db(tmp_path: Path) -> RunsDB:
    return RunsDB(tmp_path / "reports" / "nsighttk.db", create=False)


def test_an_array_of_four_cpu_tasks_lands_four_runs(cluster: None, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.txt"
    tasks.write_text(f"# two captures and two CPU benchmarks\n"
                     f"nsighttk analyze {capture('add')}\n"
                     f"nsighttk analyze {fixture('h100-ranks', 'rank0.sqlite')}\n"
                     "nsighttk bench add --device cpu --variants torch_add,operator --sizes 4096 --rep-ms 5 "
                     "--warmup-ms 1\n"
                     "nsighttk bench square --device cpu --variants torch_square --sizes 4096 --rep-ms 5 "
                     "--warmup-ms 1\n")
    out = run_cli(["submit", "--tasks", str(tasks), "--wait", "--timeout", "300"])
    assert "(4 task(s))" in out and "COMPLETED; 4 run(s) recorded" in out
    db = _db(tmp_path)
    runs = sorted(db.runs(), key=lambda r: int(r["job_task"]))
    (job,) = db.jobs()
    assert [(r["tool"], r["target"], r["status"], r["job_id"], r["job_task"], r["job_state"]) for r in runs] == [
        ("analyze", "add.sqlite", "ok", job["job_id"], "0", "COMPLETED"),
        ("analyze", "rank0.sqlite", "ok", job["job_id"], "1", "COMPLETED"),
        ("bench", "add", "ok", job["job_id"], "2", "COMPLETED"),
        ("bench", "square", "ok", job["job_id"], "3", "COMPLETED")]
    assert job["state"] == "COMPLETED" and job["runs"] == 4 and job["imported_utc"]
    assert [r["id"].split("-")[-1] for r in runs] == [f"job{job['job_id']}_{t}" for t in range(4)]  # never clash
    assert {v["variant"] for v in db.tables(runs[2]["id"])["variants"]} == {"torch_add", "operator"}
    # the analyze task's run holds what it printed, and every run its Slurm log
    analyzed = Path(runs[0]["run_dir"])
    assert "95.05 ms" in (analyzed / "output.txt").read_text()  # kernel time of the add capture
    assert (analyzed / "raw" / f"{job['job_id']}_0.out").is_file()
    bench_dir = Path(runs[2]["run_dir"])
    assert (bench_dir / "report.html").is_file() and (bench_dir / "raw" / f"{job['job_id']}_2.out").is_file()
    assert not list((tmp_path / "reports").glob("*/runs/*/nsighttk.db"))  # tasks never touch the database
    # listing again changes nothing (the job is imported once)
    assert len(json.loads(run_cli(["runs", "list", "--json"]))) == 4


def test_failed_and_cancelled_jobs_are_recorded_with_their_partial_run_directories(cluster: None,
                                                                                   tmp_path: Path) -> None:
    out = run_cli(["submit", "--wait", "--timeout", "120", "--", "nsighttk", "analyze", str(tmp_path / "gone.sqlite")],
                  code=1, stdout=True)
    assert "FAILED; 1 run(s) recorded" in out
    # a running job cancelled mid-benchmark, and one cancelled while still pending
    long = run_cli(["submit", "--", "nsighttk", "bench", "add", "--device", "cpu", "--variants", "torch_add",
                    "--sizes", "4096", "--rep-ms", "600000", "--warmup-ms", "1"])
    pending = run_cli(["submit", "--sbatch-arg=--begin=now+1hour", "--", "nsighttk", "bench", "add"])
    jid_long, jid_pending = (s.split()[2] for s in (long, pending))
    job_dir = Path(long.split("job directory ")[1].strip())
    deadline = time.monotonic() + 120
    while not list((job_dir / "runs" / "task-0").glob(".tmp-*-bench-add-*")):  # the bench run has started
        assert time.monotonic() < deadline, "the long job never started its run"
        time.sleep(0.5)
    subprocess.run(["scancel", jid_long, jid_pending], check=True)
    deadline = time.monotonic() + 120
    while True:
        jobs = {j["job_id"]: j for j in json.loads(run_cli(["runs", "jobs", "--json"]))}
        if all(jobs[j].get("imported_utc") for j in (jid_long, jid_pending)):
            break
        assert time.monotonic() < deadline, jobs
        time.sleep(1)
    runs = {r["job_id"]: r for r in json.loads(run_cli(["runs", "list", "--json"]))}
    failed = next(r for r in runs.values() if r["target"] == "gone.sqlite")
    assert failed["status"] == "failed" and failed["job_state"] == "FAILED" and "exit 2" in failed["error"]
    cancelled = runs[jid_long]
    assert cancelled["status"] == "cancelled" and cancelled["tool"] == "bench" and cancelled["job_state"] == "CANCELLED"
    kept = Path(cancelled["run_dir"])
    assert kept.is_dir() and not kept.name.startswith(".tmp-") and (kept / "raw").is_dir()  # what it wrote
    assert "before the run finished" in json.loads((kept / "run.json").read_text())["error"]
    never = runs[jid_pending]
    assert never["status"] == "cancelled" and "without a run directory" in never["error"]
    assert jobs[jid_long]["state"] == jobs[jid_pending]["state"] == "CANCELLED"


def test_nsys_per_rank_under_srun(cluster: None, fake_nsys: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`ranks --launch "srun -n 2"`: a real srun starts two processes, each runs (a stand-in for)
    nsys with -o rank%q{SLURM_PROCID}; each rank's capture is the real rank fixture of that rank."""
    monkeypatch.setenv("FAKE_NSYS_FIXTURE", str(fixture("h100-ranks") / "rank%q{SLURM_PROCID}.sqlite"))
    out = json.loads(run_cli(["ranks", "--launch", "srun -n 2", "--json", "--", "python3", "-c", "pass"]))["ranks"]
    assert [(r["rank"], r["kernel_time_ns"]) for r in out] == [(0, 811_056), (1, 818_641)]  # = nsys stats
    calls = fake_nsys.read_text().splitlines()
    assert len(calls) == 2 and all("--output" in c and "rank%q{SLURM_PROCID}" in c for c in calls)
    (run,) = RunsDB(tmp_path / "reports" / "nsighttk.db", create=False).runs()
    assert run["tool"] == "ranks" and run["status"] == "ok"
    run_dir = Path(run["run_dir"])
    assert sorted(p.name for p in (run_dir / "raw").glob("rank*.sqlite")) == ["rank0.sqlite", "rank1.sqlite"]
    assert "Ranks" in (run_dir / "report.html").read_text()


def test_repeats_as_an_array_compared_by_job(cluster: None, tmp_path: Path) -> None:
    cmd = ["nsighttk", "bench", "add", "--device", "cpu", "--variants", "torch_add", "--sizes", "4096", "--rep-ms",
           "5", "--warmup-ms", "1"]
    out = run_cli(["submit", "--array", "0-1%1", "--wait", "--timeout", "300", "--", *cmd])
    jid = out.split()[2]
    rows = json.loads(run_cli(["compare", f"job:{jid}", f"job:{jid}", "--json"]))
    assert rows["before"] == rows["after"] and len(rows["before"]) == 2  # both tasks pooled on each side
    assert [(r["name"], r["change"]) for r in rows["rows"]] == [("torch_add @ 4,096", "same")]
    err = run_cli(["compare", "job:999999", f"job:{jid}"], code=2)
    assert "no runs of Slurm job 999999 are recorded" in err


def _fake_slurm(bin_dir: Path, scontrol_stderr: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    for name, body in (("sbatch", "echo 4242"), ("scontrol", f"echo '{scontrol_stderr}' >&2; exit 1")):
        exe = bin_dir / name
        exe.write_text(f"#!/bin/sh\n{body}\n")
        exe.chmod(0o755)


def test_a_controller_that_cannot_be_reached_concludes_nothing(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand-ins for sbatch/scontrol: while the controller is down the job stays as last seen;
    once it says it no longer knows the job, the tasks' own exit files decide."""
    bin_dir = tmp_path / "bin"
    _fake_slurm(bin_dir, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    out = run_cli(["submit", "--", "nsighttk", "analyze", str(capture("add"))])
    assert out.startswith("submitted job 4242 ")
    job_dir = Path(out.split("job directory ")[1].strip())
    (job_dir / "tasks" / "0.json").write_text(json.dumps({"task": "0", "exit_code": 0}))
    (jobs,) = json.loads(run_cli(["runs", "jobs", "--json"]))
    assert jobs["state"] == "PENDING" and not jobs["imported_utc"]  # nothing concluded
    _fake_slurm(bin_dir, "slurm_load_jobs error: Invalid job id specified")
    (jobs,) = json.loads(run_cli(["runs", "jobs", "--json"]))
    assert jobs["state"] == "COMPLETED" and jobs["source"] == "task files" and jobs["runs"] == 1


# ----------------------------------------------------------------------------- injection

_OPTIONS = ["partition", "time", "account", "mem", "name", "array"]


def _script_lines(spec: slurm.JobSpec, tmp_path: Path) -> list[str] | None:
    try:
        spec.check()
        return slurm.script(spec, tmp_path / "job dir", python="/opt/py/bin/python",
                            workdir=Path("/home/u/my work")).splitlines()
    except UsageError as ex:
        assert "\n" not in str(ex)
        return None


def test_no_option_value_can_add_a_line_to_the_batch_script(tmp_path: Path) -> None:
    """`--time '10\\n'` once passed validation ($ matches before a trailing newline) and wrote a
    new shell line into job.sbatch.  For every option that reaches the script, and for hostile
    values of every kind, the script either is refused or has exactly the lines of a clean one."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    base = _script_lines(slurm.JobSpec(["bench", "add"]), tmp_path)
    assert base is not None
    hostile = st.one_of(
        st.text(min_size=1, max_size=12),
        st.sampled_from(["10\n", "10\nrm -rf ~", "gpu\r\necho pwned", "a;touch /tmp/x", "$(reboot)", "`id`",
                         "x' ; echo '", 'x" ; echo "', "a #b", "0-3\n#SBATCH --uid=0", "16G\x00", "\x1b[31m",
                         "a\\", "--x=\"y z\""]))

    @settings(max_examples=400, derandomize=True, suppress_health_check=list(HealthCheck), deadline=None)
    @given(option=st.sampled_from([*_OPTIONS, "sbatch_arg", "setup", "module", "command", "sweep"]), value=hostile)
    def check(option: str, value: str) -> None:
        spec = slurm.JobSpec(["bench", "add"])
        try:
            if option in _OPTIONS:
                setattr(spec, option, value)
            elif option == "sbatch_arg":
                spec.sbatch_args = [value]
            elif option == "setup":
                spec.setup = [value]
            elif option == "module":
                spec.setup = slurm.module_lines([value])
            elif option == "command":
                spec.command = ["bench", value]
            else:
                spec.sweeps = [slurm.parse_sweep(f"sizes={value}")]
        except UsageError:
            return
        lines = _script_lines(spec, tmp_path)
        if lines is None:
            return
        # each option adds its own one line (the job name replaces the default one); a command word none
        extra = 0 if option in ("name", "command") else 1
        n = len(spec.sweeps[0][1]) if spec.sweeps else 1
        if n > 1:  # an array: case ... esac with one line per value, and the --array line
            assert "esac" in lines and len(lines) == len(base) + n + 3
        else:
            assert len(lines) == len(base) + extra, (option, value, lines)
        text = "\n".join(lines) + "\n"
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
        sbatch = [ln for ln in lines if ln.startswith("#SBATCH")]
        assert all(ln.count('"') % 2 == 0 for ln in sbatch)

    check()


def test_script_values_are_quoted_for_sbatch_and_the_shell(tmp_path: Path) -> None:
    spec = slurm.JobSpec(["bench", "my file.py"], name="my-job", sbatch_args=["--constraint=a100|h100 x"],
                         setup=slurm.module_lines(["cuda/13.0"]))
    lines = _script_lines(spec, tmp_path)
    assert lines is not None
    assert f'#SBATCH "--output={tmp_path}/job dir/logs/%j.out"' in lines
    assert '#SBATCH "--chdir=/home/u/my work"' in lines and '#SBATCH "--constraint=a100|h100 x"' in lines
    assert "module load cuda/13.0" in lines
    assert lines[-1] == f"exec /opt/py/bin/python -m nsighttk.hpc.task '{tmp_path}/job dir' -- bench 'my file.py'"
    for bad in ([("time", "10\n")], [("mem", "16G\nid")], [("array", "0-3\n")], [("partition", "a b")]):
        spec = slurm.JobSpec(["bench", "add"])
        setattr(spec, bad[0][0], bad[0][1])
        with pytest.raises(UsageError):
            spec.check()
    with pytest.raises(UsageError, match="module name"):
        slurm.module_lines(["cuda; rm -rf ~"])


def test_a_slurm_tool_saying_bytes_that_are_not_utf8_is_one_line(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """What sbatch prints is shown decoded with replacement, never a UnicodeDecodeError."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "sbatch"
    exe.write_bytes(b"#!/bin/sh\nprintf 'sbatch: error: partition \\377\\376 unknown\\n' >&2\nexit 1\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    err = run_cli(["submit", "--", "nsighttk", "analyze", str(capture("add"))], code=2)
    assert err.startswith("nsighttk: error: sbatch refused the job: sbatch: error: partition \ufffd\ufffd unknown")
    assert len(err.strip().splitlines()) == 1

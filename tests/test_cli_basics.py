"""The `strata` command's front door: help, errors, and `strata doctor` on this machine."""
import json
import os
import subprocess

from conftest import REPO

STRATA = str(REPO / ".venv" / "bin" / "strata")


def run(*args, env_columns=None):
    env = {**os.environ, "COLUMNS": str(env_columns)} if env_columns else None
    return subprocess.run([STRATA, *args], capture_output=True, text=True, timeout=60, env=env)


def test_help_lists_commands():
    out = run("--help")
    assert out.returncode == 0
    assert "doctor" in out.stdout


def test_unknown_command_is_one_line_and_nonzero():
    out = run("no-such-command")
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0 and "No such command" in out.stderr
    assert "Traceback" not in out.stderr


def test_unknown_option_is_one_line_and_nonzero():
    out = run("--no-such-option")
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0 and "No such option" in out.stderr


def test_doctor_json_parses_and_reports_this_kernel():
    out = run("doctor", "--json")
    report = json.loads(out.stdout)
    assert (report["schema"], report["schema_version"]) == ("strata.doctor", 1)
    checks = {c["name"]: c for c in report["checks"]}
    assert out.returncode == (0 if report["ready"] else 1)
    assert checks["kernel BTF"]["ok"]
    assert checks["uprobe/USDT attach"]["ok"] and checks["tracepoint attach"]["ok"]
    assert checks["syscall tracepoints"]["ok"] and "fs view" in checks["syscall tracepoints"]["detail"]
    # kprobes and fentry are absent on these machines: reported, not fatal.
    assert not checks["fentry/fexit attach"]["ok"] and not checks["fentry/fexit attach"]["required"]
    # TC clsact works here (the wire layer); kernel nfsd is not in this VM's kernel: one row, not fatal.
    assert checks["TC clsact attach"]["ok"] and not checks["TC clsact attach"]["required"]
    assert checks["tcx link attach"]["ok"] and not checks["tcx link attach"]["required"]  # kernel 6.6+
    assert not checks["kernel nfsd"]["ok"] and not checks["kernel nfsd"]["required"]
    for c in report["checks"]:
        assert c["ok"] or c["fix"] or not c["required"], c


def test_doctor_table_has_one_row_per_check():
    report = json.loads(run("doctor", "--json").stdout)
    out = subprocess.run([STRATA, "doctor"], capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    lines = out.stdout.splitlines()
    for c in report["checks"]:   # in a pipe: one whole line per check, its detail unbroken
        if c["name"].startswith("collector (pid"):
            continue             # a running collector's row: its second changes between the two runs
        line = next(x for x in lines if x.startswith(c["name"] + "  "))
        assert c["detail"] in line and (not c["fix"] or line.endswith(f"fix: {c['fix']}")), line
    assert run("doctor", env_columns=100).stdout.splitlines()[1].startswith("┏")   # a width: the table


def test_doctor_lists_views_per_server_kind():
    """Each server kind's views follow the attach checks above them: wire needs TC, fs the
    syscall tracepoints, disk the tracepoints, engine USDT the uprobes (and the engine), nfsd
    the tracepoints and nfsd running."""
    report = json.loads(run("doctor", "--json").stdout)
    ok = {c["name"]: c["ok"] for c in report["checks"]}
    needs = {"wire": ok["TC clsact attach"], "fs": ok["syscall tracepoints"], "disk": ok["tracepoint attach"],
             "engine USDT": ok["uprobe/USDT attach"] and ok["strata-engine"],
             "nfsd": ok["tracepoint attach"] and ok["kernel nfsd"]}
    servers = {s["server"]: s for s in report["servers"]}
    assert set(servers) == {"strata-engine", "nfs-ganesha, other user-space servers", "kernel nfsd"}
    for s in servers.values():
        assert all(needs[v] for v in s["here"]) and not any(needs[v] for v in s["absent"]), s
    assert set(servers["strata-engine"]["here"]) == {"wire", "fs", "disk", "engine USDT"}   # all work here
    assert set(servers["nfs-ganesha, other user-space servers"]["here"]) == {"wire", "fs", "disk"}
    # kernel nfsd makes no syscalls and is not in this VM's kernel: said, its views still listed,
    # nfsd.* among those not here (tests/test_collect_nfsd.py checks it where nfsd runs)
    assert set(servers["kernel nfsd"]["here"]) == {"wire", "disk"} and not servers["kernel nfsd"]["installed"]
    assert servers["kernel nfsd"]["absent"] == ["nfsd"]
    out = run("doctor", env_columns=200).stdout
    assert "views this host offers, by server" in out
    for name in ("strata-engine", "nfs-ganesha", "kernel nfsd"):
        assert name in out


def test_doctor_table_fits_80_columns_with_its_fix_column():
    """Piped (80 columns), the table folds its text and keeps its right border: the fix
    column is not cut off."""
    lines = run("doctor", env_columns=80).stdout.splitlines()
    table = lines[1:lines.index(next(l for l in lines if l.startswith("└"))) + 1]
    assert table and all(len(l) <= 80 and l[-1] in "┓┃┩│┘" for l in table), table


def test_a_closed_pipe_is_exit_0_for_every_command(tmp_path):
    """`strata X | head -1`: the reader gone before strata writes (its end of the pipe closed
    first), every command exits 0 without a word, as `heatmap` did."""
    archive = str(tmp_path / "a.db")
    assert run("datasets", "create", "disk.ops[op]", "--archive", archive).returncode == 0
    for args in (["datasets", "list"], ["statistics"], ["doctor"], ["show", "disk.ops[op]", "--last", "1m"],
                 ["stream", "disk.ops[op]", "--count", "1"], ["breakdown", "disk.ops[op]", "--last", "1m"]):
        r, w = os.pipe()
        os.close(r)
        try:
            proc = subprocess.run([STRATA, *args, "--archive", archive] if args[0] not in ("statistics", "doctor")
                                  else [STRATA, *args], stdout=w, stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            os.close(w)
        assert proc.returncode == 0 and proc.stderr == "", (args, proc.returncode, proc.stderr)

"""Nothing left behind on the host: `strata doctor`'s probes remove what they create (qdiscs,
links, pinned objects listed before and after), scripts/deps.sh masks the services of the
packages it installs, and `strata collect` on an archive without datasets says so once and
waits for one."""
import os
import subprocess
import time

from conftest import BUILD, REPO, built
from datasets_util import STRATA, strata
from strata.lab.process import stop
from strata.datasets.archive import Archive


def listing(netns_cmd=()):
    """qdiscs, filters and BPF net attachments of lo, and the pinned BPF objects."""
    def run(*cmd):
        return subprocess.run([*netns_cmd, *cmd], capture_output=True, text=True, timeout=30).stdout
    return {"qdiscs": run("tc", "qdisc", "show", "dev", "lo"),
            "ingress": run("tc", "filter", "show", "dev", "lo", "ingress"),
            "egress": run("tc", "filter", "show", "dev", "lo", "egress"),
            "bpf net": run("bpftool", "net", "show", "dev", "lo"),
            "pinned": sorted(os.listdir("/sys/fs/bpf")) if os.path.isdir("/sys/fs/bpf") else []}


def test_doctor_probes_leave_nothing(tmp_path):
    """strata-features (doctor's BPF probes) run in a network namespace made for the test, so
    that other tests' wire collectors on the host's lo do not disturb the listing."""
    prober = str(built("bin/strata-features"))
    ns = f"strata-leftovers-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        inside = ("ip", "netns", "exec", ns)
        before = listing(inside)
        out = subprocess.run([*inside, prober], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and '"tc": {"ok": true' in out.stdout, out.stdout + out.stderr
        assert listing(inside) == before
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def test_doctor_leaves_the_host_as_it_was():
    before = listing()
    out = strata("doctor", timeout=120)
    assert "Traceback" not in out.stderr
    after = listing()
    assert after["pinned"] == before["pinned"]
    assert "clsact" not in after["qdiscs"] or "clsact" in before["qdiscs"]


def test_deps_masks_the_services_of_what_it_installs(tmp_path):
    """scripts/deps.sh's mask_services over installed packages with services (nfs-kernel-server,
    rpcbind), in a mount namespace whose /etc/systemd/system and /etc/rc?.d are copies: the
    host's own are not touched."""
    script = tmp_path / "mask.sh"
    copies = " ".join(f"/etc/rc{r}.d" for r in "0123456S" if os.path.isdir(f"/etc/rc{r}.d"))
    script.write_text(f"""set -eu
mkdir -p /etc/systemd/system
for d in /etc/systemd/system {copies}; do
  c={tmp_path}/copy$(echo $d | tr / _); cp -a $d $c; mount --bind $c $d
done
eval "$(sed -n '/^mask_services()/,/^}}/p' {REPO}/scripts/deps.sh)"
mask_services nfs-kernel-server rpcbind
readlink /etc/systemd/system/nfs-server.service /etc/systemd/system/rpcbind.socket
""")
    before = host_units()
    out = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", str(script)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "deps: masked" in out.stdout and "nfs-server.service" in out.stdout
    assert out.stdout.strip().splitlines()[-2:] == ["/dev/null", "/dev/null"]
    assert host_units() == before   # masked or not before (make test-deps masks them), as they were


def host_units() -> dict:
    """The host's /etc/systemd/system and /etc/rc?.d entries, each with its link target."""
    units = {}
    for d in ["/etc/systemd/system", *(f"/etc/rc{r}.d" for r in "0123456S")]:
        if os.path.isdir(d):
            for name in os.listdir(d):
                path = os.path.join(d, name)
                units[path] = os.readlink(path) if os.path.islink(path) else None
    return units


def test_demo_deps_hold_no_test_package():
    text = (REPO / "scripts" / "deps.sh").read_text()
    base = text[text.index("BASE=("):text.index(")", text.index("BASE=("))]
    for test_only in ("nfs-kernel-server", "nfs-ganesha", "prometheus", "qemu-system-x86", "rpcbind"):
        assert test_only not in base


def test_collect_without_datasets_says_so_once_and_waits(tmp_path):
    built("bin/strata-collect")
    archive = str(tmp_path / "empty.db")
    Archive.open(archive, readonly=False).close()
    proc = subprocess.Popen([STRATA, "collect", "--archive", archive], stderr=subprocess.PIPE, text=True,
                            env={k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"})
    try:
        time.sleep(3)
        assert proc.poll() is None                # it waits
        assert strata("datasets", "create", "disk.ops[op]", "--archive", archive).returncode == 0
        deadline = time.time() + 15
        while time.time() < deadline:
            with Archive.open(archive) as a:
                if a.conn.execute("SELECT count(*) FROM records").fetchone()[0]:
                    break
            time.sleep(0.3)
        else:
            raise AssertionError("no record after the dataset was created")
    finally:
        stop(proc)
    said = proc.stderr.read()
    assert said.count("no active dataset in the archive") == 1, said

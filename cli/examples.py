"""The examples that end each command's --help (two or three, runnable as written);
the group attaches them (main.LazyGroup) and tests/test_help.py parses every one."""

EXAMPLES = {
    "breakdown": [
        "strata breakdown nfs.ops --by client --last 1h",
        "strata breakdown nfs.latency --range 10ms.. --top 0 -o slow-clients.csv",
        "strata breakdown 'nfs.ops[client]' --key 10.0.0.1 --key 10.0.0.2 --graph line --csv",
    ],
    "check": [
        "strata check --baseline before.db --candidate after.db",
        "strata check --baseline before.db --candidate after.db --dataset nfs.latency --junit check.xml",
    ],
    "check ab": [
        "strata check ab --profile bench/profiles/engine_32.toml --a-rev main --b-rev HEAD",
        "strata check ab --profile bench/profiles/engine_32.toml --a-rev main --b-rev HEAD --mode rounds --json",
    ],
    "check run": [
        "strata check run --profile bench/profiles/smoke.toml --update-baseline",
        "strata check run --profile bench/profiles/smoke.toml --junit check.xml",
    ],
    "collect": [
        "strata collect",
        "strata collect --engine-pid 4242 --metrics :9464",
        "strata collect --fs-comm postgres --wire-port 2050",
    ],
    "web": [
        "strata web",
        "strata web --listen 0.0.0.0:8470 --web-config /etc/strata/web.yml",
        "strata web --open incident-42",
    ],
    "datasets": [
        "strata datasets list",
        "strata datasets create 'nfs.latency[client]'",
        "strata datasets archive 'nfs.latency[client]' -o run.db",
    ],
    "datasets list": ["strata datasets list", "strata datasets list --json"],
    "datasets create": [
        "strata datasets create 'nfs.ops[op=read][client]'",
        "strata datasets create 'disk.latency[device]' --keep second=2d --keep minute=30d",
    ],
    "datasets suspend": ["strata datasets suspend 'nfs.latency[client]'", "strata datasets suspend --all"],
    "datasets resume": ["strata datasets resume 'nfs.latency[client]'", "strata datasets resume --all"],
    "datasets destroy": ["strata datasets destroy 'nfs.ops[op]'", "strata datasets destroy 'nfs.ops[op]' --yes"],
    "datasets prune": [
        "strata datasets prune 'nfs.latency[client]' --older-than 2d --level second",
        "strata datasets prune nfs.ops --older-than 90d",
    ],
    "datasets archive": [
        "strata datasets archive nfs.latency 'nfs.ops[client]' -o run.db",
        "strata datasets archive nfs.latency -o baseline.db --force",
    ],
    "datasets import": ["strata datasets import run.db", "strata datasets import run.db --archive merged.db"],
    "datasets retain": [
        "strata datasets retain 'nfs.latency[client]' --keep second=2d",
        "strata datasets retain nfs.ops --keep minute=all --keep hour=all",
    ],
    "datasets verify": ["strata datasets verify", "strata datasets verify damaged.db --salvage rescued.db"],
    "demo": [
        "strata demo",
        "strata demo -o /tmp/demo --duration 60 --no-png",
        "strata demo --server nfsd --clients 4",
    ],
    "doctor": ["strata doctor", "strata doctor --json"],
    "heatmap": [
        "strata heatmap nfs.latency --last 1h",
        "strata heatmap 'nfs.latency[op=read]' --linear --outliers 99.9 -o reads.png",
        "strata heatmap 'disk.latency[device]' --key sda --json --raw > sda.json",
    ],
    "show": [
        "strata show nfs.latency --last 1h",
        "strata show 'nfs.ops[client]' -o ops.html",
        "strata show arc.size --csv",
    ],
    "statistics": ["strata statistics", "strata statistics --json"],
    "stream": [
        "strata stream nfs.latency 'nfs.ops[client]'",
        "strata stream 'disk.latency[device]' --utc --json | tee disk.ndjson",
        "strata stream nfs.latency --since -10m --count 600 --format csv",
    ],
    "top": ["strata top", "strata top 'disk.latency[device]' --interval 2", "strata top --json --seconds 30"],
}


def epilog(path: str) -> str | None:
    """The --help epilog of command PATH ('datasets list'), kept as written (\\b)."""
    lines = EXAMPLES.get(path)
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines) if lines else None

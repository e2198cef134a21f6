"""Every command's --help ends with two or three examples that parse as written
(options and arguments the command has), and every command takes --utc."""
import shlex

import click
import pytest

from heatmaps_util import run_strata
from strata.cli.examples import EXAMPLES
from strata.cli.main import COMMANDS, cli


def paths():
    ctx = click.Context(cli)
    out = []
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        out.append((name, command))
        out += [(f"{name} {sub}", c) for sub, c in getattr(command, "commands", {}).items()]
    return out


@pytest.mark.parametrize("path, command", paths(), ids=lambda x: x if isinstance(x, str) else "")
def test_help_ends_with_examples_that_parse(path, command):
    examples = EXAMPLES[path]
    assert 2 <= len(examples) <= 3
    assert any(p.name == "utc" for p in command.params)
    for example in examples:
        words = shlex.split(example.split(" | ")[0].split(" > ")[0])   # the shell's part is not ours
        assert words[:1 + path.count(" ") + 1] == ["strata", *path.split()], example
        args = words[2 + path.count(" "):]
        with command.make_context(path, args, resilient_parsing=False) as ctx:   # raises on a wrong option
            assert ctx.command is command


def test_help_text_shows_them():
    p = run_strata(["datasets", "prune", "--help"])
    assert p.returncode == 0
    tail = p.stdout.rstrip().splitlines()[-3:]
    assert tail == ["  Examples:", "    strata datasets prune 'nfs.latency[client]' --older-than 2d --level second",
                    "    strata datasets prune nfs.ops --older-than 90d"]

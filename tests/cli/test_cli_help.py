"""Every command's ``--help`` prints its text and exits 0: no traceback from a help string
(an unescaped ``%`` in argparse's help is a ``ValueError`` only when the help is shown)."""

from __future__ import annotations

import pytest

from layout_algebra.cli import COMMANDS, build_parser, main


def _command_names() -> list[str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return sorted(sub.choices)


def test_every_module_of_the_table_registers_a_command() -> None:
    assert sorted(name.replace("_", "-") for name in COMMANDS) == _command_names()


@pytest.mark.parametrize(
    "argv", [[], *([name] for name in _command_names())], ids=lambda a: " ".join(a) or "top"
)
def test_help_prints_and_exits_zero(argv, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: layout-algebra" + (f" {argv[0]}" if argv else ""))
    assert len(out.splitlines()) > 3

"""One error root: every error the package raises on purpose derives from ``LayoutAlgebraError``.

The command line calls that root bad input (exit 2, one line quoting the input); anything
else that escapes a command, a ``ValueError`` from NumPy deep inside included, is a bug:
the traceback and a request for a report, exit status 70, never "bad input".
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import layout_algebra as la
from layout_algebra.cli import BUG_EXIT_STATUS, main


def package_modules() -> list[str]:
    """Every module of the package (``__main__`` runs the command line when imported)."""
    found = pkgutil.walk_packages(la.__path__, prefix="layout_algebra.")
    return sorted(m.name for m in found if not m.name.endswith("__main__"))


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in the package, by its qualified name."""
    classes: dict[str, type[BaseException]] = {}
    for name in package_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__.split(".")[0] == "layout_algebra"
            ):
                classes[f"{value.__module__}.{value.__qualname__}"] = value
    return classes


def is_public(cls: type) -> bool:
    return not cls.__name__.startswith("_")


def test_the_walk_finds_errors_of_every_layer() -> None:
    found = {cls.__name__ for cls in exception_classes().values() if is_public(cls)}
    assert {"ParseError", "XlaInputError", "HloParseError", "InvalidHlo", "NotExpressible"} <= found
    assert {"AlgebraError", "ExecutionError", "ViewError", "AssumptionsAdmitNoSizes"} <= found
    assert len(found) > 20


def test_every_public_error_derives_from_the_exported_root() -> None:
    outside = sorted(
        name
        for name, cls in exception_classes().items()
        if is_public(cls) and not issubclass(cls, la.LayoutAlgebraError)
    )
    assert outside == []
    assert "LayoutAlgebraError" in la.__all__
    assert la.LayoutAlgebraError.__mro__[1] is Exception  # a root, not a ValueError itself


def test_errors_keep_their_built_in_base() -> None:
    """``except ValueError`` written before the root existed still catches them."""
    for cls in (la.ParseError, la.InvalidLayoutError, la.LayoutSemanticsError, la.InvalidArgumentError):
        assert issubclass(cls, ValueError) and issubclass(cls, la.LayoutAlgebraError)
    from layout_algebra.prove.assumptions import AssumptionError, UndefinedValue

    assert issubclass(AssumptionError, la.ParseError)
    assert issubclass(UndefinedValue, ArithmeticError)


@pytest.mark.parametrize(
    "call",
    [
        lambda: la.parse_shape("f32[2,3]{1,0"),
        lambda: la.validate("f32[2,3]{0,0}"),
        lambda: la.linear_index("f32[3,5]{1,0}", (3, 0)),
        lambda: la.unpack(np.zeros(5, np.uint8), "f32[2,3]{1,0}"),
        lambda: la.reshape_is_bitcast("f32[2,3]{1,0}", "f32[7]{0}"),
        lambda: la.hlo.parse_module("HloModule m\nENTRY e { p = f32[2] parameter(0) "),
        lambda: la.xla.shape_util.byte_size_of("f32[?]{0}"),
    ],
    ids=["shape text", "layout", "index", "unpack", "reshape", "hlo text", "xla helper"],
)
def test_bad_input_raises_an_error_of_the_root(call) -> None:
    with pytest.raises(la.LayoutAlgebraError) as caught:
        call()
    assert isinstance(caught.value, ValueError)
    assert str(caught.value)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def numpy_value_error(*args: object, **kwargs: object) -> object:
    """What an internal NumPy failure looks like: a plain ``ValueError`` raised by NumPy."""
    return np.zeros(3).reshape(2, 2)


def test_bad_input_on_the_command_line_is_one_line_and_exit_2(capsys) -> None:
    code, out, err = run(capsys, "bitcast", "f32[2,3]{1,0", "f32[6]{0}")
    assert code == 2 and out == ""
    assert err.startswith("layout-algebra bitcast: error: ") and "Traceback" not in err
    assert "f32[2,3]{1,0" in err


def test_an_internal_value_error_in_a_command_is_a_bug_not_bad_input(capsys, monkeypatch) -> None:
    monkeypatch.setattr("layout_algebra.decide.bitcast.reshape_is_bitcast", numpy_value_error)
    code, out, err = run(capsys, "bitcast", "f32[2,3]{1,0}", "f32[6]{0}")
    assert code == BUG_EXIT_STATUS == 70 and out == ""
    assert "Traceback (most recent call last)" in err
    assert "cannot reshape array of size 3" in err  # NumPy's own message, in the traceback
    assert "this is a bug in layout_algebra" in err and "please report it" in err
    assert "bitcast: error:" not in err  # never reported as the user's bad input


def test_an_internal_value_error_in_a_batch_command_is_a_bug_not_a_bad_input(capsys, monkeypatch) -> None:
    """``size`` records each bad shape and goes on; an internal error is no bad shape."""
    monkeypatch.setattr("layout_algebra.meaning.sizes.size_report", numpy_value_error)
    code, _, err = run(capsys, "size", "f32[3,5]{1,0}", "f32[2]{0}")
    assert code == BUG_EXIT_STATUS
    assert "this is a bug in layout_algebra" in err and "size: error:" not in err


def test_a_batch_command_still_reports_each_bad_input(capsys) -> None:
    code, out, err = run(capsys, "size", "f32[3,5]{1,0}", "f32[2,3]{0,0}")
    assert code == 2
    assert "f32[3,5]{1,0}" in out
    assert "size: error:" in err and "f32[2,3]{0,0}" in err and "Traceback" not in err

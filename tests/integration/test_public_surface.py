"""The package's public surface: ``__all__`` is what ``dir()`` shows, functions and the classes of
their results; sub-packages are reached by import; every result serializes one way
(``to_dict()``); XLA's tile-blind helpers are reached only through a name that says whose
they are; one spelling per option.
"""

from __future__ import annotations

import inspect
import json
import re
import types

import numpy as np
import pytest
from support.processes import python_output

import layout_algebra as la

#: Sub-packages and modules the documentation reaches as attributes (``la.xla.array_size``).
ATTRIBUTE_MODULES = ("conditions", "hlo", "interop", "prove", "tpu", "xla")


def dunders(module: types.ModuleType) -> set[str]:
    return {name for name in vars(module) if name.startswith("__") and name.endswith("__")}


def test_dir_is_all_and_dunders_whatever_was_imported() -> None:
    """Importing sub-packages binds them on the package; ``dir()`` still shows only ``__all__``."""
    output = python_output(
        "import json, layout_algebra as la",
        "import layout_algebra.hlo.verify, layout_algebra.decide.views, layout_algebra.packing.numpy_eval",
        "la.xla.array_size('f32[2]{0}'); la.size_report('f32[2]{0}')",
        "extra = sorted(set(dir(la)) - set(la.__all__))",
        "print(json.dumps(extra))",
    )
    extra = json.loads(output.splitlines()[-1])
    assert extra and all(name.startswith("__") and name.endswith("__") for name in extra)
    assert set(la.__all__) <= set(dir(la))
    assert sorted(dir(la)) == sorted(set(la.__all__) | dunders(la))


def test_all_holds_functions_classes_and_constants_only() -> None:
    output = python_output(
        "import inspect, json, layout_algebra as la",
        "kinds = {n: 'function' if inspect.isfunction(v) else 'class' if inspect.isclass(v) "
        "else type(v).__name__ for n in la.__all__ for v in [getattr(la, n)]}",
        "print(json.dumps(kinds))",
    )
    kinds = json.loads(output.splitlines()[-1])
    collisions = set(la.__all__) & sub_package_names()  # see the expected failure below
    others = {n for n, kind in kinds.items() if kind not in ("function", "class") and n not in collisions}
    assert others == {"COMBINE_DIMENSION", "UNBOUNDED_SIZE"}
    assert len(la.__all__) == len(set(la.__all__))


def sub_package_names() -> set[str]:
    import pkgutil

    return {m.name for m in pkgutil.iter_modules(la.__path__)}


@pytest.mark.parametrize("first", ["modules first", "functions first"])
def test_functions_stay_functions_whatever_the_import_order(first: str) -> None:
    """The functions once named like modules of the root live in folders now; importing those
    modules never rebinds the root's names."""
    modules = "layout_algebra.teach.explain layout_algebra.teach.draw layout_algebra.meaning.layout_map"
    modules += " layout_algebra.codegen.generate layout_algebra.decide.normal_form"
    names = ["explain", "draw", "layout_map", "generate_code", "normal_form"]
    output = python_output(
        f"import {', '.join(modules.split())}" if first == "modules first" else "import layout_algebra",
        "import layout_algebra as la, types",
        f"assert all(isinstance(getattr(la, n), types.FunctionType) for n in {names!r})",
        f"import {', '.join(modules.split())}",
        f"assert all(isinstance(getattr(la, n), types.FunctionType) for n in {names!r})",
        "assert str(la.layout_map('f32[3,5]{1,0:T(2,2)}').forward((2, 3))) == '17'",
        "print('ok')",
    )
    assert output == "ok"


def test_no_public_name_is_also_a_sub_package() -> None:
    assert sorted(set(la.__all__) & sub_package_names()) == []


@pytest.mark.parametrize("name", ATTRIBUTE_MODULES)
def test_documented_sub_packages_are_attributes_but_not_public_names(name: str) -> None:
    module = getattr(la, name)
    assert isinstance(module, types.ModuleType)
    assert name not in la.__all__ and name not in dir(la)


def test_modules_that_are_not_documented_attributes_are_imported_by_path() -> None:
    for name in ("views", "algebra", "access", "normal_form_module", "decide", "teach"):
        assert name not in la.__all__
    with pytest.raises(AttributeError):
        la.views  # noqa: B018
    from layout_algebra.decide import views

    assert callable(views.view)


def annotation_names(function: object) -> set[str]:
    """The names in a function's return annotation (a string: every module has postponed annotations)."""
    annotation = inspect.signature(function).return_annotation  # type: ignore[arg-type]
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return set(re.findall(r"[A-Za-z_]\w*", text))


def returned_classes(namespace: types.ModuleType) -> dict[str, type]:
    """The package's classes the public functions of ``namespace`` return, by name."""
    found: dict[str, type] = {}
    for name in namespace.__all__:
        function = getattr(namespace, name)
        if not inspect.isfunction(function):
            continue
        home = inspect.getmodule(function)
        for word in annotation_names(function):
            cls = getattr(home, word, None)
            if inspect.isclass(cls) and cls.__module__.split(".")[0] == "layout_algebra":
                found[word] = cls
    return found


@pytest.mark.parametrize("namespace", ["", *ATTRIBUTE_MODULES])
def test_every_class_a_public_function_returns_is_exported(namespace: str) -> None:
    module = getattr(la, namespace) if namespace else la
    classes = returned_classes(module)
    assert classes or namespace in ("tpu", "xla")
    not_exported = sorted(
        name for name in classes if name not in la.__all__ and name not in getattr(module, "__all__", ())
    )
    assert not_exported == []


def test_the_root_exports_the_results_of_every_question() -> None:
    results = {"BitcastVerdict", "ProofResult", "SizeReport", "Condition", "Suggestion", "NormalForm"}
    results |= {"PassResult", "ValidationReport", "Comparison", "AuditReport", "MovementVerdict"}
    results |= {"Certification", "GeneratedCode", "Explanation"}
    assert results <= set(la.__all__)


#: Exported classes that are not results: data of the model, errors, and the one map type.
def result_classes() -> list[type]:
    classes = [getattr(la, n) for n in la.__all__ if inspect.isclass(getattr(la, n))]
    return [
        cls
        for cls in classes
        if not cls.__module__.startswith(("layout_algebra.model", "layout_algebra.meaning.layout_map"))
        and not issubclass(cls, BaseException)
        and cls.__module__ != "layout_algebra"
    ]


def test_every_exported_result_serializes_one_way() -> None:
    classes = result_classes()
    assert len(classes) >= 15
    for cls in classes:
        assert callable(getattr(cls, "to_dict", None)), cls.__name__
        assert not hasattr(cls, "as_json") and not hasattr(cls, "to_json"), cls.__name__


def json_ready(data: dict) -> bool:
    return json.loads(json.dumps(data)) == data


def test_size_report_to_dict_holds_the_report() -> None:
    for text in ("f32[3,5]{1,0:T(2,2)}", "s16[1000,200]{0,1:T(1,128)(2,1)}", "pred[0]{0}"):
        r = la.size_report(text)
        data = r.to_dict()
        assert json_ready(data)
        assert data["shape"] == str(r.shape)
        assert data["physical_bytes"] == r.physical_bytes == la.physical_size_in_bytes(text)
        assert data["xla_allocated_bytes"] == la.xla.array_size(text)
        assert data["padding_bytes"] == r.physical_bytes - r.logical_bytes
    symbolic = la.size_report("f32[N,128]{1,0:T(8,128)}").to_dict()
    assert json_ready(symbolic) and "N" in symbolic["physical_bytes"]


def test_generated_code_suggestion_and_normal_form_serialize() -> None:
    code = la.generate_code("f32[3,5]{1,0:T(2,2)}", "c")
    data = code.to_dict()
    assert json_ready(data) and data["text"] == code.text
    assert data["certification"]["status"] == code.certification.status == "proved"

    suggestion = la.suggest_bitcast_layout("f32[256,24,200]{2,1,0}", (256, 4800))
    data = suggestion.to_dict()
    assert json_ready(data)
    assert data["suggestion"] == str(suggestion.shape)
    assert data["verdict"]["status"] == "proved"
    # an independent check: the suggested layout makes the exact decision say bitcast
    assert la.reshape_is_bitcast("f32[256,24,200]{2,1,0}", data["suggestion"]).status == "proved"

    from layout_algebra.decide.normal_form import normal_form_with_proof

    nf = normal_form_with_proof("f32[1,8]{0,1}")
    data = nf.to_dict()
    assert json_ready(data) and data["shape"] == str(la.normal_form("f32[1,8]{0,1}"))


# ---------------------------------------------------------------- XLA's tile-blind helpers
TILED, FLAT = "f32[16,256]{1,0:T(8,128)}", "f32[4096]{0}"


def test_xla_tile_blind_bitcast_predicates_are_reached_through_their_module_only() -> None:
    for name in ("reshape_is_bitcast", "transpose_is_bitcast", "is_reshape_or_transpose_bitcast"):
        assert not hasattr(la.xla, name) or isinstance(getattr(la.xla, name), types.ModuleType), name
        assert name not in la.xla.__all__
        assert callable(getattr(la.xla.bitcast_util, name))


def test_the_two_reshape_predicates_disagree_and_the_exact_one_is_right() -> None:
    """The names differ because the answers do: the tiles reorder the elements."""
    assert la.xla.bitcast_util.reshape_is_bitcast(TILED, FLAT) is True
    assert la.reshape_is_bitcast(TILED, FLAT).status == "refuted"
    # the oracle: element (0, 128) is at flat position 128, but the tiled layout stores it at
    # offset 8 * 128 (the second 8x128 tile), so the same bytes do not read as the reshape
    assert la.linear_index(TILED, (0, 128)) == 8 * 128 != la.linear_index(FLAT, (128,))


# ------------------------------------------------------------------------- one spelling
def test_no_public_function_takes_one_option_under_two_spellings() -> None:
    """Parameters that are the same word abbreviated (``fmt``/``format``) are one option twice."""
    abbreviations = {"fmt": "format", "lang": "language", "dims": "dimensions", "perm": "permutation"}
    for name in la.__all__:
        function = getattr(la, name)
        if not inspect.isfunction(function):
            continue
        parameters = set(inspect.signature(function).parameters)
        for short, full in abbreviations.items():
            assert not {short, full} <= parameters, (name, short, full)


# ------------------------------------------------- the shared answer: passes and executions
TRANSPOSED = """HloModule m, entry_computation_layout={(f32[2,3]{1,0})->f32[3,2]{1,0}}
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  ROOT t = f32[3,2]{1,0} transpose(p), dimensions={1,0}
}"""
AS_BITCAST = TRANSPOSED.replace("transpose(p), dimensions={1,0}", "bitcast(p)")
COLUMN_MAJOR = TRANSPOSED.replace("(f32[2,3]{1,0})", "(f32[2,3]{0,1})").replace(
    "f32[2,3]{1,0} parameter", "f32[2,3]{0,1} parameter"
)


def speaks_the_answer_protocol(answer: object) -> str:
    from layout_algebra.prove.result import STATUSES, Answer

    assert isinstance(answer, Answer)
    assert answer.status in STATUSES
    assert bool(answer) == (answer.status == "proved")
    data = answer.to_dict()
    assert data["status"] == answer.status and json_ready(data)
    return answer.status


def test_pass_results_answer_proved_refuted_or_unknown() -> None:
    from layout_algebra.hlo import validate_pair

    renamed = TRANSPOSED.replace("ROOT t =", "ROOT renamed =")
    unchanged = validate_pair(TRANSPOSED, renamed, mode="physical")
    assert (unchanged.verdict, speaks_the_answer_protocol(unchanged)) == ("unchanged", "proved")
    assert unchanged.to_dict()["verdict"] == "unchanged"

    # row-major operand: the bitcast reads the bytes in another order than the transpose
    wrong = validate_pair(TRANSPOSED, AS_BITCAST, mode="physical")
    # column-major operand: its bytes already are the transpose, a bitcast is the same program
    right = validate_pair(
        COLUMN_MAJOR, COLUMN_MAJOR.replace("transpose(p), dimensions={1,0}", "bitcast(p)"), mode="physical"
    )
    assert speaks_the_answer_protocol(right) == right.verdict == "proved"
    assert speaks_the_answer_protocol(wrong) == wrong.verdict == "refuted"
    # the oracle: running both modules on the same input gives different roots
    from layout_algebra.hlo import run

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert not np.array_equal(run(TRANSPOSED, [x]).array, run(AS_BITCAST, [x]).array)


def test_executor_comparisons_never_claim_a_proof() -> None:
    """Running finds differences (refuted) but proves nothing: agreement is ``unknown``."""
    from layout_algebra.hlo import compare, run

    differ = compare(TRANSPOSED, AS_BITCAST)
    assert speaks_the_answer_protocol(differ) == "refuted" and differ.same is False
    element = differ.to_dict()["element"]
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    a, b = run(TRANSPOSED, [x]).array, run(AS_BITCAST, [x]).array
    assert a[tuple(element)] != b[tuple(element)]  # the difference it names, re-run
    agree = compare(COLUMN_MAJOR, COLUMN_MAJOR.replace("transpose(p), dimensions={1,0}", "bitcast(p)"))
    assert agree.same is True and speaks_the_answer_protocol(agree) == "unknown"
    assert agree.to_dict()["trials"] == agree.trials > 0

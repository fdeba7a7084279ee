"""The public names have one source, and every public exception lives in ``core/errors.py``.

``_EXPORTS`` in ``rcp_data/__init__.py`` is the one list: ``__all__`` is made from it and the
``TYPE_CHECKING`` block (which type checkers read) must import exactly its names from exactly
its modules. An exception class defined anywhere else in ``src/`` is a finding, except the
local Hub server's own HTTP-status carriers and private signals (named below, with why).
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

import rcp_data
from rcp_data.core import errors

SRC = Path(rcp_data.__file__).parent
INIT = SRC / "__init__.py"

#: Exceptions that are not the toolkit's public errors: the local Hub server's answers (a
#: status code for the HTTP layer, never raised to a user of the package) and its deadline.
SERVER_ONLY = {("hub/errors.py", "HubError"), ("hub/errors.py", "ClientGone"),
               ("hub/limits.py", "DeadlinePassed")}


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    names = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.dump(node)
        module = node.module.removeprefix("rcp_data.")
        for alias in node.names:
            assert alias.name not in names, f"{alias.name} imported twice"
            names[alias.name] = module
    return names


def test_type_checking_block_equals_exports() -> None:
    assert _type_checking_imports() == rcp_data._EXPORTS


def test_all_is_exports_plus_version() -> None:
    assert sorted(rcp_data.__all__) == sorted([*rcp_data._EXPORTS, "__version__"])
    assert len(rcp_data.__all__) == len(set(rcp_data.__all__))


@pytest.mark.parametrize("name", sorted(rcp_data._EXPORTS))
def test_each_export_resolves_to_its_module(name: str) -> None:
    value = getattr(rcp_data, name)
    assert value.__module__ == f"rcp_data.{rcp_data._EXPORTS[name]}"


def _is_exception_base(base: ast.expr, local: set[str]) -> bool:
    name = base.id if isinstance(base, ast.Name) else (
        base.attr if isinstance(base, ast.Attribute) else "")
    if name in local:
        return True
    builtin = getattr(builtins, name, None)
    return isinstance(builtin, type) and issubclass(builtin, BaseException)


def test_every_public_exception_is_defined_in_core_errors() -> None:
    ours = {n for n, v in vars(errors).items() if isinstance(v, type)
            and issubclass(v, BaseException)}
    elsewhere = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "core/errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            if (rel, node.name) in SERVER_ONLY:
                continue
            if any(_is_exception_base(b, ours) for b in node.bases):
                elsewhere.append(f"{rel}: {node.name}")
    assert elsewhere == []


@pytest.mark.parametrize(("name", "builtin"), [
    ("HubUnavailable", ConnectionError), ("HubNotFound", FileNotFoundError),
    ("HubNotFound", ConnectionError), ("GitUnavailable", ConnectionError),
    ("EndpointError", ConnectionError), ("OutageError", ConnectionError),
    ("BranchMoved", PermissionError), ("HubConflict", PermissionError),
    ("MissingExtra", ValueError), ("InputError", ValueError),
    ("NotFoundError", FileNotFoundError), ("VerificationFailed", AssertionError),
])
def test_each_error_is_the_builtin_of_its_meaning(name: str, builtin: type) -> None:
    error = getattr(errors, name)
    assert issubclass(error, builtin) and issubclass(error, errors.RcpDataError)


def test_old_import_paths_still_work() -> None:
    from rcp_data.cli.extras import MissingExtra
    from rcp_data.core.git_fetch import GitUnavailable
    from rcp_data.core.hub_client import BranchMoved, HubConflict, HubNotFound, HubUnavailable
    from rcp_data.judging.client import EndpointError, OutageError

    assert (HubUnavailable, HubNotFound, BranchMoved, HubConflict, GitUnavailable,
            EndpointError, OutageError, MissingExtra) == (
        errors.HubUnavailable, errors.HubNotFound, errors.BranchMoved, errors.HubConflict,
        errors.GitUnavailable, errors.EndpointError, errors.OutageError, errors.MissingExtra)


def test_exit_codes_unchanged_by_the_builtin_bases() -> None:
    assert errors.HubUnavailable("x").exit_code == 2
    assert errors.OutageError("x").exit_code == 1
    assert errors.BranchMoved("x").exit_code == 1
    assert errors.MissingExtra("judge", "aiohttp").exit_code == 2


def test_building_contract_and_input_checks_do_not_import_each_other() -> None:
    def imports(rel: str) -> set[str]:
        tree = ast.parse((SRC / rel).read_text(encoding="utf-8"))
        return {node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}

    assert "rcp_data.building.contract" not in imports("building/input_checks.py")
    assert "rcp_data.building.input_checks" in imports("building/contract.py")

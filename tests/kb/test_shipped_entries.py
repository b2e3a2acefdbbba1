"""Every shipped entry validates, matches the installed torch, and its examples run."""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy

import pytest
import torch

from torchls.kb.base import shipped_folder
from torchls.kb.loader import iter_yaml_files, load_file
from torchls.kb.schema import DEVICE_LINE, Entry
from torchls.runner import with_device

from .torch_introspect import _params_from_text, installed_parameters, resolve_object

FILES = sorted(iter_yaml_files(shipped_folder()))


def _entry(path) -> Entry:
    entry, errors = load_file(path, shipped_folder())
    assert not errors, "\n".join(map(str, errors))
    assert entry is not None
    return entry


def _id(path) -> str:
    return str(path.relative_to(shipped_folder()).with_suffix(""))


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_entry_is_valid_and_names_a_real_torch_api(path):
    entry = _entry(path)
    resolve_object(entry.name)  # raises when the installed torch has no such API


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_documented_parameters_exist_in_installed_torch(path):
    entry = _entry(path)
    names = [p.name for p in entry.params] + list(entry.omitted_params)
    if entry.signature:
        names += _params_from_text(entry.signature.split("(", 1)[1].rsplit(")", 1)[0])
    if not names:
        return
    installed = installed_parameters(entry.name)
    assert installed is not None, f"{entry.name} documents parameters but is not callable"
    unknown = sorted(set(names) - installed)
    assert not unknown, f"{entry.name}: not parameters of the installed torch {torch.__version__}: {unknown}"


# Parameters no entry has to mention: catch-alls and private ones.
_EXEMPT_PARAMETERS = frozenset({"args", "kwargs"})


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_every_installed_parameter_is_documented_or_declared_omitted(path):
    entry = _entry(path)
    installed = installed_parameters(entry.name) if entry.kind != "module" else None
    if not installed:
        return
    documented = {p.name for p in entry.params} | set(entry.omitted_params)
    missing = sorted(name for name in installed - documented if name not in _EXEMPT_PARAMETERS and name[0].isalpha())
    assert not missing, (
        f"{entry.name}: parameters of the installed torch {torch.__version__} neither in `params` nor in "
        f"`omitted_params`: {missing}"
    )


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_entry_follows_the_writing_rules(path):
    from torchls.kb.style import style_problems

    problems = style_problems(_entry(path))
    assert not problems, "\n".join(map(str, problems))


def _example_count(path) -> int:
    entry, _ = load_file(path, shipped_folder())
    return len(entry.examples) if entry else 1  # an invalid file still gets one (failing) example test


EXAMPLES = [
    pytest.param(path, index, id=f"{_id(path)}[{index}]") for path in FILES for index in range(_example_count(path))
]


@pytest.mark.parametrize(("path", "index"), EXAMPLES)
def test_example_runs_on_cpu_as_written_and_prints(path, index, tmp_path, monkeypatch):
    """The code exactly as the card shows it, with no name given to it: pasted into Python, it runs. (In this
    process, not a fresh one per example: importing torch ~1,250 times would take longer than the examples.)"""
    example = _entry(path).examples[index]
    if example.device != "any":
        pytest.skip(f"example needs {example.device}")
    # The runner's version differs only in the device line, on the same line: what runs here is what it runs.
    chosen = with_device(example.code, "cpu").splitlines()
    shown = example.code.splitlines()
    assert len(chosen) == len(shown)
    assert [a for a, b in zip(shown, chosen, strict=True) if a != b] in ([], [DEVICE_LINE])
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    output = io.StringIO()
    # From a real file, as the runner does: torch.jit.script and inspect read the source back from it.
    script = tmp_path / f"example_{index}.py"
    script.write_text(example.code, encoding="utf-8")
    with contextlib.redirect_stdout(output), torch.inference_mode(False):
        runpy.run_path(str(script), run_name="__torchls_example__")
    assert output.getvalue().strip(), "an example must print something meaningful"
    assert os.getcwd() == str(tmp_path)


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_see_also_names_real_torch_apis(path):
    entry = _entry(path)
    unknown = []
    for name in entry.see_also:
        try:
            resolve_object(name)
        except LookupError:
            unknown.append(name)
    assert not unknown, f"{entry.name}: see_also names no API of the installed torch: {unknown}"


def test_pitfall_rule_links_name_existing_rules():
    from torchls.core.rules import RULES_BY_CODE

    for path in FILES:
        entry = _entry(path)
        for pitfall in entry.pitfalls:
            if pitfall.rule is not None:
                assert pitfall.rule in RULES_BY_CODE, f"{entry.name}: pitfall links unknown rule {pitfall.rule}"


@pytest.mark.parametrize(("path", "index"), EXAMPLES)
def test_example_is_clean_under_torchls_check(path, index):
    """The examples are correct, idiomatic code: torchls must not report them (precision on code nobody aimed the
    rules at). An example that shows a pitfall on purpose says so with `# noqa: TLxxx` on that line."""
    from torchls.core.checker import check_source

    example = _entry(path).examples[index]
    findings = check_source(example.code).findings
    assert not findings, [f"{f.code} line {f.span.start.line}: {f.message}" for f in findings]


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_string_choices_are_values_the_installed_torch_knows(path):
    """Each string in a parameter's `choices` appears in the installed torch's source or docstring of that API."""
    import ast
    import inspect

    entry = _entry(path)
    choices = [(p.name, c.value) for p in entry.params for c in p.choices]
    if not choices:
        return
    obj = resolve_object(entry.name)
    texts = [inspect.getdoc(obj) or ""]
    for candidate in (obj, getattr(obj, "__init__", None), getattr(obj, "forward", None)):
        with contextlib.suppress(TypeError, OSError):
            texts.append(inspect.getsource(candidate))
    # One level into the helpers the API calls in its own module: kaiming_normal_ checks names in calculate_gain.
    module = inspect.getmodule(obj)
    for called in set(re.findall(r"\b([A-Za-z_]\w*)\(", "\n".join(texts[1:]))):
        helper = getattr(module, called, None)
        if inspect.isfunction(helper) and helper.__module__ == getattr(module, "__name__", None):
            with contextlib.suppress(TypeError, OSError):
                texts.append(inspect.getsource(helper))
    corpus = "\n".join(texts)
    for param, value in choices:
        literal = ast.literal_eval(value)
        if isinstance(literal, str):
            assert f'"{literal}"' in corpus or f"'{literal}'" in corpus or f"``{literal}``" in corpus, (
                f"{entry.name}({param}=...): {value} is not a value torch's code or docs mention"
            )

"""control_flow.later_iteration_only: a binding that reaches a use only through a loop's back edge."""

from __future__ import annotations

import ast

from torchls.core import control_flow


def _check(source: str) -> list[bool]:
    """For the one use of ``h`` marked by a call ``use(h)``: whether each binding of ``h`` reaches it only later."""
    tree = ast.parse(source)
    parents = control_flow.parent_table(tree)
    use = next(
        n.args[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "use"
    )
    stores = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "h" and isinstance(n.ctx, ast.Store)]
    stores.sort(key=control_flow.position)
    return [control_flow.later_iteration_only(s, use, parents) for s in stores]


def test_the_statement_that_reads_the_state_rebinds_it():
    assert _check("h = 0\nfor t in r:\n    h = use(h)\n") == [False, True]


def test_a_tuple_of_states_rebound_by_the_step():
    assert _check("h = 0\nfor t in r:\n    h, c = use(h)\n") == [False, True]


def test_a_binding_later_in_the_loop_body():
    assert _check("h = 0\nwhile go:\n    y = use(h)\n    h = y\n") == [False, True]


def test_a_binding_before_the_use_in_the_body_runs_first():
    assert _check("h = 0\nfor t in r:\n    h = step(t)\n    y = use(h)\n") == [False, False]


def test_a_use_under_a_branch_may_first_run_on_a_later_step():
    assert _check("h = 0\nfor t in r:\n    if t:\n        y = use(h)\n    h = y\n") == [False, False]


def test_no_loop():
    assert _check("h = 0\ny = use(h)\nh = y\n") == [False, False]

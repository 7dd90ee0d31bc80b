"""A domain whose operators or changing predicates demoforge cannot act out or observe is refused
before any episode runs, naming what is missing (issue 36: errors name the missing piece)."""

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.errors import DemoforgeError
from demoforge.execute import ExecuteError, generate
from demoforge.tasks import domain_text

from .conftest import problem_files


def _domain(path, *, predicate: bool):
    """The blocks domain plus an operator `wipe` (making a new predicate `wiped` true, or, without
    `predicate`, only asking for a clear block)."""
    text = domain_text("blocks")
    effect = "(wiped ?x)" if predicate else "(clear ?x)"
    if predicate:
        text = text.replace("(in_region ?x - block ?r - region)", "(in_region ?x - block ?r - region)\n    "
                            "(wiped ?x - block)", 1)
    cut = text.rindex(")")
    path.write_text(text[:cut] + f"  (:action wipe\n    :parameters (?x - block)\n    :precondition (clear ?x)\n"
                                 f"    :effect {effect})\n)")
    return path


def test_an_operator_without_a_skill_is_refused_before_any_episode(tmp_path):
    problems = problem_files(tmp_path / "tasks", "pnp", 1)
    domain = _domain(tmp_path / "wipe.pddl", predicate=False)
    with pytest.raises(ExecuteError, match=r"operator\(s\) \['wipe'\] have no skill; skills: \[.*'pick-up'"):
        generate(problems, tmp_path / "out", episodes_per_problem=1, domain=str(domain))
    assert not (tmp_path / "out").exists()
    res = CliRunner().invoke(app, ["generate", *map(str, problems), "--domain", str(domain), "--episodes-per-problem",
                                   "1", "--out", str(tmp_path / "cli")])
    assert res.exit_code == 2 and "['wipe'] have no skill" in res.output and "Traceback" not in res.output


def test_a_predicate_without_an_evaluator_is_refused_before_any_episode(tmp_path):
    problems = problem_files(tmp_path / "tasks", "pnp", 1)
    domain = _domain(tmp_path / "wiped.pddl", predicate=True)
    with pytest.raises(DemoforgeError, match="'wiped' has no simulator evaluator"):
        generate(problems, tmp_path / "out", episodes_per_problem=1, domain=str(domain))
    assert not (tmp_path / "out").exists()

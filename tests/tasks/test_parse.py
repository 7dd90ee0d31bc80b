"""Parsing: the shipped domain, sorted results, and every bad-input case."""

import random
import re

import pytest

from demoforge.errors import TaskError
from demoforge.tasks import load_task, parse_domain, parse_task, problem_text
from tests.tasks.conftest import BLOCKS, blocks_problem, upright

GOOD = blocks_problem(
    objects=[("red", "block"), ("green", "block"), ("left", "region")],
    init=[("hand_empty",), ("on_table", "red"), ("on_table", "green"), ("clear", "red"), ("clear", "green"),
          *upright("red", "green")],
    goal="(and (on red green) (in_region green left))",
)


def parse(problem: str = GOOD, domain: str = BLOCKS):
    return parse_task(problem, domain_text=domain, problem_file="prob.pddl", domain_file="dom.pddl")


def test_shipped_domain_has_the_operators_and_predicates():
    domain = parse_domain(BLOCKS)
    assert {a.name for a in domain.actions} == {
        "pick-up", "put-down", "stack", "unstack", "flip", "rotate", "place-in-region"}
    assert {"on", "on_table", "clear", "holding", "hand_empty", "face_up", "yaw", "in_region"} <= {
        p.name for p in domain.predicates}


def test_task_is_sorted_and_text_canonical_whatever_the_input_order():
    task = parse()
    head, rest = GOOD.split("  (:init", 1)
    init, goal = rest.split("  (:goal", 1)
    atoms = re.findall(r"\([^()]*\)", init)
    random.Random(3).shuffle(atoms)
    shuffled = head + "  (:init " + " ".join(atoms) + ")\n  (:goal" + goal
    other = parse(shuffled.replace("green red - block", "red green - block"))
    assert task.init == tuple(sorted(task.init))
    assert task.objects == (("green", "block"), ("left", "region"), ("red", "block"))
    assert other.init == task.init and problem_text(other) == problem_text(task) == GOOD


def test_load_task_reads_files_and_library_domain(tmp_path):
    path = tmp_path / "p.pddl"
    path.write_text(GOOD)
    assert load_task(path).init == parse().init
    (tmp_path / "d.pddl").write_text(BLOCKS)
    assert load_task(path, tmp_path / "d.pddl").domain_file.endswith("d.pddl")
    with pytest.raises(TaskError, match="cannot read PDDL problem"):
        load_task(tmp_path / "missing.pddl")
    with pytest.raises(TaskError, match="cannot read PDDL domain"):
        load_task(path, str(tmp_path / "missing-domain.pddl"))


def test_a_domain_name_no_package_brings_is_refused_with_the_library_and_the_fix(tmp_path, monkeypatch):
    path = tmp_path / "p.pddl"
    path.write_text(GOOD)
    monkeypatch.chdir(tmp_path)  # "near" is no file here either
    with pytest.raises(TaskError, match=r"domain 'near' is neither a file nor a loaded domain \(the library has: "
                                        r"blocks.*\); a task package adds its own: --task-package"):
        load_task(path, "near")


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("(on_table red)", "(ontable red)", r"prob.pddl:\d+: :init atom \(ontable red\) uses unknown predicate 'ontable'"),
        ("(on_table red)", "(on_table purple)", r"prob.pddl:\d+: :init atom \(on_table purple\) mentions undeclared object 'purple'"),
        ("left - region", "left - zone", r"prob.pddl:\d+: object 'left' has unknown type 'zone'"),
        ("(on_table red)", "(on_table red green)", r"prob.pddl:\d+: :init atom \(on_table red green\) has 2 argument\(s\); on_table takes 1"),
        ("(on red green)", "(on red purple)", r"prob.pddl:\d+: :goal atom \(on red purple\) mentions undeclared object 'purple'"),
        ("(in_region green left)", "(in_region left green)", r"'left' is a region, in_region expects a block"),
        ("(:domain demoforge-blocks)", "(:domain other)", r"problem is for domain 'other'"),
        ("(:goal (and", "(:goal (and (", r"prob.pddl:\d+: invalid PDDL problem: Unexpected token"),
        ("green red - block", "green red pz - block", r"object 'pz' is already a constant"),
    ],
)
def test_bad_problem_names_file_item_and_line(old, new, expected):
    assert old in GOOD
    with pytest.raises(TaskError, match=expected):
        parse(GOOD.replace(old, new, 1))


def test_line_numbers_point_at_the_offending_atom():
    bad = GOOD.replace("(on red green)", "(on red purple)")
    line = next(i for i, text in enumerate(bad.splitlines(), 1) if "purple" in text)
    with pytest.raises(TaskError, match=rf"prob.pddl:{line}: "):
        parse(bad)


def test_every_problem_is_reported_at_once():
    bad = GOOD.replace("(on_table red)", "(ontable red)").replace("(on red green)", "(on red purple)")
    with pytest.raises(TaskError, match="2 problem") as err:
        parse(bad)
    assert "ontable" in str(err.value) and "purple" in str(err.value)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("(holding ?x) (clear ?y)", "(holdin ?x) (clear ?y)", r"dom.pddl:\d+: action 'stack' precondition uses unknown predicate 'holdin'"),
        ("(holding ?x) (clear ?y)", "(holding ?x ?y) (clear ?y)", r"action 'stack' precondition: \(holding \.\.\.\) takes 1 argument\(s\), got 2"),
        ("(holding ?x) (clear ?y)", "(holding ?z) (clear ?y)", r"action 'stack' precondition uses undeclared variable \?z"),
        ("(?x - block ?r - region)", "(?x - block ?r - zone)", r"dom.pddl:\d+: invalid PDDL domain: types \['zone'\]"),
        ("(:action stack", "(:action stack (", r"dom.pddl:\d+: invalid PDDL domain: Unexpected token"),
        (":equality", "", r"invalid PDDL domain: Missing PDDL requirement"),
    ],
)
def test_bad_domain_names_file_item_and_line(old, new, expected):
    assert old in BLOCKS
    with pytest.raises(TaskError, match=expected):
        parse(domain=BLOCKS.replace(old, new, 1))


def test_parser_recovers_after_an_error():
    with pytest.raises(TaskError):
        parse(GOOD.replace("(:goal (and", "(:goal (and ("))
    with pytest.raises(TaskError):
        parse(domain=BLOCKS.replace("(:action stack", "(:action stack ("))
    assert parse().name == "p"


def test_a_parse_error_leaves_the_interpreters_traceback_limit_alone():
    """pddl sets sys.tracebacklimit = 0 while parsing and leaves it there when the parse fails,
    which hid every later traceback's frames (a user's policy error lost its file and line)."""
    import sys

    from demoforge.tasks import parse_task
    from demoforge.tasks.library import DOMAINS, domain_text

    with pytest.raises(TaskError):
        parse_task("(define (problem x) (:domain blocks) (:objects", domain_text=domain_text("blocks"),
                   problem_file="p.pddl", domain_file=DOMAINS["blocks"])
    assert not hasattr(sys, "tracebacklimit")

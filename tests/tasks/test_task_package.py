"""The task-package registry (demoforge.tasks.package, public as demoforge.taskapi): the blocks world
registered through it, clashes and bad specs refused naming both sides, missing pieces named before
any episode, and a user's package (examples/tasks/near) loaded by path and run end to end."""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from demoforge import taskapi as T
from demoforge.cli.main import app
from demoforge.errors import DemoforgeError
from demoforge.skills import SKILLS
from demoforge.tasks import FAMILIES, domain_text, generate_family, load_task, parse_task, write_tasks
from demoforge.tasks import package as registry
from demoforge.tasks.package import missing_pieces
from demoforge.tasks.families import DOMAIN_NAME
NEAR = Path(__file__).parents[2] / "examples" / "tasks" / "near" / "near_task.py"




def test_the_blocks_world_is_one_registered_package():
    (blocks, *_) = T.packages()
    assert blocks.name == "blocks" and blocks.origin == "built-in"
    assert set(blocks.skills) == set(SKILLS) == {"flip", "pick-up", "place-in-region", "put-down", "rotate", "stack",
                                                "unstack"}
    assert set(blocks.families) <= set(FAMILIES) and "pnp" in FAMILIES
    assert set(blocks.object_types) == {"block", "region"}
    assert registry.owner("predicates", "in_region") is blocks and "in_region" in blocks.predicates
    assert domain_text("blocks") == blocks.domain_text()


def test_the_blocks_entry_point_is_declared():
    text = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert '[project.entry-points."demoforge.tasks"]' in text and 'blocks = "demoforge.taskapi.blocks"' in text


def test_a_clash_names_both_packages(isolated):
    body = SKILLS["stack"].body
    dup = T.TaskPackage("dup", domain="(define (domain dup))", skills={"stack": T.Skill("stack", ("?x", "?y"), body)},
                        families={"pnp": FAMILIES["pnp"]})
    with pytest.raises(T.TaskPackageError) as err:
        T.register(dup)
    msg = str(err.value)
    assert "skill 'stack' is provided by both 'blocks' (built-in) and 'dup'" in msg
    assert "family 'pnp'" in msg and "rename" in msg
    assert "dup" not in [p.name for p in T.packages()]


def test_bad_specs_are_refused_with_the_fix(isolated, tmp_path):
    with pytest.raises(T.TaskPackageError, match="no such file"):
        T.load_package(tmp_path / "missing.py")
    empty = tmp_path / "empty_task.py"
    empty.write_text("X = 1\n")
    with pytest.raises(T.TaskPackageError, match="defines no PACKAGE.*PACKAGE = TaskPackage"):
        T.load_package(empty)
    with pytest.raises(T.TaskPackageError, match="no module 'no_such_task_module'"):
        T.load_package("no_such_task_module")
    broken = tmp_path / "broken_task.py"
    broken.write_text("raise RuntimeError('oops')\n")
    with pytest.raises(T.TaskPackageError, match="failed to import: RuntimeError: oops"):
        T.load_package(broken)
    odd = T.TaskPackage("odd", domain="(define (domain odd))", skills={"a": T.Skill("b", (), print)},
                        families={"f": T.Family(1, 2, print)})
    with pytest.raises(T.TaskPackageError, match=r"malformed:\n  skills\['a'\].*\n  families\['f'\]"):
        T.register(odd)


def test_an_unknown_family_names_the_families_and_the_fix():
    with pytest.raises(DemoforgeError, match=r"unknown task family 'nosuch'; families: .*pnp.*--task-package"):
        generate_family("nosuch", count=1, seed=0)
    res = CliRunner().invoke(app, ["tasks", "gen", "nosuch", "--problems", "1", "--task-seed", "0", "--out", "unused"])
    assert res.exit_code == 2 and "--task-package" in res.output and "Traceback" not in res.output


def test_missing_skill_and_evaluator_name_the_piece_the_domain_and_the_packages():
    text = domain_text("blocks").replace("(in_region ?x - block ?r - region)",
                                         "(in_region ?x - block ?r - region)\n    (wiped ?x - block)", 1)
    cut = text.rindex(")")
    text = text[:cut] + "  (:action wipe :parameters (?x - block) :precondition (clear ?x) :effect (wiped ?x))\n)"
    problem = f"(define (problem p) (:domain {DOMAIN_NAME}) (:objects a - block) (:init (clear a)) (:goal (wiped a)))"
    task = parse_task(problem, domain_text=text, problem_file="p.pddl", domain_file="wipe.pddl")
    lines = missing_pieces(task)
    assert len(lines) == 2
    assert lines[0].startswith("wipe.pddl: operator(s) ['wipe'] have no skill") and "blocks (built-in)" in lines[0]
    assert lines[1].startswith("wipe.pddl: predicate 'wiped' has no simulator evaluator") and "--task-package" in lines[1]


MINI = '''
from demoforge import taskapi as T
from demoforge.tasks import domain_text

def pair(blocks, rng):
    init = [a for x in blocks for a in (("on_table", x), ("clear", x), ("face_up", x, "pz"), ("yaw", x, "yaw0"))]
    return init, [("on", blocks[0], blocks[1])]

PACKAGE = T.TaskPackage("mini", domain=domain_text("blocks").replace("demoforge-blocks", "demoforge-mini"),
                        families={"mini_pair": T.Family(2, 2, pair)})
'''


def test_task_package_loads_before_the_family_is_checked(isolated, tmp_path):
    """`tasks gen`, `scenes build`, `generate` and `run` take --task-package (run: task_packages) and load it before
    the family name (or any other field) is checked; a spawned worker inherits it (ENV_VAR)."""
    from demoforge.pipeline import config_from_dict
    from demoforge.fields import specs
    from demoforge.scenes.config import ScenesConfig
    from demoforge.execute.config import ExecuteConfig

    spec = tmp_path / "mini_task.py"
    spec.write_text(MINI)
    out = tmp_path / "t"
    res = CliRunner().invoke(app, ["tasks", "gen", "mini_pair", "--task-package", str(spec), "--problems", "2",
                                   "--task-seed", "0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.glob("*.pddl")) == ["mini.pddl", "mini_pair-all-0000.pddl",
                                                          "mini_pair-all-0001.pddl"]
    assert str(spec.resolve()) in os.environ[registry.ENV_VAR].split(os.pathsep)
    config = config_from_dict({"experiment_id": "m", "task_packages": [str(spec)], "family": "mini_pair"})
    assert config.task_packages == (str(spec),) and config.tasks.family == "mini_pair"
    assert config.execute.task_packages == (str(spec),)
    assert all("--task-package" in [s.flag for s in specs(cls)] for cls in (ExecuteConfig, ScenesConfig))
    with pytest.raises(DemoforgeError, match="no such file"):
        config_from_dict({"experiment_id": "m", "task_packages": [str(tmp_path / "nope.py")]})


def test_the_near_example_loads_lists_generates_and_runs(isolated, tmp_path):
    """Written only against demoforge.taskapi; 4 episodes, at least 3 succeed."""
    from demoforge.determinism import check_task_family
    from demoforge.execute import generate

    res = CliRunner().invoke(app, ["tasks", "list", "--json", "--task-package", str(NEAR)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["packages"]["near"]["origin"] == f"path {NEAR.resolve()}"
    assert out["domains"]["near"]["operators"] == {"place-near": True}
    assert out["domains"]["near"]["predicates"]["near"] == "evaluated"
    assert out["families"]["near_pair"] == {"n": 2, "min_n": 2, "package": "near", "types": []}
    text = CliRunner().invoke(app, ["tasks", "list", "--task-package", str(NEAR)]).output
    assert "package near (path " in text and "operators: place-near" in text and "families: near_pair" in text

    first = generate_family("near_pair", count=4, seed=0)
    assert [g.problem_pddl for g in first] == [g.problem_pddl for g in generate_family("near_pair", count=4, seed=0)]
    assert all("(:domain demoforge-near)" in g.problem_pddl and "(near " in g.problem_pddl for g in first)
    paths = write_tasks(first, tmp_path / "tasks")
    assert (tmp_path / "tasks" / "near.pddl").is_file() and not (tmp_path / "tasks" / "blocks.pddl").exists()
    problems = [p for p in paths if p.name.startswith("near_pair-") and p.suffix == ".pddl"]
    res = CliRunner().invoke(app, ["tasks", "plan", str(problems[0]), "--domain", "near", "--task-package", str(NEAR)])
    assert res.exit_code == 0 and "place-near" in res.output, res.output
    check_task_family("near_pair", count=2)  # deterministic problems and reset states
    with pytest.raises(DemoforgeError, match="task package 'near' .* has that domain: pass --domain near"):
        load_task(problems[0], "blocks")
    summary = generate(problems, tmp_path / "raw", episodes_per_problem=1, domain="near")
    assert summary.episodes == 4 and summary.successes >= 3, summary
    generate(problems, tmp_path / "again", episodes_per_problem=1, domain="near")
    files = sorted(p.relative_to(tmp_path / "raw") for p in (tmp_path / "raw").rglob("*") if p.is_file())
    assert files and all((tmp_path / "raw" / f).read_bytes() == (tmp_path / "again" / f).read_bytes() for f in files)


def test_a_run_records_the_task_package_it_used_and_a_changed_package_is_another_run(isolated, tmp_path):
    """run.json (and the raw dataset's provenance) name the package whose code acted the problems out,
    with the sha256 of its module and domain; the same command after the package file changed is
    refused naming `task_packages`, not resumed as the same run. The blocks world is not recorded."""
    import hashlib
    import shutil

    from demoforge.execute import generate

    package = tmp_path / "pkg" / "near_task.py"
    shutil.copytree(NEAR.parent, package.parent)
    registry.load_package(str(package))
    paths = write_tasks(generate_family("near_pair", count=1, seed=0), tmp_path / "tasks")
    problems = [p for p in paths if p.name.startswith("near_pair-") and p.suffix == ".pddl"]
    generate(problems, tmp_path / "raw", episodes_per_problem=1, domain="near")
    (used,) = json.loads((tmp_path / "raw" / "run.json").read_text())["task_packages"]
    assert used == {"name": "near", "origin": f"path {package.resolve()}",
                    "domain_sha256": hashlib.sha256((package.parent / "near.pddl").read_bytes()).hexdigest(),
                    "source_sha256": hashlib.sha256(package.read_bytes()).hexdigest()}
    provenance = json.loads((tmp_path / "raw" / "success" / "meta" / "demoforge" / "provenance.json").read_text())
    assert provenance["run"]["task_packages"] == [used]
    assert [p.name for p in registry.packages_of(load_task(problems[0], "near"))] == ["blocks", "near"]

    package.write_text(package.read_text() + "\nNEAR_M = 0.2\n")
    with pytest.raises(DemoforgeError, match="differing: task_packages"):
        generate(problems, tmp_path / "raw", episodes_per_problem=1, domain="near")

    (pnp,) = [p for p in write_tasks(generate_family("pnp", count=1, seed=0), tmp_path / "blocks")
              if p.name.startswith("pnp-") and p.suffix == ".pddl"]
    assert [p.name for p in registry.packages_of(load_task(pnp, "blocks"))] == ["blocks"]


def test_a_package_records_the_file_of_its_module_however_it_was_loaded(isolated, tmp_path, monkeypatch):
    """What a run hashes as a package's code is the file its module was loaded from, recorded when it is
    loaded (by module name here; by path in the test above), not parsed back out of its origin text."""
    import shutil

    folder = tmp_path / "mine"
    shutil.copytree(NEAR.parent, folder)
    (folder / "near_task.py").rename(folder / "near_by_name.py")
    monkeypatch.syspath_prepend(str(folder))
    by_name = registry.load_package("near_by_name")
    assert by_name.origin == "module near_by_name" and by_name.source == folder / "near_by_name.py"
    assert registry.package_identity(by_name)["source_sha256"] is not None
    assert registry.package("blocks").source.name == "blocks.py"


def test_run_acts_out_a_user_family_rendered(isolated, tmp_path):
    """`demoforge run --task-package ... --family near_pair`: the tasks, envs and execute stages read the
    package's domain (not the blocks world's), and the episodes render under a look."""
    from demoforge.dataset import open_dataset

    res = CliRunner().invoke(app, ["run", "--task-package", str(NEAR), "--family", "near_pair", "--problems", "2",
                                   "--episodes-per-problem", "1", "--look", "plain", "--out-dir", str(tmp_path),
                                   "--experiment-id", "near"])
    assert res.exit_code == 0, res.output
    run = tmp_path / "near"
    assert (run / "tasks" / "near.pddl").is_file() and not (run / "tasks" / "blocks.pddl").exists()
    assert "2 episodes, 2 successes" in res.output
    final = open_dataset(run / "annotated")
    assert final.num_episodes == 2 and any(k.startswith("observation.images.") for k in final.info.features)

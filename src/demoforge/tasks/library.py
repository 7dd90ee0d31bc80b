"""The domain library: each registered task package's PDDL domain, looked up by package name.

The blocks domain ships as package data (`demoforge/tasks/domains/blocks.pddl`); a user's task
package brings its own (`demoforge.tasks.package`).
"""

from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path

from demoforge.errors import TaskError
from demoforge.tasks import package as registry


def shipped_domain(file: str) -> Path:
    """Path of a domain file shipped under demoforge/tasks/domains/."""
    return Path(str(resources.files("demoforge.tasks").joinpath("domains", file)))


class _Domains(Mapping):
    """Package name -> the file name its domain is written under (`blocks` -> `blocks.pddl`)."""

    def __getitem__(self, name: str) -> str:
        found = registry.domain_file_of(name)
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter([p.name for p in registry.packages()])

    def __len__(self) -> int:
        return len(registry.packages())


DOMAINS: Mapping[str, str] = _Domains()


def _package(name: str) -> registry.TaskPackage:
    if name not in DOMAINS:
        raise TaskError(f"domain {name!r} is neither a file nor a loaded domain (the library has: "
                        f"{', '.join(sorted(DOMAINS))}); a task package adds its own: --task-package "
                        "PATH_OR_MODULE, or give the domain file's path")
    return registry.package(name)


def domain_path(name: str) -> Path:
    """Path of the domain of package `name` (a key of `DOMAINS`) when it is a file."""
    pkg = _package(name)
    if not pkg.domain_is_file:
        raise TaskError(f"the domain of task package {name!r} ({pkg.origin}) is given as text, not a file; "
                        "use domain_text()")
    return Path(pkg.domain)


def domain_text(name: str) -> str:
    """PDDL text of the domain of package `name`."""
    return _package(name).domain_text()

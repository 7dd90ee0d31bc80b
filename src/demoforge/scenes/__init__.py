"""Scene packages: a problem's compiled scene profiles and sampled reset states, ready for
execution (format in `demoforge.scenes.package`); the problem a run executes (`problem`), its
task scene (`scene`) and a physics randomization draw applied to it (`randomization`)."""

from demoforge.scenes.load import (
    ScenePackage,
    SceneProblem,
    SceneProfile,
    load_scene_package,
    open_profile,
    restore_reset,
)
from demoforge.scenes.package import (
    SCHEMA,
    Manifest,
    ProblemEntry,
    ProfileEntry,
    ScenePackageError,
    build_scene_package,
    manifest_to_dict,
)
from demoforge.scenes.problem import Problem, problem_robot
from demoforge.scenes.scene import SceneBuildError, build_task_scene, model_fingerprint, task_scene_spec

__all__ = [
    "SCHEMA", "Manifest", "Problem", "ProblemEntry", "ProfileEntry", "SceneBuildError", "ScenePackage",
    "ScenePackageError", "SceneProblem", "SceneProfile", "build_scene_package", "build_task_scene",
    "load_scene_package", "manifest_to_dict", "model_fingerprint", "open_profile", "problem_robot", "restore_reset",
    "task_scene_spec",
]

"""Environment packages: a problem's compiled scene profiles and sampled reset states, ready
for execution (format in `demoforge.envs.package`); the problem a run executes (`problem`), its
task scene (`scene`) and a physics randomization draw applied to it (`randomization`)."""

from demoforge.envs.load import EnvPackage, EnvProblem, EnvProfile, load_env_package, open_profile, restore_reset
from demoforge.envs.package import (
    SCHEMA,
    EnvPackageError,
    Manifest,
    ProblemEntry,
    ProfileEntry,
    build_env_package,
    manifest_to_dict,
)
from demoforge.envs.problem import Problem, problem_robot
from demoforge.envs.scene import EnvSceneError, build_task_scene, model_fingerprint, task_scene_spec

__all__ = [
    "SCHEMA", "EnvPackage", "EnvPackageError", "EnvProblem", "EnvProfile", "EnvSceneError", "Manifest",
    "Problem", "ProblemEntry", "ProfileEntry", "build_env_package", "build_task_scene", "load_env_package",
    "manifest_to_dict", "model_fingerprint", "open_profile", "problem_robot", "restore_reset", "task_scene_spec",
]

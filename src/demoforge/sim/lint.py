"""Contact-stability linter: settle a model, record a trace, classify it.

`lint_contact_stability(model)` steps a copy of the model from its initial state (or a
keyframe) with its controls held, records what `lint_classify.classify` needs, and
returns the findings: C001 explosion, C002 penetration, C003 jitter.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from demoforge.errors import SimError
from demoforge.fields import option
from demoforge.sim.lint_classify import ContactPair, Finding, LintThresholds, SettleTrace, classify

MJCF_SUFFIXES = (".xml", ".mjcf")


@dataclass(frozen=True)
class LintReport:
    """The findings of one settle rollout and the trace they were read from."""

    findings: tuple[Finding, ...]  # C001 first, then by code and contact pair
    trace: SettleTrace  # what the rollout measured
    settle_s: float  # simulated duration [s]
    keyframe: str | int | None  # the keyframe the rollout started from, None for the model's initial state
    thresholds: LintThresholds  # the thresholds the findings were judged by


@dataclass(frozen=True)
class LintConfig:
    """`demoforge sim lint`'s options (`demoforge.fields`: its flags are generated from these fields)."""

    settle_s: float = option(1.0, "Simulated settle time [s].", range=(0.0, 60.0), low_open=True)
    keyframe: str | None = option(None, "Start from this keyframe (name or index).", kind="str")
    as_json: bool = option(False, "Print the report as JSON.", flag="--json")


def lint_contact_stability(
    model: mujoco.MjModel,
    *,
    settle_s: float = 1.0,
    keyframe: str | int | None = None,
    thresholds: LintThresholds = LintThresholds(),
) -> LintReport:
    """Settle `model` for `settle_s` [s] and report contact-stability findings.

    The model is not changed. Controls stay at the keyframe's (or zero): actuator work is
    subtracted from the energy balance, so an arm driving to its targets is not an explosion.
    """
    if not math.isfinite(settle_s) or settle_s < 2 * thresholds.window_s:
        raise SimError(
            f"settle_s={settle_s!r} must be finite and at least twice thresholds.window_s "
            f"({2 * thresholds.window_s:g} s) so the first and the trailing window do not overlap"
        )
    trace = record_settle(model, settle_s=settle_s, keyframe=keyframe)
    return LintReport(tuple(classify(trace, thresholds)), trace, settle_s, keyframe, thresholds)


def record_settle(
    model: mujoco.MjModel, *, settle_s: float = 1.0, keyframe: str | int | None = None
) -> SettleTrace:
    """Step a copy of `model` for `settle_s` [s]; row k of the trace describes the state before step k+1."""
    # One function: the step loop fills preallocated per-step arrays and contact records that the tail
    # turns into per-pair tables; split, those arrays would be handed between the pieces.
    m = copy.copy(model)  # MjModel copies are deep: the caller's flags stay as they were
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    d = mujoco.MjData(m)
    if keyframe is not None:
        mujoco.mj_resetDataKeyframe(m, d, _keyframe_id(m, keyframe))
    steps = max(1, int(math.ceil(settle_s / m.opt.timestep - 1e-9)))
    geom_names = [_name(m, mujoco.mjtObj.mjOBJ_GEOM, i, "geom") for i in range(m.ngeom)]
    body_names = tuple(_name(m, mujoco.mjtObj.mjOBJ_BODY, i, "body") for i in range(m.nbody))
    # Gravity compensation routed through passive forces does work like an actuator does.
    gravcomp_dofs = ~m.jnt_actgravcomp[m.dof_jntid].astype(bool) if m.nv else np.zeros(0, bool)

    qacc_max, qacc_body = np.zeros(steps), np.zeros(steps, np.int64)
    kinetic, gain, unstable = np.zeros(steps), np.zeros(steps), np.zeros(steps, bool)
    # per step: (geom pair codes g1 * ngeom + g2 with g1 < g2, deepest penetration, summed normal force)
    contacts: list[tuple[list[int], list[float], list[float]]] = []
    pair_params: dict[int, tuple[tuple[float, ...], tuple[float, ...]]] = {}
    # An elliptic cone's (or a frictionless contact's) normal force is its first constraint force,
    # what mj_contactForce returns; pyramidal cones are decoded by it, contact by contact.
    elliptic = m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    force6 = np.zeros(6)
    energy0 = work = None
    bad_qacc = mujoco.mjtWarning.mjWARN_BADQACC
    for k in range(steps):
        warnings_before = d.warning[bad_qacc].number
        mujoco.mj_step(m, d)  # computes energy, qacc and contacts of the state it starts from
        energy = float(d.energy[0] + d.energy[1])
        if energy0 is None:
            energy0, work = energy, 0.0
        gain[k] = energy - energy0 - work
        power = d.qfrc_actuator + np.where(gravcomp_dofs, d.qfrc_gravcomp, 0.0)
        # The step moved qpos by the new qvel * dt (semi-implicit Euler): that is the work's displacement.
        work += float(np.dot(power, d.qvel)) * m.opt.timestep
        kinetic[k] = d.energy[1]
        if m.nv:
            dof = int(np.argmax(np.abs(d.qacc)))
            qacc_max[k], qacc_body[k] = abs(d.qacc[dof]), m.dof_bodyid[dof]
        unstable[k] = d.warning[bad_qacc].number > warnings_before or not (
            np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel)) and math.isfinite(energy)
        )
        contacts.append(_step_contacts(m, d, elliptic, force6, pair_params))

    codes = sorted(pair_params, key=lambda c: (geom_names[c // m.ngeom], geom_names[c % m.ngeom], c))
    depth_tp = np.full((steps, len(codes)), np.nan)
    force_tp = np.zeros((steps, len(codes)))
    column = np.zeros(m.ngeom * m.ngeom, np.int64)
    column[codes] = np.arange(len(codes))
    for k, (code, depth, force) in enumerate(contacts):
        depth_tp[k, column[code]], force_tp[k, column[code]] = depth, force
    pairs = tuple(
        ContactPair(geom_names[g1], geom_names[g2], body_names[m.geom_bodyid[g1]], body_names[m.geom_bodyid[g2]],
                    tuple(float(x) for x in pair_params[c][0]),  # type: ignore[arg-type]
                    tuple(float(x) for x in pair_params[c][1]))  # type: ignore[arg-type]
        for c, (g1, g2) in ((c, divmod(c, m.ngeom)) for c in codes)
    )
    return SettleTrace(
        timestep=float(m.opt.timestep),
        integrator=mujoco.mjtIntegrator(m.opt.integrator).name.removeprefix("mjINT_").lower(),
        solver=mujoco.mjtSolver(m.opt.solver).name.removeprefix("mjSOL_").lower(),
        iterations=int(m.opt.iterations),
        body_names=body_names,
        qacc_max=qacc_max,
        qacc_body=qacc_body,
        kinetic_energy=kinetic,
        energy_gain=gain,
        unstable=unstable,
        pairs=pairs,
        depth=depth_tp,
        normal_force=force_tp,
    )


def _step_contacts(m: mujoco.MjModel, d: mujoco.MjData, elliptic: bool, force6: np.ndarray,
                   pair_params: dict) -> tuple[list[int], list[float], list[float]]:
    """This step's contacts per geom pair: (pair codes, deepest penetration [m], summed normal
    force [N]), summed in contact order; a pair's first contact's solref and solimp are noted
    in `pair_params` (code -> (solref, solimp)) the first time the pair touches. The contact
    fields are read as whole arrays: one MjContact object per contact cost most of the lint."""
    n = d.ncon
    if not n:
        return [], [], []
    con = d.contact
    geom = np.sort(con.geom, axis=1)
    codes = (geom[:, 0].astype(np.int64) * m.ngeom + geom[:, 1]).tolist()
    if elliptic or (con.dim == 1).all():
        adr, force = con.efc_address, np.zeros(n)
        force[adr >= 0] = d.efc_force[adr[adr >= 0]]  # a contact without a constraint (in the gap) carries none
        forces = force.tolist()
    else:
        forces = []
        for c in range(n):
            mujoco.mj_contactForce(m, d, c, force6)
            forces.append(float(force6[0]))
    step: dict[int, tuple[float, float]] = {}
    for c, (code, depth, force) in enumerate(zip(codes, (-con.dist).tolist(), forces, strict=True)):
        deepest, total = step.get(code, (-math.inf, 0.0))
        step[code] = (max(deepest, depth), total + force)
        if code not in pair_params:
            pair_params[code] = (tuple(con.solref[c]), tuple(con.solimp[c]))
    return list(step), [v[0] for v in step.values()], [v[1] for v in step.values()]


def load_mjcf(path: Path | str) -> mujoco.MjModel:
    """Compile an MJCF file, raising SimError naming the file on any problem."""
    path = Path(path)
    if not path.is_file():
        raise SimError(f"scene file '{path}' does not exist or is not a file")
    if path.suffix.lower() not in MJCF_SUFFIXES:
        raise SimError(f"scene file '{path}' has suffix '{path.suffix}'; supported: {', '.join(MJCF_SUFFIXES)} (MJCF)")
    try:
        return mujoco.MjModel.from_xml_path(str(path))
    except ValueError as e:  # MuJoCo reports parse and compile errors as ValueError
        raise SimError(f"scene file '{path}' is not a valid MJCF model: {e}") from None


def _keyframe_id(m: mujoco.MjModel, keyframe: str | int) -> int:
    names = [_name(m, mujoco.mjtObj.mjOBJ_KEY, i, "key") for i in range(m.nkey)]
    if isinstance(keyframe, str):
        if keyframe in names:
            return names.index(keyframe)
    elif 0 <= keyframe < m.nkey:
        return int(keyframe)
    raise SimError(f"keyframe {keyframe!r} does not exist in the model. Available keyframes: {names}")


def _name(m: mujoco.MjModel, obj: mujoco.mjtObj, i: int, kind: str) -> str:
    return mujoco.mj_id2name(m, obj, i) or f"{kind}{i}"

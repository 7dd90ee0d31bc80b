"""The machine a benchmark ran on, printed first by every benchmark.

Two machines of one kind can differ by a third on the same figure (bench_writer measured
5.4-6.3x on an AMD EPYC and 3.9-4.0x on an Intel Xeon), so every run says which CPU it had
and which video encoder build PyAV carries: PyAV and its libavcodec, and the SVT-AV1 and
x264 libraries in that build, with the SIMD level SVT-AV1 picked on this CPU (AVX-512 on
the Xeon, AVX2 on an EPYC without it). Imported by the lerobot venv's Python too
(_lerobot_write.py), so it needs nothing beyond the standard library.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import resource
import subprocess
import sys


def cpu_model() -> str:
    """The CPU's model name with its family/model numbers and widest x86 vector extension
    (Linux /proc/cpuinfo: a VM's model name can be as plain as "Intel(R) Xeon(R) Processor"),
    else what `platform` knows."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor is enough
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    if "model name" not in fields:
        return platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    simd = next((name for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2")) if flag in flags), None)
    numbers = ", ".join(f"{k.split()[-1]} {fields[k]}" for k in ("cpu family", "model", "stepping") if k in fields)
    return f"{fields['model name']} ({'; '.join(x for x in (numbers, simd) if x)})"


# Run in a child: SVT-AV1 states its version and SIMD level only in its log (stderr, read
# when an encoder opens), x264 its build in the first packet's SEI text.
_PROBE = r"""
import io, sys
import av, numpy as np
print("PyAV", av.__version__, ".".join(map(str, av.library_versions.get("libavcodec", ()))))
for name in ("libsvtav1", "libx264"):
    try:
        with av.open(io.BytesIO(), "w", format="mp4") as c:
            s = c.add_stream(name, rate=30)
            s.width = s.height = 64
            s.pix_fmt = "yuv420p"
            f = av.VideoFrame(64, 64, "yuv420p")
            for p in f.planes:
                np.frombuffer(p, np.uint8)[:] = 128
            data = b"".join(bytes(p) for p in [*s.encode(f), *s.encode(None)])
        print(name, "ok", data.decode("latin-1").replace("\n", " ")[:4000])
    except Exception as exc:
        print(name, "missing", type(exc).__name__)
"""


@functools.lru_cache(maxsize=None)
def encoder_build(python: str | None = None) -> str:
    """PyAV, its libavcodec, and the SVT-AV1 and x264 builds in it, as seen by `python`
    (default: this interpreter), e.g. `PyAV 18.1.0 (libavcodec 62.28.102; SVT-AV1 v4.1.0,
    asm avx512icl; x264 core 165)`."""
    env = {k: v for k, v in os.environ.items() if python is None or k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["SVT_LOG"] = "3"  # info: the version banner and the asm level
    try:
        proc = subprocess.run([python or sys.executable, "-c", _PROBE], env=env, capture_output=True,
                              text=True, errors="replace", timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"encoder build unknown ({exc})"
    if proc.returncode != 0 or not proc.stdout.startswith("PyAV"):
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"encoder build unknown (PyAV: {last})"
    head, *rest = proc.stdout.splitlines()
    _, version, codec = head.split(" ", 2)
    lines = {line.split(" ", 1)[0]: line for line in rest}
    parts = []
    if " ok " in lines.get("libsvtav1", ""):
        svt = re.search(r"SVT-AV1 Encoder Lib (v?[\w.\-]+)", proc.stderr)
        asm = re.search(r"asm level selected\s*:\s*(?:up to )?(\w+)", proc.stderr)
        parts.append(f"SVT-AV1 {svt.group(1) if svt else 'version unknown'}"
                     + (f", asm {asm.group(1)}" if asm else ""))
    else:
        parts.append("without libsvtav1")
    if " ok " in lines.get("libx264", ""):
        x264 = re.search(r"x264 - core (\d+)(?: (r\d+))?", lines["libx264"])
        parts.append("x264 " + (" ".join(g for g in ("core", *x264.groups()) if g) if x264 else "version unknown"))
    else:
        parts.append("without libx264")
    return f"PyAV {version} (libavcodec {codec}; {'; '.join(parts)})"


def load() -> str:
    """The 1, 5 and 15 minute load averages: on a shared machine they explain wall-clock figures."""
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


@functools.lru_cache(maxsize=1)
def gl_renderer() -> str:
    """The OpenGL renderer MuJoCo draws with here (MUJOCO_GL's backend: llvmpipe is Mesa on the
    CPU, an NVIDIA name the GPU), read in a child process so this one holds no GL context."""
    code = ("import mujoco; from OpenGL import GL; c = mujoco.GLContext(16, 16); c.make_current(); "
            "print(GL.glGetString(GL.GL_RENDERER).decode(), '/', GL.glGetString(GL.GL_VERSION).decode()); c.free()")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")})
    except (OSError, subprocess.SubprocessError):
        return "GL renderer unknown"
    lines = out.stdout.strip().splitlines()
    return f"GL {os.environ.get('MUJOCO_GL', 'egl')}: {lines[-1]}" if out.returncode == 0 and lines \
        else "GL renderer unknown (no mujoco GL context here)"


def describe() -> str:
    """One line: CPU model, cores, Python, GL renderer, encoder build, load average."""
    return (f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
            f"{gl_renderer()}; {encoder_build()}; {load()}")


def cpu_s() -> float:
    """CPU seconds [s] of this process and its finished children, user and system."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

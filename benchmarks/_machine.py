"""The machine a benchmark ran on, printed first by every benchmark.

Two machines of one kind can differ by a third on the same figure (bench_writer measured
5.4-6.3x on an AMD EPYC and 3.9-4.0x on an Intel Xeon), so every run says which CPU it had
and which video encoder build PyAV carries.
"""

from __future__ import annotations

import os
import platform


def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def encoder_build() -> str:
    """PyAV's version, its libavcodec's and whether it carries libx264."""
    try:
        import av
    except ImportError:
        return "PyAV not installed"
    codec = ".".join(str(v) for v in av.library_versions.get("libavcodec", ()))
    x264 = "with libx264" if "libx264" in av.codecs_available else "without libx264"
    return f"PyAV {av.__version__} (libavcodec {codec}, {x264})"


def describe() -> str:
    """One line: CPU model, cores, Python, encoder build."""
    return (f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
            f"{encoder_build()}")

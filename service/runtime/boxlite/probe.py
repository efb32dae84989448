"""The BoxLite boot probe: can a tiny VM boot here? Never hangs past its bound.

On kvm-pvm hosts (this project's development machines) the guest kernel does not boot; the
probe turns that into a ProbeResult whose diagnosis is BoxLite's exception and log lines.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import images
from ..errors import ImageNotFound
from ..types import SandboxSpec
from .native import bounded, describe, home_dir, log_excerpts
from .options import box_options

PROBE_TIMEOUT_S = 30.0


def version() -> str | None:
    try:
        from importlib.metadata import version as dist_version

        return dist_version("boxlite")
    except Exception:
        return None


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    diagnosis: str
    seconds: float
    version: str | None


async def probe(state_dir: Path, timeout_s: float = PROBE_TIMEOUT_S) -> ProbeResult:
    """Try to boot a tiny box from the local default image; never hangs past the bound."""
    started = time.monotonic()
    ver = version()
    if ver is None:
        return ProbeResult(False, "the boxlite package is not installed", 0.0, None)
    try:
        image = images.get_image(state_dir, images.DEFAULT_IMAGE)
    except ImageNotFound:
        return ProbeResult(False, "no default image to boot; run `airlock image build`", 0.0, ver)
    import boxlite

    # A home of its own, so a probe (e.g. from `airlock doctor`) never contends for the lock
    # of a running service's BoxLite home.
    home = home_dir(state_dir, "boxlite-probe")
    runtime: Any = None
    box: Any = None

    async def boot() -> None:
        nonlocal box, runtime
        runtime = boxlite.Boxlite(boxlite.Options(home_dir=str(home)))
        spec = SandboxSpec(vcpus=1, memory_mib=256, disk_mib=1024)
        box = await runtime.create(box_options(spec, Path(image.path)), name=None)
        await box.start()
        execution = await box.exec("true", [], None, False, None, 10, None)
        await execution.wait()

    try:
        await bounded(boot(), timeout_s)
        return ProbeResult(
            True, "a probe VM booted and ran `true`", time.monotonic() - started, ver
        )
    except TimeoutError:
        detail = log_excerpts(home, getattr(box, "id", None))
        why = f"probe VM did not boot within {timeout_s:.0f} s\n{detail}"
        return ProbeResult(False, why.strip(), time.monotonic() - started, ver)
    except Exception as exc:  # BoxLite reports every failure as its own exception types
        detail = log_excerpts(home, getattr(box, "id", None))
        why = f"{describe(exc)}\n{detail}"
        return ProbeResult(False, why.strip(), time.monotonic() - started, ver)
    finally:
        if box is not None:
            with contextlib.suppress(Exception):
                await bounded(runtime.remove(box.id, force=True), 15)
        if runtime is not None:
            with contextlib.suppress(Exception):
                await bounded(runtime.shutdown(), 15)

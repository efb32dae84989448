"""The BoxLite runtime: the only package that touches the `boxlite` library. See ../README.md.

BoxLite needs a VM to boot; on hosts where it cannot (for example kvm-pvm nested
virtualization) a start raises RuntimeUnavailable carrying BoxLite's own diagnosis.

| module | part |
| --- | --- |
| `runtime.py` | `BoxliteRuntime`: open, create, get, list, destroy, stats, close |
| `core.py` | the boxes this process made, and starting one within its deadline |
| `options.py` | a SandboxSpec as BoxLite options (`box_options_kwargs` is pure) |
| `errors.py` | BoxLite's exceptions as typed runtime errors; `ImagePullFailed` |
| `probe.py` | the boot probe (`probe`, `ProbeResult`), BoxLite's version |
| `images.py` | local layouts, registry references, the operator's registry allowlist |
| `execution.py`, `execs.py`, `files.py` | one exec over BoxLite's streams; execs; files |
| `snapshots.py` | exports and imports of a box's disk |
| `native.py` | bounded calls into the library, its log lines |
"""

from ..errors import NotSupported
from .core import START_TIMEOUT_S, ImageSource
from .errors import ImagePullFailed, typed_error
from .images import normalized_reference, pull_allowed, registry_reference
from .options import _box_options, allow_net, box_options, box_options_kwargs
from .probe import PROBE_TIMEOUT_S, ProbeResult, probe, version
from .runtime import BoxliteRuntime

__all__ = [
    "PROBE_TIMEOUT_S",
    "START_TIMEOUT_S",
    "BoxliteRuntime",
    "ImagePullFailed",
    "ImageSource",
    "NotSupported",
    "ProbeResult",
    "_box_options",
    "allow_net",
    "box_options",
    "box_options_kwargs",
    "normalized_reference",
    "probe",
    "pull_allowed",
    "registry_reference",
    "typed_error",
    "version",
]

"""BoxLite up to the boot boundary: option mapping, image preparation, typed failure.

End-to-end BoxLite behaviour is covered by the parametrized conformance tests, which run
wherever a BoxLite VM boots and skip elsewhere with the probe's diagnosis.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from service.runtime import RuntimeUnavailable, SandboxSpec, images, select
from service.runtime.boxlite import BoxliteRuntime, ProbeResult, box_options_kwargs


def test_option_mapping() -> None:
    spec = SandboxSpec(vcpus=1.5, memory_mib=768, disk_mib=1500, env={"A": "1"}, user="1000:1000")
    kwargs = box_options_kwargs(spec, Path("/images/default"))
    assert kwargs == {
        "rootfs_path": "/images/default",
        "cpus": 2,
        "memory_mib": 768,
        "disk_size_gb": 2,
        "env": [("A", "1")],  # BoxLite wants (name, value) tuples, not a dict
        "user": "1000:1000",
        "working_dir": "/work",
        "auto_remove": False,
    }
    assert box_options_kwargs(SandboxSpec(user="root"), Path("/x"))["user"] == "0:0"


def test_options_are_accepted_by_boxlite() -> None:
    boxlite = pytest.importorskip("boxlite")
    from service.runtime.boxlite import _box_options

    options = _box_options(SandboxSpec(env={"A": "1"}), Path("/images/default"))
    assert isinstance(options, boxlite.BoxOptions)
    assert options.env == [("A", "1")]
    assert options.cpus == 1 and options.memory_mib == 512


@pytest.fixture(scope="session")
async def fresh_probe(state_dir: Path) -> ProbeResult:
    """A probe run now (not from the cache), bounded by the probe's own timeout."""
    return await select.probe_boxlite(state_dir, refresh=True)


async def test_probe_prepares_the_local_image(fresh_probe: ProbeResult, state_dir: Path) -> None:
    assert fresh_probe.version is not None
    prepared = list((state_dir / "boxlite-probe" / "images").rglob("extracted"))
    assert prepared, "BoxLite did not prepare the local OCI layout"
    digest = images.get_image(state_dir, images.DEFAULT_IMAGE).digest
    assert any(digest.split(":")[1][:8] in str(p) for p in prepared)


async def test_unbootable_host_gives_typed_failure(
    fresh_probe: ProbeResult, state_dir: Path
) -> None:
    if fresh_probe.ok:
        pytest.skip("a BoxLite VM boots on this host; the failure path does not apply")
    assert fresh_probe.diagnosis
    with pytest.raises(RuntimeUnavailable) as failure:
        await BoxliteRuntime.open(state_dir, fresh_probe)
    assert failure.value.runtime == "boxlite"
    assert failure.value.diagnosis == fresh_probe.diagnosis
    assert "Error" in fresh_probe.diagnosis or "did not boot" in fresh_probe.diagnosis

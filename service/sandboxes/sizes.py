"""What a create asks for in size, caps and network: its size or preset, explicit caps over
them, and whether it asks for other caps than a template build's."""

from __future__ import annotations

from service.sandboxes.schemas import PRESETS, SIZES, Preset, SandboxCreate, SandboxNetwork


def preset_of(data: SandboxCreate) -> Preset | None:
    return PRESETS[data.preset] if data.preset else None


def network_of(data: SandboxCreate) -> SandboxNetwork:
    if data.network is not None:
        return data.network
    return PRESETS[data.preset].network if data.preset else SandboxNetwork()


def caps_of(data: SandboxCreate) -> tuple[str, int, int, int]:
    """Size name and caps: the size (small by default), or the preset's caps when no size is
    given, with explicit caps over either; "custom" when they match no size."""
    size = data.size or "small"
    cpus, memory, disk = SIZES[size]
    preset = preset_of(data)
    from_preset = preset is not None and data.size is None
    if from_preset:
        assert preset is not None
        cpus, memory, disk = preset.cpus, preset.memory_mib, preset.disk_mib
    cpus = data.cpus if data.cpus is not None else cpus
    memory = data.memory_mib if data.memory_mib is not None else memory
    disk = data.disk_mib if data.disk_mib is not None else disk
    if (cpus, memory, disk) != SIZES[size]:
        same = [k for k, v in SIZES.items() if v == (cpus, memory, disk)]
        size = same[0] if same and from_preset else "custom"
    return size, cpus, memory, disk


def asks_other_caps(data: SandboxCreate, size: str, caps: tuple[int, int, int]) -> bool:
    """Whether a create names a size or cpus/memory/disk other than a template build's."""
    asked = (data.cpus, data.memory_mib, data.disk_mib)
    return (data.size is not None and data.size != size) or any(
        a is not None and a != c for a, c in zip(asked, caps, strict=True)
    )

from typing import Literal, cast

FileInfoKind = Literal["dir", "file", "other", "symlink"]

FILE_INFO_KIND_VALUES: set[FileInfoKind] = {
    "dir",
    "file",
    "other",
    "symlink",
}


def check_file_info_kind(value: str) -> FileInfoKind:
    if value in FILE_INFO_KIND_VALUES:
        return cast(FileInfoKind, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {FILE_INFO_KIND_VALUES!r}")

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="TerminalSize")


@_attrs_define
class TerminalSize:
    """A terminal's window, in characters.

    Attributes:
        cols (int): Columns of the terminal's window
        rows (int): Lines of the terminal's window
    """

    cols: int
    rows: int

    def to_dict(self) -> dict[str, Any]:
        cols = self.cols

        rows = self.rows

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cols": cols,
                "rows": rows,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cols = d.pop("cols")

        rows = d.pop("rows")

        terminal_size = cls(
            cols=cols,
            rows=rows,
        )

        return terminal_size

"""The README's walk-throughs, run as written against a server: their bash blocks, read from
README.md at run time, run in one bash, and every curl's answer is checked against the
`# → STATUS …` comment the README shows under it (tests/e2e against `airlock serve`,
tests/images against the chart's deployment in podman).

The answer comment is a status, then either a JSON pattern (objects need the fields shown, `…`
stands for the rest; a string ending in `…` is a prefix; an array ends with `…` when more items
may follow) or lines of text that must appear in the body in that order (`…` inside a line is
anything, a line of `…` skips lines). `curl` is wrapped by a bash function that keeps each
answer's status and body and hands the body on, so the blocks run unchanged.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"
ELLIPSIS = "…"
MORE = "\x00more"  # an array pattern's `…`: more items may follow
ANSWER = re.compile(r"^#\s*→\s*(\d{3})\b\s*(.*)$")
CURL = re.compile(r"(?:^|[\s(|;&])curl\s")

# Each call to curl keeps its arguments, headers and body in $WALK_DIR/N.*, then prints the
# body as curl would have, so pipes and $(…) captures in the README work as for a reader.
PRELUDE = r"""
set -euo pipefail
curl() {
  local n=$(( $(cat "$WALK_DIR/count") + 1 ))
  echo "$n" >"$WALK_DIR/count"
  printf '%s\n' "$*" >"$WALK_DIR/$n.cmd"
  local rc=0
  command curl -D "$WALK_DIR/$n.headers" -o "$WALK_DIR/$n.body" "$@" || rc=$?
  cat "$WALK_DIR/$n.body"
  return "$rc"
}
"""


@dataclass
class Command:
    text: str
    status: int
    shown: str  # what the README shows after the status


def walkthrough_blocks() -> list[str]:
    """The bash blocks of the README's `## Walk-through:` sections, in order."""
    blocks = []
    for section in re.split(r"^(?=## )", README.read_text(), flags=re.MULTILINE):
        if section.startswith("## Walk-through:"):
            blocks += re.findall(r"^```(?:bash|sh)\n(.*?)^```", section, re.DOTALL | re.M)
    return blocks


def logical_lines(block: str) -> list[str]:
    lines, current = [], ""
    for raw in block.splitlines():
        if current:
            current += "\n" + raw
        elif raw.strip():
            current = raw
        else:
            lines.append("")
            continue
        if not raw.endswith("\\"):
            lines.append(current)
            current = ""
    return lines


def curl_commands(block: str) -> list[Command]:
    """Each curl command of the block with the answer shown under it (the README shows one
    for every command)."""
    lines = logical_lines(block)
    commands = []
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#") or not CURL.search(line):
            continue
        answer = ANSWER.match(lines[i + 1]) if i + 1 < len(lines) else None
        assert answer, f"README: no `# → STATUS …` answer shown under\n{line}"
        shown = [answer.group(2)]
        for follow in lines[i + 2 :]:
            if not re.match(r"^#\s{2,}", follow):
                break
            shown.append(follow[1:].strip())
        commands.append(Command(line, int(answer.group(1)), "\n".join(shown)))
    return commands


def json_pattern(text: str) -> Any:
    """Parse a shown JSON answer: `…` between members is dropped, `…` in an array becomes
    MORE, text after the value (a remark in parentheses) is ignored."""
    out: list[str] = []
    stack: list[str] = []
    in_string = escaped = False
    skip_comma = False
    for ch in text:
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if skip_comma and (ch.isspace() or ch == ","):
            skip_comma = ch != ","
            continue
        skip_comma = False
        if ch == ELLIPSIS and stack and stack[-1] == "{":
            while out and out[-1].isspace():
                out.pop()
            if out and out[-1] == ",":
                out.pop()
            else:
                skip_comma = True
            continue
        if ch == ELLIPSIS:
            out.append(json.dumps(MORE))
            continue
        if ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
        elif ch == '"':
            in_string = True
        out.append(ch)
    value, _ = json.JSONDecoder().raw_decode("".join(out))
    return value


def mismatch(pattern: Any, got: Any, where: str = "$") -> str | None:
    """Where `got` differs from the shown pattern, or None."""
    if isinstance(pattern, dict):
        if not isinstance(got, dict):
            return f"{where}: expected an object, got {got!r}"
        for key, want in pattern.items():
            if key not in got:
                return f"{where}.{key}: missing"
            if problem := mismatch(want, got[key], f"{where}.{key}"):
                return problem
        return None
    if isinstance(pattern, list):
        more = bool(pattern) and pattern[-1] == MORE
        items = pattern[:-1] if more else pattern
        if not isinstance(got, list):
            return f"{where}: expected an array, got {got!r}"
        counted = len(got) >= len(items) if more else len(got) == len(items)
        if not counted:
            return f"{where}: expected {len(items)}{'+' if more else ''} items, got {got!r}"
        for n, (want, item) in enumerate(zip(items, got, strict=False)):
            if problem := mismatch(want, item, f"{where}[{n}]"):
                return problem
        return None
    if isinstance(pattern, str) and pattern.endswith(ELLIPSIS):
        prefix = pattern[: -len(ELLIPSIS)]
        if isinstance(got, str) and got.startswith(prefix):
            return None
        return f"{where}: expected a string starting {prefix!r}, got {got!r}"
    if pattern != got or type(pattern) is not type(got):
        return f"{where}: expected {pattern!r}, got {got!r}"
    return None


def text_mismatch(shown: str, body: str) -> str | None:
    """The shown lines must appear in the body in order (`…` within a line: anything)."""
    lines = body.splitlines()
    at = 0
    for want in shown.splitlines():
        if want == ELLIPSIS:
            continue
        regex = re.compile(".*".join(re.escape(part) for part in want.split(ELLIPSIS)))
        while at < len(lines) and not regex.fullmatch(lines[at]):
            at += 1
        if at == len(lines):
            return f"no line {want!r} (in order) in the body"
        at += 1
    return None


@dataclass
class Answer:
    command: str
    status: int
    body: str


def answers(walk_dir: Path) -> list[Answer]:
    found = []
    for n in range(1, int((walk_dir / "count").read_text()) + 1):
        statuses = re.findall(r"^HTTP/\S+ (\d{3})", (walk_dir / f"{n}.headers").read_text(), re.M)
        found.append(
            Answer(
                command=(walk_dir / f"{n}.cmd").read_text().strip(),
                status=int(statuses[-1]),
                body=(walk_dir / f"{n}.body").read_text(errors="replace"),
            )
        )
    return found


def check(command: Command, answer: Answer) -> str | None:
    if answer.status != command.status:
        return f"status {answer.status}, the README shows {command.status}"
    shown = command.shown.strip()
    if not shown:
        return None
    if shown[0] in "{[":
        try:
            got = json.loads(answer.body)
        except ValueError:
            return "the README shows JSON, the body is not"
        return mismatch(json_pattern(shown), got)
    return text_mismatch(shown, answer.body)


def run_walkthroughs(url: str, operator_key: str, work_dir: Path) -> None:
    """Run the walk-throughs against the server at `url` and assert every answer is the one
    the README shows. `work_dir` is the shell's home and working directory."""
    blocks = walkthrough_blocks()
    assert len(blocks) >= 2, "README: the walk-through sections have no bash blocks"
    commands = [c for block in blocks for c in curl_commands(block)]
    assert any("/execs" in c.text for c in commands), "README: the walk-through runs no exec"

    walk_dir = work_dir / "answers"
    walk_dir.mkdir()
    (walk_dir / "count").write_text("0")
    env = {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "HOME": str(work_dir),
        "LANG": "C.UTF-8",
        "AIRLOCK_URL": url,
        "AIRLOCK_OPERATOR_KEY": operator_key,
        "WALK_DIR": str(walk_dir),
    }
    done = subprocess.run(
        ["bash", "-c", PRELUDE + "\n".join(blocks)],
        env=env,
        cwd=work_dir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    got = answers(walk_dir)
    for command, answer in zip(commands, got, strict=False):
        problem = check(command, answer)
        assert problem is None, (
            f"README command\n{command.text}\nanswered {answer.status}: {answer.body[:2000]}\n"
            f"-> {problem}"
        )
    assert done.returncode == 0, f"the walk-through stopped ({done.returncode}):\n{done.stderr}"
    assert len(got) == len(commands), f"ran {len(got)} curl commands of {len(commands)}"

"""A test suite written on the spot for bench/runtime.py: what a pull request's tests do.

`write(root)` lays out FILES test modules of TESTS_PER_FILE tests each (pytest, stdlib only):
each module imports a spread of the standard library, and its tests compute, parse, encode,
write and read small files under `tmp_path`, and (one test in SUBPROCESS_EVERY modules) start
a subprocess. The same files run natively on the host and inside a sandbox.
"""

from __future__ import annotations

from pathlib import Path

FILES = 50
TESTS_PER_FILE = 21
SUBPROCESS_EVERY = 5  # every fifth module has one test that runs a subprocess
TOTAL = FILES * TESTS_PER_FILE

IMPORTS = (
    "argparse asyncio base64 collections csv dataclasses datetime decimal email.parser "
    "fractions functools hashlib http.client io itertools json logging pathlib re sqlite3 "
    "statistics string subprocess sys textwrap unittest.mock urllib.parse uuid "
    "xml.etree.ElementTree"
).split()

MODULE = '''\
import {imports}

import pytest

SEED = {seed}


@pytest.mark.parametrize("n", range(6))
def test_arithmetic(n):
    values = [decimal.Decimal(i + SEED) / 7 for i in range(50 + n)]
    assert statistics.mean(values) > 0
    assert fractions.Fraction(n + 1, SEED + 1) * (SEED + 1) == n + 1


@pytest.mark.parametrize("n", range(5))
def test_json_round_trip(n, tmp_path):
    when = datetime.date(2026, 1, 1 + n).isoformat()
    record = {{"id": n, "seed": SEED, "tags": ["a"] * n, "when": when}}
    path = tmp_path / f"record-{{n}}.json"
    path.write_text(json.dumps(record))
    assert json.loads(path.read_text()) == record


@pytest.mark.parametrize("n", range(4))
def test_csv_and_hash(n, tmp_path):
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([[i, i * i, SEED] for i in range(20 + n)])
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 20 + n
    assert hashlib.sha256(path.read_bytes()).hexdigest() != ""


@pytest.mark.parametrize("n", range(3))
def test_text_and_regex(n):
    text = textwrap.dedent("""
        From: someone@example.org
        Subject: test {{}}

        body
    """).format(n).strip()
    message = email.parser.Parser().parsestr(text)
    assert re.match(r"test \\d", message["Subject"])
    assert urllib.parse.quote(message["From"]).startswith("someone")


def test_sqlite(tmp_path):
    db = sqlite3.connect(tmp_path / "t.db")
    db.execute("create table t (k integer, v text)")
    db.executemany("insert into t values (?, ?)", [(i, str(i)) for i in range(100)])
    assert db.execute("select count(*) from t").fetchone()[0] == 100
    db.close()


def test_asyncio():
    async def work():
        await asyncio.sleep(0)
        return SEED

    assert asyncio.run(work()) == SEED


def test_{last}(tmp_path):
{last_body}
'''

SUBPROCESS_BODY = """\
    done = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
    assert done.stdout.strip() == "42"
"""

FILE_BODY = """\
    tree = xml.etree.ElementTree.fromstring("<a><b>1</b><b>2</b></a>")
    (tmp_path / "out.txt").write_text(" ".join(b.text for b in tree))
    assert (tmp_path / "out.txt").read_text() == "1 2"
"""


def write(root: Path) -> int:
    """Write the suite under `root`; the number of tests it holds."""
    root.mkdir(parents=True, exist_ok=True)
    for index in range(FILES):
        uses_subprocess = index % SUBPROCESS_EVERY == 0
        source = MODULE.format(
            imports=", ".join(IMPORTS),
            seed=index,
            last="subprocess" if uses_subprocess else "xml_file",
            last_body=SUBPROCESS_BODY if uses_subprocess else FILE_BODY,
        )
        (root / f"test_module_{index:02d}.py").write_text(source)
    return TOTAL


def command(python: str) -> list[str]:
    """The pytest command line, the same natively and in a sandbox (run from the suite's
    directory; no plugins from the environment, no cache written)."""
    return [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir=.", "."]

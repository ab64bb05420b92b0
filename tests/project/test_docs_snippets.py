"""Every Python snippet in README.md and docs/ runs as written.

Theory of operation: the snippets are collected from the sources -- ```` ```python ````
fences in README.md; ``.. code-block:: python``, ``.. code-block:: pycon`` and ``::``
literal blocks (the docs' highlight language is Python, so a ``::`` block *is* Python) in
docs/*.rst; and the files ``.. literalinclude::`` pulls in. Each becomes one parametrized
test named after its file and line, run in a fresh interpreter (a snippet may start servers,
event loops or threads, and must not leak them into the test process).

How a snippet is run is said in the source, by a comment right before it -- ``<!-- snippet:
... -->`` in Markdown, ``.. snippet: ...`` in reStructuredText -- so that a reader can see it
too (the rST comment is not rendered; the text around such a snippet says what it assumes):

``file PATH``
    the block is a verbatim copy of PATH (the README cannot include files): the test checks
    that it is, and PATH is run as the included files are.
``context RUNTIME client|url``
    the block is a fragment that uses ``client``, a client of RUNTIME (asyncio, trio or
    threading) connected over stdio to the example server (``mcp-sansio serve-example``), or
    ``url``, the URL of that example server served over HTTP; it may ``await`` at top level.
``interrupt``
    the block serves until Ctrl-C: it must print a URL on stdout, and end after SIGINT.
``partial (reason)``
    the block is deliberately incomplete: skipped, with the reason. Keep these rare.

With no comment the block runs as a script; ``pycon`` blocks run as doctests. Literal blocks
that are not Python are written as ``.. code-block:: text`` (or ``sh``), and so are not
collected. The copy of ``mcp-sansio demo``'s output in docs/cli.rst is checked against a
real run here too.
"""

from __future__ import annotations

import doctest
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import ROOT

DOCS = ROOT / "docs"

#: Generous: the machine running the suite may be loaded; no test measures time.
TIMEOUT = 180

EXAMPLE_SERVER = [sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]


@dataclass(frozen=True)
class Snippet:
    source: Path
    line: int           # 1-based line of the block's opening (fence, directive, ``::``)
    language: str       # "python", "pycon" or "file" (code is then a path)
    code: str
    mark: str           # the ``snippet:`` comment's text, or ""

    @property
    def name(self) -> str:
        return f"{self.source.relative_to(ROOT)}:{self.line}"


# -- collecting ------------------------------------------------------------------------------

_MD_MARK = re.compile(r"<!--\s*snippet:\s*(.*?)\s*-->")
_RST_MARK = re.compile(r"\.\.\s+snippet:\s*(.*)")
_DIRECTIVE = re.compile(r"(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S*)")
_INCLUDE = re.compile(r"\s*\.\. literalinclude::\s*(\S+)")


def _mark_before(lines: list[str], index: int, pattern: re.Pattern[str]) -> str:
    """The ``snippet:`` comment before the paragraph that opens at ``lines[index]``."""
    i = index - 1
    while i >= 0 and lines[i].strip() and not pattern.match(lines[i].strip()):
        i -= 1  # the rest of the paragraph that ends in ``::``
    while i >= 0 and not lines[i].strip():
        i -= 1
    found = pattern.match(lines[i].strip()) if i >= 0 else None
    return found.group(1).strip() if found else ""


def markdown_snippets(path: Path) -> Iterator[Snippet]:
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            end = lines.index("```", i + 1)
            yield Snippet(path, i + 1, "python", "\n".join(lines[i + 1:end]) + "\n",
                          _mark_before(lines, i, _MD_MARK))
            i = end
        i += 1


def _indented_block(lines: list[str], start: int, indent: int) -> tuple[str, int]:
    """The block indented deeper than ``indent`` from ``lines[start]``, and where it ends."""
    j = start
    while j < len(lines) and (
            not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
        j += 1
    return textwrap.dedent("\n".join(lines[start:j])).strip("\n") + "\n", j


def rst_snippets(path: Path) -> Iterator[Snippet]:
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        directive = _DIRECTIVE.match(line)
        include = _INCLUDE.match(line)
        if include:
            yield Snippet(path, i + 1, "file", str((path.parent / include.group(1)).resolve()),
                          _mark_before(lines, i, _RST_MARK))
        elif directive or (stripped.endswith("::") and not stripped.startswith("..")):
            indent = len(line) - len(line.lstrip())
            j = i + 1
            while directive and j < len(lines) and re.match(r"\s+:[\w-]+:", lines[j]):
                j += 1  # the directive's options
            code, end = _indented_block(lines, j, indent)
            language = directive.group(2) if directive else "python"
            language = "python" if language == "python3" else language
            if language in ("python", "pycon"):
                yield Snippet(path, i + 1, language, code, _mark_before(lines, i, _RST_MARK))
            i = end
            continue
        i += 1


def all_snippets() -> list[Snippet]:
    found = list(markdown_snippets(ROOT / "README.md"))
    for path in sorted(DOCS.glob("*.rst")):
        found.extend(rst_snippets(path))
    return found


SNIPPETS = all_snippets()
INLINE = [s for s in SNIPPETS if s.language != "file"]
#: Each included file once, named after its first inclusion.
FILES = {s.code: s for s in reversed(SNIPPETS) if s.language == "file"}
for _copy in SNIPPETS:
    if _copy.mark.startswith("file "):
        FILES.setdefault(str(ROOT / _copy.mark.split(None, 1)[1]), _copy)


# -- running ---------------------------------------------------------------------------------

def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                          input="", env=env or _env(), check=False)


def _ok(result: subprocess.CompletedProcess[str], what: str) -> None:
    assert result.returncode == 0, (
        f"{what} exited with {result.returncode}\n--- stdout\n{result.stdout}"
        f"\n--- stderr\n{result.stderr}")


#: The harness of a ``context RUNTIME client|url`` fragment: it binds ``client`` (connected
#: over stdio to the example server) or ``url`` (from the environment), then runs the
#: fragment, which may await at top level.
_HARNESS = f'''
import ast, os, sys
SOURCE = open(sys.argv[1]).read()
CODE = compile(SOURCE, sys.argv[2], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
RUNTIME, BINDING = sys.argv[3], sys.argv[4]
SERVER = {EXAMPLE_SERVER!r}

def namespace(**names):
    return {{"__name__": "__main__", **names}}

if RUNTIME == "threading":
    from mcp_sansio.adapters.threading import connect_stdio
    if BINDING == "client":
        with connect_stdio(SERVER) as client:
            exec(CODE, namespace(client=client))
    else:
        exec(CODE, namespace(url=os.environ["SNIPPET_URL"]))
else:
    if RUNTIME == "trio":
        import trio as runtime
        from mcp_sansio.adapters.trio import connect_stdio
    else:
        import asyncio as runtime
        from mcp_sansio.adapters.asyncio import connect_stdio

    async def fragment(ns):
        pending = eval(CODE, ns)
        if pending is not None:
            await pending

    async def main():
        if BINDING == "client":
            async with connect_stdio(SERVER) as client:
                await fragment(namespace(client=client))
        else:
            await fragment(namespace(url=os.environ["SNIPPET_URL"]))

    runtime.run(main) if RUNTIME == "trio" else runtime.run(main())
'''


def _run_in_context(snippet: Snippet, tmp_path: Path) -> None:
    runtime, binding = snippet.mark.split()[1:3]
    assert runtime in ("asyncio", "trio", "threading") and binding in ("client", "url")
    source = tmp_path / "snippet.py"
    source.write_text(snippet.code)
    harness = tmp_path / "harness.py"
    harness.write_text(_HARNESS)
    argv = [sys.executable, str(harness), str(source), snippet.name, runtime, binding]
    if binding == "client":
        _ok(_run(argv, tmp_path), snippet.name)
        return
    with _http_example_server() as url:
        _ok(_run(argv, tmp_path, env={**_env(), "SNIPPET_URL": url}), snippet.name)


class _http_example_server:
    """``mcp-sansio serve-example --transport http --port 0``, yielding the URL it prints."""

    def __enter__(self) -> str:
        self.proc = subprocess.Popen(
            [*EXAMPLE_SERVER, "--transport", "http", "--port", "0"], stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True, env=_env())
        assert self.proc.stdout is not None
        url = self.proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        return url

    def __exit__(self, *exc: object) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:  # pragma: no cover - reported by the test
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _run_until_interrupted(snippet: Snippet, tmp_path: Path) -> None:
    """Serve-forever snippets: wait for the URL they print, then Ctrl-C; they must end, and
    quietly (status 0) or with the KeyboardInterrupt of an ``asyncio.run`` left to raise."""
    source = tmp_path / "snippet.py"
    source.write_text(snippet.code)
    proc = subprocess.Popen([sys.executable, str(source)], cwd=tmp_path, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env())
    watchdog = threading.Timer(TIMEOUT, proc.kill)  # a snippet that never prints its URL
    watchdog.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert re.match(r"http://127\.0\.0\.1:\d+/mcp$", line.strip()), line
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        watchdog.cancel()
        if proc.poll() is None:  # pragma: no cover - a hang, reported above
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 or err.rstrip().endswith("KeyboardInterrupt"), err
    assert "Traceback" not in err or err.rstrip().endswith("KeyboardInterrupt"), err


def _run_file(path: Path) -> subprocess.CompletedProcess[str]:
    result = _run([sys.executable, str(path)], path.parent)
    _ok(result, str(path.relative_to(ROOT)))
    return result


@pytest.mark.parametrize("snippet", INLINE, ids=lambda s: s.name)
def test_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    mark = snippet.mark
    if mark.startswith("partial"):
        pytest.skip(f"deliberately partial: {mark.removeprefix('partial').strip(' ()')}")
    if mark.startswith("file "):
        copied = ROOT / mark.split(None, 1)[1]
        assert snippet.code == copied.read_text(), f"{snippet.name} is not a copy of {copied}"
        return  # the file itself is run by test_included_file_runs
    if snippet.language == "pycon":
        parser = doctest.DocTestParser()
        test = parser.get_doctest(snippet.code, {}, snippet.name, str(snippet.source),
                                  snippet.line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test)
        assert runner.failures == 0 and test.examples
        return
    if mark.startswith("context "):
        _run_in_context(snippet, tmp_path)
    elif mark == "interrupt":
        _run_until_interrupted(snippet, tmp_path)
    else:
        assert mark == "", f"{snippet.name}: unknown snippet mark {mark!r}"
        source = tmp_path / "snippet.py"
        source.write_text(snippet.code)
        _ok(_run([sys.executable, str(source)], tmp_path), snippet.name)


#: What some included files print; the others must just run and exit 0. A server on stdio
#: gets no input (stdin is /dev/null): it must then end by itself.
EXPECTED_OUTPUT = {
    "hello_client.py": "hello 2026-07-28\n['greet']\nHello, Ada!\n",
    "handshake.py": "ok\n",
}
#: Last lines of others' output.
EXPECTED_ENDING = {
    "check_hello.py": "no findings\n",
    "testing_peer.py": "no findings\n",
}


@pytest.mark.parametrize("path", sorted(FILES), ids=lambda p: FILES[p].name + ":"
                         + Path(p).name)
def test_included_file_runs(path: str) -> None:
    result = _run_file(Path(path))
    name = Path(path).name
    if name in EXPECTED_OUTPUT:
        assert result.stdout == EXPECTED_OUTPUT[name]
    if name in EXPECTED_ENDING:
        assert result.stdout.endswith(EXPECTED_ENDING[name]), result.stdout
    if name == "hello_http.py":
        url, answer = result.stdout.splitlines()
        assert re.match(r"http://127\.0\.0\.1:\d+/mcp$", url) and answer == "Hello, Ada!"


def test_the_collector_finds_every_kind_of_block() -> None:
    languages = {s.language for s in SNIPPETS}
    assert languages == {"python", "pycon", "file"}
    marks = {s.mark.split()[0] for s in SNIPPETS if s.mark}
    assert marks == {"file", "context", "interrupt", "partial"}
    # A deliberately partial snippet is the exception: they are few, and each gives a reason.
    partial = [s for s in SNIPPETS if s.mark.startswith("partial")]
    assert len(partial) <= 3 and all(re.match(r"partial \(.+\)$", s.mark) for s in partial)


def test_the_collector_reads_marks_and_literal_blocks(tmp_path: Path) -> None:
    page = tmp_path / "page.rst"
    page.write_text(textwrap.dedent("""\
        Text, then a block::

            print(1)

        .. snippet: partial (needs your own loop)

        A paragraph
        that ends here::

            loop()

        .. code-block:: text

           not python

        .. code-block:: python
           :caption: x

           print(2)
        """))
    found = list(rst_snippets(page))
    assert [(s.line, s.code, s.mark) for s in found] == [
        (1, "print(1)\n", ""),
        (8, "loop()\n", "partial (needs your own loop)"),
        (16, "print(2)\n", ""),
    ]


# -- the demo's transcript -------------------------------------------------------------------

def _normalised(text: str) -> list[str]:
    return [re.sub(r"\d+\.\d+\.\d+\S*", "VERSION", line.rstrip()) for line in text.splitlines()]


def test_the_docs_copy_of_the_demo_output_is_what_demo_prints() -> None:
    page = (DOCS / "cli.rst").read_text().splitlines()
    start = page.index("   $ mcp-sansio demo")
    copy, _ = _indented_block(page, start, 0)
    shown = copy.splitlines()[1:]
    result = _run([sys.executable, "-m", "mcp_sansio", "demo"], ROOT)
    _ok(result, "mcp-sansio demo")
    assert _normalised("\n".join(shown)) == _normalised(result.stdout)


# -- the quickstart's host configuration -----------------------------------------------------

#: Where the quickstart supposes the clone is.
CLONE = "/path/to/mcp-sansio"


def _host_entries() -> dict[str, dict[str, list[str] | str]]:
    page = (DOCS / "quickstart.rst").read_text().splitlines()
    start = page.index(".. code-block:: json")
    block, _ = _indented_block(page, start + 1, 0)
    entries: dict[str, dict[str, list[str] | str]] = json.loads(block)["mcpServers"]
    return entries


def _local(argument: str) -> str:
    return argument.replace(f"{CLONE}/.venv/bin/python", sys.executable).replace(
        CLONE, str(ROOT))


@pytest.mark.parametrize("name", sorted(_host_entries()))
def test_the_quickstart_host_entries_start_working_servers(name: str) -> None:
    from mcp_sansio.adapters.threading import connect_stdio

    entry = _host_entries()[name]
    assert isinstance(entry["command"], str) and isinstance(entry["args"], list)
    assert entry["command"] == f"{CLONE}/.venv/bin/python"  # the venv's, never a bare python
    argv = [_local(entry["command"]), *(_local(a) for a in entry["args"])]
    with connect_stdio(argv) as client:
        assert client.list_tools()


def test_the_quickstart_inspector_line_spawns_the_hello_entry() -> None:
    page = (DOCS / "quickstart.rst").read_text()
    line = re.search(r"npx @modelcontextprotocol/inspector (.+)", page)
    assert line is not None
    entry = _host_entries()["hello"]
    assert line.group(1).split() == [entry["command"], *entry["args"]]


def test_the_docs_copy_of_the_testing_example_output_is_what_it_prints() -> None:
    page = (DOCS / "testing.rst").read_text().splitlines()
    start = page.index("``python docs/examples/testing_peer.py`` prints:")
    assert page[start + 2] == ".. code-block:: text"
    shown, _ = _indented_block(page, start + 3, 0)
    result = _run_file(DOCS / "examples" / "testing_peer.py")
    # How hypothesis spreads the random sessions over the revisions depends on its version
    # and on the kit's strategies (the seed is fixed, the generator is not): compare
    # everything but that spread (which revisions the random sessions drew, and how often).
    # Each report opens with its seed line; the sweep's (the first report) sessions line is
    # compared whole: one session each.
    def shape(text: str) -> str:
        seed, sweep, rest = text.split("\n", 2)
        return f"{seed}\n{sweep}\n" + re.sub(r"(?m)^sessions: .*$", "sessions: ...", rest)

    assert shape(result.stdout) == shape(shown)
    assert result.stdout.splitlines()[:2] == shown.splitlines()[:2]  # the sweep: one each

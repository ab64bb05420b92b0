"""``mcp-sansio call``: call a tool, read a resource, get a prompt or list anything, from a shell.

It connects as ``probe`` does (a stdio command after ``--``, or ``--url``; the same login
options, reused from :mod:`._cli`), on the threads runtime: one blocking request, so no event
loop is needed. Arguments are one JSON object or ``key=value`` pairs; a pair's value is read
as the tool's input schema says its property is (:data:`COERCIONS`; a prompt's arguments are
strings, so they are taken as they are). The result is printed as readable text, or with
``--json`` as the result object itself (indented, keys sorted: the same bytes for the same
answer, for scripts). Progress is shown on stderr when stderr is a terminal.

Exit status (docs/cli.rst): 0 done; 1 the call failed -- the tool's error result
(``isError``), a JSON-RPC error, the connection (one line on stderr says why; with ``--json``
a JSON-RPC error is also printed as ``{"error": ...}``); 2 a usage error, among them an
argument the schema cannot take.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from mcp_sansio import Era
from mcp_sansio.app.errors import ConnectionClosedError, McpError, RequestTimeout

from . import _cli

PROG = "mcp-sansio call"

#: JSON Schema ``type`` -> how a ``key=value`` string becomes that type (raises ValueError).
#: Tried in the order the schema lists its types (``"type": ["integer", "null"]``,
#: ``anyOf``), ``string`` last: a value that reads as none of them is refused.
_BOOLEANS = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


def _boolean(text: str) -> bool:
    try:
        return _BOOLEANS[text.lower()]
    except KeyError:
        raise ValueError("not a boolean (true/false)") from None


def _json_of(kind: type) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        value = json.loads(text)
        if not isinstance(value, kind):
            raise ValueError(f"not a JSON {'array' if kind is list else 'object'}")
        return value
    return read


def _null(text: str) -> None:
    if text != "null":
        raise ValueError("not null")


def _number(text: str) -> float | int:
    value = json.loads(text)
    if type(value) not in (int, float):
        raise ValueError("not a number")
    return value  # type: ignore[no-any-return]


COERCIONS: dict[str, Callable[[str], Any]] = {
    "integer": int,
    "number": _number,
    "boolean": _boolean,
    "null": _null,
    "array": _json_of(list),
    "object": _json_of(dict),
    "string": str,
}


def _types(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a property's schema allows, ``string`` last (empty: not said)."""
    found: list[str] = []
    kind = schema.get("type")
    if isinstance(kind, str):
        found.append(kind)
    elif isinstance(kind, list):
        found += [k for k in kind if isinstance(k, str)]
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key) or []:
            if isinstance(option, dict):
                found += _types(option)
    if "enum" in schema and not found:
        found = ["string"]
    return sorted(dict.fromkeys(found), key=lambda k: k == "string")


def coerce(name: str, text: str, schema: Mapping[str, Any] | None) -> Any:
    """``text`` as the type ``schema`` gives property ``name`` (a string when it says none).

    :raises ValueError: with what was expected, when no allowed type reads it."""
    kinds = _types(schema or {}) or ["string"]
    for kind in kinds:
        read = COERCIONS.get(kind)
        if read is None:
            continue
        try:
            return read(text)
        except ValueError:
            continue
    raise ValueError(f"argument {name}: expected {' or '.join(kinds)}, got {text!r}")


def parse_arguments(items: Sequence[str], schema: Mapping[str, Any] | None,
                    *, strings: bool = False) -> dict[str, Any]:
    """The arguments of a call: one JSON object, or ``key=value`` pairs read by ``schema``
    (a tool's ``inputSchema``; ``strings``: every value is a string, as a prompt's are).

    :raises ValueError: a malformed item, a repeated key, a value the schema cannot take."""
    if len(items) == 1 and items[0].lstrip().startswith("{"):
        try:
            value = json.loads(items[0])
        except ValueError as exc:
            raise ValueError(f"the arguments are not a JSON object: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError("the arguments are not a JSON object")
        return value
    properties = (schema or {}).get("properties")
    properties = properties if isinstance(properties, dict) else {}
    found: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{item!r} is not key=value (or give one JSON object)")
        if key in found:
            raise ValueError(f"argument {key} is given twice")
        found[key] = text if strings else coerce(key, text, properties.get(key))
    return found


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Connect to an MCP server -- the stdio COMMAND after --, or the HTTP "
        "server at --url -- and call one tool (NAME), read a resource (--resource URI), get "
        "a prompt (--prompt NAME) or list what it offers (--list). Arguments are one JSON "
        "object or key=value pairs, read as the tool's input schema types them. Exits 1 when "
        "the call fails (the tool's error result, a JSON-RPC error), with the reason.",
        usage=f"{PROG} [options] (NAME [ARGS ...] | --resource URI | --prompt NAME [ARGS ...] "
        "| --list [KIND]) (--url URL | -- COMMAND [ARGS ...])")
    parser.add_argument("name", nargs="?", metavar="NAME", help="the tool to call")
    parser.add_argument("arguments", nargs="*", metavar="ARGS",
                        help="key=value pairs, or one JSON object")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--resource", metavar="URI", help="read this resource")
    what.add_argument("--prompt", metavar="NAME", help="get this prompt (ARGS are its "
                      "arguments)")
    what.add_argument("--list", nargs="?", const="all", metavar="KIND",
                      choices=["tools", "resources", "templates", "prompts", "all"],
                      help="list tools, resources, templates or prompts (default: all)")
    parser.add_argument("--url", default=None,
                        help="the MCP endpoint of an HTTP server (http://HOST:PORT/mcp)")
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON (indented, keys sorted)")
    parser.add_argument("--era", choices=["handshake", "stateless"], default=None,
                        help="skip the era probe and use this era")
    parser.add_argument("--timeout", type=_seconds, default=60.0, metavar="SECONDS",
                        help="bound on the connect, then on the call's silences (progress "
                        "restarts it; default: %(default)s)")
    parser.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                        help="--url: an HTTP header on every request (repeatable), e.g. "
                        "'Authorization: Bearer TOKEN'")
    parser.add_argument("--no-login", action="store_true",
                        help="--url: report a server that asks for authorization (401) "
                        "instead of logging in through the browser")
    parser.add_argument("--no-store", action="store_true",
                        help="--url: keep the login's tokens in memory only")
    parser.add_argument("--token-file", default=None, metavar="PATH",
                        help="--url: where tokens are kept (as probe)")
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def _usage(text: str) -> int:
    sys.stderr.write(f"{PROG}: {text}\n")
    return 2


def main(argv: Sequence[str], out: TextIO | None = None) -> int:
    """Parse ``argv`` (what follows ``call``) and run; the exit status."""
    out = out or sys.stdout
    argv = list(argv)
    command: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1:]
    args = _parser().parse_args(argv)
    if (args.url is None) == (not command):
        return _usage("give either --url URL or -- COMMAND (one of them)")
    if args.resource is None and args.prompt is None and args.list is None and not args.name:
        return _usage("nothing to do: give a tool NAME, --resource URI, --prompt NAME or "
                      "--list")
    if (args.resource is not None or args.list is not None) and (args.name or args.arguments):
        return _usage("--resource and --list take no NAME or ARGS")
    if args.prompt is not None and args.name:
        args.arguments.insert(0, args.name)
    headers: list[tuple[str, str]] = []
    for header in args.header:
        key, sep, value = header.partition(":")
        if not sep or not key.strip():
            return _usage(f"--header {header!r} is not NAME:VALUE")
        headers.append((key.strip(), value.strip()))
    try:
        return _run(args, command, headers, out)
    except BrokenPipeError:
        return 0


def _run(args: argparse.Namespace, command: list[str], headers: list[tuple[str, str]],
         out: TextIO) -> int:
    from mcp_sansio.auth import AuthFlowError  # lazy: OAuth only: a stdio start does without it

    target = args.url if args.url is not None else " ".join(command)
    era = Era(args.era) if args.era else None
    # A token given as a header is the caller's choice: no login replaces it.
    own_token = any(k.lower() == "authorization" for k, _ in headers)
    auth = _cli._login(not args.no_store, args.token_file, PROG) \
        if args.url is not None and not args.no_login and not own_token else None
    try:
        with _connected(args.url, command, era, args.timeout, auth, headers) as client:
            return _act(client, args, out)
    except _Usage as exc:
        return _usage(str(exc))
    except FileNotFoundError as exc:
        sys.stderr.write(f"{PROG}: cannot run {command[0]!r}: {exc.strerror}\n")
    except _cli._ConnectTimeout:
        sys.stderr.write(f"{PROG}: {target}: no connection within {args.timeout:g} s\n")
    except AuthFlowError as exc:
        sys.stderr.write(f"{PROG}: {target}: login failed: {exc}\n")
    except McpError as exc:
        if args.json:
            error = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            out.write(_dumps({"error": error}))
        sys.stderr.write(f"{PROG}: {target}: {exc}\n")
    except RequestTimeout:
        sys.stderr.write(f"{PROG}: {target}: no answer within {args.timeout:g} s\n")
    except ValueError as exc:  # not an http(s) URL
        return _usage(str(exc))
    except (ConnectionClosedError, OSError) as exc:
        # Lazy: HTTP only: a stdio start does without it.
        from mcp_sansio.app.http_client import HTTPTransportError

        said = _cli.explain_http_failure(exc) if isinstance(exc, HTTPTransportError) \
            else f"{target}: {exc}"
        sys.stderr.write(f"{PROG}: {said}\n")
    return 1


class _Usage(Exception):
    """A usage error found once connected (an argument the tool's schema cannot take)."""


@contextmanager
def _connected(url: str | None, command: list[str], era: Era | None, timeout: float,
               auth: Any, headers: list[tuple[str, str]]) -> Iterator[Any]:
    threads = _cli._adapter("threading")
    if url is None:
        with threads.connect_stdio(command, connect=False, request_timeout=timeout,
                                   shutdown_timeout=1.0) as client:
            _cli._connect_within_sync(client, era, timeout)
            yield client
        return
    extra = {"auth": auth} if auth is not None else {}
    while True:
        with threads.connect_http(url, connect=False, request_timeout=timeout,
                                  headers=headers, **extra) as client:
            try:
                _cli._connect_within_sync(client, era, timeout)
            except ConnectionClosedError as exc:
                challenge = _cli._login_needed(client, exc)
            else:
                yield client
                return
        client.auth.run_sync(challenge)  # a person logs in: outside --timeout


def _act(client: Any, args: argparse.Namespace, out: TextIO) -> int:
    if args.list is not None:
        found = _lists(client, args.list)
        out.write(_dumps(found) if args.json else _list_text(found))
        return 0
    if args.resource is not None:
        result = client.read_resource(args.resource)
        out.write(_dumps(result) if args.json else _contents_text(result.get("contents")))
        return 0
    if args.prompt is not None:
        try:
            arguments = parse_arguments(args.arguments, None, strings=True)
        except ValueError as exc:
            raise _Usage(str(exc)) from None
        arguments = {k: v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}
        result = client.get_prompt(args.prompt, arguments)
        out.write(_dumps(result) if args.json else _prompt_text(result))
        return 0
    tools = {t.get("name"): t for t in client.list_tools()}
    tool = tools.get(args.name)
    if tool is None:
        names = ", ".join(sorted(str(n) for n in tools)) or "none"
        sys.stderr.write(f"{PROG}: no tool named {args.name!r} (tools: {names})\n")
        return 1
    try:
        arguments = parse_arguments(args.arguments, tool.get("inputSchema"))
    except ValueError as exc:
        raise _Usage(f"{args.name}: {exc}") from None
    progress = _Progress() if _cli._isatty(sys.stderr) else None
    try:
        result = client.call_tool(args.name, arguments, progress=progress)
    finally:
        if progress is not None:
            progress.done()
    if args.json:
        out.write(_dumps(result))
    if result.get("isError"):
        reason = _content_text(result.get("content")).strip() or "no reason given"
        sys.stderr.write(f"{PROG}: {args.name}: the tool failed: {reason}\n")
        return 1
    if not args.json:
        out.write(_result_text(result))
    return 0


class _Progress:
    """Progress on a terminal: one line, rewritten."""

    def __init__(self) -> None:
        self.shown = False

    def __call__(self, value: float, total: float | None, message: str | None) -> None:
        of = f"/{total:g}" if total is not None else ""
        sys.stderr.write(f"\rprogress {value:g}{of}" + (f": {message}" if message else "")
                         + "\x1b[K")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def _lists(client: Any, kind: str) -> dict[str, list[dict[str, Any]]]:
    caps = client.server_capabilities
    wanted = ["tools", "resources", "templates", "prompts"] if kind == "all" else [kind]
    calls = {"tools": ("tools", client.list_tools),
             "resources": ("resources", client.list_resources),
             "templates": ("resources", client.list_resource_templates),
             "prompts": ("prompts", client.list_prompts)}
    keys = {"templates": "resourceTemplates"}
    found: dict[str, list[dict[str, Any]]] = {}
    for name in wanted:
        capability, call = calls[name]
        found[keys.get(name, name)] = call() if capability in caps else []
    return found


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _list_text(found: dict[str, list[dict[str, Any]]]) -> str:
    lines: list[str] = []
    columns = {"tools": ("name", "description"), "resources": ("uri", "name"),
               "resourceTemplates": ("uriTemplate", "name"), "prompts": ("name", "description")}
    for kind, items in found.items():
        first, second = columns[kind]
        lines.append(f"{kind} ({len(items)})")
        width = max((len(str(item.get(first, ""))) for item in items), default=0)
        for item in items:
            text = _cli._first_line(item.get(second))
            lines.append(f"  {str(item.get(first, '')).ljust(width)}  {text}".rstrip())
    return "\n".join(lines) + "\n"


def _content_text(content: Any) -> str:
    """Content blocks as text: text as it is, the others named (MCP ``ContentBlock``)."""
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind in ("image", "audio"):
            size = len(str(block.get("data", ""))) * 3 // 4
            parts.append(f"[{kind} {block.get('mimeType', '?')}, about {size} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource link {block.get('uri', '?')}]")
        elif kind == "resource":
            parts.append(_contents_text([block.get("resource")]).rstrip("\n"))
        else:
            parts.append(json.dumps(block, sort_keys=True))
    return "\n".join(parts)


def _contents_text(contents: Any) -> str:
    """A resource's contents as text (``blob`` contents named, not dumped)."""
    parts: list[str] = []
    for item in contents if isinstance(contents, list) else []:
        if not isinstance(item, dict):
            continue
        if "text" in item:
            parts.append(str(item["text"]))
        else:
            size = len(str(item.get("blob", ""))) * 3 // 4
            parts.append(f"[{item.get('mimeType', 'blob')} {item.get('uri', '')}, about "
                         f"{size} bytes]")
    return "\n".join(parts) + "\n"


def _result_text(result: Mapping[str, Any]) -> str:
    text = _content_text(result.get("content"))
    structured = result.get("structuredContent")
    if structured is not None and not text.strip():
        text = json.dumps(structured, indent=2, sort_keys=True, ensure_ascii=False)
    return text + "\n"


def _prompt_text(result: Mapping[str, Any]) -> str:
    lines = []
    for message in result.get("messages") or []:
        if isinstance(message, dict):
            lines.append(f"{message.get('role', '?')}: "
                         + _content_text([message.get("content")]))
    return "\n".join(lines) + "\n"

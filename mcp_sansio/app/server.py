"""The server registry and router: tools, resources, templates, prompts and completions,
input schemas from signatures, argument checks, result shaping per negotiated revision, and
pagination of the list methods.

Theory of operation
-------------------
A :class:`Server` is a definition, independent of any runtime and connection: one instance
serves stdio or HTTP, on any runtime, in both eras. :meth:`Server.connection` builds a core
``ServerConnection`` declaring what is registered; :meth:`Server._route` maps one request to
a :class:`~.context.Job` (or answers it at once: a list page, an unknown name). Untrusted
arguments are checked against the tool's input schema before binding (type mismatches are
answered per revision, see ``INVALID_ARGUMENTS_ANSWER``); a handler's Python return value is
shaped into the result the method needs. :class:`ServerLogic` is the server role of the
session logic: it routes each request and turns a handler's failure into its answer.
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mcp_sansio import (
    Era,
    ErrorCode,
    Request,
    ServerConnection,
)

from .._sessionless import SessionlessError
from .context import Context, Job, _text, tool_error_result
from .errors import (
    McpError,
    ToolError,
)
from .session import Session

__all__ = [
    "INVALID_ARGUMENTS_ANSWER",
    "Entry",
    "Server",
    "ServerLogic",
]

if TYPE_CHECKING:
    from .tasks import TaskLedger, TaskRuntime

#: The high-level layer logs under the adapters' logger name (``mcp_sansio.adapters``):
#: applications (and tests) configure that name to see handler failures.
log = logging.getLogger("mcp_sansio.adapters")

# -- the server: registry and router -----------------------------------------------------------


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               dict: "object", list: "array"}


def _schema_from_signature(fn: Callable[..., Any]) -> dict[str, Any]:
    """A plain JSON Schema for a handler's keyword arguments (``ctx`` excluded)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception:  # unresolvable annotations: fall back to untyped properties
        hints = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name == "ctx" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        json_type = _JSON_TYPES.get(hints.get(name))  # type: ignore[arg-type]
        properties[name] = {"type": json_type} if json_type else {}
        if param.default is param.empty:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


class _Signature:
    """What binding needs to know of a handler's signature, worked out once per handler
    (``inspect.signature`` is far too slow for every request)."""

    __slots__ = ("names", "required", "var_keyword", "wants_ctx")

    def __init__(self, fn: Callable[..., Any]) -> None:
        params = inspect.signature(fn).parameters
        named = [p for p in params.values()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "ctx"]
        self.wants_ctx = "ctx" in params
        self.var_keyword = any(p.kind is p.VAR_KEYWORD for p in params.values())
        self.names = frozenset(p.name for p in named)
        self.required = tuple(p.name for p in named if p.default is p.empty)


_SIGNATURES: dict[Callable[..., Any], _Signature] = {}


def _bind(fn: Callable[..., Any], arguments: Mapping[str, Any], ctx: Context | None
          ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Bind untrusted arguments to a handler's keyword parameters; TypeError when they do
    not fit (unknown names, missing required ones)."""
    signature = _SIGNATURES.get(fn)
    if signature is None:
        signature = _SIGNATURES[fn] = _Signature(fn)
    # (Argument names come from decoded JSON objects or a template's groups: strings.)
    kwargs = dict(arguments)
    kwargs.pop("ctx", None)
    if not signature.var_keyword and not signature.names.issuperset(kwargs):
        unknown = sorted(set(kwargs) - signature.names)
        raise TypeError(f"unexpected argument(s): {', '.join(unknown)}")
    for name in signature.required:
        if name not in kwargs:
            missing = [name for name in signature.required if name not in kwargs]
            raise TypeError(f"missing required argument(s): {', '.join(missing)}")
    if ctx is not None and signature.wants_ctx:
        kwargs["ctx"] = ctx
    return (), kwargs


def _is_integer(value: Any) -> bool:
    # 2020-12 validation 6.1.1: "integer" is any number with a zero fractional part (1.0 too).
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer())


#: JSON Schema's primitive type names (2020-12 validation, section 6.1.1) and the test each
#: makes of a decoded JSON value. A Python bool is an int, but true is not a JSON number.
_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str or isinstance(v, str),
    "integer": _is_integer,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}

#: The article for a type's name in a message ("an integer", "a string").
_A = {"integer": "an integer", "array": "an array", "object": "an object"}


def _argument_types(schema: Any) -> dict[str, tuple[str, ...]]:
    """The ``type`` each top-level property of a tool's input schema requires, for the
    argument check (only the ``type`` keyword: what :func:`_schema_from_signature` emits; a
    schema given by hand may say more, which the handler checks itself). A property without
    a ``type``, or with a name this does not know, is not checked."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    types: dict[str, tuple[str, ...]] = {}
    if not isinstance(properties, dict):
        return types
    for name, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        names = (kind,) if isinstance(kind, str) else tuple(kind) if isinstance(
            kind, list) else ()
        if names and all(isinstance(n, str) and n in _TYPE_TESTS for n in names):
            types[str(name)] = names
    return types


def _wrong_type(types: Mapping[str, tuple[str, ...]], arguments: Mapping[str, Any]
                ) -> str | None:
    """The first argument whose value is not of its declared type, in words, or None."""
    for name, value in arguments.items():
        allowed = types.get(name)
        if allowed is None:
            continue
        for kind in allowed:  # (a loop, not any() over a generator: this runs per call)
            if _TYPE_TESTS[kind](value):
                break
        else:
            want = " or ".join(_A.get(t, f"a {t}") if t != "null" else "null"
                               for t in allowed)
            got = _json_type_name(value)
            return f"argument {name!r} must be {want}, not {got}"
    return None


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    for name in ("boolean", "integer", "number", "string", "array", "object"):
        if _TYPE_TESTS[name](value):
            return _A.get(name, f"a {name}")
    return type(value).__name__  # pragma: no cover - decoded JSON is one of the above


#: How a ``tools/call`` whose arguments do not fit the tool (unknown or missing names, a
#: value of the wrong type) is answered, by revision. Each revision's server/tools.mdx,
#: "Error Handling": up to 2025-06-18 "Invalid arguments" is listed among the *protocol*
#: errors (a JSON-RPC error; -32602 Invalid params, JSON-RPC 2.0 section 5.1); from
#: 2025-11-25 (SEP-1303) on, "Input validation errors" are *tool execution* errors, a result
#: with ``isError: true``, so that the model can read the message and call again.
INVALID_ARGUMENTS_ANSWER: dict[str, str] = {
    "2024-11-05": "protocol-error",
    "2025-03-26": "protocol-error",
    "2025-06-18": "protocol-error",
    "2025-11-25": "tool-error",
    "2026-07-28": "tool-error",
}


class Entry:
    """One registered tool, resource, template or prompt."""

    __slots__ = ("arg_types", "definition", "fn", "pattern", "scopes")

    def __init__(self, fn: Callable[..., Any], definition: dict[str, Any],
                 pattern: re.Pattern[str] | None = None) -> None:
        self.fn = fn
        self.definition = definition
        self.pattern = pattern
        #: A tool's argument types (from its input schema), worked out once.
        self.arg_types = _argument_types(definition.get("inputSchema"))
        #: The scopes calling a tool needs over a protected HTTP server (auth/scopes.py).
        self.scopes: frozenset[str] = frozenset()


def _uri_pattern(template: str) -> re.Pattern[str]:
    """``test://template/{id}/data`` -> a regex with one named group per variable (RFC 6570
    level 1: each variable matches one path segment)."""
    out, pos = [], 0
    for match in re.finditer(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", template):
        out.append(re.escape(template[pos:match.start()]))
        out.append(f"(?P<{match.group(1)}>[^/?#]+)")
        pos = match.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out) + r"\Z")


class Server:
    """A server definition: what it offers and the handlers behind it. Runtime-independent:
    one definition serves stdio on any adapter, in both eras.

    Handlers are plain functions (``async def`` on asyncio and trio; ``def`` on any runtime,
    the only kind on threads). A parameter named ``ctx`` receives the request's
    :class:`Context`; every other parameter is bound from the request's arguments.
    """

    def __init__(
        self, name: str, version: str = "0.1.0", *, title: str | None = None,
        instructions: str | None = None, page_size: int | None = None,
        list_changed: bool = True,
    ) -> None:
        self.info: dict[str, Any] = {"name": name, "version": version}
        if title is not None:
            self.info["title"] = title
        self.instructions = instructions
        self.page_size = page_size
        self.list_changed = list_changed
        self.tools: dict[str, Entry] = {}
        self.resources: dict[str, Entry] = {}
        self.templates: dict[str, Entry] = {}
        self.prompts: dict[str, Entry] = {}
        self.completion_handler: Callable[..., Any] | None = None
        #: The task store (:meth:`enable_tasks`), or None: no tool runs as a task.
        self.tasks: TaskLedger | None = None
        #: The capabilities dict the latest connection was given (see :meth:`connection`),
        #: and what it was worked out from (:meth:`_declaration_key`).
        self._declared: dict[str, Any] | None = None
        self._declared_key: tuple[Any, ...] | None = None

    # -- registration -------------------------------------------------------------------------

    def add_tool(
        self, fn: Callable[..., Any], *, name: str | None = None,
        description: str | None = None, input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None, title: str | None = None,
        annotations: Mapping[str, Any] | None = None, task_support: str | None = None,
        scopes: Iterable[str] = (),
    ) -> Callable[..., Any]:
        """A tool. ``task_support`` (``"optional"``, ``"required"``) lets it run as a task
        (:meth:`enable_tasks`); it is declared as ``execution.taskSupport``. ``scopes``:
        what a caller's access token needs beyond the endpoint's required scopes over a
        protected HTTP server (else 403 ``insufficient_scope``; see :doc:`/authorization`)."""
        tool_name = name or fn.__name__
        definition: dict[str, Any] = {
            "name": tool_name,
            "description": description or inspect.getdoc(fn) or tool_name,
            "inputSchema": dict(input_schema) if input_schema is not None
            else _schema_from_signature(fn),
        }
        if title is not None:
            definition["title"] = title
        if output_schema is not None:
            definition["outputSchema"] = dict(output_schema)
        if annotations is not None:
            definition["annotations"] = dict(annotations)
        if task_support not in (None, "forbidden", "optional", "required"):
            raise ValueError(f"task_support {task_support!r}: forbidden, optional or required")
        if task_support is not None:
            definition["execution"] = {"taskSupport": task_support}
        entry = self.tools[tool_name] = Entry(fn, definition)
        entry.scopes = frozenset(scopes)
        return fn

    def tool(self, name: str | None = None, **options: Any
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of :meth:`add_tool`."""
        return lambda fn: self.add_tool(fn, name=name, **options)

    def add_resource(
        self, uri: str, fn: Callable[..., Any], *, name: str | None = None,
        description: str | None = None, mime_type: str | None = None,
    ) -> Callable[..., Any]:
        """A direct resource; ``fn()`` returns ``str`` (text), ``bytes`` (blob), a list of
        contents or a whole ``ReadResourceResult``. A URI with ``{var}`` parts registers a
        resource template instead, whose handler receives the variables."""
        definition: dict[str, Any] = {
            "name": name or fn.__name__,
            "description": description or inspect.getdoc(fn) or (name or fn.__name__),
        }
        if mime_type is not None:
            definition["mimeType"] = mime_type
        if "{" in uri:
            definition["uriTemplate"] = uri
            self.templates[uri] = Entry(fn, definition, _uri_pattern(uri))
        else:
            definition["uri"] = uri
            self.resources[uri] = Entry(fn, definition)
        return fn

    def resource(self, uri: str, **options: Any
                 ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of :meth:`add_resource` (same options)."""
        return lambda fn: self.add_resource(uri, fn, **options)

    def add_prompt(
        self, fn: Callable[..., Any], *, name: str | None = None,
        description: str | None = None, arguments: list[dict[str, Any]] | None = None,
        title: str | None = None,
    ) -> Callable[..., Any]:
        """A prompt; ``fn(**arguments)`` returns ``str`` (one user message), a list of
        messages, or a whole ``GetPromptResult``."""
        prompt_name = name or fn.__name__
        if arguments is None:
            arguments = [
                {"name": p.name, "required": p.default is p.empty}
                for p in inspect.signature(fn).parameters.values()
                if p.name != "ctx" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ]
        definition: dict[str, Any] = {
            "name": prompt_name,
            "description": description or inspect.getdoc(fn) or prompt_name,
            "arguments": arguments,
        }
        if title is not None:
            definition["title"] = title
        self.prompts[prompt_name] = Entry(fn, definition)
        return fn

    def prompt(self, name: str | None = None, **options: Any
               ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of :meth:`add_prompt` (same options)."""
        return lambda fn: self.add_prompt(fn, name=name, **options)

    def set_completion(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn(ref, argument, context)`` returns a list of values or a ``completion``
        object, for ``completion/complete``."""
        self.completion_handler = fn
        return fn

    def completion(self) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of :meth:`set_completion`."""
        return self.set_completion

    def enable_tasks(self, runtime: TaskRuntime | None = None, **options: Any) -> TaskLedger:
        """Let tools registered with ``task_support`` run as tasks (the 2026-07-28 tasks
        extension, see :mod:`.tasks`). ``options`` configure the ledger
        (:class:`~.tasks.TaskLedger`: ``ttl_ms``, ``poll_interval_ms``, ``max_tasks``,
        ``store``, ``shared``, ``clock``, ``monotonic``). The ledger is sans-IO: where a
        task's handler runs, its waiters, clocks and ids come from the runtime serving each
        connection (its session's ``_task_runtime()``), or from ``runtime`` when given."""
        from .tasks import TaskLedger

        self.tasks = TaskLedger(runtime, **options)
        return self.tasks

    # -- what the connection declares -----------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """The server capabilities this definition declares (from what is registered)."""
        changed = {"listChanged": True} if self.list_changed else {}
        caps: dict[str, Any] = {"logging": {}}
        if self.tools:
            caps["tools"] = dict(changed)
        if self.resources or self.templates:
            caps["resources"] = {"subscribe": True, **changed}
        if self.prompts:
            caps["prompts"] = dict(changed)
        if self.completion_handler is not None:
            caps["completions"] = {}
        if self.tasks is not None:
            caps.update(self.tasks.capabilities())
        return caps

    def _declaration_key(self) -> tuple[Any, ...] | None:
        """Everything :meth:`capabilities` reads, or None when it may read more (a subclass
        declares its own, or a task ledger of another class): equal keys, equal dicts."""
        tasks = self.tasks
        if type(self).capabilities is not Server.capabilities or (
                tasks is not None and type(tasks).capabilities is not _ledger_capabilities()):
            return None
        return (self.list_changed, bool(self.tools), bool(self.resources or self.templates),
                bool(self.prompts), self.completion_handler is not None, tasks)

    def connection(self, **options: Any) -> ServerConnection:
        """A fresh core connection declaring this server's info and capabilities."""
        # Every session of a server declares the same capabilities, and the connection keeps
        # the dict it is given: hand each the one dict while nothing registered changed them
        # (an idle HTTP session is then ~1 KiB smaller). The core never changes it
        # (mcp_sansio/_connection.py). A stateless-era request builds a connection each: the
        # dict is not even worked out again while what it is made from stays the same.
        key = self._declaration_key()
        if key is not None and key == self._declared_key and self._declared is not None:
            caps = self._declared
        else:
            caps = self.capabilities()
            if self._declared is not None and self._declared == caps:
                caps = self._declared
            else:
                self._declared = caps
            self._declared_key = key
        return ServerConnection(info=self.info, capabilities=caps,
                                instructions=self.instructions, **options)

    # -- routing ------------------------------------------------------------------------------

    def _page(self, key: str, items: list[dict[str, Any]], params: Mapping[str, Any]
              ) -> dict[str, Any]:
        start = 0
        cursor = params.get("cursor")
        if cursor is not None:
            if not isinstance(cursor, str) or not cursor.isdigit() or int(cursor) > len(items):
                raise McpError(ErrorCode.INVALID_PARAMS, "Invalid params: unknown cursor")
            start = int(cursor)
        if self.page_size is None:
            return {key: items[start:]}
        end = start + self.page_size
        result: dict[str, Any] = {key: items[start:end]}
        if end < len(items):
            result["nextCursor"] = str(end)
        return result

    def _route(self, request: Request, ctx: Context) -> Job:
        """The job for one request, or McpError for a request this server cannot serve."""
        method = request.method
        params = request.params or {}
        if self.tasks is not None:
            job: Job | None = self.tasks._route(self, request, ctx)
            if job is not None:
                return job
        if method == "tools/list":
            page = self._page("tools", [e.definition for e in self.tools.values()], params)
            return Job(None, shape=lambda _: page)
        if method == "tools/call":
            return self._route_tool(params, ctx)
        if method == "resources/list":
            page = self._page("resources", [e.definition for e in self.resources.values()],
                              params)
            return Job(None, shape=lambda _: page)
        if method == "resources/templates/list":
            page = self._page("resourceTemplates",
                              [e.definition for e in self.templates.values()], params)
            return Job(None, shape=lambda _: page)
        if method == "resources/read":
            return self._route_resource(params, ctx)
        if method in ("resources/subscribe", "resources/unsubscribe"):
            # (Un)SubscribeRequest (schema): uri is a required string; -32602 otherwise
            # (JSON-RPC 2.0 s. 5.1). The core keeps the subscription set.
            if not isinstance(params.get("uri"), str):
                raise McpError(ErrorCode.INVALID_PARAMS, f"Invalid params: {method} needs "
                               "the string uri")
            return Job(None)
        if method == "prompts/list":
            page = self._page("prompts", [e.definition for e in self.prompts.values()], params)
            return Job(None, shape=lambda _: page)
        if method == "prompts/get":
            return self._route_prompt(params, ctx)
        if method == "completion/complete" and self.completion_handler is not None:
            ref, argument = params.get("ref"), params.get("argument")
            # CompleteRequest (schema): ref and argument are required objects.
            if not isinstance(ref, dict) or not isinstance(argument, dict):
                raise McpError(ErrorCode.INVALID_PARAMS, "Invalid params: completion/complete "
                               "needs the objects ref and argument")
            fn = self.completion_handler
            args, kwargs = _bind(fn, {"ref": params.get("ref"),
                                      "argument": params.get("argument"),
                                      "context": params.get("context")}, ctx)
            return Job(fn, args, kwargs, _completion_result)
        raise McpError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")

    def _route_tool(self, params: Mapping[str, Any], ctx: Context) -> Job:
        # (type() first, here and below: decoded JSON holds exact types, and the isinstance
        # call is then skipped on every call)
        name = params.get("name")
        entry = self.tools.get(name) if type(name) is str or isinstance(name, str) else None
        if entry is None:
            raise McpError(ErrorCode.INVALID_PARAMS, f"Unknown tool: {name!r}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        structured = "outputSchema" in entry.definition
        try:
            if type(arguments) is not dict and not isinstance(arguments, dict):
                raise TypeError("arguments must be an object")
            args, kwargs = _bind(entry.fn, arguments, ctx)
            wrong = _wrong_type(entry.arg_types, arguments) if entry.arg_types else None
            if wrong is not None:
                raise TypeError(wrong)
        except TypeError as exc:
            message = f"Invalid arguments for tool {name}: {exc}"
            # Visible with Python's default logging (WARNING): the server's author learns
            # that clients call this tool wrongly. The arguments are not logged (they may
            # carry secrets); the message names only the argument and the types.
            log.warning("tools/call (request %r): %s", ctx.request_id, message)
            if INVALID_ARGUMENTS_ANSWER.get(_revision(ctx) or "") == "protocol-error":
                raise McpError(ErrorCode.INVALID_PARAMS, f"Invalid params: {message}") \
                    from None
            return Job(None, shape=lambda _: tool_error_result(message))
        return Job(entry.fn, args, kwargs, lambda value: _tool_result(value, structured))

    def _route_resource(self, params: Mapping[str, Any], ctx: Context) -> Job:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise McpError(ErrorCode.INVALID_PARAMS, "Invalid params: uri must be a string")
        entry = self.resources.get(uri)
        variables: dict[str, Any] = {}
        if entry is None:
            for template in self.templates.values():
                assert template.pattern is not None
                match = template.pattern.match(uri)
                if match:
                    entry, variables = template, match.groupdict()
                    break
        if entry is None:
            # SEP-2164: -32602 with the uri in data, never an empty contents array.
            raise McpError(ErrorCode.INVALID_PARAMS, "Resource not found", {"uri": uri})
        args, kwargs = _bind(entry.fn, variables, ctx)
        mime = entry.definition.get("mimeType")
        return Job(entry.fn, args, kwargs, lambda value: _resource_result(uri, mime, value))

    def _route_prompt(self, params: Mapping[str, Any], ctx: Context) -> Job:
        name = params.get("name")
        entry = self.prompts.get(name) if isinstance(name, str) else None
        if entry is None:
            raise McpError(ErrorCode.INVALID_PARAMS, f"Unknown prompt: {name!r}")
        arguments = params.get("arguments") or {}
        try:
            if not isinstance(arguments, dict):
                raise TypeError("arguments must be an object")
            args, kwargs = _bind(entry.fn, arguments, ctx)
        except TypeError as exc:
            raise McpError(ErrorCode.INVALID_PARAMS, f"Invalid params: {exc}") from None
        return Job(entry.fn, args, kwargs, _prompt_result)


def _ledger_capabilities() -> Callable[..., Any]:
    """The task ledger's own ``capabilities`` (its module is loaded once tasks are enabled;
    looked up once: a connection is built for every stateless-era request)."""
    found = _LEDGER_CAPABILITIES
    if not found:
        from .tasks import TaskLedger

        found.append(TaskLedger.capabilities)
    return found[0]


_LEDGER_CAPABILITIES: list[Callable[..., Any]] = []


def _revision(ctx: Context) -> str | None:
    """The revision a request is served under: the handshake's, or (stateless era) the one
    the request names in its ``_meta``."""
    if ctx.era is Era.STATELESS:
        meta = ctx.params.get("_meta")
        version = meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(
            meta, dict) else None
        return version if isinstance(version, str) else None
    return ctx.session.conn.protocol_version


def _tool_result(value: Any, structured: bool) -> dict[str, Any]:
    if (type(value) is dict or isinstance(value, dict)) and (
            "content" in value or "structuredContent" in value):
        return value
    if structured:
        return {"content": [_text(json.dumps(value))], "structuredContent": value}
    if value is None:
        return {"content": []}
    if isinstance(value, str):
        return {"content": [_text(value)]}
    if isinstance(value, list):
        return {"content": [_text(v) if isinstance(v, str) else v for v in value]}
    if isinstance(value, dict):
        return {"content": [value]}
    return {"content": [_text(str(value))]}


def _resource_result(uri: str, mime: Any, value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and "contents" in value:
        return value
    if isinstance(value, list):
        return {"contents": value}
    item: dict[str, Any] = {"uri": uri}
    if mime is not None:
        item["mimeType"] = mime
    if isinstance(value, bytes | bytearray):
        item["blob"] = base64.b64encode(value).decode("ascii")
    else:
        item["text"] = value if isinstance(value, str) else json.dumps(value)
    return {"contents": [item]}


def _prompt_result(value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and "messages" in value:
        return value
    if isinstance(value, str):
        return {"messages": [{"role": "user", "content": _text(value)}]}
    return {"messages": list(value)}


def _completion_result(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {"completion": value} if "values" in value else value
    values = [str(v) for v in (value or [])][:100]  # the spec caps one page at 100
    return {"completion": {"values": values, "hasMore": False}}


class ServerLogic(Session):
    """Server behaviour shared by every runtime: route requests to the registry."""

    conn: ServerConnection

    def __init__(self, conn: ServerConnection, server: Server, **kwargs: Any) -> None:
        super().__init__(conn, **kwargs)
        self.server = server

    def _make_job(self, request: Request, ctx: Context) -> Job | None:
        """Route a request; answer at once (and return None) when it cannot be served or
        needs no handler. ``subscriptions/listen`` stays open until the client cancels."""
        if request.method == "subscriptions/listen":
            return None
        try:
            job = self.server._route(request, ctx)
        except McpError as exc:
            self._finish_request(request.request_id, error=exc, method=request.method)
            return None
        except TypeError as exc:  # arguments that do not fit a resource/completion handler
            self._finish_request(request.request_id, error=McpError(
                ErrorCode.INVALID_PARAMS, f"Invalid params: {exc}"), method=request.method)
            return None
        if job.fn is None:
            self._finish_request(request.request_id, job.shape(None), method=request.method)
            return None
        return job

    def _job_ended(self, request: Request, job: Job, ctx: Context, value: Any = None,
                   error: BaseException | None = None) -> None:
        """A handler's end, on every runtime and colour: its value shaped and answered, or its
        exception answered by :meth:`_job_failed` -- nothing for a request the client
        cancelled (it gets no answer: ``notifications/cancelled``, basic/utilities)."""
        if ctx.cancelled:
            return
        if error is None:
            try:
                result = job.shape(value)
            except Exception as exc:  # a value the shaping refuses fails like the handler
                error = exc
            else:
                self._finish_request(request.request_id, result, method=request.method)
                return
        self._job_failed(request, error)

    def _job_failed(self, request: Request, error: BaseException) -> None:
        """A handler raised: a ToolError is a tool result; the rest go to finish_incoming."""
        if isinstance(error, SessionlessError):
            # The handler needed the client and the sessionless mode cannot ask it: its
            # error says so (a tool's error result; -32600 for other requests, as the mode's
            # refused requests, mcp_sansio._sessionless), not a bare internal error.
            error = ToolError(str(error)) if request.method == "tools/call" else McpError(
                ErrorCode.INVALID_REQUEST, f"Invalid Request: {error}")
        if isinstance(error, ToolError) and request.method == "tools/call":
            self._finish_request(request.request_id, tool_error_result(str(error)),
                                 method=request.method)
        else:
            self._finish_request(request.request_id, error=error, method=request.method)

"""The two colours of the client's named calls: each definition of
:class:`~mcp_sansio.app.calls.ClientCalls` made into an ``async`` method or a blocking one.

Theory of operation
-------------------
A call's signature and docstring are written once, in :mod:`mcp_sansio.app.calls`. Here
:func:`asynchronous` (``AsyncClient``: asyncio and trio) and :func:`blocking`
(``SyncClient``: threads) each turn a definition into a plain function that the client
class holds under the definition's name -- ``call_tool = asynchronous(Calls.call_tool)`` --
so an attribute lookup finds an ordinary function (no descriptor of ours runs per call).

Everything that introspection needs is computed once, when the class is made: the
function's ``__signature__`` (the definition's parameters, ``self`` first, then the
colour's options from :class:`~mcp_sansio.app.calls.CallOptions` as keyword-only
parameters), ``__doc__`` (the definition's, plus one line naming the options),
``__name__``, ``__qualname__`` and ``__annotations__``. ``help(client.call_tool)``,
``inspect.signature`` and Sphinx's autodoc show the real parameters. A call costs one extra
plain function call: the definition, which builds the call; the arguments are bound by
Python's own call machinery, never by ``inspect``.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Concatenate, ForwardRef, ParamSpec, Protocol, TypeVar, overload

from mcp_sansio.app.calls import (
    OPTION_DEFAULTS,
    CallOptions,
    NamedCall,
    TaskClient,
    TaskPlan,
    walk_pages,
)
from mcp_sansio.app.client_tasks import Plan, Send, Sleep

__all__ = ["AsyncMethod", "BlockingMethod", "Stepper", "advance", "asynchronous", "blocking",
           "colour_options"]

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

#: The type each colour's ``cancel`` option shows in its signatures (None: the colour has no
#: ``cancel``; an ``async`` caller cancels its task or scope). It mirrors the specialisation
#: of ``ClientCalls`` in ``common/async_session.py`` (``Never``) and ``threading/session.py``
#: (``CancelToken | None``), which is what mypy checks; tests/app/test_app_calls.py and
#: tests/app/test_call_types.py pin both.
_CANCEL = {"async": None, "blocking": "CancelToken | None"}


class AsyncMethod(Protocol[P, R_co]):
    """What mypy sees of an ``async`` named call on its class."""

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> AsyncMethod[P, R_co]: ...
    @overload
    def __get__(self, obj: object, owner: type[Any]
                ) -> Callable[P, Coroutine[Any, Any, R_co]]: ...


class BlockingMethod(Protocol[P, R_co]):
    """What mypy sees of a blocking named call on its class."""

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> BlockingMethod[P, R_co]: ...
    @overload
    def __get__(self, obj: object, owner: type[Any]) -> Callable[P, R_co]: ...


@functools.cache
def colour_options(colour: str) -> tuple[inspect.Parameter, ...]:
    """The keyword-only options of a colour (``"async"`` or ``"blocking"``), from
    :class:`CallOptions` and :data:`OPTION_DEFAULTS` (made once per colour)."""
    cancel = _CANCEL[colour]
    out: list[inspect.Parameter] = []
    for name, ref in CallOptions.__annotations__.items():
        annotation = ref.__forward_arg__ if isinstance(ref, ForwardRef) else ref
        if name == "cancel":
            if cancel is None:
                continue
            annotation = cancel
        out.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                     default=OPTION_DEFAULTS[name], annotation=annotation))
    return tuple(out)


@functools.cache
def _shape(define: Callable[..., Any]) -> tuple[list[inspect.Parameter], str]:
    """A definition's own parameters (without the task calls' client and the named calls'
    ``**options``) and the method's return annotation: what its NamedCall or plan carries.
    Made once per definition, for both colours."""
    signature = inspect.signature(define)
    params = list(signature.parameters.values())
    if inspect.isgeneratorfunction(define):
        params = params[1:]  # the client is ``self``
    else:
        params = [p for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD]
    text = str(signature.return_annotation)
    for wrapper in ("NamedCall[", "TaskPlan["):
        if text.startswith(wrapper) and text.endswith("]"):
            return params, text[len(wrapper):-1]
    raise TypeError(f"{define.__qualname__} returns neither a NamedCall nor a TaskPlan")


_SELF = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)


class _Install:
    """Puts the finished function on the class under its name (``__set_name__`` runs once,
    when the class is made), after giving it the definition's name, signature and doc."""

    def __init__(self, method: Callable[..., Any], define: Callable[..., Any],
                 colour: str) -> None:
        self.method = method
        self.define = define
        self.colour = colour

    def __set_name__(self, owner: type[Any], name: str) -> None:
        define, method = self.define, self.method
        if name != define.__name__:  # ``list_tools = asynchronous(Calls.call_tool)``
            raise TypeError(f"{owner.__qualname__}.{name} wraps {define.__name__}")
        params, returns = _shape(define)
        kept = [_SELF, *params]
        doc = inspect.cleandoc(define.__doc__ or "")
        if not inspect.isgeneratorfunction(define):
            options = colour_options(self.colour)
            kept += options
            names = ", ".join(f"``{p.name}``" for p in options)
            doc += f"\n\n{names}: as for :meth:`request`."
        signature = inspect.Signature(kept, return_annotation=returns)
        method.__name__ = name
        method.__qualname__ = f"{owner.__qualname__}.{name}"
        method.__doc__ = doc
        method.__signature__ = signature  # type: ignore[attr-defined]
        method.__annotations__ = {
            p.name: p.annotation for p in kept if p.annotation is not p.empty}
        method.__annotations__["return"] = signature.return_annotation
        #: The definition, for the parity test and for readers of ``vars(AsyncClient)``.
        method.definition = define  # type: ignore[attr-defined]
        setattr(owner, name, method)


# -- one plan, two colours ------------------------------------------------------------------


def advance(plan: Generator[Any, Any, Any], value: Any, error: BaseException | None
            ) -> tuple[bool, Any]:
    """Resume ``plan`` with a step's result (or its exception): ``(True, value)`` once the
    plan has returned, else ``(False, next step)``."""
    try:
        return False, plan.throw(error) if error is not None else plan.send(value)
    except StopIteration as stop:
        return True, stop.value


class Stepper:
    """A plan run by a runtime's own loop, which is the same on every runtime::

        stepper = Stepper(plan, handed)
        while stepper.advance():
            with stepper:
                stepper.value = take(stepper.step)   # ``await take(...)`` when async
        return stepper.result

    :meth:`advance` resumes the plan with what the last step gave: its value, or the
    exception it raised if ``handed(step)`` (the plan decides what to keep); an exception of
    any other step, or one that is not an :class:`Exception` (a cancellation), ends the run.
    Used for the client's task calls (here) and the OAuth retry (:mod:`.authorized`)."""

    __slots__ = ("error", "handed", "plan", "result", "step", "value")

    def __init__(self, plan: Generator[Any, Any, Any], handed: Callable[[Any], bool]) -> None:
        self.plan = plan
        self.handed = handed
        self.step: Any = None
        self.value: Any = None
        self.error: Exception | None = None
        #: What the plan returned, once :meth:`advance` is false.
        self.result: Any = None

    def advance(self) -> bool:
        """Resume the plan: True with its next :attr:`step`, False once it has returned."""
        done, step = advance(self.plan, self.value, self.error)
        self.value = self.error = None
        if done:
            self.result = step
            return False
        self.step = step
        return True

    def __enter__(self) -> Stepper:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> bool:
        if isinstance(exc, Exception) and self.handed(self.step):
            self.error = exc  # handed to the plan, which re-raises what it keeps
            return True
        return False


def _sends(step: Any) -> bool:
    return not isinstance(step, Sleep)


def _pages(call: NamedCall[Any]) -> Plan:
    """A list call as a plan: one ``Send`` a page, the pages' items gathered by
    :func:`~mcp_sansio.app.calls.walk_pages`."""
    assert call.pages is not None
    walk = walk_pages(call.pages)
    params = next(walk)
    while True:
        result = yield Send(call.method, params)
        try:
            params = walk.send(result)
        except StopIteration as done:
            return done.value


# -- async (asyncio, trio) -------------------------------------------------------------------


async def _run_async(client: Any, plan: Plan, options: Any = None) -> Any:
    """Run a plan: each ``Send`` is a request (with the caller's ``options``, if any), each
    ``Sleep`` the client's sleep; a request's exception is thrown into the plan."""
    stepper = Stepper(plan, _sends)
    while stepper.advance():
        with stepper:
            stepper.value = await _take_async(client, stepper.step, options)
    return stepper.result


async def _take_async(client: Any, step: Send | Sleep, options: Any) -> Any:
    if isinstance(step, Sleep):
        return await client._sleep(step.seconds)
    return await client.request(step.method, step.params, **(options or {}))


@overload
def asynchronous(define: Callable[P, NamedCall[R]]) -> AsyncMethod[P, R]: ...
@overload
def asynchronous(define: Callable[Concatenate[TaskClient, P], TaskPlan[R]]
                 ) -> AsyncMethod[P, R]: ...
def asynchronous(define: Callable[..., Any]) -> Any:
    """The ``async`` method of a definition (see the module docstring)."""
    if inspect.isgeneratorfunction(define):
        async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            return await _run_async(self, define(self, *args, **kwargs))
        return _Install(run, define, "async")

    async def send(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = define(*args, **kwargs)
        if call.pages is None:
            return await self.request(call.method, call.params, **call.options)
        return await _run_async(self, _pages(call), call.options)
    return _Install(send, define, "async")


# -- blocking (threads) ----------------------------------------------------------------------


def _run_blocking(client: Any, plan: Plan, options: Any = None) -> Any:
    """:func:`_run_async`, blocking."""
    stepper = Stepper(plan, _sends)
    while stepper.advance():
        with stepper:
            stepper.value = _take_blocking(client, stepper.step, options)
    return stepper.result


def _take_blocking(client: Any, step: Send | Sleep, options: Any) -> Any:
    if isinstance(step, Sleep):
        return client._sleep(step.seconds)
    return client.request(step.method, step.params, **(options or {}))


@overload
def blocking(define: Callable[P, NamedCall[R]]) -> BlockingMethod[P, R]: ...
@overload
def blocking(define: Callable[Concatenate[TaskClient, P], TaskPlan[R]]
             ) -> BlockingMethod[P, R]: ...
def blocking(define: Callable[..., Any]) -> Any:
    """The blocking method of a definition (see the module docstring)."""
    if inspect.isgeneratorfunction(define):
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            return _run_blocking(self, define(self, *args, **kwargs))
        return _Install(run, define, "blocking")

    def send(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = define(*args, **kwargs)
        if call.pages is None:
            return self.request(call.method, call.params, **call.options)
        return _run_blocking(self, _pages(call), call.options)
    return _Install(send, define, "blocking")

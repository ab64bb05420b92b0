"""A hypothesis state machine over the client flow's life: time passes, requests are made,
the server refuses tokens (401), asks for more scope (403), forgets refresh tokens; the
application reports successes. Invariants: every run ends in fresh tokens from this issuer
(or the challenge bound, exactly when it is due), a step-up never loses a scope asked for
before, and a fresh token is reused without a single request."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from mcp_sansio.auth import Authorized, LimitExceeded, OAuthClientFlow, rules
from tests.auth_world import World, drive, new_flow


class FlowLife(RuleBasedStateMachine):
    world: World
    flow: OAuthClientFlow

    @initialize()
    def begin(self) -> None:
        self.world = World()
        self.flow = new_flow(self.world)
        self.now = 1000.0
        self.challenges = 0
        self.asked: set[str] = set()
        self.last: Authorized | None = None

    def _run_challenge(self, status: int, scope: str | None) -> None:
        self.challenges += 1
        error = "insufficient_scope" if status == 403 else None
        challenge = self.world.challenge(scope=scope, status=status, error=error)
        if self.challenges > rules.MAX_CONSECUTIVE_CHALLENGES:
            before = len(self.world.requests)
            try:
                self.flow.start(self.now, challenge)
            except LimitExceeded:
                assert len(self.world.requests) == before  # refused without asking anyone
                return
            raise AssertionError("the challenge bound was not enforced")
        authorizations = len(self.world.authorization_requests)
        self.last = drive(self.flow, self.world, self.flow.start(self.now, challenge),
                          now=self.now)
        assert self.last.tokens.usable(self.now, 0)
        if len(self.world.authorization_requests) > authorizations:
            asked = set(self.world.authorization_requests[-1].get("scope", "").split())
            if status == 403:
                # Step-up: the union of what was asked before and what is challenged.
                assert self.asked | {scope} <= asked
            self.asked = asked

    @rule(seconds=st.floats(min_value=0, max_value=5000))
    def time_passes(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def before_a_request(self) -> None:
        fresh = self.flow.current_tokens(self.now)
        before = len(self.world.requests)
        self.last = drive(self.flow, self.world, self.flow.start(self.now), now=self.now)
        assert self.last.tokens.usable(self.now, 0)
        if fresh is not None:
            assert self.last.tokens == fresh and len(self.world.requests) == before

    @rule()
    def refused(self) -> None:
        self._run_challenge(401, None)

    @rule(scope=st.sampled_from(["a", "b", "c"]))
    def more_scope_needed(self, scope: str) -> None:
        self._run_challenge(403, scope)

    @rule()
    def request_succeeded(self) -> None:
        self.flow.request_succeeded()
        self.challenges = 0

    @rule()
    def server_forgets_refresh_tokens(self) -> None:
        self.world.refresh_tokens.clear()

    @invariant()
    def tokens_are_fresh_and_ours(self) -> None:
        if self.last is None:
            return
        tokens = self.last.tokens
        assert tokens.issuer == self.world.issuer
        assert tokens.resource == self.flow.resource
        assert tokens.access_token in self.world.granted


FlowLife.TestCase.settings = settings(max_examples=60, stateful_step_count=25,
                                      deadline=None)
test_flow_life = FlowLife.TestCase

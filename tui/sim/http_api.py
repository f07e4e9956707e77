"""The simulator's HTTP surface: vLLM's OpenAI-compatible API on aiohttp.

Streaming responses copy vLLM's SSE framing byte for byte (one token per
`data:` event, then a `"choices":[]` event with usage when asked for, then
`data: [DONE]`). Extra routes under /_sim/ expose the ground truth and let a
test set runtime faults.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from tui.sim import tokens
from tui.sim.capacity import SloTarget, true_capacity
from tui.sim.engine import SimEngine, SimRequest
from tui.sim.faults import RuntimeFaults, apply_fault
from tui.sim.lora import LoraCollector, adapter_names
from tui.sim.metrics import build_registry, exposition
from tui.sim.openai_shapes import (
    error_response,
    full_body,
    json_response,
    model_list,
    stream_frames,
    usage,
)
from tui.sim.pd import NixlCollector
from tui.sim.prefix_cache import BLOCK_TOKENS, PrefixCache
from tui.sim.sleep_state import SleepStateCollector
from tui.sim.spec import VLLM_VERSION, ServerSettings

SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8"}
DEFAULT_COMPLETION_MAX_TOKENS = 16
DEFAULT_CHAT_MAX_TOKENS = 256  # vLLM would use the rest of the context; far too long here


def _optional_float(text: str) -> float | None:
    return None if text.lower() in ("", "none", "off") else float(text)


class SimApi:
    """Request handlers bound to one engine."""

    def __init__(
        self,
        settings: ServerSettings,
        engine: SimEngine,
        faults: RuntimeFaults,
        dp_engines: list[SimEngine] | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        # Every data-parallel rank, engine 0 first; a request's owner answers for it.
        self.engines = [engine, *(dp_engines or [])]
        self._owner: dict[SimRequest, SimEngine] = {}
        self.sleep_level = 0  # 0 awake; 1 weights offloaded; 2 weights discarded
        self.faults = faults
        self.registry = build_registry(self.engines, settings.served_model_name)
        if settings.lora_modules:
            self.registry.register(LoraCollector(self.engines, settings.max_loras))
        if settings.kv_role is not None:
            self.registry.register(
                NixlCollector(
                    self.engines,
                    settings.served_model_name,
                    settings.kv_role,
                    settings.kv_transfer_fault,
                )
            )
        self.registry.register(  # vLLM registers it with or without sleep mode
            SleepStateCollector(
                lambda: self.sleep_level, len(self.engines), settings.served_model_name
            )
        )
        self.rng = random.Random(settings.seed)
        self.created = int(time.time())
        self.fingerprint = f"vllm-{VLLM_VERSION}-sim"
        blocks = settings.kv_cache_tokens // BLOCK_TOKENS if settings.prefix_caching else 0
        self.prefix_cache = PrefixCache(blocks)

    def app(self) -> web.Application:
        app = web.Application()
        app.add_routes(
            [
                web.get("/health", self.health),
                web.get("/ping", self.health),
                web.post("/ping", self.health),
                web.get("/version", self.version),
                web.get("/load", self.load),
                web.get("/v1/models", self.models),
                web.get("/metrics", self.metrics),
                web.post("/tokenize", self.tokenize),
                web.post("/detokenize", self.detokenize),
                web.post("/v1/completions", self.completions),
                web.post("/v1/chat/completions", self.chat_completions),
                web.post("/reset_prefix_cache", self.reset_prefix_cache),
                web.get("/_sim/truth", self.truth),
                web.get("/_sim/truth/capacity", self.capacity_truth),
                web.get("/_sim/clock", self.clock),
                web.post("/_sim/fault", self.fault),
            ]
        )
        if self.settings.sleep_mode:  # vllm/entrypoints/serve/dev/sleep/api_router.py's routes
            app.add_routes(
                [
                    web.get("/is_sleeping", self.is_sleeping),
                    web.post("/sleep", self.sleep),
                    web.post("/wake_up", self.wake_up),
                ]
            )
        return app

    # -- sleep mode -----------------------------------------------------------
    async def is_sleeping(self, _request: web.Request) -> web.Response:
        return json_response({"is_sleeping": self.sleep_level > 0})

    async def sleep(self, request: web.Request) -> web.Response:
        level = request.query.get("level", "1")
        if level not in ("0", "1", "2"):
            return error_response(422, "level must be 0, 1 or 2", "RequestValidationError", "level")
        self.sleep_level = max(int(level), 1)
        return json_response({"status": "sleeping", "level": int(level)})

    async def wake_up(self, _request: web.Request) -> web.Response:
        self.sleep_level = 0
        return json_response({"status": "awake", "tags": None})

    # -- small endpoints ------------------------------------------------------
    async def health(self, _request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def version(self, _request: web.Request) -> web.Response:
        return json_response({"version": VLLM_VERSION})

    async def load(self, _request: web.Request) -> web.Response:
        load = sum(len(engine.running) + len(engine.waiting) for engine in self.engines)
        return json_response({"server_load": load})

    async def models(self, _request: web.Request) -> web.Response:
        return json_response(model_list(self.settings, self.created))

    async def metrics(self, _request: web.Request) -> web.Response:
        return web.Response(
            body=exposition(self.registry), headers={"content-type": CONTENT_TYPE_LATEST}
        )

    async def tokenize(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        if isinstance(body, web.Response):
            return body
        if isinstance(body.get("messages"), list):
            # As chat completions charge it: the template's tokens around each message too.
            ids = tokens.chat_token_ids([m for m in body["messages"] if isinstance(m, dict)])
        else:
            ids = tokens.tokenize(str(body.get("prompt", "")))
        return json_response(
            {
                "count": len(ids),
                "max_model_len": self.settings.max_model_len,
                "tokens": ids,
                "token_strs": None,
            }
        )

    async def detokenize(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        if isinstance(body, web.Response):
            return body
        ids = body.get("tokens", [])
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            return error_response(
                400, "tokens must be a list of integers", "BadRequestError", "tokens"
            )
        return json_response({"prompt": tokens.detokenize(ids)})

    async def truth(self, request: web.Request) -> web.Response:
        since = int(request.query.get("since", "0"))
        records = [r for r in self.engine.truth if int(r["number"]) > since]  # type: ignore[call-overload]
        return json_response({"requests": records})

    async def reset_prefix_cache(self, _request: web.Request) -> web.Response:
        """vLLM's POST /reset_prefix_cache (a dev endpoint there): drop every cached block."""
        self.prefix_cache.reset()
        return web.Response(status=200)

    async def clock(self, _request: web.Request) -> web.Response:
        """Simulated seconds per real second: clients scale what they measure by it."""
        return json_response({"time_scale": self.settings.time_scale})

    async def capacity_truth(self, request: web.Request) -> web.Response:
        """True capacity at an SLO for a closed-loop workload (tui.sim.capacity)."""
        query = request.query
        try:
            slo = SloTarget(
                **{
                    name: _optional_float(query.get(name, str(default)))
                    for name, default in asdict(SloTarget()).items()
                }
            )
            prompt_tokens = int(query.get("input_tokens", "1024"))
            output_tokens = int(query.get("output_tokens", "256"))
        except ValueError as error:
            return error_response(400, f"bad capacity query: {error}", "BadRequestError")
        if not 0 < prompt_tokens <= 65_536 or not 0 < output_tokens <= 65_536:
            return error_response(
                400, "input_tokens and output_tokens must be 1..65536", "BadRequestError"
            )
        body = await asyncio.to_thread(
            true_capacity, self.settings, slo, prompt_tokens, output_tokens
        )
        return json_response(body)

    async def fault(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        if isinstance(body, web.Response):
            return body
        problem = apply_fault(self.faults, body, self.engine)
        if problem is not None:
            return error_response(400, problem, "BadRequestError", "hang")
        return json_response(asdict(self.faults))

    # -- generation -----------------------------------------------------------
    async def _json(self, request: web.Request) -> dict[str, Any] | web.Response:
        try:
            body = await request.json()
        except ValueError:
            return error_response(400, "request body is not valid JSON", "BadRequestError")
        if not isinstance(body, dict):
            return error_response(400, "request body must be a JSON object", "BadRequestError")
        return body

    def _check(self, body: dict[str, Any]) -> web.Response | None:
        model = body.get("model")
        if model not in (None, self.settings.served_model_name, *adapter_names(self.settings)):
            return error_response(
                404, f"The model `{model}` does not exist.", "NotFoundError", "model"
            )
        if self.faults.http_5xx_rate and self.rng.random() < self.faults.http_5xx_rate:
            return error_response(500, "simulated internal server error", "InternalServerError")
        return None

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await self._json(request)
        if isinstance(body, web.Response):
            return body
        refusal = self._check(body)
        if refusal is not None:
            return refusal
        prompt = body.get("prompt", "")
        if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
            ids = list(prompt)
            return await self._generate(request, body, len(ids), chat=False, ids=ids)
        text = "".join(str(p) for p in prompt) if isinstance(prompt, list) else str(prompt)
        ids = tokens.tokenize(text)
        return await self._generate(
            request, body, max(len(ids), 1), chat=False, ids=ids,
            with_answer=lambda answer: tokens.tokenize(text + answer),
        )  # fmt: skip

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await self._json(request)
        if isinstance(body, web.Response):
            return body
        refusal = self._check(body)
        if refusal is not None:
            return refusal
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return error_response(
                400, "messages must be a non-empty list", "BadRequestError", "messages"
            )
        turns = [m for m in messages if isinstance(m, dict)]

        def with_answer(answer: str) -> list[int]:
            return tokens.chat_token_ids([*turns, {"role": "assistant", "content": answer}])

        prompt_tokens = tokens.chat_prompt_tokens(messages)
        ids = tokens.chat_token_ids(turns)
        return await self._generate(
            request, body, prompt_tokens, chat=True, ids=ids, with_answer=with_answer
        )

    async def _generate(
        self,
        request: web.Request,
        body: dict[str, Any],
        prompt_tokens: int,
        chat: bool,
        ids: list[int] | None = None,
        with_answer: Callable[[str], list[int]] | None = None,
    ) -> web.StreamResponse:
        default = DEFAULT_CHAT_MAX_TOKENS if chat else DEFAULT_COMPLETION_MAX_TOKENS
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or default
        if not isinstance(max_tokens, int) or max_tokens < 1:
            return error_response(
                400, "max_tokens must be at least 1", "BadRequestError", "max_tokens"
            )
        if prompt_tokens + max_tokens > self.settings.max_model_len:
            return error_response(
                400,
                f"This model's maximum context length is {self.settings.max_model_len} tokens. "
                f"However, you requested {prompt_tokens + max_tokens} tokens.",
                "BadRequestError",
            )
        cached = 0
        if self.settings.prefix_caching and ids:
            cached = min(self.prefix_cache.lookup_and_insert(ids), prompt_tokens - 1)
        if self.sleep_level:
            return error_response(503, "the engine is sleeping", "ServiceUnavailableError")
        engine = self._route()
        sim_request = engine.submit(prompt_tokens, max_tokens, cached)
        self._owner[sim_request] = engine
        if body.get("model") in adapter_names(self.settings):
            sim_request.lora = str(body["model"])
        try:
            if body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                return await self._stream(request, sim_request, chat, include_usage)
            while not sim_request.finished:
                sim_request.event.clear()
                await sim_request.event.wait()
            return json_response(full_body(sim_request, chat, self.settings.served_model_name))
        finally:
            self._owner.pop(sim_request, engine).abort(sim_request)  # no-op once finished
            if self.settings.prefix_caching and with_answer and sim_request.emitted:
                # Like vLLM, the blocks of the answer are cached too: a multi-turn
                # conversation's next turn hits its whole history.
                answer = "".join(sim_request.pieces[: sim_request.emitted])
                self.prefix_cache.lookup_and_insert(with_answer(answer))

    def _route(self) -> SimEngine:
        """The rank with the shortest queue, as vLLM's DP load balancer picks; never the
        starved one (the imbalance the simulator shows on demand)."""
        starved = self.settings.starved_engine
        candidates = [e for rank, e in enumerate(self.engines) if rank != starved] or self.engines
        return min(candidates, key=lambda e: len(e.running) + len(e.waiting))

    async def _stream(
        self, request: web.Request, sim_request: SimRequest, chat: bool, include_usage: bool
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=200, headers=SSE_HEADERS)
        await response.prepare(request)
        head, role, open_piece, plain_tail, last_tail = stream_frames(
            sim_request.request_id, chat, self.settings.served_model_name
        )
        cut_after = self.faults.cut_stream_after_tokens
        sent = 0
        dumps = json.dumps
        while sent < sim_request.max_tokens:
            if sent == sim_request.emitted:
                if sim_request.finished:
                    break
                sim_request.event.clear()
                await sim_request.event.wait()
                continue
            upto = sim_request.emitted
            if cut_after is not None:
                upto = min(upto, cut_after)
            parts = [role] if sent == 0 and role else []
            for index in range(sent, upto):
                last = index == sim_request.max_tokens - 1
                parts.append(
                    open_piece
                    + dumps(sim_request.pieces[index])
                    + (last_tail if last else plain_tail)
                )
            if upto > sent:
                self._owner.get(sim_request, self.engine).mark_sent(sim_request)
            sent = upto
            await response.write("".join(parts).encode())
            if cut_after is not None and sent >= cut_after:
                self._owner.get(sim_request, self.engine).abort(sim_request)
                if request.transport is not None:
                    request.transport.abort()  # the client sees a broken chunked body
                return response
        if include_usage:
            usage_json = json.dumps(usage(sim_request), separators=(",", ":"))
            await response.write(
                (
                    head + f'"choices":[],"usage":{usage_json},'
                    f'"system_fingerprint":"{self.fingerprint}"}}\n\n'
                ).encode()
            )
        await response.write(b"data: [DONE]\n\n")
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

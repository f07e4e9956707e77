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
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from tui.sim import tokens
from tui.sim.capacity import SloTarget, true_capacity
from tui.sim.engine import SimEngine, SimRequest
from tui.sim.hang import HANGS, SLOW_FACTOR
from tui.sim.lora import LoraCollector, adapter_entries, adapter_names
from tui.sim.metrics import build_registry, exposition
from tui.sim.pd import NixlCollector
from tui.sim.prefix_cache import BLOCK_TOKENS, PrefixCache
from tui.sim.sleep_state import SleepStateCollector
from tui.sim.spec import VLLM_VERSION, ServerSettings

SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8"}
DEFAULT_COMPLETION_MAX_TOKENS = 16
# vLLM writes compact JSON (no spaces); so do we.
_dumps = partial(json.dumps, separators=(",", ":"))
DEFAULT_CHAT_MAX_TOKENS = 256  # vLLM would use the rest of the context; far too long here


@dataclass(slots=True)
class RuntimeFaults:
    """Faults a test can switch on while the server runs (POST /_sim/fault)."""

    http_5xx_rate: float = 0.0
    cut_stream_after_tokens: int | None = None
    stall_s: float = 0.0
    hang: str = ""  # tui.sim.hang.HANGS
    stop_rank: int | None = None


def _error(status: int, message: str, kind: str, param: str | None = None) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return _json_response(body, status=status)


def _optional_float(text: str) -> float | None:
    return None if text.lower() in ("", "none", "off") else float(text)


def _json_response(body: object, status: int = 200) -> web.Response:
    return web.json_response(body, status=status, dumps=_dumps)


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
        return _json_response({"is_sleeping": self.sleep_level > 0})

    async def sleep(self, request: web.Request) -> web.Response:
        level = request.query.get("level", "1")
        if level not in ("0", "1", "2"):
            return _error(422, "level must be 0, 1 or 2", "RequestValidationError", "level")
        self.sleep_level = max(int(level), 1)
        return _json_response({"status": "sleeping", "level": int(level)})

    async def wake_up(self, _request: web.Request) -> web.Response:
        self.sleep_level = 0
        return _json_response({"status": "awake", "tags": None})

    # -- small endpoints ------------------------------------------------------
    async def health(self, _request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def version(self, _request: web.Request) -> web.Response:
        return _json_response({"version": VLLM_VERSION})

    async def load(self, _request: web.Request) -> web.Response:
        load = sum(len(engine.running) + len(engine.waiting) for engine in self.engines)
        return _json_response({"server_load": load})

    async def models(self, _request: web.Request) -> web.Response:
        name = self.settings.served_model_name
        permission = {
            "id": f"modelperm-{uuid.UUID(int=self.settings.seed).hex[:16]}",
            "object": "model_permission",
            "created": self.created,
            "allow_create_engine": False,
            "allow_sampling": True,
            "allow_logprobs": True,
            "allow_search_indices": False,
            "allow_view": True,
            "allow_fine_tuning": False,
            "organization": "*",
            "group": None,
            "is_blocking": False,
        }
        model = {
            "id": name,
            "object": "model",
            "created": self.created,
            "owned_by": "vllm",
            "root": self.settings.model,
            "parent": None,
            "max_model_len": self.settings.max_model_len,
            "permission": [permission],
        }
        adapters = adapter_entries(self.settings, self.created)
        return _json_response({"object": "list", "data": [model, *adapters]})

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
        return _json_response(
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
            return _error(400, "tokens must be a list of integers", "BadRequestError", "tokens")
        return _json_response({"prompt": tokens.detokenize(ids)})

    async def truth(self, request: web.Request) -> web.Response:
        since = int(request.query.get("since", "0"))
        records = [r for r in self.engine.truth if int(r["number"]) > since]  # type: ignore[call-overload]
        return _json_response({"requests": records})

    async def reset_prefix_cache(self, _request: web.Request) -> web.Response:
        """vLLM's POST /reset_prefix_cache (a dev endpoint there): drop every cached block."""
        self.prefix_cache.reset()
        return web.Response(status=200)

    async def clock(self, _request: web.Request) -> web.Response:
        """Simulated seconds per real second: clients scale what they measure by it."""
        return _json_response({"time_scale": self.settings.time_scale})

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
            return _error(400, f"bad capacity query: {error}", "BadRequestError")
        if not 0 < prompt_tokens <= 65_536 or not 0 < output_tokens <= 65_536:
            return _error(400, "input_tokens and output_tokens must be 1..65536", "BadRequestError")
        body = await asyncio.to_thread(
            true_capacity, self.settings, slo, prompt_tokens, output_tokens
        )
        return _json_response(body)

    async def fault(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        if isinstance(body, web.Response):
            return body
        if "http_5xx_rate" in body:
            self.faults.http_5xx_rate = float(body["http_5xx_rate"])
        if "cut_stream_after_tokens" in body:
            value = body["cut_stream_after_tokens"]
            self.faults.cut_stream_after_tokens = None if value is None else int(value)
        if "hang" in body:
            if body["hang"] not in HANGS:
                return _error(400, f"hang must be one of {HANGS}", "BadRequestError", "hang")
            self.faults.hang = str(body["hang"])
            self.engine.slow_factor = SLOW_FACTOR if self.faults.hang == "slow" else 1.0
        if "stop_rank" in body:
            value = body["stop_rank"]
            self.faults.stop_rank = None if value is None else int(value)
        if "stall_s" in body:
            self.faults.stall_s = float(body["stall_s"])
            self.engine.stall(self.faults.stall_s)
        return _json_response(asdict(self.faults))

    # -- generation -----------------------------------------------------------
    async def _json(self, request: web.Request) -> dict[str, Any] | web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "request body is not valid JSON", "BadRequestError")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object", "BadRequestError")
        return body

    def _check(self, body: dict[str, Any]) -> web.Response | None:
        model = body.get("model")
        if model not in (None, self.settings.served_model_name, *adapter_names(self.settings)):
            return _error(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
        if self.faults.http_5xx_rate and self.rng.random() < self.faults.http_5xx_rate:
            return _error(500, "simulated internal server error", "InternalServerError")
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
            return _error(400, "messages must be a non-empty list", "BadRequestError", "messages")
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
            return _error(400, "max_tokens must be at least 1", "BadRequestError", "max_tokens")
        if prompt_tokens + max_tokens > self.settings.max_model_len:
            return _error(
                400,
                f"This model's maximum context length is {self.settings.max_model_len} tokens. "
                f"However, you requested {prompt_tokens + max_tokens} tokens.",
                "BadRequestError",
            )
        cached = 0
        if self.settings.prefix_caching and ids:
            cached = min(self.prefix_cache.lookup_and_insert(ids), prompt_tokens - 1)
        if self.sleep_level:
            return _error(503, "the engine is sleeping", "ServiceUnavailableError")
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
            return _json_response(self._full_body(sim_request, chat))
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

    def _full_body(self, sim_request: SimRequest, chat: bool) -> dict[str, Any]:
        text = "".join(sim_request.pieces[: sim_request.emitted])
        usage = self._usage(sim_request)
        base = {
            "id": ("chatcmpl-" if chat else "cmpl-") + sim_request.request_id,
            "created": int(time.time()),
            "model": self.settings.served_model_name,
        }
        if chat:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": text,
                "reasoning_content": None,
                "tool_calls": [],
            }
            choice = {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "length",
                "stop_reason": None,
            }
            return {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
        choice = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": "length",
            "stop_reason": None,
            "prompt_logprobs": None,
        }
        return {**base, "object": "text_completion", "choices": [choice], "usage": usage}

    @staticmethod
    def _usage(sim_request: SimRequest) -> dict[str, int]:
        return {
            "prompt_tokens": sim_request.prompt_tokens,
            "total_tokens": sim_request.prompt_tokens + sim_request.emitted,
            "completion_tokens": sim_request.emitted,
        }

    async def _stream(
        self, request: web.Request, sim_request: SimRequest, chat: bool, include_usage: bool
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=200, headers=SSE_HEADERS)
        await response.prepare(request)
        model = json.dumps(self.settings.served_model_name)
        created = int(time.time())
        if chat:
            head = (
                f'data: {{"id":"chatcmpl-{sim_request.request_id}",'
                f'"object":"chat.completion.chunk","created":{created},"model":{model},'
            )
            role = head + (
                '"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
                '"logprobs":null,"finish_reason":null}]}\n\n'
            )
            open_piece = head + '"choices":[{"index":0,"delta":{"content":'
            tail = '},"logprobs":null,"finish_reason":%s,"token_ids":null}]}\n\n'
        else:
            head = (
                f'data: {{"id":"cmpl-{sim_request.request_id}","object":"text_completion",'
                f'"created":{created},"model":{model},'
            )
            role = ""
            open_piece = head + '"choices":[{"index":0,"text":'
            tail = (
                ',"logprobs":null,"finish_reason":%s,"stop_reason":null,'
                '"prompt_token_ids":null,"token_ids":null}]}\n\n'
            )
        plain_tail, last_tail = tail % "null", tail % '"length"'
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
            usage = json.dumps(self._usage(sim_request), separators=(",", ":"))
            await response.write(
                (
                    head + f'"choices":[],"usage":{usage},'
                    f'"system_fingerprint":"{self.fingerprint}"}}\n\n'
                ).encode()
            )
        await response.write(b"data: [DONE]\n\n")
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

"""vLLM's OpenAI-compatible bodies as the simulator writes them: an error, the model
list, a whole completion with its usage, and a stream's frames.

Field for field what vLLM's own server sends (compact JSON, the same keys and nulls), so
a client sees no difference; the handlers in tui/sim/http_api.py fill them in.
"""

from __future__ import annotations

import json
import time
import uuid
from functools import partial
from typing import Any

from aiohttp import web

from tui.sim.engine import SimRequest
from tui.sim.lora import adapter_entries
from tui.sim.spec import ServerSettings

# vLLM writes compact JSON (no spaces); so do we.
_dumps = partial(json.dumps, separators=(",", ":"))


def json_response(body: object, status: int = 200) -> web.Response:
    return web.json_response(body, status=status, dumps=_dumps)


def error_response(status: int, message: str, kind: str, param: str | None = None) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return json_response(body, status=status)


def model_list(settings: ServerSettings, created: int) -> dict[str, Any]:
    """GET /v1/models: the served model, then each LoRA adapter."""
    permission = {
        "id": f"modelperm-{uuid.UUID(int=settings.seed).hex[:16]}",
        "object": "model_permission",
        "created": created,
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
        "id": settings.served_model_name,
        "object": "model",
        "created": created,
        "owned_by": "vllm",
        "root": settings.model,
        "parent": None,
        "max_model_len": settings.max_model_len,
        "permission": [permission],
    }
    return {"object": "list", "data": [model, *adapter_entries(settings, created)]}


def usage(sim_request: SimRequest) -> dict[str, int]:
    return {
        "prompt_tokens": sim_request.prompt_tokens,
        "total_tokens": sim_request.prompt_tokens + sim_request.emitted,
        "completion_tokens": sim_request.emitted,
    }


def full_body(sim_request: SimRequest, chat: bool, model_name: str) -> dict[str, Any]:
    """A non-streamed completion or chat completion of what the request emitted."""
    text = "".join(sim_request.pieces[: sim_request.emitted])
    base = {
        "id": ("chatcmpl-" if chat else "cmpl-") + sim_request.request_id,
        "created": int(time.time()),
        "model": model_name,
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
        return {
            **base, "object": "chat.completion", "choices": [choice], "usage": usage(sim_request)
        }  # fmt: skip
    choice = {
        "index": 0,
        "text": text,
        "logprobs": None,
        "finish_reason": "length",
        "stop_reason": None,
        "prompt_logprobs": None,
    }
    return {**base, "object": "text_completion", "choices": [choice], "usage": usage(sim_request)}


def stream_frames(request_id: str, chat: bool, model_name: str) -> tuple[str, str, str, str, str]:
    """A stream's SSE frames around each piece: (head, the role frame ("" for a completion),
    a piece's opening, a piece's closing, the last piece's closing)."""
    model = json.dumps(model_name)
    created = int(time.time())
    if chat:
        head = (
            f'data: {{"id":"chatcmpl-{request_id}",'
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
            f'data: {{"id":"cmpl-{request_id}","object":"text_completion",'
            f'"created":{created},"model":{model},'
        )
        role = ""
        open_piece = head + '"choices":[{"index":0,"text":'
        tail = (
            ',"logprobs":null,"finish_reason":%s,"stop_reason":null,'
            '"prompt_token_ids":null,"token_ids":null}]}\n\n'
        )
    return head, role, open_piece, tail % "null", tail % '"length"'

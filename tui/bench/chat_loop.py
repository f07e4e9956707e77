"""The `chat` workload: multi-turn conversations that send back the assistant's real answers.

Each conversation has `chat_turns` user questions (byte-identical for a seed);
turn t sends the whole history: every earlier question and the answer the
server actually streamed for it, then the new question. `concurrency`
conversations run at once, each one turn after another. The intended
prefix-cache hit rate counts, for every turn after the first, the previous
turn's prompt and answer tokens (the server's usage) as reusable.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, replace

import httpx

from tui.bench.client import stream_request
from tui.bench.loadgen import LevelRun
from tui.bench.model import RequestOutcome
from tui.bench.workload import BenchSpec, random_words, request_payload


@dataclass(slots=True)
class PrefixIntent:
    """Prompt tokens sent and those meant to be served from the prefix cache."""

    reusable_tokens: int = 0
    prompt_tokens: int = 0

    @property
    def rate(self) -> float | None:
        return self.reusable_tokens / self.prompt_tokens if self.prompt_tokens else None


def chat_questions(words: int, conversations: int, turns: int, seed: int) -> list[list[str]]:
    """`conversations` lists of `turns` questions of `words` words each, reproducibly."""
    rng = random.Random(seed)
    return [
        [f"Question {turn + 1}:" + random_words(words, rng) for turn in range(max(turns, 1))]
        for _ in range(max(conversations, 1))
    ]


async def run_conversations(
    client: httpx.AsyncClient,
    url: str,
    spec: BenchSpec,
    conversations: list[list[str]],
    *,
    concurrency: int,
    cancel: asyncio.Event,
    run: LevelRun,
    intent: PrefixIntent,
) -> LevelRun:
    """Every conversation to its end (or its first failed turn); cancellable."""
    chat_spec = replace(spec, endpoint="chat")
    slots = asyncio.Semaphore(max(1, concurrency))
    counter = iter(range(1 << 30))

    async def converse(questions: list[str]) -> None:
        async with slots:
            messages: list[dict[str, str]] = []
            previous = 0  # prompt + answer tokens of the last turn
            for question in questions:
                messages.append({"role": "user", "content": question})
                payload = request_payload(chat_spec, question)
                payload["messages"] = list(messages)
                outcome = RequestOutcome(prompt_tokens=spec.input_tokens)
                key = next(counter)
                run.live[key] = outcome
                parts: list[str] = []
                try:
                    await stream_request(
                        client, url, payload, outcome,
                        read_timeout_s=spec.read_timeout_s, text_parts=parts,
                    )  # fmt: skip
                finally:
                    run.live.pop(key, None)
                run.outcomes.append(outcome)
                if not outcome.success:
                    return
                intent.prompt_tokens += outcome.prompt_tokens
                intent.reusable_tokens += min(previous, outcome.prompt_tokens)
                previous = outcome.prompt_tokens + outcome.output_tokens
                messages.append({"role": "assistant", "content": "".join(parts)})

    tasks = [asyncio.create_task(converse(questions)) for questions in conversations]
    everyone = asyncio.gather(*tasks)
    stopper = asyncio.create_task(cancel.wait())
    await asyncio.wait({everyone, stopper}, return_when=asyncio.FIRST_COMPLETED)  # type: ignore[type-var]
    stopper.cancel()
    if not everyone.done():
        run.partial = True
        run.cancelled = sum(not task.done() for task in tasks)
        for task in tasks:
            task.cancel()
    await asyncio.gather(everyone, stopper, return_exceptions=True)
    return run

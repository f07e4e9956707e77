"""Build a tiny random Llama for the real-vLLM tests, offline (no hub, no network).

Runs with the cached vLLM venv's interpreter (torch, transformers, tokenizers),
never imported by the test process: ``python vllm_tiny_model.py OUT_DIR``.

Shape choices: vLLM's CPU attention needs head_dim >= 32; the vocabulary is
printable ASCII only so every token decodes to whole characters (incomplete
UTF-8 makes vLLM hold text back and send empty stream chunks); 4 safetensors
shards so loading prints shard progress as a real checkpoint does.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

VOCAB_SIZE = 273
SHARDS = 4
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>"]
ASCII_CHARS = [chr(c) for c in range(0x20, 0x7F)] + ["\t", "\n"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"
)
WORDS = (  # noqa: SIM905 (a sentence reads better than a long list)
    "the model serves tokens fast on gpu memory load weights cache prefill "
    "decode request stream latency throughput batch kv block worker engine "
    "core metric health ready shard tensor parallel prompt output vllm "
    "sglang llama"
).split()


def build_corpus(lines: int = 4000) -> list[str]:
    """Deterministic ASCII text with code-ish punctuation, enough for ~170 merges."""
    rng = random.Random(0)
    out = []
    for _ in range(lines):
        words = [rng.choice(WORDS) for _ in range(rng.randint(4, 14))]
        punct = rng.choice([".", ",", ":", ";", "!", "?", " {}", " []", " ()", ' ""', "\t#"])
        number = str(rng.randint(0, 99999))
        out.append(" ".join(words) + punct + " " + number + rng.choice(["", " =", " ->", " +"]))
    return out


def build_tokenizer() -> Tokenizer:
    """A byte-level BPE whose alphabet is restricted to printable ASCII, tab and newline."""
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    ascii_alphabet = sorted(
        {piece for ch in ASCII_CHARS for piece, _ in tokenizer.pre_tokenizer.pre_tokenize_str(ch)}
    )
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=ascii_alphabet,
        limit_alphabet=len(ascii_alphabet),
        show_progress=False,
    )
    tokenizer.train_from_iterator(build_corpus(), trainer=trainer)
    return tokenizer


def check_ascii(tokenizer: Tokenizer) -> None:
    """Every token must decode to printable ASCII (or be a special token)."""
    for token, token_id in tokenizer.get_vocab().items():
        if token in SPECIAL_TOKENS:
            continue
        text = tokenizer.decode([token_id])
        if not text or any(ch not in ASCII_CHARS for ch in text):
            raise SystemExit(f"token {token!r} decodes to non-ASCII {text!r}")


def save_sharded(model: LlamaForCausalLM, out: Path) -> None:
    """Save as exactly SHARDS safetensors files by searching for a fitting shard size."""
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    for step in range(0, 200):
        size = total // SHARDS + step * 4096
        trial = out.with_name(out.name + ".shard-trial")
        shutil.rmtree(trial, ignore_errors=True)
        model.save_pretrained(trial, max_shard_size=size, safe_serialization=True)
        if len(list(trial.glob("*.safetensors"))) == SHARDS:
            for item in trial.iterdir():
                shutil.move(str(item), out / item.name)
            trial.rmdir()
            return
    raise SystemExit(f"no shard size gives {SHARDS} shards")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    raw = build_tokenizer()
    check_ascii(raw)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.model_max_length = 512
    tokenizer.save_pretrained(out)

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        intermediate_size=256,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id
    )
    save_sharded(model, out)
    summary = {"vocab": len(tokenizer), "shards": len(list(out.glob("*.safetensors")))}
    print(json.dumps(summary))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

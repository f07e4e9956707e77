"""`servedeck sim`: run the simulated GPU box in the foreground.

Starts the simulated `vllm-kimi-k25-int4.service`, prints its base URL and
state dir, follows its log, and on Ctrl-C (or SIGTERM) stops everything it
started, leftover workers included.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import Any

from tui.core.errors import UsageError
from tui.sim.box import SimBox, SimServerOptions


def add_parser(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "sim",
        parents=[common],
        help="run the built-in GPU box simulator in the foreground",
        description=__doc__,
    )
    parser.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the simulated box (GPU noise, timings)"
    )
    parser.add_argument(
        "--load-seconds",
        type=float,
        default=45.0,
        metavar="S",
        help="how long the simulated model load takes (default: 45)",
    )
    parser.add_argument("--state-dir", default=None, help="default: a new temporary folder")
    parser.add_argument(
        "--orphans-on-stop",
        type=int,
        default=0,
        metavar="N",
        help="workers left behind holding GPU memory after a stop, as vLLM leaves them",
    )
    parser.add_argument(
        "--stubborn-orphans",
        action="store_true",
        help="the left-behind workers ignore SIGTERM (only SIGKILL ends them)",
    )
    parser.add_argument(
        "--fail-at-shard",
        type=int,
        default=None,
        metavar="K",
        help="the load fails at checkpoint shard K (weight quantization error)",
    )
    parser.add_argument(
        "--http-5xx-rate",
        type=float,
        default=None,
        metavar="RATE",
        help="the share of requests (0 to 1) answered with HTTP 500",
    )
    parser.add_argument(
        "--cut-stream-after-tokens",
        type=int,
        default=None,
        metavar="N",
        help="each streamed answer is cut after N tokens (a broken stream)",
    )
    parser.add_argument("--quiet", action="store_true", help="do not echo the server log")
    parser.set_defaults(func=run_sim)


def run_sim(args: argparse.Namespace) -> int:
    if args.load_seconds <= 0:
        raise UsageError("--load-seconds must be greater than 0")
    if args.orphans_on_stop < 0:
        raise UsageError("--orphans-on-stop must be 0 or more")
    options = SimServerOptions(
        fail_at_shard=args.fail_at_shard,
        orphans_on_stop=args.orphans_on_stop,
        stubborn_orphans=args.stubborn_orphans,
        http_5xx_rate=args.http_5xx_rate,
        cut_stream_after_tokens=args.cut_stream_after_tokens,
    )
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    box = SimBox(args.state_dir, args.seed, args.load_seconds, args.port, options)
    try:
        box.start()
        print(f"servedeck sim: {box.unit.name} starting (simulated)")
        print(f"servedeck sim: base URL  {box.base_url}")
        print(f"servedeck sim: state dir {box.state_dir}")
        print("servedeck sim: Ctrl-C stops everything", flush=True)
        offset = 0
        while True:
            if not args.quiet and box.log_path.exists():
                with box.log_path.open("rb") as log:
                    log.seek(offset)
                    chunk = log.read()
                    offset += len(chunk)
                sys.stdout.write(chunk.decode(errors="replace"))
                sys.stdout.flush()
            if box.unit.state == "failed":
                print(f"servedeck sim: {box.unit.name} failed", file=sys.stderr)
                return 1
            time.sleep(0.25)
    except KeyboardInterrupt:
        print("\nservedeck sim: stopping", file=sys.stderr)
        return 0
    finally:
        box.close()

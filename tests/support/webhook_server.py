"""A real HTTP server process for the webhook tests: logs every request, fails the first N.

Run: python tests/support/webhook_server.py LOGFILE --fail N [--redirect]; prints its port on stdout.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--fail", type=int, default=0)
    parser.add_argument("--redirect", action="store_true")
    args = parser.parse_args()
    lock = threading.Lock()
    state = {"seen": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                state["seen"] += 1
                status = 500 if state["seen"] <= args.fail else 200
                if args.redirect and self.path == "/hook":
                    status = 307
                with open(args.log, "a") as log:
                    log.write(
                        json.dumps({"path": self.path, "status": status, "body": body.decode()})
                        + "\n"
                    )
            self.send_response(status)
            if status == 307:
                self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

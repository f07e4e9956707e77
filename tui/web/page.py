"""The HTML a served console answers with: the terminal page, and the refusal pages.

textual-serve's own page loads a web font from Google; a console served from a GPU
box behind SSH must not reach out, so this page uses textual-serve's script and
stylesheet alone, and strips the token from the address bar once the cookie holds it.
"""

from __future__ import annotations

import json
from html import escape

_STYLE = """
  html, body { margin: 0; height: 100%; background: #0c181f; color: #e8eef2;
    font-family: menlo, "DejaVu Sans Mono", monospace; }
  .notice { max-width: 42em; margin: 12vh auto; padding: 1.5em 2em; background: #12232d;
    border-left: 4px solid #e0b040; line-height: 1.5; }
  .notice h1 { font-size: 1.2em; margin-top: 0; }
  code { background: #1d3340; padding: 0 0.3em; }
"""

_CONSOLE_STYLE = """
  #terminal { position: absolute; inset: 0; }
  body .textual-terminal { opacity: 0; transition: opacity 0.3s ease-out; }
  body.-first-byte .textual-terminal { opacity: 1; }
  .waiting, .ended { position: absolute; inset: 0; display: flex; align-items: center;
    justify-content: center; z-index: 10; background: #0c181f; }
  body.-first-byte .waiting { display: none; }
  .ended { display: none; }
  body.-closed .ended { display: flex; }
  .ended a { color: #8fd0ff; margin-left: 1em; }
"""


def _document(title: str, head: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{escape(title)}</title>\n{head}</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def console_page(title: str, mode: str, visit_id: str) -> str:
    """The terminal: textual-serve's script connects to this visit's websocket."""
    head = (
        '<link rel="stylesheet" href="static/css/xterm.css">\n'
        '<script src="static/js/textual.js"></script>\n'
        f"<style>{_STYLE}{_CONSOLE_STYLE}</style>\n"
    )
    # The websocket URL is built from the address the browser used, so an `ssh -L`
    # forward to another local port works as well as the server's own address.
    script = f"""<script>
  (function () {{
    var scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    var terminal = document.getElementById("terminal");
    terminal.dataset.sessionWebsocketUrl =
      scheme + "//" + window.location.host + "/ws/" + {json.dumps(visit_id)};
    if (window.location.search) {{ history.replaceState(null, "", window.location.pathname); }}
    // Why the session ended (the server's close reason), shown on the ended notice.
    var NativeWebSocket = window.WebSocket;
    window.WebSocket = function (url, protocols) {{
      var socket = new NativeWebSocket(url, protocols);
      socket.addEventListener("close", function (event) {{
        document.getElementById("ended-reason").textContent = event.reason || "";
      }});
      return socket;
    }};
    window.WebSocket.prototype = NativeWebSocket.prototype;
    ["CONNECTING", "OPEN", "CLOSING", "CLOSED"].forEach(function (name) {{
      window.WebSocket[name] = NativeWebSocket[name];
    }});
  }})();
</script>"""
    body = (
        f'<div class="waiting"><div>servedeck: starting the console ({escape(mode)})…</div></div>\n'
        '<div class="ended"><div>servedeck: this console session has ended.'
        '<a href="./">Open a new one</a><p id="ended-reason"></p></div></div>\n'
        '<div id="terminal" class="textual-terminal" data-font-size="14"></div>\n'
        f"{script}"
    )
    return _document(f"{title} ({mode})", head, body)


def notice_page(title: str, heading: str, lines: list[str]) -> str:
    """A refusal or status page: plain text in a box, nothing loaded from anywhere."""
    paragraphs = "\n".join(f"<p>{escape(line)}</p>" for line in lines)
    body = f'<div class="notice"><h1>{escape(heading)}</h1>\n{paragraphs}</div>'
    return _document(title, f"<style>{_STYLE}</style>\n", body)


def unauthorized_page() -> str:
    return notice_page(
        "servedeck: access token required",
        "Access token required",
        [
            "This servedeck console needs the access token printed when `servedeck serve` "
            "started: open the whole URL it printed, including ?token=…",
        ],
    )


def full_page(cap: int) -> str:
    return notice_page(
        "servedeck: full",
        "Too many visitors right now",
        [
            f"This servedeck console serves at most {cap} browser visitor(s) at once, "
            "and all of them are in use.",
            "Try again when someone closes their tab (the server's --max-visitors raises the cap).",
        ],
    )

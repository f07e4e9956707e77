"""`servedeck serve`: the console in a browser, one console process per visit.

No textual import here: the server only starts console processes (`python -m tui`)
under Textual's web driver and relays their bytes to the page.

access.py: The access token a served console demands on every request
launch.py: From `servedeck serve`'s arguments to a running ConsoleServer: the command, TLS, the warnings
page.py: The HTML a served console answers with: the terminal page, and the refusal pages
proctree.py: A visitor's process tree, by identity (pid, start ticks), so it can be ended whole
serve_log.py: What `servedeck serve` writes on stderr: one line per event, safe to show in a terminal
server.py: The web server behind `servedeck serve`: the token, the visitor cap, one console process per visit
visit_process.py: One visitor's console process, driven through textual-serve's AppService
visitors.py: The cap on concurrent visitors: a page load reserves a slot, its websocket claims it
"""

"""`servedeck serve`: the console in a browser, one console process per visit.

No textual import here: the server only starts console processes (`python -m tui`)
under Textual's web driver and relays their bytes to the page.
"""

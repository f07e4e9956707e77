"""Screens and dialogs only: each pushed over the console, Fleet or replay app; every dialog subclasses dialog.py's Dialog.

alerts_firing.py: The "alerts firing now" view (A): what the alert monitor holds firing at this moment
confirm_action.py: Confirmation for start/stop/restart: where, which unit, the exact command. It only asks
confirm_bench.py: Confirmation for a benchmark on a fleet host: where, which preset, what load. It only asks
cropped_screen.py: A screen whose partial updates draw only the lines that changed
dialog.py: The frame every dialog shares: a bordered box centred over the console
guard_refused.py: S/R behind the restart guard: leftovers in the way open this dialog, not the confirm
help.py: The `?` screen: the keys of the app on show from the one command table, those that work here first
kill_confirm.py: The kill confirmation modal: every target in full, typed confirmation for foreign ones
preset_picker.py: Pick a benchmark preset (the `B` key); dismissed with the preset name or None
replay.py: Replay: the Deck as it was at a recorded instant, stepped through time; nothing acts
summary.py: The summary preview screen: collect in a worker, show the Markdown, export with one key
tune.py: The Tune view's screens: the space asked for, the Plan's preflight confirmed, the run, its cancel
timeline.py: The Timeline: every recorded event of this host in one list, filtered, with the state then
"""

"""`servedeck tune`: the deployment experiment, each configuration started, measured and undone.

No Textual here: the CLI (and a console view) drive these modules over one Deck.

space.py: tune.toml: the configurations to try, the objective, the budget and each deadline
"""

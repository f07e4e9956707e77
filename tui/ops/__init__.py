"""Operations that need a whole Deck; above the Deck, below the UI.

- `load_explain.py`: the load explanation of a Deck's host (the console after ready, `servedeck status`)
"""

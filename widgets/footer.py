"""The key footer, without the keys of its past redraws.

Textual's Footer recomposes at every change of bindings (a tab, a focus, a dialog) and
binds each new key to its `compact` with `data_bind`: the binding's watcher stays in the
footer's list, pointing at the key, until `compact` changes, which it never does here
(Textual issue #6666). A night of tab switches kept thousands of dead keys and their
caches alive. After each recompose, `mutate_reactive` has Textual drop the watchers of
keys that were removed (its own pruning: only watchers of closed widgets go).
"""

from __future__ import annotations

from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    async def recompose(self) -> None:
        await super().recompose()
        self.mutate_reactive(TextualFooter.compact)

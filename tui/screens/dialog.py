"""The frame every dialog shares: a bordered box centred over the console.

A dialog composes one container with the `dialog-frame` class (its buttons, if any, in
a `dialog-buttons` row) and sets TONE: "-warning" for a change to the service,
"-danger" for ending processes. Escape answers `cancel_result()`; a subclass only
restyles what differs (its width, its padding), under its own type name.
"""

from __future__ import annotations

from typing import ClassVar, TypeVar

from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


class Dialog(ModalScreen[ResultT]):
    DEFAULT_CSS = """
    Dialog { align: center middle; }
    Dialog > .dialog-frame {
        width: 80%; max-width: 110; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 1 2;
    }
    Dialog.-warning > .dialog-frame { border: thick $warning; }
    Dialog.-danger > .dialog-frame { border: thick $error; }
    Dialog .dialog-buttons { height: auto; margin-top: 1; }
    Dialog .dialog-buttons Button { margin-right: 2; }
    """
    TONE: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__(classes=self.TONE)

    def cancel_result(self) -> ResultT | None:
        """What Escape answers: None, or False for a yes/no question."""
        return None

    def action_cancel(self) -> None:
        self.dismiss(self.cancel_result())

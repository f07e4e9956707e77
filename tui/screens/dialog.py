"""The frame every dialog shares: a bordered box centred over the console.

A dialog composes one container with the `dialog-frame` class (its buttons, if any, in
a `dialog-buttons` row) and sets TONE: "-warning" for a change to the service,
"-danger" for ending processes. Escape answers `cancel_result()`; a subclass only
restyles what differs (its width, its padding), under its own type name.
"""

from __future__ import annotations

from typing import ClassVar, TypeVar

from textual.binding import BindingType
from textual.screen import ModalScreen
from textual.widgets import Button

from widgets.keys import bindings_for

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
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("dialog")  # escape: cancel_result()

    def __init__(self) -> None:
        super().__init__(classes=self.TONE)

    def cancel_result(self) -> ResultT | None:
        """What Escape answers: None, or False for a yes/no question."""
        return None

    def action_cancel(self) -> None:
        self.dismiss(self.cancel_result())


class YesNoDialog(Dialog[bool]):
    """A question whose buttons are `#confirm-yes` and `#confirm-no`; only yes answers True.

    The safe button has the focus from the first frame (AUTO_FOCUS, not after on_mount):
    keys typed quickly after the dialog opens must not land on the one that acts.
    """

    TONE = "-warning"
    AUTO_FOCUS = "#confirm-no"

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def cancel_result(self) -> bool:
        return False

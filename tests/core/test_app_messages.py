"""Every message in tui/app/messages.py reaches a handler of the app.

Textual finds a handler by name only: a renamed message or a typo in a handler's name
drops the message silently, and the pane it feeds never updates.
"""

from __future__ import annotations

import inspect

from textual.message import Message

from tui.app import ServedeckApp, messages


def _messages() -> list[type[Message]]:
    return [
        value
        for value in vars(messages).values()
        if inspect.isclass(value) and issubclass(value, Message) and value is not Message
    ]


def test_every_message_has_a_handler_on_the_app() -> None:
    assert len(_messages()) >= 13
    missing = [m.__name__ for m in _messages() if not hasattr(ServedeckApp, m.handler_name)]
    assert missing == []


def test_one_naming_scheme_for_the_handlers() -> None:
    names = {m.handler_name for m in _messages()}
    assert all(name.startswith("on_servedeck_app_") for name in names), names
    handlers = {name for name in dir(ServedeckApp) if name.startswith("on_servedeck_app_")}
    assert handlers == names  # no handler left waiting for a message that no longer exists

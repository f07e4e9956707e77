"""Pick a benchmark preset (the `B` key); dismissed with the preset name or None."""

from __future__ import annotations

from collections.abc import Mapping

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from tui.core.config import BenchmarkPreset
from tui.screens.dialog import Dialog


def describe_preset(preset: BenchmarkPreset) -> str:
    load = (
        "rates " + ", ".join(f"{rate:g}/s" for rate in preset.request_rate)
        if preset.request_rate
        else "concurrency " + ", ".join(str(level) for level in preset.concurrency)
    )
    return f"{preset.name:<8} {load}; input {preset.input_tokens}, output {preset.output_tokens} tokens"


class PresetPickerScreen(Dialog[str | None]):
    DEFAULT_CSS = """
    PresetPickerScreen > .dialog-frame { max-width: 100; max-height: 80%; }
    PresetPickerScreen OptionList { height: auto; max-height: 20; }
    """

    def __init__(self, presets: Mapping[str, BenchmarkPreset], default: str) -> None:
        super().__init__()
        self.presets = presets
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-frame"):
            yield Label("Run which benchmark preset?")
            yield OptionList(
                *(Option(describe_preset(preset), id=name) for name, preset in self.presets.items())
            )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        names = list(self.presets)
        options.highlighted = names.index(self.default) if self.default in names else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

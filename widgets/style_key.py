"""What a widget's looks depend on, as a tuple that changes whenever any of it changes.

Textual works out a widget's background, colors and link styles by walking its
ancestors on every call. Every style change (a theme, focus, a class, CSS) bumps an
update counter on the styles it changed; the counters of the widget, its component
classes and its ancestors (whose backgrounds show through) say whether a style
looked up earlier still holds.
"""

from __future__ import annotations

from textual.widget import Widget


def style_key(widget: Widget) -> tuple[int, ...]:
    """Changes whenever a style the widget is drawn with may have changed."""
    components = widget._component_styles
    return (
        *(node.styles._cache_key for node in widget.ancestors_with_self),
        *(components[name]._cache_key for name in sorted(components)),
    )

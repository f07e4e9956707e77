"""Secret redaction for everything servedeck writes: summaries, exported logs, audit
records, benchmark results, and what `status` and `logs` print.

By design, not by example:
- Structured data is redacted before it is serialised (`redact_data`): a value
  under a secret-looking key is replaced whole, every string is redacted as text.
  JSON text is never rewritten by a regex, so the output stays valid JSON.
- In text, every value of a flag, key or header whose NAME looks secret is
  replaced, in every form: `--k v`, `--k v1 v2` (a flag taking several), `--k=v`,
  `-k v`, `k=v`, `"k": "v"`, `\\"k\\": \\"v\\"` (escaped JSON), `k=b'v'`,
  `'k': ['a', 'b']`, `K: v` (headers), quoted or not, each occurrence, names of any length.
- The exact values of the secrets servedeck knows (the profile's API key, SSH
  passwords) are always replaced, whatever surrounds them.
- Well-known key shapes (sk-..., hf_..., nvapi-..., JWTs), bearer tokens, URL
  credentials (`scheme://user:pw@`, `scheme://:pw@`, `https://TOKEN@`) and PEM private
  key bodies (to the END line, or to the end of the text when it has none).
Every scan is linear-time: names and values have bounded lengths and the
value extent is found by a small scanner, not by backtracking. The package's public
names are here: `from tui.core.redact import redact_text`.

data.py: Structured data redacted before it is serialised: JSON text is never rewritten by a regex
lines.py: A batch of log lines redacted at once: one search of its line shapes finds the few to scan
names.py: Which names hold a secret: a flag's, variable's, key's or header's, by the words it is made of
shapes.py: Secrets known by their shape: key prefixes (sk-, hf_, nvapi-, ...), JWTs, bearer tokens, URL credentials
text.py: `redact_text`: every form a secret takes in one text, and the secrets this process remembers
values.py: The value of a secret-looking name, in every form it is written: flags, `k=v`, JSON, headers
"""

from tui.core.redact.data import redact_data
from tui.core.redact.lines import LineRedactor, redact_lines
from tui.core.redact.names import REDACTED, SECRET_WORDS, is_secret_name
from tui.core.redact.text import redact_text, remember_secret

__all__ = [
    "REDACTED",
    "SECRET_WORDS",
    "LineRedactor",
    "is_secret_name",
    "redact_data",
    "redact_lines",
    "redact_text",
    "remember_secret",
]

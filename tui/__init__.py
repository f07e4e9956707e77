"""servedeck: a terminal operations console for LLM serving on multi-GPU servers."""

import warnings

__version__ = "0.1.0"

# asyncssh still names DSA keys in its type hints; cryptography >= 47 warns at each such
# line when asyncssh is imported, which printed five warnings before every command's own
# output (and broke one-line errors). servedeck never offers DSA keys: the warning says
# nothing to its user.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh(\.|$)")

"""Command-line entry points of the workbench, the only layer that parses arguments: `run`, `solve`,
`replay`, `report`, `view`, `bot`, `tui`, `results`, `reference`, `convert` and `export`, each ``python -m experiments.<name>``
(`figures` draws a run directory for `report` and the notebooks; `interrupts`: how a command meets
SIGINT and SIGTERM at any stage). Files are read and written by the
module that owns each format, in whichever layer, through `engine.files`."""


def description(doc: str) -> str:
    """A command's ``--help`` description: its docstring's first paragraph as one line (its first
    line alone would stop mid-sentence)."""
    return " ".join(doc.strip().split("\n\n")[0].split())

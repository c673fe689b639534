"""Command-line entry points of the workbench (the only layer that reads files and parses arguments)."""

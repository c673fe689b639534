"""Files written whole or not at all, and read back bounded by their kind: the one home of these
primitives, in the lowest layer so that every layer may use them.

- `writing`: atomic, fsynced writes (`write_bytes`, `write_text`, `write_json`), `DURABLE` (set it
  on that module: every write reads it there), stale temporaries;
- `output`: a folder written as one set (`OutputSet`) and why an output folder cannot be written;
- `folder_lock`: an exclusive lock on a folder while a process works in it (`FolderLock`);
- `reading`: bounded reads (`read_bytes`, `read_text`, `read_json`), each problem one `ReadError`
  line naming the file;
- `yaml_files`: YAML read safely and bounded (`load_yaml`, `parse_yaml`) and written as it reads
  (`write_yaml`).

State files: `engine.statefile`. The package exports every public name but `DURABLE`.
"""

from .folder_lock import FolderLock, Locked
from .output import (COMMIT_PAUSE_ENV, NO_EXCHANGE_ENV, OUTPUT_MIN_FREE, OutputError, OutputSet, cannot_write,
                     make_room, not_a_folder, recover_output)
from .reading import (MAX_CONFIG_BYTES, MAX_JSON_BYTES, MAX_RECORD_BYTES, MAX_TABLE_BYTES, SPECIAL_FILES, ReadError,
                      TooLarge, read_bytes, read_json, read_text)
from .writing import (NEW_FILE_MODE, TEMPORARY_NAME, TEMPORARY_NAME_ATTEMPTS, remove_stale_temporaries, write_bytes,
                      write_json, write_text)
from .yaml_files import MAX_YAML_NODES, YAML12_FLOAT, LongInteger, YamlError, load_yaml, parse_yaml, write_yaml

__all__ = [
    "COMMIT_PAUSE_ENV", "MAX_CONFIG_BYTES", "MAX_JSON_BYTES", "MAX_RECORD_BYTES", "MAX_TABLE_BYTES",
    "MAX_YAML_NODES", "NEW_FILE_MODE", "NO_EXCHANGE_ENV", "OUTPUT_MIN_FREE", "SPECIAL_FILES", "TEMPORARY_NAME",
    "TEMPORARY_NAME_ATTEMPTS", "YAML12_FLOAT", "FolderLock", "Locked", "LongInteger", "OutputError", "OutputSet",
    "ReadError", "TooLarge", "YamlError", "cannot_write", "load_yaml", "make_room", "not_a_folder", "parse_yaml",
    "read_bytes", "read_json", "read_text", "recover_output", "remove_stale_temporaries", "write_bytes",
    "write_json", "write_text", "write_yaml",
]

"""Project files (YAML): the agent, critic, reflection agent, datasets and run settings.

Validation errors name the file, the field and what is wrong. :data:`PROJECT_JSON_SCHEMA` is the
JSON Schema of the format (``studio schema`` prints it). Dataset paths are relative to the
project file; CSV cells are strings, JSONL rows are JSON objects.

What a project may do depends on where it came from (:class:`Origin`): a file the CLI user runs
is theirs and trusted; a project that arrives through the browser (upload, YAML editor, stored
project) may not load Python code (``agent.ref``) unless the server opted in
(``STUDIO_ALLOW_CODE_REFS=1`` / ``studio ui --allow-code-refs``), must inline its datasets, and
may set only the fields the allow-list allows (no transport settings, no rate limits).
Limits, checked before parsing: :data:`MAX_PROJECT_BYTES`, :data:`MAX_YAML_DEPTH`, no YAML aliases;
datasets: :data:`MAX_DATASET_BYTES`, :data:`MAX_CELL_CHARS`, :data:`MAX_JSON_DEPTH`, UTF-8 only.

Example::

    name: haiku
    agent: {name: writer, model: local/smollm2, instruction: Write a haiku about the topic.}
    critic: {type: agent, schema: simple, model: local/smollm2}
    dataset:
      train: [{topic: autumn leaves}, {topic: city rain}]
    run: {max_iterations: 5, review: auto}

One module per job: :mod:`.sections` (the models and the JSON Schema), :mod:`.parsing` (text to a
project and back), :mod:`.yaml_loader` (bounded YAML), :mod:`.error_text` (validation errors a
person can act on), :mod:`.trust` (what a project's origin lets it do), :mod:`.allowlist` (what
a project from the browser may set, field by field), :mod:`.readers` (bounded CSV/JSONL files),
:mod:`.datasets` (a project's rows), :mod:`.checks` (the whole-project check and its run). This
package re-exports what the rest of the studio uses.
"""


from studio.projects.files.allowlist import (
    check_browser_critic,
    check_browser_settings,
)
from studio.projects.files.checks import (
    ProjectDatasets,
    check_critic_section,
    check_project,
    check_project_datasets,
    create_project_run,
)
from studio.projects.files.datasets import (
    check_finite,
    dataset_path,
    inline_datasets,
    load_rows,
    prepare_rows,
    read_rows,
    resolve_datasets,
    resolve_images,
    resolve_testset,
    split_rows,
)
from studio.projects.files.error_text import explain_validation
from studio.projects.files.parsing import (
    MAX_PROJECT_BYTES,
    dump_project,
    load_project,
    parse_project,
)
from studio.projects.files.readers import (
    MAX_CELL_CHARS,
    MAX_DATASET_BYTES,
    MAX_JSON_DEPTH,
    check_header,
    decode_text,
    file_kind,
    parse_json_array,
    read_bounded,
    read_csv,
    read_jsonl,
)
from studio.projects.files.sections import (
    PROJECT_JSON_SCHEMA,
    AgentSection,
    CriticSection,
    DatasetSection,
    DataSource,
    ProjectFile,
    SplitSection,
)
from studio.projects.files.trust import (
    ALLOW_CODE_REFS_ENV,
    Origin,
    check_browser_config,
    check_code_ref,
    check_spec_trust,
    check_tool_trust,
    check_trust,
    code_refs_allowed,
    set_fields,
)
from studio.projects.files.yaml_loader import MAX_YAML_DEPTH, BoundedLoader

__all__ = [
    "ALLOW_CODE_REFS_ENV",
    "AgentSection",
    "BoundedLoader",
    "CriticSection",
    "DataSource",
    "DatasetSection",
    "MAX_CELL_CHARS",
    "MAX_DATASET_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_PROJECT_BYTES",
    "MAX_YAML_DEPTH",
    "Origin",
    "PROJECT_JSON_SCHEMA",
    "ProjectDatasets",
    "ProjectFile",
    "SplitSection",
    "check_browser_config",
    "check_browser_critic",
    "check_browser_settings",
    "check_code_ref",
    "check_critic_section",
    "check_finite",
    "check_header",
    "check_project",
    "check_project_datasets",
    "check_spec_trust",
    "check_tool_trust",
    "check_trust",
    "code_refs_allowed",
    "create_project_run",
    "dataset_path",
    "decode_text",
    "dump_project",
    "explain_validation",
    "file_kind",
    "inline_datasets",
    "load_project",
    "load_rows",
    "parse_json_array",
    "parse_project",
    "prepare_rows",
    "read_bounded",
    "read_csv",
    "read_jsonl",
    "read_rows",
    "resolve_datasets",
    "resolve_images",
    "resolve_testset",
    "set_fields",
    "split_rows",
]

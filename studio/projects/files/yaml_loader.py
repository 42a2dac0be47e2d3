"""The YAML loader project files are read with: safe, bounded (:data:`MAX_YAML_DEPTH`, no aliases)
and strict (no duplicate keys)."""

from __future__ import annotations

import yaml

MAX_YAML_DEPTH = 64


class BoundedLoader(yaml.SafeLoader):
    """Safe YAML without aliases (an alias bomb expands 1 KB into gigabytes), with a depth limit
    (deep nesting would exhaust the stack), and without duplicate keys (the last would silently
    win)."""

    depth = 0

    def construct_mapping(self, node, deep=False):  # noqa: ANN001, ANN201 (PyYAML's signature)
        seen: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key_node.value!r} appears twice in the same mapping: "
                        "keep one", key_node.start_mark)
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)

    def compose_node(self, parent, index):  # noqa: ANN001, ANN201 (PyYAML's signature)
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in project files: write the "
                "value out in full", self.peek_event().start_mark)
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                    self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

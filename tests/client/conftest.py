"""The end-to-end tests need llm-compressor (`make client` runs them in .venv-client)."""

import importlib.util

if importlib.util.find_spec("llmcompressor") is None:
    collect_ignore_glob = ["test_*.py"]

"""Architectures of the installed transformers, found through the auto mapping *names*.

An architecture is a model class name such as `LlamaForCausalLM`. Its
model_type, config class and defining file come from transformers' auto
mapping name tables; no modeling module is imported.

This sits in front of the pipeline: an architecture's class is the root that source and
resolve start from, for api.py, the cli, the plan store (plans.py) and the release matrix.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from staticexec.analysis import lazy
from staticexec.messages import UsageError
from staticexec.analysis.source import ClassRef

TASKS = {
    "causal-lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "image-text-to-text": "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
    "multimodal-lm": "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES",
    "seq2seq-lm": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "speech-seq2seq": "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
}


class UnknownArchitecture(UsageError, KeyError):
    """The name is not a model class of the installed transformers (a KeyError too: a failed lookup)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Architecture:
    """A model class of the installed transformers: its model_type, config class name and defining class."""
    name: str
    model_type: str
    config_class: str
    cls: ClassRef

    def config(self):
        """The config class's defaults (configs are cheap and never run the model)."""
        import transformers

        return getattr(transformers, self.config_class)()


def _names(value) -> list[str]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


@lru_cache(maxsize=1)
def _index() -> dict[str, list[str]]:
    """Model class name -> the model_types whose auto mappings name it, over every mapping name table."""
    from transformers.models.auto import modeling_auto

    out: dict[str, list[str]] = {}
    for attr in sorted(dir(modeling_auto)):
        if not attr.endswith("_MAPPING_NAMES"):
            continue
        table = getattr(modeling_auto, attr)
        if not isinstance(table, dict):
            continue
        for model_type, names in table.items():
            for name in _names(names):
                if isinstance(name, str) and model_type not in out.setdefault(name, []):
                    out[name].append(model_type)
    return out


def _near(name: str) -> list[str]:
    """The model class names a mistyped one may have meant: the same but for case first, then close ones."""
    import difflib

    same = [n for n in _index() if n.lower() == name.lower()]
    return same + difflib.get_close_matches(name, list(_index()), n=3, cutoff=0.85)


def model_types(name: str) -> list[str]:
    """The model_types whose auto mapping names list the model class `name`, sorted; [] for none."""
    return sorted(_index().get(name, ()))


def check_model_type(name: str, config: Any, where: str = "the config") -> None:
    """UsageError in one line when a config given for an architecture is of another model type than those
    whose auto mappings name it and that of the model class's own `config_class` (a causal-LM head of a
    composite model, `MllamaForCausalLM`, takes the text config): a plan records the model types it was
    made for. The class is looked up in transformers (lazy.py) only when the mappings don't decide."""
    own = model_types(name)
    model_type = getattr(config, "model_type", None)
    if model_type in own:
        return
    declared = getattr(lazy.definition_object("transformers", name), "config_class", None)
    declared_type = getattr(declared, "model_type", None)
    if isinstance(declared_type, str) and declared_type:
        if model_type == declared_type:
            return
        own = sorted({*own, declared_type})
    raise UsageError(f"{where}: model_type {model_type!r} is not {name}'s ({', '.join(own) or 'none mapped'})")


def task_architectures(task: str) -> list[str]:
    """The model class names a task's auto mapping name table lists, sorted."""
    from transformers.models.auto import modeling_auto

    if task not in TASKS:
        raise UsageError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
    table = getattr(modeling_auto, TASKS[task], {})
    out = set()
    for names in table.values():
        out.update(n for n in _names(names) if isinstance(n, str))
    return sorted(out)


def all_generative() -> list[str]:
    """The architectures of every task in `TASKS`, sorted."""
    out: set[str] = set()
    for task in TASKS:
        out.update(task_architectures(task))
    return sorted(out)


def find_architecture(name: str) -> Architecture:
    """The architecture of a model class name, from the first of its model types whose folder defines it."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    from staticexec.analysis.classes import find_transformers_class

    model_types = _index().get(name)
    if not model_types:
        raise UnknownArchitecture(f"unknown architecture {name!r}: not a model class of transformers"
                                  + "".join(f"; did you mean {n}?" for n in _near(name)[:1]))
    # a class reused by other model types (LlamaForCausalLM for internlm3) belongs to the folder defining it
    for model_type in model_types:
        config_class = CONFIG_MAPPING_NAMES.get(model_type)
        cls = find_transformers_class(model_type, name)
        if cls is not None and config_class is not None:
            return Architecture(name, model_type, config_class, cls)
    raise UnknownArchitecture(f"architecture {name!r} has no modeling source in transformers")


def no_split_modules(resolver, cls: ClassRef) -> list[str]:
    """`_no_split_modules` of a class (through its MRO), read from the source."""
    value = resolver.class_assignment(cls, "_no_split_modules")
    if value is None:
        return []
    try:
        names = ast.literal_eval(value)
    except ValueError:
        return []
    return sorted({v for v in (names or []) if isinstance(v, str)})

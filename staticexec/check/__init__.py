"""The checks behind every claim of support, above the pipeline they check.

configs, models, samples, audio, multimodal and features build a tiny random model from an
architecture's config and samples for it; verify runs the model's own forward against its
emitted subgraphs; coverage and matrix report the sweeps over every architecture and every
transformers release. `verify` is its entry point.
"""

from staticexec.check.verify import verify

__all__ = ["verify"]

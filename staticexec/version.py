"""staticexec's version and the installed transformers release, both written into every plan it makes."""

__version__ = "0.1.0"


def transformers_version() -> str:
    """The installed transformers release; empty when it is not installed."""
    try:
        import transformers
    except ImportError:  # pragma: no cover
        return ""
    return transformers.__version__

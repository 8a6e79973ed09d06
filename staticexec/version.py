"""staticexec's version, written into every plan it makes."""

__version__ = "0.1.0"

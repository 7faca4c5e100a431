"""The package version (a module of its own: the reports print it without importing the package
``__init__``, whose lazy re-exports would close an import circle)."""

__version__ = "0.1.0"

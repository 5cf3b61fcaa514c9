"""The package version, on its own so every stage can name it without importing the facade."""

__version__ = "0.1.0"

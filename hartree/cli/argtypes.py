"""argparse value types shared by the subcommands: numbers with their allowed range.

Each raises ``argparse.ArgumentTypeError`` with one sentence, which argparse turns into a
usage error (exit code 2).
"""

import argparse


def _number(text, kind, name):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {name}, got {text!r}") from None


def positive_float(text):
    """A float > 0."""
    value = _number(text, float, "a number")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def non_negative_float(text):
    """A float >= 0."""
    value = _number(text, float, "a number")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def positive_int(text):
    """An integer >= 1."""
    value = _number(text, int, "an integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value

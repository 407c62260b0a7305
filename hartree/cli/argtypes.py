"""argparse value types shared by the subcommands: numbers with their allowed range.

Each raises ``argparse.ArgumentTypeError`` with one sentence, which argparse turns into a
usage error (exit code 2).  Every float type refuses NaN and infinities: no non-finite
number enters a calculation from the command line.
"""

import argparse
import math


def _number(text, kind, name):
    try:
        value = kind(str(text).strip().lower().replace("d", "e") if kind is float else text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {name}, got {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def finite_float(text):
    """Any finite float (Fortran 'D' exponents accepted)."""
    return _number(text, float, "a number")


def positive_float(text):
    """A finite float > 0."""
    value = _number(text, float, "a number")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def non_negative_float(text):
    """A finite float >= 0."""
    value = _number(text, float, "a number")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def integer(text):
    """Any integer (a charge)."""
    return _number(text, int, "an integer")


def positive_int(text):
    """An integer >= 1."""
    value = _number(text, int, "an integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def non_negative_int(text):
    """An integer >= 0."""
    value = _number(text, int, "an integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value

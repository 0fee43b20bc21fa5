"""The `kad` command and `python -m kad`: kad's command line (src/main.c).

The command line is a C program of its own: `pip install ./python` builds it
into the package as kad/bin/kad (python/setup.py), beside libkad.so, and this
module execs it with the arguments given, so that it runs as `build/kad` of a
checkout does (its own stdio, exit status 0 or 1, docs in README.md, "Using
the command line").  Without an install (PYTHONPATH=python in a checkout) it
runs the checkout's build/kad, which `make` builds; $KAD_CLI names another.
"""
import os
import sys

__all__ = ["cli_path", "main"]


def cli_path() -> str:
    """Where the command line is run from: $KAD_CLI; else the program an
    install put beside this file (kad/bin/kad); else <repo>/build/kad of the
    checkout this file lives in."""
    env = os.environ.get("KAD_CLI")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    bundled = os.path.join(here, "bin", "kad")
    if os.path.exists(bundled):
        return bundled
    return os.path.join(os.path.dirname(os.path.dirname(here)), "build", "kad")


def main() -> None:
    """Replaces this process with the command line, given sys.argv[1:]."""
    path = cli_path()
    try:
        os.execv(path, ["kad", *sys.argv[1:]])
    except OSError as e:  # execv returns only on failure
        hint = ("run `make` in the checkout (it builds build/kad), or install the package: pip install ./python"
                if not os.path.exists(path) else "reinstall the package: pip install --force-reinstall ./python")
        sys.exit(f"kad: cannot run the command line {path}: {e.strerror}; {hint}")


if __name__ == "__main__":
    main()

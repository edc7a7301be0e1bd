"""``python -m async_lab ARGS`` and the ``async-lab`` command: the package's ``async-lab`` binary with the
same arguments (``async-lab trace -- python3 train.py``, ``async-lab trace --replay TRACE``, ...)."""

import sys

from ._binary import exec_binary


def main():
    exec_binary(sys.argv[1:])


if __name__ == "__main__":
    main()

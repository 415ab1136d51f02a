"""A module that exits while being imported."""

import sys

sys.exit(0)


def softmax1(x):  # never reached
    return x

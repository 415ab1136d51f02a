"""A module that writes to file descriptor 1 while being imported."""

import os

from tests.zoo.softmax1_numpy import softmax1  # noqa: F401

os.write(1, b"loaded\n")

"""Known faults: the faulty forms of a normalizer and of a kernel, and the diagnosis that matches them."""

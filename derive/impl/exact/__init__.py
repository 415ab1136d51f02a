"""The exact reference: the definition on the inputs as passed, in ball arithmetic, with its tolerance
and the rule for fully masked rows."""

"""FlexAttention modifiers read directly: ``score_mod`` / ``mask_mod`` traced with torch.fx in a
child process (:mod:`.child`, :mod:`.trace`), rebuilt as SymPy from a whitelisted JSON tree
(:mod:`.tree`), masks as data (:mod:`.masks`), and the claims about them (:mod:`.claims`)."""

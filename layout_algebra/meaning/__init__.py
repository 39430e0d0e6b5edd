"""Layer 1: what a layout means — the stage pipeline and its first readers.

``stages`` defines a layout as a pipeline of small index maps; ``layout_map`` evaluates it
(concrete values and SymPy closed forms), ``sizes`` measures it, ``logical_ops`` gives the
index meaning of reshape and transpose, ``references`` computes the same positions
independently, ``digits`` and ``recover`` read a layout back from its offsets.
"""

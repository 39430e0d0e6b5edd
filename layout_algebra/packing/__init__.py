"""Layer 2: packing real arrays into a layout's exact bytes, and back (NumPy, numba)."""

"""Layer 2: what a target makes of layouts — XLA:TPU's defaults and sizes, and the
queries a kernel writer asks (contiguous runs, vector loads).
"""

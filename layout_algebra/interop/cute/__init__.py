"""CuTe's layouts: the algebra (``algebra``) and the export of XLA layouts (``export``)."""

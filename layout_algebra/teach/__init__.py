"""Layer 4: explanations, figures, the interactive explorer and the proof catalog."""

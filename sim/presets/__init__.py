"""GPU and model presets, every figure with its source."""

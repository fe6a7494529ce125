"""Programs that produce the contacts a sensor node reads (simulators and their scenes)."""

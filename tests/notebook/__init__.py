"""The in-notebook side: hints, progress, the waiting line, a chapter in a real browser."""

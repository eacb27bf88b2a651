"""Learner copies built from the solutions, resetting an exercise, the README course map."""

"""Tests of the message catalogue: every learner-facing message in English and Chinese."""

"""The teaching helpers the notebooks import."""

"""The bench's own builders: the submissions `make bench` grades are what they claim."""

"""The project as a user installs it: packaging, Colab, pinned environments, supported versions,
the benchmark."""

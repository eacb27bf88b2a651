"""The sandbox: the hostile corpus in every mode, the fork server, uid slots, tmpfs, the child and
its files."""

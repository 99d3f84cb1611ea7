"""The ladder's rungs: elision, image stripping, snapshots, summary."""

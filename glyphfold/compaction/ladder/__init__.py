"""The recovery ladder (SPEC §5): compact / recover / shake, the rung loop, the rungs, the
ledger and the snapshot transcript. Built on :mod:`glyphfold.compaction.history`."""

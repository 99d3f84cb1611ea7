"""CLI subcommands, one module each (see glyphfold.cli.COMMANDS)."""

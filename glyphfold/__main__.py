import sys

from glyphfold.cli import main

sys.exit(main())

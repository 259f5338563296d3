"""``python -m tools.report``: regenerate or check the RFC's generated tables."""

import sys

from tools.report import main

sys.exit(main())

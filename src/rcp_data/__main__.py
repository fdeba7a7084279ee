"""``python -m rcp_data``: the rcp-data command."""

import sys

from rcp_data.cli.main import main

sys.exit(main())

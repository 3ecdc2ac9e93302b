import sys

from benchmark.compaction.run import main

sys.exit(main())

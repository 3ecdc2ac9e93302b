import sys

from benchmark.locomo.run import main

sys.exit(main())

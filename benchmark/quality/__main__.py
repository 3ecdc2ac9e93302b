import sys

from benchmark.quality.run import main

sys.exit(main())

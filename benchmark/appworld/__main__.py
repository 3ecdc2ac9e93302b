import sys

from benchmark.appworld.run import main

sys.exit(main())

import sys

from benchmark.bfcl.run import main

sys.exit(main())

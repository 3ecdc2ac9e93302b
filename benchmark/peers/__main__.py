from benchmark.peers.run import main

main()

from segtools.cli.main import main

main()

from powercontext.cli.entry import main

main()

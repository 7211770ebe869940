from powercontext.cli.main import main

main()

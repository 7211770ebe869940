from powercontext.cli.launch import main

main()

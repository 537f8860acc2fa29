"""One module per `agentab` subcommand, each with `register(subparsers)`; `agentab.cli` dispatches to them."""

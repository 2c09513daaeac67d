from torchtop.cli import entry

entry()

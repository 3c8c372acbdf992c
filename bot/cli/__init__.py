"""The `neo` command line: argument parsing, then a call into the product that does the work."""

"""The command-line tools and what they print: rducc, rducc-opt, rducc-run, report, plots."""

"""The Python API of CONTRACT.md ("Python API"): `analyze`, `diff`, `load_report`, `compare`,
and the `Report` they return, for notebooks and scripts.

It is the CLI's own path, not a copy of it: `torchtop analyze` and `torchtop diff` call
`analyzing.analyze` and `diffing.diff` and print what these return, so a report from Python and
one from the command line cannot drift apart. `import torchtop` reaches these names lazily
(`torchtop.__getattr__`): nothing here is imported until it is used, and pandas only by
`Report.frame` and `compare`.
"""

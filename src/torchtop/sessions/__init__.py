"""The use cases on top: `run`, `demo`, `attach` and `tune`, each wiring a job, its collectors,
the live monitor, the dashboard or the headless printer, and trials. Only the CLI imports them.
"""

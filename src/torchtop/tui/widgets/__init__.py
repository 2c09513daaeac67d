"""The dashboard's panels. Each reads a `Frame` set on it by the app and draws it to its size."""

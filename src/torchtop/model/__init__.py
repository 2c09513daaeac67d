"""Frozen msgspec Structs shared by every layer; standard library and msgspec only."""

"""Differential testing of Grail against llama.cpp's grammar validator (see ../llama_diff.py)."""

"""segtools' documentation, shipped as package data so `segtools docs` can show it where
segtools is installed (no repository needed)."""

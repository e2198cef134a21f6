"""`strata demo` internals: the scenario it runs (scenario.py) and the pictures it draws (pictures.py)."""

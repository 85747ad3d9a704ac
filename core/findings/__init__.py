"""Findings: what each page (and the home page) concludes from result rows. Torch-free: pandas and numpy."""

"""`python -m cli` in a checkout, `python -m dftool` where dftool is installed."""
from .main import run

run()

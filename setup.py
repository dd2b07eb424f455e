"""What pyproject.toml cannot say: which folders become which packages, and the sample graphs.

- graphtool/ is installed as `graphtool` (with py.typed), and the repository's cli/ folder as
  `dftool`: a package called `cli` in site-packages would clash with anything else of that name.
  In a checkout, `python -m cli.main` keeps working (tests/helpers.py runs it).
- sample_graphs/*.pb, *.feeds.npz and README.md are copied into the wheel as
  dftool/sample_graphs/ (data only: the scripts that build them need the checkout). An editable
  install reads them from the checkout instead (cli/samples_cmd.py looks in both places).
"""
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

SAMPLE_PATTERNS = ("*.pb", "*.feeds.npz", "README.md")


class BuildPyWithSamples(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib, "dftool", "sample_graphs")
        self.mkpath(str(target))
        for pattern in SAMPLE_PATTERNS:
            for source in sorted(Path("sample_graphs").glob(pattern)):
                self.copy_file(str(source), str(target / source.name))


setup(
    packages=find_packages(include=["graphtool", "graphtool.*"]) + ["dftool"],
    package_dir={"dftool": "cli"},
    package_data={"graphtool": ["py.typed"]},
    cmdclass={"build_py": BuildPyWithSamples},
)

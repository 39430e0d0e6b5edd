"""Build hook: ship the proof catalog inside the wheel.

The theorems live in ``proofs/`` at the top of the repository (the docs link them there).
A wheel installs only the package, so the build copies ``proofs/*.py`` into
``layout_algebra/teach/proofs_catalog/``, where ``layout_algebra.teach.proofs.default_catalog`` finds
them when no checkout is beside the package. Everything else is in ``pyproject.toml``.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CATALOG_SOURCE = Path("proofs")
CATALOG_TARGET = Path("layout_algebra", "teach", "proofs_catalog")


class BuildWithProofCatalog(build_py):
    """``build_py`` that also copies the theorem files of ``proofs/`` into the package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads proofs/ of the checkout itself
        target = Path(self.build_lib) / CATALOG_TARGET
        self.mkpath(str(target))
        for source in sorted(CATALOG_SOURCE.glob("*.py")):
            self.copy_file(str(source), str(target / source.name))


setup(cmdclass={"build_py": BuildWithProofCatalog})

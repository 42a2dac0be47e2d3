"""The wheel's layout; everything else about the package is in pyproject.toml.

The repository keeps the web UI at its top level, beside the package: ``pages/``,
``components/``, ``examples/`` and ``.streamlit/`` (``streamlit run studio/app.py`` from the
repository's root). Installed as they are, they would claim generic top-level names in
site-packages (``components``, ``pages``, ``examples``) that other distributions use too, so the
wheel puts them inside the package, in ``studio/_ui/``, laid out as at the repository's top.
``studio.projects.serving.ui_root`` finds them in either place; ``studio/app.py`` puts that folder
on ``sys.path``, so ``from components import ...`` imports the same way installed or checked out.
pyproject.toml cannot say this: its package finder does not rename folders, and a fixed package
list would miss each new subpackage of ``studio``.
"""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

UI = "studio._ui"


class BuildPy(build_py):
    """The root's own Python files (this one) are not part of the UI folder."""

    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        return [] if package == UI else super().find_package_modules(package, package_dir)


setup(
    packages=[*find_packages(include=["studio", "studio.*"]), UI, f"{UI}.components",
              f"{UI}.pages"],
    # the repository's root is the UI folder: its pages/, components/... keep their names
    package_dir={UI: "."},
    package_data={UI: [".streamlit/config.toml", "examples/*.yaml", "examples/data/*"]},
    include_package_data=False,  # True would add the root's README.md, pyproject.toml... too
    cmdclass={"build_py": BuildPy},
)

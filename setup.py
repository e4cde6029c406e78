"""Where the packages are installed; everything else about the project is in pyproject.toml.

The repository's top-level folders `cli/`, `lab/`, `app/`, `graph/`, `steering/`, `llm/`, `recmodels/`,
`postgres/` and `migrations/` are the server.
A wheel installs them under `recloop/_server/` instead of at the top of site-packages: names as
generic as `cli`, `app` and `graph` would overwrite, or be overwritten by, another project's packages in
the same environment. Only the `recloop` command puts that directory on sys.path
(recloop/_server/__init__.py); to every other process the wheel adds one name, `recloop` (the client).

An editable install (`pip install -e .`, what `make install` does) keeps them top-level packages
that point at the checkout, exactly as running from the checkout does.
"""

from setuptools import find_namespace_packages, setup
from setuptools.command.editable_wheel import editable_wheel

SERVER = ("cli", "app", "lab", "graph", "steering", "llm", "recmodels", "postgres", "migrations")
PRIVATE = "recloop._server"
# bench/ (benchmarks, run from a checkout) stays out of the wheel.
PACKAGES = find_namespace_packages(include=[f"{name}*" for name in (*SERVER, "recloop")])
PACKAGE_DATA = {  # "": every package (what "*" means in pyproject.toml)
    "": ["*.ini", "*.mako", "*.json", "*.sha256"],
    "app.ui": ["static/*.html", "static/*.css", "static/*.svg", "static/js/*.js", "static/js/views/*.js"],
}


def _private(package: str) -> str:
    return f"{PRIVATE}.{package}" if package.split(".")[0] in SERVER else package


class EditableInPlace(editable_wheel):
    """`pip install -e .`: the checkout's layout, each folder a top-level package (no renaming)."""

    def finalize_options(self) -> None:
        self.distribution.packages = PACKAGES
        self.distribution.package_dir = {}
        self.distribution.package_data = PACKAGE_DATA
        super().finalize_options()


setup(
    packages=[_private(package) for package in PACKAGES],
    package_dir={f"{PRIVATE}.{name}": name for name in SERVER},
    package_data={_private(package): patterns for package, patterns in PACKAGE_DATA.items()},
    cmdclass={"editable_wheel": EditableInPlace},
)

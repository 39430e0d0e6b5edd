"""The package's version, in one place: the package root, the command line and the build read it.

Semantic versions: a release that renames or removes a public name, or changes what a result
field means, raises the major number (the minor one while it is 0.x); ``CHANGELOG.md`` lists
each such change with what to write instead.

>>> VERSION.count(".")
2
"""

VERSION = "0.3.2"

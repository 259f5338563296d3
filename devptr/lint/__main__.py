"""``python -m devptr.lint PATHS``: ``devptr check`` without the rest of the CLI."""

from devptr.lint.command import main

if __name__ == "__main__":
    main()

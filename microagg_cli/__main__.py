"""``python -m microagg_cli`` runs the ``sdc`` command line."""

from .cli import main

if __name__ == "__main__":
    main()

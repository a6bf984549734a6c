"""``python -m nsighttk``."""

from nsighttk.cli import main

if __name__ == "__main__":
    main()

"""Check every link inside a built HTML site: each relative ``href`` and ``src`` names a file
that exists, and each ``#fragment`` an element id in its target page. Links to other sites
are not followed (CI is offline); they are counted.

    python tools/check_site_links.py docs/_build/html

Exit status 1 with one line per broken link (page, link, what is missing); 0 otherwise.
Sphinx (MyST) already refuses a Markdown link to a missing page or heading; this also
covers what it does not see: raw HTML in a page, the theme's own links, the search index.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value and (name == "id" or tag == "a"):
                self.ids.add(value)
            elif name in ("href", "src") and value is not None:
                self.links.append(value)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def check(site: Path) -> tuple[list[str], int, int]:
    """``(broken, checked, external)`` for every HTML page under ``site``."""
    pages = {p.resolve(): _parse(p) for p in sorted(site.rglob("*.html"))}
    broken, checked, external = [], 0, 0
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                external += parts.scheme in ("http", "https") or link.startswith("//")
                continue
            checked += 1
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site.resolve())}: {link}"
            if not target.exists():
                broken.append(f"{where}: no file {target.relative_to(site.resolve())}")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where}: no id {parts.fragment!r} in that page")
    return broken, checked, external


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print(
            "usage: python tools/check_site_links.py SITE_DIR (a built HTML site)", file=sys.stderr
        )
        return 2
    broken, checked, external = check(Path(argv[0]))
    for line in broken:
        print(line)
    print(f"{checked} links inside the site checked, {len(broken)} broken; "
          f"{external} to other sites not followed")  # fmt: skip
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

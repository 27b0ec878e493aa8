"""A page's HTML as an lxml tree, parsed once per conversion and shared by the page type, trafilatura and the main
region (runs/engine/markdown.py).

The parser has trafilatura's own options (trafilatura.utils.HTML_PARSER: no comments, no processing instructions),
so the tree trafilatura is given is the one it would have made, and the page type is learnt and predicted on that
same tree (tests/bench/train_page_type.py). Its elements get lxml.html's classes from a lookup done in C: lxml.html's
own lookup is a Python call for every element touched (3 million calls on 375 pages, 6% of a conversion's time).
"""

from __future__ import annotations

import re
import threading
from urllib.parse import urljoin

from lxml import etree
from lxml import html as lxml_html
from trafilatura.utils import repair_faulty_html

_parsers = threading.local()  # an lxml parser is used by one thread at a time
# libxml2 stops reading at a page's </html>, and puts what comes after its </body> beside the body, not in it; a
# browser reads both into the body (HTML's "after body" modes). Some pages go on after them: a theme that writes its
# document's end before the article (escalon.services: the article, 784 words, was lost; trafilatura lost it too).
_DOCUMENT_END = re.compile(r"</(?:body|html)\s*>", re.IGNORECASE)
# The page's JSON-LD blocks (<script type="application/ld+json">, the type in any case).
_LD_JSON = "translate(@type, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') = 'application/ld+json'"
JSON_LD_SCRIPTS = etree.XPath(f"descendant-or-self::script[{_LD_JSON}]")


def _parser() -> etree.HTMLParser:
    parser = getattr(_parsers, "parser", None)
    if parser is None:
        parser = etree.HTMLParser(
            collect_ids=False,
            default_doctype=False,
            encoding="utf-8",
            remove_comments=True,
            remove_pis=True,
            huge_tree=True,  # else libxml2 stops at nesting depth 256 and the rest of the page is lost (_flattened)
        )
        parser.set_element_class_lookup(
            etree.ElementDefaultClassLookup(
                element=lxml_html.HtmlElement,
                comment=lxml_html.HtmlComment,
                pi=lxml_html.HtmlProcessingInstruction,
                entity=lxml_html.HtmlEntity,
            )
        )
        _parsers.parser = parser
    return parser


def parse(page_html: str | None, *, as_written: bool = False):
    """The page's tree (None when libxml2 finds nothing in it), after trafilatura.utils.load_html's repairs of what
    libxml2 trips on: among them, the control characters XML forbids are taken out of the text (trafilatura writes its
    result as XML). as_written: without those repairs, for the whole page's Markdown, which is the page's text as it is.
    A string that declares its encoding is parsed from its UTF-8 bytes, as load_html does."""
    page_html = _DOCUMENT_END.sub("", page_html or "<html></html>")
    if not as_written:
        page_html = repair_faulty_html(page_html, page_html[:50].lower())
    try:
        try:
            tree = lxml_html.fromstring(page_html, parser=_parser())
        except ValueError:  # "Unicode strings with encoding declaration are not supported"
            tree = lxml_html.fromstring(page_html.encode("utf-8", "surrogatepass"), parser=_parser())
    except (ValueError, etree.ParserError):
        return None
    return _streamed_in_place(_flattened(tree))


# React's streaming server rendering (React 18+, Next.js's app router) writes a part that was not ready when the page's
# start was sent at the end of the body, in <div hidden id="S:n">, and a script of the page ($RS, $RC) moves it to the
# place held for it, <template id="P:n"> (a segment) or <template id="B:n"> (a Suspense boundary). A browser shows
# the part there; read as sent (a page fetched over HTTP, a saved page), it was a hidden block at the end and dropped.
_STREAMED_PARTS = etree.XPath("//div[@hidden][starts-with(@id, 'S:')]")
_PLACES_HELD = etree.XPath("//template[starts-with(@id, 'P:') or starts-with(@id, 'B:')]")


def _streamed_in_place(tree):
    """tree with each streamed part (a hidden <div id="S:n">) moved to the place held for it, as React's script does
    once the page runs; a part with no such place stays where it is. A boundary's fallback (a spinner, a skeleton) is
    not taken out: the comments that end it are not in the tree."""
    parts = _STREAMED_PARTS(tree)
    if not parts:
        return tree
    places = {place.get("id")[2:]: place for place in _PLACES_HELD(tree)}
    for part in parts:
        place = places.get(part.get("id")[2:])
        if place is None or place.getparent() is None:
            continue
        parent, at = place.getparent(), place.getparent().index(place)
        if part.text and part.text.strip():
            before = place.getprevious()
            if before is None:
                parent.text = (parent.text or "") + part.text
            else:
                before.tail = (before.tail or "") + part.text
        parent[at:at] = list(part)  # moved, not copied: a part may hold the place of a part moved after it
        place.drop_tree()
        part.drop_tree()
    return tree


# Elements this deep (the root is 1) hold their text without their markup. Past depth 256 libxml2 stopped parsing
# (the text there and everything after it was lost), and what reads the tree recursively (markdownify) has Python's
# recursion limit; Chromium also flattens its tree, from depth 512. No page in shared/datasets nests past 250.
MAX_DEPTH = 200
_AT_MAX_DEPTH = etree.XPath("/" + "/".join(["*"] * MAX_DEPTH))
_NOT_TEXT = ("script", "style", "template", "noscript")


def _flattened(tree):
    """tree with the elements at MAX_DEPTH keeping the text below them, not its elements (scripts and styles are
    dropped, not made text)."""
    for element in _AT_MAX_DEPTH(tree):
        for hidden in list(element.iterdescendants(*_NOT_TEXT)):
            if hidden.getparent() is not None:
                hidden.drop_tree()
        etree.strip_tags(element, "*")
    return tree


def schema_org_items(node):
    """Every schema.org item (an object with a type) in structured data, including those nested in @graph, lists and
    properties (JSON-LD as parsed, or extruct's uniform output)."""
    if isinstance(node, list):
        for child in node:
            yield from schema_org_items(child)
    elif isinstance(node, dict):
        if "@type" in node or "type" in node:
            yield node
        for key, child in node.items():
            if key in ("@graph", "properties") or isinstance(child, (list, dict)):
                yield from schema_org_items(child)


def base_url(tree, url: str) -> str:
    """What the page's relative links are relative to: its <base href> against url (the page's final URL), else url,
    also when the base cannot be read as a URL (as browsers do: a bad IPv6 literal)."""
    base = tree.find(".//base[@href]")
    if base is None:
        return url
    try:
        return urljoin(url, base.get("href").strip())
    except ValueError:
        return url


def class_and_id(element) -> str:
    """What an element is named by, its class and id: "class id"."""
    return f"{element.get('class') or ''} {element.get('id') or ''}"


def hidden(element) -> bool:
    """Hidden by its own markup: the hidden attribute, or display:none in its style (whatever the case and the blanks).
    aria-hidden is not a sign of it: it hides from screen readers what is shown (a closed accordion's text, a card's
    duplicated price), and dropping it lost content on wcxb-dev's collections (F1 0.653 -> 0.668)."""
    style = (element.get("style") or "").replace(" ", "").lower()
    return element.get("hidden") is not None or "display:none" in style

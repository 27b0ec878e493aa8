"""What kind of page this is: article, forum, product, collection, listing, documentation or service.

A multinomial logistic regression over signals of the page read from its tree: the schema.org types it
declares (JSON-LD, microdata, og:type), words of its URL path, and counts of its structure (headings, paragraphs,
code blocks, add-to-cart controls, prices, repeated posts or cards, link density). The weights (page_type_weights.py)
were trained on the WCXB development split by tests/bench/train_page_type.py. Reading the signals takes ~10 ms of a
page's conversion (mostly XPath in C), the prediction well under a millisecond.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from urllib.parse import urlsplit

from lxml import etree

from runs.engine.html_tree import JSON_LD_SCRIPTS, class_and_id, parse
from runs.engine.page_type_weights import BIAS, TYPES, WEIGHTS

__all__ = ["TYPES", "features", "likeliest", "page_type", "scores"]

_SKIPPED = {"script", "style", "noscript", "template", "svg", "head"}
_JSONLD_TYPE = re.compile(r'"@type"\s*:\s*(\[[^\]]*\]|"[^"]*")')
_PRICE = re.compile(r"(?:[$€£¥₹]\s?\d|\d(?:[.,]\d{2})?\s?(?:€|EUR|USD|GBP|kr|zł|CHF)\b)")
# Matched in the lowered text: a case-insensitive pattern is several times slower.
_CART = re.compile(r"add to (?:cart|bag|basket)|in den warenkorb|ajouter au panier|añadir al carrito|buy now")
# The body's text, without scripts and styles (in HTML they hold text only): plain strings, not lxml's "smart" ones.
_BODY_TEXT = etree.XPath("//body//text()[not(parent::script) and not(parent::style)]", smart_strings=False)
_URL_WORDS = {
    "url_forum": r"forum|thread|topic|discussion|community|/t/|questions?/|/r/|board|showthread|viewtopic|comments",
    "url_docs": r"docs?/|documentation|/api/|reference|manual|guide|/learn/|readthedocs|/wiki/|tutorial|/help/",
    "url_product": r"/products?/|/p/|/dp/|/item/|/itm/|/sku/|\.html?$|/buy/",
    "url_collection": r"collections?/|categor|/c/|/shop/|/browse/|/store/|/department|/catalog",
    "url_listing": r"/blog/?$|/news/?$|/tags?/|/archive|/search|/list|/page/\d|/latest|/recent|/events/?$|/jobs",
    "url_service": r"services?|/about|/pricing|/contact|/solutions?|/features|/plans|/company|/careers|/team",
    "url_article": r"/20\d\d/|/\d{4}/\d\d/|/blog/.+|/news/.+|/articles?/|/story/|/posts?/",
}
_URL_PATTERNS = {name: re.compile(pattern, re.I) for name, pattern in _URL_WORDS.items()}
_SCHEMA_GROUPS = {
    "ld_article": {"article", "newsarticle", "blogposting", "report", "scholarlyarticle", "reportagenewsarticle"},
    "ld_product": {"product", "productgroup", "offer", "individualproduct"},
    "ld_list": {"itemlist", "collectionpage", "searchresultspage", "offercatalog", "listitem"},
    "ld_forum": {"discussionforumposting", "qapage", "question", "answer", "comment", "socialmediaposting"},
    "ld_docs": {"techarticle", "apireference", "howto", "softwaresourcecode", "softwareapplication"},
    "ld_service": {"service", "localbusiness", "professionalservice", "organization", "corporation", "faqpage"},
}
_CLASS_WORDS = {
    "cls_post": re.compile(r"\b(?:post|reply|replies|message|thread|topic|comment)s?\b", re.I),
    "cls_author": re.compile(r"\b(?:author|avatar|user(?:name)?|username|member|byline)\b", re.I),
    "cls_product": re.compile(r"\b(?:product|price|cart|sku|variant|swatch)\w*", re.I),
    "cls_card": re.compile(r"\b(?:card|tile|grid|teaser|item|result)s?\b", re.I),
    "cls_docs": re.compile(r"\b(?:toc|sidebar|highlight|admonition|docs?|api|signature|param)\w*", re.I),
    "cls_filter": re.compile(r"\b(?:filters?|facets?|sort|refine|pagination)\b", re.I),
}
_COUNTED_TAGS = ("article", "time", "pre", "code", "h1", "h2", "h3", "p", "li", "table", "form", "input", "img", "a")
_OG_TYPES = etree.XPath("descendant-or-self::meta[@property = 'og:type']")
_ITEMTYPES = etree.XPath("descendant-or-self::*/@itemtype", smart_strings=False)
_NAMED = etree.XPath("descendant-or-self::*[@class or @id]")
# Elements' own text (lxml's .text: a text node that is the element's first child); in _SKIPPED elements, left out.
_OWN_TEXT = etree.XPath("descendant-or-self::*/node()[1][self::text()]", smart_strings=False)
_SKIPPED_TEXT = etree.XPath(
    f"({' | '.join(f'descendant-or-self::{tag}' for tag in sorted(_SKIPPED))})/node()[1][self::text()]",
    smart_strings=False,
)
_LINK_TEXT = etree.XPath("descendant-or-self::a/node()[1][self::text()]", smart_strings=False)
_PARAGRAPHS = etree.XPath("descendant-or-self::p")
_PUBLISHED = etree.XPath(
    "boolean(descendant-or-self::meta[@property = 'article:published_time' or @property = 'og:article:published_time'"
    " or @name = 'date'] | descendant-or-self::*[@itemprop = 'datePublished'])"
)
_BUTTONS = etree.XPath("count(descendant-or-self::button | descendant-or-self::*[@role = 'button'])")


_WORD_RUN = re.compile(r"\w+")


@functools.lru_cache(maxsize=16384)
def _word_classes(word: str) -> frozenset[str]:
    """The _CLASS_WORDS one word of a class or id names. Cached: pages share most of their class words."""
    return frozenset(name for name, pattern in _CLASS_WORDS.items() if pattern.search(word))


def _class_words(names: str) -> set[str]:
    """The _CLASS_WORDS an element's "class id" names: those of its words, since each of their patterns matches
    within one run of word characters, from its start (and a whole run for those that end in \\b)."""
    found: set[str] = set()
    for word in set(_WORD_RUN.findall(names)):
        found |= _word_classes(word)
    return found


def _jsonld_types(source: str) -> set[str]:
    """The schema.org types a JSON-LD block names ("@type"), lowered."""
    types: set[str] = set()
    for match in _JSONLD_TYPE.findall(source):
        try:
            named = json.loads(match)
        except (ValueError, RecursionError):  # not JSON; an array nested past the parser's depth
            continue
        types.update(str(name).lower() for name in (named if isinstance(named, list) else [named]))
    return types


def _names(tree) -> tuple[Counter[str], int]:
    """How many elements each "class id" names, and the largest number of siblings that share their tag and class
    (the cards of a listing or a collection, the posts of a thread): one pass over the named elements."""
    named: Counter[str] = Counter()
    siblings: Counter = Counter()
    for element in _NAMED(tree):
        named[class_and_id(element)] += 1
        names = element.get("class")
        if names is not None:
            siblings[(element.getparent(), element.tag, names)] += 1
    return named, max(siblings.values(), default=0)


def _headings(tree) -> tuple[int, int]:
    """How many section headings (h2 to h4) the page has, and how many of them are links or hold one: a listing's
    teasers are, an article's headings are not."""
    headings = list(tree.iter("h2", "h3", "h4"))
    linked = sum(
        1
        for heading in headings
        if next(heading.iter("a"), None) is not None or any(above.tag == "a" for above in heading.iterancestors())
    )
    return len(headings), linked


def features(page_html: str | None = None, url: str | None = None, *, tree=None) -> dict[str, float]:
    """The classifier's inputs, by name (all finite numbers: flags, log counts and ratios). tree: the page as
    runs/engine/html_tree.py parses it (parsed from page_html when not given)."""
    if tree is None:
        tree = parse(page_html)
        if tree is None:
            tree = parse("<html></html>")
    found: dict[str, float] = {}
    # Read by XPath in C rather than by a Python loop over every element (which was a tenth of a conversion). A JSON-LD
    # block counts for its types only, not for its own attributes.
    for meta in _OG_TYPES(tree):
        found[f"og_{(meta.get('content') or '').split('.')[0].strip().lower()}"] = 1.0
    itemtypes = Counter(_ITEMTYPES(tree))
    named, most_repeated = _names(tree)
    schema_types: set[str] = set()
    jsonld = JSON_LD_SCRIPTS(tree)
    for script in jsonld:
        schema_types.update(_jsonld_types(script.text or ""))
        itemtypes[script.get("itemtype")] -= 1
        named[class_and_id(script)] -= 1
    for itemtype, count in itemtypes.items():
        if itemtype and count > 0:
            schema_types.update(part.rsplit("/", 1)[-1].lower() for part in itemtype.split())
    classes: Counter[str] = Counter()
    for names, count in named.items():
        for word in _class_words(names):
            classes[word] += count
    text_chars = sum(len(text.strip()) for text in _OWN_TEXT(tree))
    text_chars -= sum(len(text.strip()) for text in _SKIPPED_TEXT(tree))
    link_chars = sum(len(text.strip()) for text in _LINK_TEXT(tree))
    paragraphs = _PARAGRAPHS(tree)
    paragraph_chars = sum(len(paragraph.text_content()) for paragraph in paragraphs)
    body_text = " ".join(_BODY_TEXT(tree))
    for name, group in _SCHEMA_GROUPS.items():
        found[name] = 1.0 if schema_types & group else 0.0
    path = urlsplit(url or "").path or "/"
    for name, pattern in _URL_PATTERNS.items():
        found[name] = 1.0 if pattern.search(path) else 0.0
    found["url_root"] = 1.0 if path.strip("/") == "" else 0.0
    found["url_depth"] = min(len([part for part in path.split("/") if part]), 6) / 6
    tags = Counter(element.tag for element in tree.iter(*_COUNTED_TAGS))
    for tag in _COUNTED_TAGS:
        found[f"n_{tag}"] = math.log1p(tags[tag])
    for name in _CLASS_WORDS:
        found[name] = math.log1p(classes[name])
    prices = len(_PRICE.findall(body_text))
    found["n_price"] = math.log1p(prices)
    carts = len(_CART.findall(body_text.lower()))
    found["n_cart"] = math.log1p(carts)
    found["one_cart"] = 1.0 if carts in (1, 2) else 0.0
    found["text"] = math.log1p(len(body_text)) / 12
    found["link_density"] = link_chars / text_chars if text_chars else 0.0
    found["paragraph_share"] = min(1.0, paragraph_chars / text_chars) if text_chars else 0.0
    headings, linked = _headings(tree)
    found["n_linked_heading"] = math.log1p(linked)
    found["linked_heading_share"] = linked / headings if headings else 0.0
    found["published"] = (
        1.0 if _PUBLISHED(tree) or '"datePublished"' in " ".join(script.text or "" for script in jsonld) else 0.0
    )
    found["n_button"] = math.log1p(_BUTTONS(tree))
    found["repeated"] = math.log1p(most_repeated)
    found["paragraph_length"] = math.log1p(paragraph_chars / len(paragraphs)) / 8 if paragraphs else 0.0
    found["bias"] = 1.0
    return found


def scores(found: dict[str, float]) -> dict[str, float]:
    """Probability of each type."""
    logits = {
        kind: BIAS[kind] + sum(weight * found.get(name, 0.0) for name, weight in WEIGHTS[kind].items())
        for kind in TYPES
    }
    top = max(logits.values())
    exp = {kind: math.exp(value - top) for kind, value in logits.items()}
    total = sum(exp.values())
    return {kind: value / total for kind, value in exp.items()}


def likeliest(page_html: str | None = None, url: str | None = None, *, tree=None) -> tuple[str, float]:
    """The page's likeliest type and its probability."""
    probabilities = scores(features(page_html, url, tree=tree))
    kind = max(probabilities, key=probabilities.get)
    return kind, probabilities[kind]


def page_type(page_html: str | None = None, url: str | None = None, *, tree=None) -> str:
    return likeliest(page_html, url, tree=tree)[0]

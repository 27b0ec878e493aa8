"""A page as Markdown, whole or its main content, with the page's type. An element is written as Markdown by
runs/engine/html_markdown.py; the lines left out once the Markdown is written are runs/engine/markdown_cleanup.py's.

Main content depends on what kind of page it is (runs/engine/page_type.py). Two candidates are weighed:
- trafilatura's extraction (its HTML output keeps headings, lists, tables and links; converted by markdownify), in its
  default mode or favouring recall. On articles this is the state of the art (Zyte article set, mean shingle F1
  0.957 against 0.947 for trafilatura's own Markdown output). Where it stops short of an article (a list, the
  sections after it, the opening left out) or gives it as paragraphs only (its headings and lists lost), the element
  that holds its text is taken instead (_widened); where it gives an article as one paragraph, the page's text run
  together, it is run again favouring recall;
- the page's main region: its <main> element (or the body) without navigation, header, footer, forms, dialogs,
  hidden elements and blocks named as boilerplate (menus, filters, breadcrumbs, cookie banners, newsletter boxes...).
  This keeps what trafilatura drops on pages made of many small blocks: the cards of a listing or a collection,
  every section of a service page, every reply of a forum thread (trafilatura often keeps the first post only).
Cookie and consent banners are taken out of the page first (on a page whose own text is short, trafilatura took
OneTrust's policy text for it), and so is text for screen readers alone (a price's "Regular price" label), and a
block the page gives twice, once for small screens and once for wide ones (_without_small_screen_copies); on a
product page, so are its reviews, ratings, carousels and up-sells, which its description does not include
(_AROUND_PRODUCT). On a forum thread, a post that a reply quotes in full (or a thread rendered twice) is given once
(without_repeats), and where its main region is taken, the panels beside each post about its author (title, join
date, post count) are cut out of it (_AUTHOR_PANEL). On every page, so is a long run of lines given twice word for
word (a block rendered once per screen size: without_repeated_runs), and lines given again right after themselves
(without_doubled_lines). A section headed as other pages' ("Related articles", "You may also like") is left out
(without_related), and so are lines that are a control alone ("Add to cart", "Read more", "Loading...")
(without_controls).
STRATEGIES says, per type, how trafilatura is run (favouring recall or not; with its fallback extractors, readability
and jusText, or without: `fast`) and how short its text may be against the main region's before the region is taken
instead (0: never). Tuned on half of the WCXB development split, reported on the other half
(tests/bench/markdown_quality.py --dataset wcxb-dev). The fallbacks are a third of trafilatura's time; they matter on
articles and forums, and not on the types whose main region is weighed against trafilatura (collections, listings,
documentation, service pages: word F1 within 0.003 either way on the tuning half, 10-22% less time per page).
"""

from __future__ import annotations

import functools
import html
import json
import re
import threading
from collections import Counter
from copy import deepcopy
from dataclasses import dataclass, replace
from urllib.parse import unquote

import trafilatura
from lxml import etree
from lxml import html as lxml_html
from trafilatura.core import determine_returnstring
from trafilatura.metadata import Document
from trafilatura.settings import Extractor

from runs.engine.html_markdown import element_markdown, escaped, resolve_links, separate_inline_boxes
from runs.engine.html_tree import JSON_LD_SCRIPTS, base_url, class_and_id, hidden, parse, schema_org_items
from runs.engine.markdown_cleanup import (
    markdown_words,
    without_controls,
    without_doubled_lines,
    without_related,
    without_repeated_runs,
    without_repeats,
)
from runs.engine.page_type import likeliest, page_type

_DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe")
_NOT_CONTENT = ("nav", "header", "footer", "aside", "form", "button", "select", "dialog")
_ALWAYS_DROPPED = {"nav", "aside"}
_BELOW = etree.XPath("descendant::*")
_NAMED_BELOW = etree.XPath("descendant::*[@class or @id]")
_TEXT = etree.XPath(".//text()[not(parent::script) and not(parent::style)]", smart_strings=False)
_BOILERPLATE = re.compile(
    r"(?:^|[\s_-])(?:nav|navbar|menu|footer|header|sidebar|side-bar|breadcrumbs?|filters?|facets?|cookie|consent|"
    r"newsletter|social|share|sharing|modal|popup|banner|promo|related|recommend|skip|masthead|subscribe|signup|"
    r"login|search|toolbar|pagination|pager|ads?|advert|sponsor)(?:$|[\s_-])",
    re.IGNORECASE,
)
_PANEL = re.compile(
    r"(?:^|[\s_-])(?:tabs?|tabpanel|tab-pane|tab-panel|tab-content|accordion|collapse|collapsible|faq)(?:$|[\s_-])",
    re.IGNORECASE,
)
# A cookie or consent banner (OneTrust's, Cookiebot's, a WordPress plugin's...) by its class or id: never the page's
# content, yet on a page whose own text is short, trafilatura can take its long policy text for it.
# And text written for screen readers alone, which the page does not show (Bootstrap's and Tailwind's "sr-only",
# "visually-hidden", WordPress's "screen-reader-text"...): a product card's "Regular price", "Sale price", "Unit price"
# labels before its prices (Shopify), a "Skip to content" link, a section's heading that only a screen reader reads.
# WCXB dev: 39 pages better, 27 worse (a shift in which candidate is taken), +0.0007, both halves alike.
_NOT_SHOWN = re.compile(
    r"(?:^|[\s_-])(?:cookies?|consent|onetrust|ot-sdk|gdpr|cookiebot|truste)(?:$|[\s_-])|(?:^|\s)(?:onetrust|cybotcookiebot|cookie)|"
    r"(?:^|\s)(?:sr-only|sr-only-focusable|visually-?hidden|visually-hidden--inline|u-visually-hidden|hidden-visually|"
    r"is-visually-hidden|screen-?reader-(?:text|only)|a11y-hidden|assistive-text|element-invisible|offscreen)(?:$|\s)",
    re.IGNORECASE,
)
# What a product page shows round the product and that is not its content: its reviews and ratings (the site's own or
# a review service's widget), carousels and up-sells (of other products: "you may also like", "recently viewed").
_AROUND_PRODUCT = re.compile(
    r"(?:^|[\s_-])(?:reviews?|ratings?|carousels?|up-?sells?|cross-?sells?|bazaarvoice|yotpo|okendo|judgeme|trustpilot)(?:$|[\s_-])",
    re.IGNORECASE,
)
# What a thread shows beside each post about its author and that is not the post: the author's title, banner, join
# date, post count, reaction score (the panels of vBulletin: "userinfo_extra", "userstats", "usertitle"; of XenForo:
# "message-userExtras", "userBanner", "userTitle"; by name elsewhere). Cut out of the main region only, once it is
# taken: cut out of the page before trafilatura reads it, they made it choose other text on some threads (one lost its
# first post's opening line). On the WCXB dev split: forum 0.7659 -> 0.7690, 6 pages better, none worse (tuning half
# +0.002, held-out half +0.338 summed); the Zyte article set unchanged.
_AUTHOR_PANEL = re.compile(
    r"(?:^|[\s_-])(?:userextras|userinfo_extra|userstats|user-stats|usertitle|user-title|userbanner|user-banner|"
    r"postcount|post-count|joindate|join-date|member-since|membersince)(?:$|[\s_-])",
    re.IGNORECASE,
)


@functools.cache  # one cached search per pattern
def _named_as(names: re.Pattern):
    """Whether names matches an element's "class id" (or "class id role"), cached: a page names many elements alike
    (each card, each post, each cell) and the patterns are long alternations (searching them was ~7% of a
    conversion's time)."""
    return functools.lru_cache(maxsize=4096)(lambda given: bool(names.search(given)))


_PANEL_NAMED, _BOILERPLATE_NAMED = _named_as(_PANEL), _named_as(_BOILERPLATE)  # looked up per element: named once

# A block shown on small screens only, and one shown from a wider screen on (the page gives the same block once for
# each, and its style sheet shows one): by the responsive classes of Tailwind ("md:hidden"; "hidden md:block"),
# Bootstrap ("d-lg-none"; "d-none d-lg-block"), Bootstrap 3, Bulma and Foundation, and by name ("mobile-only",
# "hide-desktop"; "desktop-only", "hide-mobile").
_SMALL_SCREEN_ONLY = re.compile(
    r"(?:^|\s)(?:(?:sm|md|lg|xl):hidden|d-(?:sm|md|lg|xl)-none|visible-xs(?:-block|-inline)?|hidden-(?:md|lg)|"
    r"is-hidden-(?:desktop|tablet)|hide-for-(?:medium|large)(?:-up)?|show-for-small-only|"
    r"(?:mobile|only)[-_]?(?:only|mobile)|show[-_]?(?:on[-_]?)?mobile|hide[-_]?(?:on[-_]?)?desktop|hidden[-_]?desktop|"
    r"desktop[-_]?hidden|visible[-_]?mobile|mobile[-_]?visible)(?:$|\s)",
    re.IGNORECASE,
)
_WIDE_SCREEN_ONLY = re.compile(
    r"(?:^|\s)(?:hidden-xs|visible-(?:md|lg)(?:-block)?|is-hidden-(?:mobile|touch)|show-for-(?:medium|large)(?:-up)?|"
    r"hide-for-small-only|(?:desktop|only)[-_]?(?:only|desktop)|show[-_]?(?:on[-_]?)?desktop|hide[-_]?(?:on[-_]?)?mobile|"
    r"hidden[-_]?mobile|mobile[-_]?hidden|visible[-_]?desktop|desktop[-_]?visible)(?:$|\s)",
    re.IGNORECASE,
)
_SHOWN_FROM = re.compile(
    r"(?:^|\s)(?:(?:sm|md|lg|xl):|d-(?:sm|md|lg|xl)-)(?:block|flex|grid|inline|inline-block|inline-flex|table)(?:$|\s)"
)
# A word that each of those names holds: tried first on every element's class, it leaves the few to try them on. In
# lower case, as the frameworks write them (a case-blind search took five times as long).
_SCREEN_SIZE_WORDS = re.compile("hidden|none|mobile|desktop|visible|hide|show|only")
_HIDDEN_FIRST = re.compile(r"(?:^|\s)(?:hidden|d-none)(?:$|\s)")  # hidden until a _SHOWN_FROM class shows it
# On the WCXB dev split: 0.8607 -> 0.8616, 18 pages better, 8 worse (their references keep the small-screen copy, a
# phone menu with them); every half alike; the Zyte article set unchanged.
SMALL_SCREEN_COPY = 0.8  # of a small-screen block's words its wide-screen twin holds (_without_small_screen_copies)
_WORD = re.compile(r"\w+")
HEADED_SHARE = 0.65  # of the main region's words that the part its h1 heads must hold (main_region)
MOSTLY_GIVEN = 0.5  # of a structured name's or description's words in the Markdown: it is not added (_with_product)


@dataclass(frozen=True)
class Strategy:
    recall: bool  # trafilatura favours recall
    fast: bool  # trafilatura without its fallback extractors
    shortest: float  # how short its text may be against the main region's before the region is taken (0: never)
    once: bool = False  # a paragraph given word for word again is left out (without_repeats)
    whole: bool = False  # trafilatura's text may be widened to the whole of the element that holds it (_widened)
    product: bool = False  # reviews, ratings and carousels are taken out first (_AROUND_PRODUCT); JSON-LD adds to it
    # the page's content comes in sections and lists: trafilatura's text without a section's heading or a list item
    # is weighed as its baseline is (FLAT_REGION)
    sectioned: bool = False
    thread: bool = False  # the posts' authors' panels are cut out of the main region when it is taken (_AUTHOR_PANEL)


STRATEGIES = {
    "article": Strategy(recall=False, fast=False, shortest=0.0, whole=True),
    "collection": Strategy(recall=False, fast=True, shortest=0.7, sectioned=True),
    "documentation": Strategy(recall=True, fast=True, shortest=0.6, sectioned=True),
    "forum": Strategy(recall=False, fast=False, shortest=0.5, once=True, thread=True),
    "listing": Strategy(recall=False, fast=True, shortest=0.9, sectioned=True),
    "product": Strategy(recall=True, fast=True, shortest=0.4, product=True, sectioned=True),
    "service": Strategy(recall=False, fast=True, shortest=0.8, sectioned=True),
}
# A page that is an article by less than even odds (a service or listing page with long paragraphs, often) has
# trafilatura's text weighed against the main region too. Not every article: on the Zyte article set, trafilatura's
# text is under a tenth of the region's on many real articles (comments, long link lists), and the region loses. The
# region is taken when trafilatura's text is under 0.7 of it (from 0.5, chosen on the tuning half: +0.0010 there,
# +0.0006 on the held-out half, 7 pages better and 1 worse; the Zyte set unchanged; service pages' 0.8 raised to 0.9
# gained 0.0005 more on the dev split but lost 0.0012 on the Zyte set, three articles the classifier calls service).
UNSURE_ARTICLE = 0.5
UNSURE_ARTICLE_STRATEGY = Strategy(recall=False, fast=False, shortest=0.7)
# trafilatura at times stops short of an article: a list or the sections after one left out, the article's end cut.
# The element that holds its text (_holder) then holds the rest too. It is taken instead when, without what is not the
# article's text (_not_article_text), its words are between WIDER's bounds times trafilatura's: fewer is trafilatura's
# own trimming (an appeal to readers and the staff lists after a fact check), more is a page round the article. On
# the WCXB dev split: 0.8496 -> 0.8517 (tuning half +0.0019, held-out half +0.0022); on the Zyte article set no page
# changes. The lower bound was set with the Zyte set in view: from 1.3, that fact check was widened (-0.15 on it,
# -0.0008 on the set). Without _not_article_text, the Zyte set lost 0.004 (photo galleries, captions, citation boxes).
WIDER = (1.4, 2.0)
# trafilatura's text without a section's heading or a list item, where the element that holds it has them: when its
# extraction finds too little (it looked in a header, a breadcrumb), it gathers the page's paragraphs instead, and an
# article's headings and lists are lost (health.ucdavis.edu's FAQ: its 17 questions gone, their answers left). Such a
# text is widened from as many words as its own (FLAT_WIDER) instead of WIDER's lower bound. On the WCXB dev split:
# 0.8657 -> 0.8671, 38 pages better, 8 worse (tuning half +0.0012, held-out half +0.0017); from 0.5 to 1.15, within
# 0.0006 of that. The Zyte article set 0.9583 -> 0.9588 (counting an h5 or h6 as a section's heading: 0.9581).
FLAT_WIDER = 1.0
HOLDS = 0.9  # of the words of trafilatura's blocks that the element holding its text holds
_MATCHED_WORDS = 5  # a block of fewer words is not matched with trafilatura's (_holder)
_BLOCKS = ("p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "td", "pre", "blockquote", "dd", "dt")
# Around an article's text and not of it: photos and their captions, galleries, credits.
_NOT_ARTICLE = re.compile(
    r"(?:^|[\s_-])(?:caption|captions|gallery|credit|credits|slideshow|carousel|figure|photo|photos)(?:$|[\s_-])",
    re.IGNORECASE,
)
LINKED = 0.6  # a block whose words are this share in links or more is a link list (_not_article_text)
# Where trafilatura's text is only its baseline (_baseline), the main region is taken instead when it holds this share
# of the baseline's words or more: the same text with its headings, lists and links. Not on articles, whose strategy
# does not weigh the region. On the WCXB dev split (41 pages get the baseline): 0.8602 -> 0.8607, 6 pages better, none
# worse (counting articles too, 4 of them lost: their own text is trafilatura's baseline as well).
BASELINE_REGION = 0.5
# On a page whose content comes in sections and lists (Strategy.sectioned: not an article, not a forum thread, whose
# posts are paragraphs), trafilatura's text without a section's heading or a list item, where the main region has
# them, is its gathering of the page's paragraphs (a collection's card titles and prices, each a paragraph of its own,
# without their headings). The region is taken instead when it holds this share of that text's words or more. On the
# WCXB dev split: 0.8671 -> 0.8686, 21 pages better, 11 worse (tuning half +0.0010, held-out half +0.0020); from 0.6
# to 1.0 within 0.0004 of that; on forums too: -0.0009 (posts without headings against a region with its menus' lists).
FLAT_REGION = 0.8
# trafilatura takes the first element that each of its frame expressions finds (BODY_XPATH): on many a page that is a
# breadcrumb named "page-content-breadcrumbs", a header or a nav, which holds too little, and then it gathers the page's
# paragraphs instead (recover_wild_text: no headings, no lists). Such a text (not _sectioned) is read again in the
# main region alone (_region_document: navigation, headers, breadcrumbs, boilerplate gone), and that text is taken
# when it has sections or lists and this share of the first one's words or more (health.ucdavis.edu's FAQ: its 17
# questions back). On the WCXB dev split: 0.8694 -> 0.8697, 12 pages better, 11 worse (tuning half +0.0002, held-out
# half +0.0004; at 0.6 or 1.0 within 0.0001); the Zyte article set 0.9584 -> 0.9583 (three articles by 0.005-0.008).
REGION_AGAIN = 0.8


@dataclass(frozen=True)
class Converted:
    markdown: str
    page_type: str


def _whole_page(tree, url: str | None) -> str:
    resolve_links(tree, base_url(tree, url) if url else None)
    for element in tree.iter(*_DROPPED_TAGS):
        element.drop_tree()
    body = tree.find("body")
    return element_markdown(body if body is not None else tree)


def whole_page_markdown(page_html: str, url: str | None = None) -> str:
    """The whole body as Markdown, without scripts, styles and other non-content elements; links made absolute."""
    tree = parse(page_html, as_written=True)
    return "" if tree is None else _whole_page(tree, url)


def _folded(element, disclosed: frozenset[str] = frozenset()) -> bool:
    """A tab panel or an accordion's panel: hidden until its tab or heading is clicked, and then the page's content (a
    quickstart's code in each language, a service's questions and answers). On the WCXB dev split, keeping them:
    0.8537 -> 0.8548 (tuning half +0.0008, held-out half +0.0015), on 9 pages (7 better, 2 worse). Known by its role,
    its name, or as a disclosure's panel (its id among disclosed: _disclosed)."""
    return (
        element.get("role") == "tabpanel"
        or _PANEL_NAMED(class_and_id(element))
        or (bool(disclosed) and element.get("id") in disclosed)
    )


_DISCLOSURES = etree.XPath("//*[@aria-expanded][@aria-controls]")


def _disclosed(tree) -> frozenset[str]:
    """The ids of the panels that the page's disclosures open: WAI-ARIA's pattern, a button with aria-expanded whose
    aria-controls names the panel (a React "collapsed panel" of a shop's specifications, hidden until its button is
    pressed, named by nothing _PANEL knows). On the WCXB dev split: +0.0001, 2 pages better, 1 worse by 0.004."""
    return frozenset(name for toggle in _DISCLOSURES(tree) for name in (toggle.get("aria-controls") or "").split())


def _text_length(element) -> int:
    """How many characters of text element holds, scripts and styles left out."""
    return sum(map(len, _TEXT(element)))


def main_region(tree):
    """The page's main region, cut out of tree (which it changes): <main> or role=main (the one with most text, among
    those holding a tenth of the page's text or more: a <main> that is a slide-out panel is not the page), else the
    body; without the elements that are not content. An element that holds half of the region's text or more is kept
    whatever its tag or name says (a listing inside a <form>, an age-gated page's hidden wrapper, a header round the
    whole page); navigation and asides never are. Of what is left, the part that the page's <h1> heads
    (_around_heading)."""
    body = tree.find("body")
    top = body if body is not None else tree
    mains = [(_text_length(element), element) for element in tree.xpath("//main|//*[@role='main']")]
    if mains:
        page_text = _text_length(top)
        mains = [(length, element) for length, element in mains if length >= page_text / 10]
    root = max(mains, key=lambda main: main[0])[1] if mains else top
    return _around_heading(_without_boilerplate(root))


def _without_boilerplate(root):
    """root (which it changes) without the elements that are not content: scripts and styles; navigation, header,
    footer, forms, dialogs (save one that holds half of root's text or more); hidden elements and blocks named as
    boilerplate."""
    disclosed = _disclosed(root)  # before the buttons that open them are taken out
    for element in list(root.iter(*_DROPPED_TAGS)):
        if element is not root:
            element.drop_tree()
    total = len(root.text_content())
    for element in list(root.iter(*_NOT_CONTENT)):
        if element is root or element.getparent() is None:
            continue
        if element.tag in _ALWAYS_DROPPED or len(element.text_content()) < total / 2:
            element.drop_tree()
    _drop_where(root, functools.partial(_boilerplate, disclosed=disclosed))
    return root


def _boilerplate(element, disclosed: frozenset[str] = frozenset()) -> bool:
    """Hidden (save a closed tab, accordion or disclosure panel), or named as boilerplate (save a tab's or an
    accordion's part: _folded_part)."""
    if hidden(element) and not _folded(element, disclosed):
        return True
    if _folded_part(element, disclosed):
        return False
    return _BOILERPLATE_NAMED(f"{class_and_id(element)} {element.get('role') or ''}")


def _folded_part(element, disclosed: frozenset[str] = frozenset()) -> bool:
    """A part of a tab panel or an accordion, by its name: its wrapper, its heading, its menu of tabs (Kadence's
    "kt-accordion-wrap ... kt-pane-header-alignment-left", "accordion-header", "faq_tabs-menu"). Named for the widget,
    it may hold a word of _BOILERPLATE ("header", "menu") as part of the widget's vocabulary; the questions and the
    tabs' titles it holds are the content. Not a list (Bootstrap's "nav nav-tabs" is a strip of links). On the WCXB
    dev split: +0.0004, 6 pages better, 8 worse (a portfolio's accordion of tags: -0.065), both halves alike."""
    return element.tag not in ("ul", "ol", "nav") and _folded(element, disclosed)


def _drop_where(root, is_out, among=_BELOW) -> None:
    """Takes out of root the elements below it (those among finds, in document order: every one, or those with a class
    or id: _NAMED_BELOW) for which is_out holds, save those that hold half of root's text or more (that is the
    content, whatever it is named: a wrapper round the whole page named for a consent script, a listing inside an
    element named as filters). An element inside one taken out went with it. Root's text is measured only when an
    element is found (most pages have no consent banner)."""
    half = None
    dropped = None  # the last element taken out: what it held comes right after it in document order
    for element in among(root):
        if dropped is not None:
            if dropped in element.iterancestors():
                continue  # went with it: not looked at
            dropped = None  # past what it held
        if not is_out(element):
            continue
        if half is None:
            half = len(root.text_content()) / 2
        if len(element.text_content()) < half:
            element.drop_tree()
            dropped = element


def _around_heading(root):
    """The part of root that its first <h1> heads: the h1's smallest ancestor that holds HEADED_SHARE of root's
    words (the h1 alone never is: a short page's title may hold most of its words). What comes before the page's
    title and after its section (a teaser strip, a footer that is not named as one) is left out; root itself when it
    has no h1."""
    heading = next((h1 for h1 in root.iter("h1") if h1.text_content().strip()), None)
    if heading is None:
        return root
    enough = HEADED_SHARE * _words(root.text_content())
    part = heading if heading is root else heading.getparent()
    while part is not root and _words(part.text_content()) < enough:
        part = part.getparent()
    return part


def _extracted_html(tree, url: str | None, strategy: Strategy) -> str | None:
    """trafilatura.extract(output_format="html") without what it adds that is not used here: its extract() also
    computes a Simhash fingerprint of the text for every non-TXT format (5% of a conversion's time)."""
    options = Extractor(
        output_format="html",
        fast=strategy.fast,
        recall=strategy.recall,
        links=True,
        tables=True,
        images=False,
        url=url,
    )
    document = trafilatura.bare_extraction(tree, options=options)  # it works on a copy
    return determine_returnstring(document, options) if isinstance(document, Document) else None


# trafilatura's HTML output is lxml's XML serialisation of its result, so it is read back as XML (not as HTML, whose
# parser would change its nesting: a <p> that holds a <pre> would be split). recover: an attribute name that XML
# does not allow (a page's ":class") is dropped rather than the whole fragment refused.
_fragment_parsers = threading.local()  # an lxml parser is used by one thread at a time


def _fragment_tree(fragment: str):
    """trafilatura's HTML output as a tree again (None when nothing in it could be read), its inline code inline."""
    parser = getattr(_fragment_parsers, "parser", None)
    if parser is None:
        parser = etree.XMLParser(recover=True, huge_tree=True, resolve_entities=False, no_network=True)
        _fragment_parsers.parser = parser
    tree = etree.fromstring(fragment, parser)
    if tree is not None:
        _inline_code(tree)
    return tree


# Where a <pre> of trafilatura's is a word of a line, not a block of its own.
_IN_LINE = frozenset(
    ("p", "a", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "li", "dt", "dd", "strong", "em", "b", "i")
)


def _inline_code(tree) -> None:
    """trafilatura writes all code as <pre>, a paragraph's "<code>WebSocket</code>" too: the Markdown cut the sentence
    round a code block ("The\\n\\n```\\nWebSocket\\n```\\n\\nobject provides..."), and in a link the block ended it (a
    CommonMark reader showed its target as text). A one-line <pre> in a paragraph, a link, a heading, a cell or a list
    item is <code> again."""
    for pre in tree.iter("pre"):
        parent = pre.getparent()
        if parent is not None and parent.tag in _IN_LINE and "\n" not in "".join(pre.itertext()).strip():
            pre.tag = "code"


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def main_content(page_html: str, url: str | None = None) -> Converted:
    """The main content as Markdown and the page's type; the whole page when nothing is found."""
    tree = parse(page_html)
    if tree is None:
        return Converted("", "article")
    kind, probability = likeliest(tree=tree, url=url)
    resolve_links(tree, base_url(tree, url) if url else None)
    _drop_named(tree, _NOT_SHOWN)
    _without_small_screen_copies(tree)
    separate_inline_boxes(tree)  # before trafilatura, which strips the elements and runs their words together
    strategy = STRATEGIES[kind]
    if kind == "article" and probability < UNSURE_ARTICLE:
        strategy = UNSURE_ARTICLE_STRATEGY
    product = _structured_product(tree) if strategy.product else None  # read before the region drops scripts
    if strategy.product:
        _drop_named(tree, _AROUND_PRODUCT)
    markdown = _chosen(tree, url, strategy)
    if not markdown.strip():
        markdown = whole_page_markdown(page_html, url)
    if not markdown.strip():
        markdown = _described(tree)
    if strategy.once:
        markdown = without_repeats(markdown)
    markdown = without_controls(without_related(without_doubled_lines(without_repeated_runs(markdown))))
    return Converted(_with_product(markdown, *product) if product else markdown, kind)


_DESCRIPTIONS = ("description", "og:description", "twitter:description")  # in the order _described prefers them


def _described(tree) -> str:
    """The page as its head describes it, for a page whose body gives no text (a forum thread that its scripts write:
    Discourse's, whose head holds the opening post's first lines): its title as a heading and its description (the
    description meta tag, else OpenGraph's, else Twitter's); "" when it has neither."""
    title = " ".join((tree.findtext(".//title") or "").split())
    descriptions: dict[str, str] = {}
    for meta in tree.iter("meta"):
        key = (meta.get("name") or meta.get("property") or "").strip().lower()
        # Discourse escapes its descriptions twice: "se&amp;hellip;" in the page is "se&hellip;" once parsed
        content = " ".join(html.unescape(meta.get("content") or "").split())
        if key in _DESCRIPTIONS and content:
            descriptions.setdefault(key, content)
    description = next((descriptions[key] for key in _DESCRIPTIONS if key in descriptions), "")
    lines = [f"# {escaped(title)}" if title else "", escaped(description)]
    described = "\n\n".join(line for line in lines if line)
    return f"{described}\n" if described else ""


def _structured_product(tree) -> tuple[str, str] | None:
    """The name and description ("" when it has none) of the first schema.org Product in the page's JSON-LD."""
    for script in JSON_LD_SCRIPTS(tree):
        try:
            data = json.loads(script.text or "")
        except (ValueError, RecursionError):  # a broken block, as many pages have; one nested past the parser's depth
            continue
        for item in schema_org_items(data):
            kinds = item.get("@type")
            if "product" in {str(kind).lower() for kind in (kinds if isinstance(kinds, list) else [kinds])}:
                return _plain(item.get("name")), _plain(item.get("description"))
    return None


def _plain(value) -> str:
    """A JSON-LD text value, "" for anything else. Some sites write theirs %-encoded ("An%20elegant%20sofa")."""
    if not isinstance(value, str) or not value.strip():
        return ""
    return unquote(value) if "%20" in value and " " not in value else value


def _description_markdown(text: str) -> str:
    """A structured description as Markdown: many sites write HTML in it (paragraphs, lists, entities)."""
    if "<" in text:
        try:
            return element_markdown(lxml_html.fragment_fromstring(text, create_parent="div")).strip()
        except (etree.ParserError, ValueError):  # not HTML after all
            pass
    return escaped(" ".join(html.unescape(text).split()))


def _with_product(markdown: str, name: str, description: str) -> str:
    """A product's Markdown with the name and description its structured data gives, each when the Markdown does not
    hold most of its words already: a description in a tab or written by a script, a title outside the part taken.
    The description last, the name as the title."""
    given = set(markdown_words(markdown))

    def missing(text: str) -> bool:
        words = markdown_words(text)
        return bool(words) and sum(word in given for word in words) < MOSTLY_GIVEN * len(words)

    if description and missing(description := _description_markdown(description)):
        markdown = f"{markdown.rstrip()}\n\n{description}\n"
    if name and missing(name := " ".join(html.unescape(name).split())):
        markdown = f"# {escaped(name)}\n\n{markdown.lstrip()}"
    return markdown


def _drop_named(tree, names: re.Pattern) -> None:
    """Takes out of tree's body the elements whose class or id names match (cookie and consent banners and text for
    screen readers alone: _NOT_SHOWN; a product's reviews: _AROUND_PRODUCT), as _drop_named_below does. After the
    page's type is told, which was learnt with them in."""
    body = tree.find("body")
    _drop_named_below(body if body is not None else tree, names)


def _drop_named_below(top, names: re.Pattern) -> None:
    """Takes out of top the elements below it whose class or id names match, as _drop_where does (looking only at
    the elements that have a class or an id: a tenth of them on most pages)."""
    named = _named_as(names)
    _drop_where(top, lambda element: named(class_and_id(element)), among=_NAMED_BELOW)


def _without_small_screen_copies(tree) -> None:
    """Takes out of tree's body each block shown on small screens only (_SMALL_SCREEN_ONLY) when a block shown on wide
    screens only holds SMALL_SCREEN_COPY of its words or more: the page gives a product's title and price, a
    comparison table or a section twice, once per screen size, and its style sheet shows one. A small-screen block
    with no wide-screen twin (a menu button, a section written for phones) stays, and so does one that holds half of
    the body's text or more (as _drop_where keeps)."""
    body = tree.find("body")
    top = body if body is not None else tree
    small, wide = [], []
    for element in top.iter(etree.Element):
        names = element.get("class")
        if not names or not _SCREEN_SIZE_WORDS.search(names):
            continue
        if _SMALL_SCREEN_ONLY.search(names):
            small.append(element)
        elif _WIDE_SCREEN_ONLY.search(names) or (_SHOWN_FROM.search(names) and _HIDDEN_FIRST.search(names)):
            wide.append(element)
    if not small or not wide:
        return
    twins = [_word_counts(element) for element in wide]
    half = len(top.text_content()) / 2
    for element in small:  # in document order
        if top not in element.iterancestors():
            continue  # it went with a block taken out before it
        words = _word_counts(element)
        enough = SMALL_SCREEN_COPY * sum(words.values())
        copied = words and any(sum((words & twin).values()) >= enough for twin in twins)
        if copied and len(element.text_content()) < half:
            element.drop_tree()


def _word_counts(element) -> Counter[str]:
    return Counter(word.lower() for word in _WORD.findall(element.text_content()))


def _chosen(tree, url: str | None, strategy: Strategy) -> str:
    """Of trafilatura's extraction and the main region, the one strategy says, as Markdown."""
    extracted_tree, extracted = _extraction(tree, url, strategy)
    # The main region, found once: in a copy of tree when trafilatura reads it alone (main_region cuts the tree it is
    # given, and tree is read whole again below: the one-paragraph retry, _widened).
    region = None
    if extracted and not _sectioned(extracted_tree):
        # Its text without a section's heading or a list item: often its gathering of the page's paragraphs, after its
        # first pick of a frame (a breadcrumb, a header) held too little. Read again in the main region alone, where
        # those are gone, it may find the frame (REGION_AGAIN); not when the region has no section or list to find.
        region = main_region(deepcopy(tree))
        if _sectioned(region):
            document, region = _region_document(tree, region)
            again_tree, again = _extraction(document, url, strategy)
            if again and _sectioned(again_tree) and again >= REGION_AGAIN * extracted:
                extracted_tree, extracted = again_tree, again
    if extracted and strategy.whole and not strategy.recall and _one_paragraph(extracted_tree):
        # An article that trafilatura gives as one paragraph, the page's text run together (Dotdash Meredith's sites:
        # its byline, its table of contents and every section in one line): favouring recall, it finds the article's
        # blocks (WCXB dev: 5 articles better, 4708 +0.065; 1 worse, -0.011; Markdown with headings and lists).
        again_tree, again = _extraction(tree, url, replace(strategy, recall=True, fast=False))
        if again and not _one_paragraph(again_tree):
            extracted_tree, extracted = again_tree, again
    if extracted and strategy.whole:
        widened = _widened(tree, extracted_tree, extracted)
        if widened is not None:
            return element_markdown(widened)
    if extracted and not strategy.shortest:
        return element_markdown(extracted_tree)
    if region is None:
        region = main_region(tree)
    in_region = _words(region.text_content())
    baseline_only = extracted and _baseline(extracted_tree) and in_region >= BASELINE_REGION * extracted
    paragraphs_only = (
        strategy.sectioned
        and extracted
        and not _sectioned(extracted_tree)
        and _sectioned(region)
        and in_region >= FLAT_REGION * extracted
    )
    if extracted and extracted >= strategy.shortest * in_region and not baseline_only and not paragraphs_only:
        return element_markdown(extracted_tree)
    if strategy.thread:
        _drop_named_below(region, _AUTHOR_PANEL)
    return element_markdown(region)


def _region_document(tree, region):
    """A page that holds region (tree's main region, cut out of a copy of tree) alone under tree's head: what
    trafilatura is given to read again; and the region as that page holds it."""
    if region.tag == "html":
        return region, region
    document, body = tree.makeelement("html", {}), tree.makeelement("body", {})
    head = tree.find("head")
    if head is not None:
        document.append(deepcopy(head))
    document.append(body)
    if region.tag == "body":
        body.text = region.text
        body.extend(list(region))
        return document, body
    body.append(region)
    return document, region


def _extraction(tree, url: str | None, strategy: Strategy):
    """trafilatura's extraction as a tree (None when it found nothing) and its number of words."""
    fragment = _extracted_html(tree, url, strategy)
    extracted_tree = _fragment_tree(fragment) if fragment else None
    if extracted_tree is not None:
        _blanks_round_links(tree, extracted_tree)
    return extracted_tree, _words("".join(extracted_tree.itertext())) if extracted_tree is not None else 0


def _blanks_round_links(page, extracted_tree) -> None:
    """The blank before or after a link that trafilatura trimmed, given back: in a block of text and inline elements
    (ArchWiki's tip boxes) it trims each piece, and the Markdown read "[pacman](...)package contains tools such as
    [makepkg](...)and", or "the loaf![Here's a video](...)", an image to Markdown. A link gets the blank the page
    gave the same link (same target, same text) on that side; where the page's copies of it disagree, none."""
    blanks = None
    for link in extracted_tree.iter("a"):
        if blanks is None:
            blanks = _link_blanks(page)
        before, after = blanks.get(_link_key(link), (False, False))
        if after and link.tail and not link.tail[:1].isspace():
            link.tail = f" {link.tail}"
        if not before:
            continue
        previous = link.getprevious()
        if previous is not None:
            if previous.tail and not previous.tail[-1:].isspace():
                previous.tail += " "
        elif (parent := link.getparent()) is not None and parent.text and not parent.text[-1:].isspace():
            parent.text += " "


def _link_blanks(page) -> dict[tuple[str, str], tuple[bool, bool]]:
    """(target, text) of each of page's links -> whether a blank comes before it and after it in the page."""
    blanks: dict[tuple[str, str], tuple[bool, bool]] = {}
    for link in page.iter("a"):
        target = link.get("href")
        if not target:
            continue
        found = (_blank_before(link), _blank_after(link))
        key = _link_key(link)
        blanks[key] = found if blanks.get(key, found) == found else (False, False)
    return blanks


def _link_key(link) -> tuple[str | None, str]:
    """A link as trafilatura's output and the page both give it: its target and its text's words."""
    return link.get("href"), " ".join("".join(link.itertext()).split())


def _blank_before(element) -> bool:
    """Whether a blank comes right before element in the page's text (first in its parent: before the parent)."""
    while (parent := element.getparent()) is not None:
        previous = element.getprevious()
        if previous is not None:
            return bool(previous.tail) and previous.tail[-1].isspace()
        if parent.text:
            return parent.text[-1].isspace()
        element = parent
    return False


def _blank_after(element) -> bool:
    """Whether a blank comes right after element in the page's text (last in its parent: after the parent; a
    wrapper's tail, as "<span><a>pacman</a></span> package")."""
    while element is not None:
        if element.tail:
            return element.tail[0].isspace()
        if element.getnext() is not None:
            return False
        element = element.getparent()
    return False


def _one_paragraph(extracted_tree) -> bool:
    """trafilatura's text is a single paragraph and nothing else."""
    return len(extracted_tree.findall(".//p")) == 1 and all(
        element.tag in ("html", "body", "p") for element in extracted_tree.iter(etree.Element)
    )


def _baseline(extracted_tree) -> bool:
    """trafilatura's text is its baseline: when its extraction found nothing, it gives the page's text as one
    paragraph, its blocks one per line (no headings, lists or links: "Notes\nThe ferry leaves at nine...")."""
    return _one_paragraph(extracted_tree) and "\n" in (extracted_tree.find(".//p").text or "")


def _widened(tree, extracted_tree, extracted: int):
    """The element of tree that holds trafilatura's text (a copy, without what is not the article's text), when its
    words are between WIDER's bounds times trafilatura's (from FLAT_WIDER times when the holder has the headings or
    lists that trafilatura's text has not: _sectioned); else None."""
    given = {_normalized_text(block) for block in extracted_tree.iter(*_BLOCKS)}
    holder = _holder(tree, given)
    fewest = FLAT_WIDER if holder is not None and not _sectioned(extracted_tree) and _sectioned(holder) else WIDER[0]
    # Taking out what is not the article only makes it shorter: most holders are too short before (trafilatura took
    # nearly all of their text), and are not copied and cleaned.
    if holder is None or _words(holder.text_content()) < fewest * extracted:
        return None
    whole = _without_boilerplate(deepcopy(holder))
    _drop_where(whole, _not_article_text)
    # What trafilatura took outside the holder is left out: on the pages measured, its own mistakes (a footer's legal
    # lines, a newsletter box, a call-to-action). Keeping 98% of trafilatura's words or else not widening lost most of
    # the gain (WCXB dev 0.8517 -> 0.8506). Its text has no title to lose: trafilatura gives the <h1> as metadata.
    return whole if fewest <= _words(whole.text_content()) / extracted < WIDER[1] else None


def _sectioned(element) -> bool:
    """element holds a section's heading (h2 to h4: an h5 or h6 is more often a caption's or a credit's) or a list
    item."""
    return next(element.iter("h2", "h3", "h4", "li"), None) is not None


def _holder(tree, given: set[str]) -> etree._Element | None:
    """The deepest element of tree whose blocks (paragraphs, list items, headings, cells...) that trafilatura's text
    gives too (given: their normalized texts) hold HOLDS of those blocks' words. Blocks of fewer than _MATCHED_WORDS
    words are not matched (a "Share" or a date is on many a page twice)."""
    weights: dict[etree._Element, int] = {}  # element -> words of the matched blocks it holds
    total = 0
    for block in tree.iter(*_BLOCKS):
        text = _normalized_text(block)
        if text not in given or (words := _words(text)) < _MATCHED_WORDS:
            continue
        total += words
        for above in block.iterancestors():
            weights[above] = weights.get(above, 0) + words
    holding = [element for element, words in weights.items() if words >= HOLDS * total]
    # Each holds most of the words, so they are one line of ancestors: the deepest is the tightest.
    return max(holding, key=lambda element: sum(1 for _ in element.iterancestors()), default=None)


_NORMALIZED_SPACE = etree.XPath("normalize-space()", smart_strings=False)


def _normalized_text(element) -> str:
    """element's text in lower case, its blanks made single spaces as trafilatura's text has them (libxml2's
    normalize-space, then Python's for the Unicode blanks it leaves, such as no-break spaces)."""
    text = _NORMALIZED_SPACE(element)
    return (text if text.isascii() else " ".join(text.split())).lower()


def _not_article_text(element) -> bool:
    """A photo, a caption, a gallery or a credit (by tag or name), or a block that is mostly links. A <figure> that
    holds a quote is the article's (HTML's way to give a quote with its source: conductor.com's 25 experts' quotes)."""
    if element.tag == "figure" and next(element.iter("blockquote"), None) is not None:
        return False
    if element.tag in ("figure", "figcaption"):
        return True
    if _NOT_ARTICLE.search(class_and_id(element)):
        return True
    if element.tag not in ("div", "ul", "ol", "section", "li", "p", "span", "h2", "h3", "h4", "h5", "h6"):
        return False
    words = _words(element.text_content())
    return bool(words) and sum(_words(link.text_content()) for link in element.iter("a")) >= LINKED * words


def convert(page_html: str, *, main_content_only: bool, url: str | None = None) -> Converted:
    if main_content_only:
        return main_content(page_html, url)
    tree = parse(page_html, as_written=True)
    if tree is None:
        return Converted("", "article")
    kind = page_type(tree=tree, url=url)
    return Converted(_whole_page(tree, url), kind)


def to_markdown(page_html: str, *, main_content: bool, url: str | None = None) -> str:
    return convert(page_html, main_content_only=main_content, url=url).markdown

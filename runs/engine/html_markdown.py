"""An HTML element as Markdown: markdownify's converter, with what it wrote wrong for pages.

The Markdown is read the same by CommonMark and by a reader that strips its marks (tests/bench/markdown_quality.py
scores both): a link round blocks is the blocks with the link in the first one, inline code is inline, a link's
brackets and a target's parentheses never end a link early, and inline boxes' words do not run together. The soup
markdownify converts is made from the lxml tree itself (_ElementTreeBuilder), not from the tree serialised and
parsed again.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urljoin

from bs4 import BeautifulSoup, Comment, Tag
from bs4.builder import HTMLTreeBuilder
from lxml import etree
from markdownify import MarkdownConverter, chomp

__all__ = ["BLANK_LINES", "FENCED", "element_markdown", "escaped", "resolve_links", "separate_inline_boxes"]

BLANK_LINES = re.compile(r"\n(?:[ \t]*\n){2,}")  # lines with nothing but blanks count as blank
# markdownify's code blocks: fences on lines of their own (indented in a list item, marked ">" in a quote), not a ```
# in a paragraph's text
FENCED = re.compile(r"(^[ \t>]*```[^\n]*\n.*?\n[ \t>]*```[ \t]*$)", re.DOTALL | re.MULTILINE)
_WORD = re.compile(r"\w+")


class _Tag(Tag):
    """BeautifulSoup's Tag, with a find_parent(name) that walks up the parents. markdownify asks it of every tag
    (is it inside a <pre>?), and bs4's general matcher made that a fifth of markdownify's time."""

    def find_parent(self, name=None, attrs=None, **kwargs):
        if not isinstance(name, str) or attrs or kwargs:
            return super().find_parent(name, attrs, **kwargs)
        parent = self.parent
        while parent is not None and parent.name != name:
            parent = parent.parent
        return parent


class _ElementTreeBuilder(HTMLTreeBuilder):
    """A BeautifulSoup tree builder that reads an lxml element instead of parsing markup: the soup markdownify
    converts is made from the tree the engine already has (trafilatura's result, the page's main region or body),
    not from that tree serialised and parsed again by html.parser (two fifths of markdownify's time). Its tags,
    attributes, text and comments as they are; the round trip also changed some: lxml writes an empty <li> without
    its end tag, and html.parser read the next item into it (a nested list of one, "- - Two")."""

    NAME = "lxml-element"
    # Link targets as HTML serialisation writes them (printable ASCII kept, the rest %-escaped) and without the blanks
    # round them, which browsers ignore: a space would end a Markdown link's destination. Parentheses and angle
    # brackets %-escaped too (the same URL): a reader of Markdown that does not balance them ended the link at the
    # first ")" and kept the rest of the target as text (wikipedia's "Cg_(programming_language)").
    URI_ATTRIBUTES = ("href", "src")
    URI_SAFE = "".join(char for char in map(chr, range(33, 127)) if char not in "()<>")
    # The attributes markdownify reads (links, images, video, list start, table spans): a tag made with a page's
    # classes, styles and data attributes as well took bs4 twice as long.
    READ_ATTRIBUTES = frozenset(("href", "title", "src", "alt", "poster", "start", "colspan"))
    features = [NAME]

    def __init__(self, element, **kwargs):
        super().__init__(**kwargs)
        self.element = element

    def prepare_markup(self, markup, *args, **kwargs):
        yield markup, None, None, False

    def feed(self, markup) -> None:
        soup = self.soup
        root = self.element
        for event, element in etree.iterwalk(root, events=("start", "end", "comment", "pi")):
            if not isinstance(element.tag, str) and event in ("start", "end"):  # an entity reference XML left as one
                if event == "start":
                    soup.handle_data(element.text or "")
                elif element.tail:
                    soup.handle_data(element.tail)
                continue
            if event == "start":
                attributes = {name: value for name, value in element.items() if name in self.READ_ATTRIBUTES}
                for name in self.URI_ATTRIBUTES:
                    if name in attributes:
                        attributes[name] = quote(attributes[name].strip(" \t\n\r\f"), safe=self.URI_SAFE)
                soup.handle_starttag(element.tag, None, None, attributes)
                if element.text:
                    soup.handle_data(element.text)
                continue
            if event == "comment":
                soup.endData()
                soup.handle_data(element.text or "")
                soup.endData(Comment)
            elif event == "end":
                soup.endData()
                soup.handle_endtag(element.tag)
            # (a processing instruction shows nothing: its tail only)
            if element.tail and element is not root:
                soup.handle_data(element.tail)


class _Converter(MarkdownConverter):
    """markdownify's converter, with what it wrote wrong for pages: blocks it did not know, empty headings, and an
    underscore escaped inside a word."""

    # Block elements markdownify does not know as such (it writes their text inline): an FAQ's question ran into its
    # answer ("Is it free?Yes, always."), a fieldset's legend into its first choice. Written as markdownify writes a
    # <div>: their own paragraphs.
    convert_details = convert_summary = convert_fieldset = convert_legend = MarkdownConverter.convert_div
    convert_header = convert_footer = convert_main = convert_nav = convert_aside = MarkdownConverter.convert_div
    convert_figure = convert_address = convert_hgroup = convert_dialog = convert_menu = MarkdownConverter.convert_div
    convert_search = convert_center = convert_form = MarkdownConverter.convert_div

    def convert_hN(self, n, el, text, parent_tags):
        """A heading with no text (an icon's, or an image's, which the Markdown leaves out) is none: markdownify wrote
        a bare "## " line."""
        return super().convert_hN(n, el, text, parent_tags) if text.strip() else ""

    def process_text(self, el, parent_tags=None):
        """A line break at the edge of a link's or an emphasis's text is a blank there, as a space is: markdownify kept
        a space as the blank before or after "[FABCON](...)" and dropped a line break ("March 16, 2026[FABCON](...)"
        where the page showed "March 16, 2026 FABCON")."""
        text = super().process_text(el, parent_tags)
        parent = el.parent
        if not text or parent is None or parent.name not in _CHOMPED or "pre" in (parent_tags or ()):
            return text
        if text[0] == "\n" and el.previous_sibling is None:
            text = " " + text.lstrip("\n")
        if text[-1] == "\n" and el.next_sibling is None:
            text = text.rstrip("\n") + " "
        return text

    def convert_a(self, el, text, parent_tags):
        """A link, where markdownify's was not one to a reader of Markdown. One whose text is in brackets (a
        footnote's "[1]", "[source]", "[email protected]") has them outside it: "\\[[1](...)\\]", not "[[1]](...)",
        which CommonMark reads but a reader that takes a link's text to its first "]" does not (it kept the target's
        words as text). One round blocks is the blocks (_round_blocks). One inside another, and one to a script
        ("javascript:"), are their text: Markdown has no link in a link (the outer one's brackets and target were left
        as text), and a script's is no place to go."""
        if "a" in parent_tags or (el.get("href") or "").lstrip()[:11].lower() == "javascript:":
            return text
        inner = chomp(text)[2]
        if ("\n" in inner and _BLOCK_MARKS.search(inner)) or (inner[:1] == "#" and el.find(_HEADING_TAGS)):
            return self._round_blocks(el, inner, parent_tags)
        return self._line_link(el, text, parent_tags)

    def _line_link(self, el, text, parent_tags) -> str:
        """A link on one line's text (convert_a's, or the first block's of a link round blocks), its brackets outside
        it. Only a text that holds a "[" is chomped here: convert_a has chomped every link's text once already."""
        if "[" in text:
            prefix, suffix, inner = chomp(text)
            if len(inner) > 2 and inner[0] == "[" and inner[-1] == "]" and not _BRACKETS.search(inner[1:-1]):
                return f"{prefix}\\[{super().convert_a(el, inner[1:-1], parent_tags)}\\]{suffix}"
        return super().convert_a(el, text, parent_tags)

    def convert_dd(self, el, text, parent_tags):
        """A definition as a paragraph of its own. markdownify wrote it as Pandoc does (":   " and its lines indented by
        four blanks), which CommonMark reads as a code block from its second paragraph on: an arXiv listing's authors
        came out as their links' Markdown."""
        if "_inline" in parent_tags:
            return super().convert_dd(el, text, parent_tags)
        return self.convert_div(el, text, parent_tags)

    def _round_blocks(self, el, text, parent_tags) -> str:
        """A link round blocks (a card's title, its price and its list of features under one link): the blocks, the
        link on the first one's text. A link's text is one line's in Markdown: "[## Cup\\n\\n- Semi-open](...)" was
        read by CommonMark as text, brackets and target and all. That line's text is linked as it is: a heading's that
        starts with "#" ("#TBT: Vintage photos", a hashtag) was taken for the blocks again, and again, until Python's
        recursion limit failed the page's conversion (two Zyte articles in whole-page mode)."""
        lines = text.split("\n")
        for at, line in enumerate(lines):
            marks, words, blanks = _BLOCK_LINE.match(line).groups()
            if _WORD.search(words) and not words.startswith(("```", "|")):
                lines[at] = f"{marks}{self._line_link(el, words, parent_tags)}{blanks}"
                break
        return "\n\n" + "\n".join(lines) + "\n\n"

    def convert_video(self, el, text, parent_tags):
        """A video's text (its fallback for old browsers, or the blanks between its <source> tags) on one line: as an
        image's alt text, markdownify wrote its line breaks ("[![\\n\\n](poster.jpg)](video.webm)"). Inside a link, that
        text alone, as for a link inside a link (convert_a). A video with neither text nor poster is named by its
        title, else "Video": markdownify wrote "[](clip.mp4)", a link a reader cannot see."""
        text = " ".join(text.split())
        if "a" in parent_tags:
            return text
        if not text and not el.get("poster"):
            text = " ".join((el.get("title") or "Video").split())
        return super().convert_video(el, text, parent_tags)

    def escape(self, text, parent_tags):
        """markdownify escapes every underscore ("max\\_retries", "Director\\_Oh"): noise in the text a reader or a
        model gets, and a word cut in two by anything that strips Markdown's marks. A run of underscores between two
        letters or digits never opens or closes emphasis (CommonMark's flanking rules), so it is written as it is;
        text comes one node at a time, and an underscore at a node's edge is escaped as before."""
        if "_" not in text or _KEPT in text:
            return super().escape(text, parent_tags)
        kept = _INTRAWORD_UNDERSCORES.sub(lambda run: _KEPT * len(run[0]), text)
        return super().escape(kept, parent_tags).replace(_KEPT, "_")


_CHOMPED = {"a", "b", "strong", "em", "i", "del", "s", "code", "kbd", "samp", "sub", "sup"}  # markdownify's chomp()
_BRACKETS = re.compile(r"[\[\]]")
# A link's text of several lines that holds blocks: a blank line, or a line that opens a heading, a list item, a quote,
# a table or code (on one line, "1. Introduction" is a table of contents' link, not a list)
_BLOCK_MARKS = re.compile(r"\n[ \t]*\n|^[ \t]*(?:#{1,6}[ \t]|[-*+][ \t]|\d{1,9}[.)][ \t]|>|\||```)", re.MULTILINE)
_HEADING_TAGS = re.compile("^h[1-6]$")  # as bs4 finds a tag by its name
_BLOCK_LINE = re.compile(r"^((?:[ \t]*(?:#{1,6}[ \t]+|[-*+][ \t]+|\d{1,9}[.)][ \t]+|>[ \t]*))*)(.*?)(\s*)$")

# A run of underscores between two letters or digits; and what stands for each of them while the rest is escaped.
_INTRAWORD_UNDERSCORES = re.compile(r"(?<=[^\W_])_+(?=[^\W_])")
_KEPT = "\ue000"
_MARKDOWN = _Converter(heading_style="ATX", bullets="-", strip=["img"])


def element_markdown(element) -> str:
    """element (lxml) as Markdown (element's inline boxes are told apart first: it changes)."""
    separate_inline_boxes(element)
    _joined_emphasis(element)
    soup = BeautifulSoup("", builder=_ElementTreeBuilder(element), element_classes={Tag: _Tag})
    markdown = _MARKDOWN.convert_soup(soup)
    # Runs of blank lines made by the page's layout become one; a code block's own blank lines are code.
    parts = FENCED.split(markdown)
    return "".join(part if odd % 2 else BLANK_LINES.sub("\n\n", part) for odd, part in enumerate(parts)).strip() + "\n"


# Inline elements that pages lay out as boxes of their own: a facet's label and its count, an author's name and the
# date, a row of links. Written one after the other with nothing between them, their words ran together in the
# Markdown ("Accessories1385", "Lawrence UlrichMar 7"), where the page showed them apart. Not sub and sup (m², a
# footnote mark), nor anything inside code, where a highlighter's spans split tokens that are one.
_INLINE_BOXES = (
    "span", "a", "label", "time", "button", "strong", "b", "em", "i", "small", "abbr", "cite", "data", "output",
    "mark", "u", "s", "del", "ins", "q", "dfn", "var",
)  # fmt: skip
_FIRST_TEXT = etree.XPath("string((.//text())[1])", smart_strings=False)
_LAST_TEXT = etree.XPath("string((.//text())[last()])", smart_strings=False)
_IN_CODE = etree.XPath("ancestor::pre|ancestor::code")


def separate_inline_boxes(root) -> None:
    """A space between two sibling inline elements (_INLINE_BOXES) with nothing between them, where a letter or digit
    ends the first and another starts the second. Where a small letter starts the second, only when the two are
    named apart (a field's "<span class=name>id</span><span class=type>string</span>"): else it is a word's next
    part, where a page's editor began a new run of text ("3<span>rd</span>", "child<span>ren</span>"). Not where
    either is a lone letter (a drop cap, a title animated letter by letter)."""
    has_code = root.find(".//pre") is not None or root.find(".//code") is not None
    for element in root.iter(_INLINE_BOXES):
        before = element.getprevious()
        if before is None or before.tail or not isinstance(before.tag, str) or before.tag not in _INLINE_BOXES:
            continue
        first, last = _FIRST_TEXT(element), _LAST_TEXT(before)
        if not first[:1].isalnum() or not last[-1:].isalnum():
            continue
        if first[:1].islower() and (not before.get("class") or before.get("class") == element.get("class")):
            continue
        if _lone_letter(first) or _lone_letter(last):
            continue
        if has_code and _IN_CODE(element):
            continue
        before.tail = " "


def _lone_letter(text: str) -> bool:
    return len(text := text.strip()) == 1 and text.isalpha()


_EMPHASIS = {"b": "strong", "strong": "strong", "i": "em", "em": "em"}


def _joined_emphasis(root) -> None:
    """Two emphasis elements of one kind with nothing between them become one ("<b>inittab</b><b>:</b>"): Markdown
    cannot write them apart, and "**inittab****:**" showed its asterisks. (Two that separate_inline_boxes spaced
    stay two.)"""
    for element in list(root.iter(*_EMPHASIS)):
        before = element.getprevious()
        if before is None or before.tail or not isinstance(before.tag, str):
            continue
        if _EMPHASIS.get(before.tag) != _EMPHASIS[element.tag] or element.getparent() is None:
            continue
        if element.text:
            if len(before):
                before[-1].tail = (before[-1].tail or "") + element.text
            else:
                before.text = (before.text or "") + element.text
        before.extend(list(element))  # each child with its tail
        before.tail = element.tail
        element.getparent().remove(element)


_LINKS = {"a": ("href",), "video": ("src", "poster"), "source": ("src",)}  # the URLs the Markdown keeps
_ABSOLUTE = ("https://", "http://")


def resolve_links(root, base: str | None) -> None:
    """Resolve root's link targets that the Markdown keeps against base (when there is one: before trafilatura, which
    resolves a relative link against the site's root, not the page), and take out of them the characters XML does
    not allow (_NOT_XML). lxml's make_links_absolute does every URL-bearing attribute and CSS url() of every element:
    three times the work."""
    for element in root.iter(*_LINKS):
        for name in _LINKS[element.tag]:
            value = element.get(name)
            if not value or value.isspace():  # none, or a link to the page itself
                continue
            target = _NOT_XML.sub("", value) if _NOT_XML.search(value) else value
            if base and not target.startswith(_ABSOLUTE):  # most links are: urljoin was a twentieth of the time
                target = _joined(base, target)
            if target != value:
                element.set(name, target)


def _joined(base: str, target: str) -> str:
    """target resolved against base; as written when it cannot be parsed."""
    try:
        return urljoin(base, target.strip())
    except ValueError:
        return target


# Characters XML does not allow (C0 controls save tab, line feed and carriage return). lxml reads them in an attribute
# written as a character reference ("&#8;"), then refuses to set them in one: a relative link with one made the page's
# conversion fail, and trafilatura, which copies each link's target into an attribute of its own, dropped the whole
# page's text (a share link quoting a comment: stylebyemilyhenderson.com's post came out as its main region, comments
# and all).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def escaped(text: str) -> str:
    """text as Markdown text: what Markdown would read as marks escaped (as markdownify escapes a page's text)."""
    return _MARKDOWN.escape(text, set())

"""Lines of a page's Markdown that are not its content, left out once the Markdown is written: a block given twice (a
quoted post, a block rendered once per screen size, a card's title given again), a section headed as other pages'
("Related articles"), a line that is a control alone ("Add to cart"). Code blocks are kept as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from runs.engine.html_markdown import BLANK_LINES, FENCED

__all__ = [
    "markdown_words",
    "without_controls",
    "without_doubled_lines",
    "without_related",
    "without_repeated_runs",
    "without_repeats",
]

# A line that is one of a page's controls and nothing else: a button's or a link's label, a loading placeholder, a sort
# menu's current choice; in a list item, a heading, emphasis or a link (its target too) as well. On the WCXB dev
# split: 30 pages better, 1 worse, +0.0004 (every half alike; "sign in" lines were kept: a sign-in page's title).
# A product card's own controls ("Compare", "Quick shop", "Choose options", "Select size", a "Sponsored" tag): 14
# better, none worse, +0.0002. A thread's ("Click to expand...", "Add a comment", "3 Likes"), a breadcrumb's or a share
# bar's last words ("Home", "Email"), a way back ("Back to blog", "Back to all jobs"), a sign-up button, a table of
# contents' label: 70 better, 10 worse (a docs page's "Email" field), +0.00013, both halves alike. A share bar's
# targets and a post's buttons ("Facebook", "WhatsApp", "Copy link", "Reply", "Quote", "Permalink"): 18 better, 1
# worse, +0.00002.
_CONTROL = re.compile(
    r"^[\s>*#\-\[]*(?:skip to [\w ]{0,30}|loading\W*|sort(?: by)?\s*:[\w ]{0,25}|sort by|sort and filter|"
    r"show more|show less|load more|view all|see all|see more|add to (?:cart|bag|basket|wishlist|list|compare)|"
    r"quick ?view|quick ?shop|compare|(?:ne plus )?comparer|(?:choose|view|select) options|select size|sponsored|"
    r"share|print|read more|learn more|shop now|next|previous|close|click to [\w ]{1,20}|add a comment|"
    r"\d+ likes?|home|email|back to (?:all |my )?[\w-]+|sign up(?: [\w ]{0,20})?|table of contents|facebook|twitter|"
    r"whatsapp|reddit|tumblr|pinterest|linkedin|copy link|reply|quote|permalink|ask question)"
    r"[^\w\n]*(?:\]\([^)\n]*\))?[^\w\n]*$",
    re.IGNORECASE,
)
# A heading over other pages than this one: related articles or products, recommendations, recently viewed items. On
# the WCXB dev split, leaving their sections out (without_related): +0.0006, 22 pages better, 6 worse (a docs page's
# "Related products" attribute; an article whose paragraphs follow a related-articles box's heading, its links gone).
# A product page's "Explore related items", "Frequently bought together", "Recommended accessories", "Complete the
# look" as well: +0.0003 more, 5 pages better (4 held out), 1 worse by 0.002.
_ABOUT_OTHER_PAGES = re.compile(
    r"\W*(?:(?:explore |see |browse |discover )?related (?:articles|posts|products|items|stories|content|insights|"
    r"resources|reading|news|links|videos|guides|topics|searches|categories|services|jobs|listings|questions|sponsors)"
    r"(?: [\w']+){0,3}|you (?:may|might) also (?:like|enjoy)|recommended(?: for you| accessories| products)?|"
    r"more like this|(?:people|customers) (?:who \w+ this \w+ )?also (?:viewed|bought|liked)|"
    r"(?:frequently|often) bought together|complete the (?:set|look)|"
    r"similar (?:items|products)|recently viewed(?: \w+)?|more from [\w ]{1,30}|you may also be interested in|"
    r"latest (?:posts|news|articles)|popular (?:posts|articles)|read next|more (?:stories|articles|posts|news))\W*$",
    re.IGNORECASE,
)
_HEADING = re.compile(r"(#{2,6})\s")  # below the page's title: a page titled "Related articles" is about them
_WORD = re.compile(r"\w+")
_LINK_TARGET = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_QUOTE_BREAK = re.compile(r"\s*>[>\s]*$")  # a quote's blank line, between its paragraphs
_ONCE_WORDS = 5  # a repeated line shorter than this ("Thanks!", "+1 same here") is kept (without_repeats)
# A run of lines given twice is left out when it holds this many words or more (without_repeated_runs); runs are found
# as windows of RUN_LINES lines holding RUN_WORDS words or more. On the WCXB dev split: 13 pages better, 2 worse
# (offers whose terms repeat), +0.0013, every half alike; from 60 words on, more pages lost (8 against 26).
REPEATED_RUN_WORDS = 150
RUN_LINES = 3
RUN_WORDS = 12
# The most text lines a block given twice in a row may have (without_doubled_lines). Blocks of 2 lines and more (a
# product's title, badges and promise once per screen size): +0.0006 on the WCXB dev split, 26 pages better, 5 worse,
# every half alike; with or without a least number of words (8, 20), within 0.0001 of that.
DOUBLED_LINES = 12


def markdown_words(line: str) -> tuple[str, ...]:
    """The words of a Markdown line (or text) in lower case (a quote's ">" marks, a list's "-", emphasis and link
    targets aside)."""
    return tuple(word.lower() for word in _WORD.findall(_LINK_TARGET.sub(r"\1", line)))


def _table_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def _between_code(markdown: str, edit: Callable[[list[str]], list[str]]) -> str:
    """markdown with the lines of each stretch between its code blocks as edit gives them back, runs of blank lines
    made one; code blocks, whose own blank lines are code, as they are."""
    parts = FENCED.split(markdown)
    for index in range(0, len(parts), 2):
        parts[index] = BLANK_LINES.sub("\n\n", "\n".join(edit(parts[index].split("\n"))))
    return "".join(parts)


def without_repeated_runs(markdown: str) -> str:
    """markdown without a run of lines of REPEATED_RUN_WORDS words or more given word for word before: a page that
    renders a block once per screen size (phone, tablet, desktop) shows one of them, and the Markdown, made without
    the page's CSS, gave it two or three times. Runs are found as windows of RUN_LINES lines (of RUN_WORDS words or
    more) seen before, one after another, between two code blocks: docs that give the same steps with each language's
    code (twilio's quickstart tabs) keep them with each. A shorter repeat is kept (a pricing plan's features, listed
    again in the next plan), and so are code blocks and table rows."""

    def edit(lines: list[str]) -> list[str]:
        words = [() if _table_row(line) else markdown_words(line) for line in lines]
        text_lines = [at for at, line_words in enumerate(words) if line_words]
        repeated = [False] * len(text_lines)
        seen: set[tuple[tuple[str, ...], ...]] = set()
        for start in range(len(text_lines) - RUN_LINES + 1):
            window = tuple(words[at] for at in text_lines[start : start + RUN_LINES])
            if sum(map(len, window)) < RUN_WORDS:
                continue
            if window in seen:
                repeated[start : start + RUN_LINES] = [True] * RUN_LINES
            seen.add(window)
        dropped: set[int] = set()
        run: list[int] = []
        for position, in_run in enumerate([*repeated, False]):
            if in_run:
                run.append(text_lines[position])
                continue
            if sum(len(words[at]) for at in run) >= REPEATED_RUN_WORDS:
                dropped.update(run)
            run = []
        return [line for at, line in enumerate(lines) if at not in dropped]

    return _between_code(markdown, edit)


def without_doubled_lines(markdown: str) -> str:
    """markdown without a block of lines (up to DOUBLED_LINES text lines) given again right after itself, word for word:
    a card's title written as a link and again as a heading (and a third time for another screen size), a tagline
    given twice, a product's title, badges and promise given once per screen size one after the other. Blank lines and
    lines without words do not part the two; a table row is never left out, and code blocks are kept as they are."""

    def edit(lines: list[str]) -> list[str]:
        words = [markdown_words(line) for line in lines]
        text_lines = [at for at, line_words in enumerate(words) if line_words]
        dropped: set[int] = set()
        start = 0
        while start < len(text_lines):
            for size in range(min(DOUBLED_LINES, (len(text_lines) - start) // 2), 0, -1):
                if words[text_lines[start]] != words[text_lines[start + size]]:
                    continue  # most sizes part at the first line
                block, again = text_lines[start : start + size], text_lines[start + size : start + 2 * size]
                if [words[at] for at in block] == [words[at] for at in again] and not any(
                    _table_row(lines[at]) for at in again
                ):
                    dropped.update(again)
                    del text_lines[start + size : start + 2 * size]  # and the block is tried again: a third copy
                    break
            else:
                start += 1
        return [line for at, line in enumerate(lines) if at not in dropped]

    return _between_code(markdown, edit)


def without_controls(markdown: str) -> str:
    """markdown without the lines that are a page's controls alone (_CONTROL: "Add to cart", "Read more", "Loading...",
    "Sort: Best Match", "Skip to content"...), as a link, a heading or a list item too. Code blocks are kept whole."""
    kept = _between_code(markdown, lambda lines: [line for line in lines if not _CONTROL.match(line)]).strip("\n")
    return f"{kept}\n" if kept else ""


def without_related(markdown: str) -> str:
    """markdown without the sections headed as other pages' (_ABOUT_OTHER_PAGES: "Related articles", "You may also
    like", "More like this", "Recently viewed"...): such a heading (h2 to h6; an h1 is the page's own title) and what
    follows it up to the next heading of its level or above. Code blocks are kept whole."""

    def edit(lines: list[str]) -> list[str]:
        kept: list[str] = []
        left_out = 0  # the level of the heading whose section is being left out; 0: none is
        for line in lines:
            heading = _HEADING.match(line)
            if heading and len(heading[1]) <= left_out:
                left_out = 0
            if heading and not left_out and _ABOUT_OTHER_PAGES.match(_LINK_TARGET.sub(r"\1", line[heading.end() :])):
                left_out = len(heading[1])
            if not left_out or not line.strip():  # blank lines kept: runs of them are made one
                kept.append(line)
        return kept

    return _between_code(markdown, edit)


def without_repeats(markdown: str) -> str:
    """markdown with each line of _ONCE_WORDS words or more given once, by its words (a quote's ">" marks, a list's
    "-", emphasis and link targets aside): a reply that quotes an earlier post, a thread rendered twice (threaded and
    flat) repeat posts word for word. Code blocks are kept whole, and so are table rows (a table's header and its
    rows are not quotes)."""
    seen: set[tuple[str, ...]] = set()  # across the whole thread, code blocks or not between

    def edit(lines: list[str]) -> list[str]:
        kept: list[str] = []
        dropped_after: set[int] = set()  # i: a line was left out between kept[i] and kept[i + 1]
        for line in lines:
            words = markdown_words(line)
            if len(words) >= _ONCE_WORDS and not _table_row(line):
                if words in seen:
                    dropped_after.add(len(kept) - 1)
                    continue
                seen.add(words)
            kept.append(line)
        # A quote's blank line next to a paragraph left out would be an empty quote, or start one.
        return [
            line
            for at, line in enumerate(kept)
            if not (_QUOTE_BREAK.match(line) and (at - 1 in dropped_after or at in dropped_after))
        ]

    return _between_code(markdown, edit)

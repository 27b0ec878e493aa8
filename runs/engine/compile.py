"""Compile a model's answer into extraction rules: for each leaf of the answer, find its value in the page the model
read (JSON-LD and microdata first, then the elements' text and attributes, numbers and currencies read as the rules
read them, then the page's meta tags) and derive the most robust rule that gives it back: a schema.org property, a
CSS selector anchored on what lasts (ids, itemprop, data- attributes, classes that are words) before positions, or
a meta property. An array compiles as one item selector with fields relative to it. A value found in several
unrelated places is left to the model unless one place names the field.

Every rule is verified: applied by the rule engine (runs/engine/extract_rules.py) to the same page it must give the
model's value back (whitespace collapsed, numbers compared as numbers). What does not verify stays with the model.
Pure: no Django, no network; the page is HTML in memory.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

from lxml.cssselect import CSSSelector, SelectorError

from runs.engine.extract_rules import RulePage, coerce, extract_from, item_types, plain, structured_items

RULE = "rule"
MODEL = "model"

# Text longer than this is not a value's element (it holds more than the value).
MAX_VALUE_TEXT = 300
# How far up a selector looks for an anchor (an id or a class that names something).
ANCHOR_LEVELS = 4
SKIPPED_TAGS = {"script", "style", "noscript", "template", "head", "title", "html", "body"}
VALUE_ATTRIBUTES = ("content", "value", "datetime", "title", "alt", "href", "src", "data-value")
_NAME = re.compile(r"^[a-zA-Z_][\w-]*$")
_IDENTIFIER = re.compile(r"^[a-zA-Z_][\w-]*$")


@dataclass
class Compiled:
    """The query's schema with a rule on every leaf that compiled, and per leaf path who fills it; render "http"
    when the rules give the same values on the page as plain HTTP serves it (replays then need no browser)."""

    schema: dict
    fields: dict[str, str]
    render: str = "browser"

    @property
    def rule_count(self) -> int:
        return sum(1 for who in self.fields.values() if who == RULE)


# Comparing values as the rules give them


def _is_empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def same(got: Any, want: Any) -> bool:
    """Whether a rule's value is the model's: whitespace collapsed, numbers as numbers, lists item by item."""
    if _is_empty(want) or _is_empty(got):
        return _is_empty(want) and _is_empty(got)
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(want, str) and isinstance(got, str):
        return " ".join(got.split()) == " ".join(want.split())
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(same(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict) and isinstance(got, dict):
        return all(same(got.get(key), value) for key, value in want.items())
    return False


def _name_tokens(name: str) -> set[str]:
    """price -> {price}; regularPrice -> {regular, price}; in_stock -> {stock}."""
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ").lower().split()
    return {word for word in words if len(word) >= 3}


def _names_field(element, tokens: set[str], levels: int = 2) -> bool:
    """The element or a close ancestor says what it holds in a way that names the field (class, id, itemprop…)."""
    node = element
    for _ in range(levels + 1):
        if node is None or not isinstance(node.tag, str):
            return False
        described = " ".join(
            value for key, value in node.attrib.items() if key in ("class", "id", "itemprop", "name") or "data-" in key
        ).lower()
        if any(token in described for token in tokens):
            return True
        node = node.getparent()
    return False


# Selectors


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def stable_name(name: str) -> bool:
    """A class or id a person chose (price, product-title, v2-feature), not one a build tool generated
    (css-1x9f3a, sc-bdfBwQ, jsx-4218794): no part mixes letters with several digits or flips case again and again."""
    if not _NAME.match(name) or len(name) > 40:
        return False
    for part in re.split(r"[-_]", name):
        digits = sum(ch.isdigit() for ch in part)
        if digits >= 2 and (digits < len(part) or len(part) >= 4):
            return False
        if sum(1 for a, b in itertools.pairwise(part) if a.islower() and b.isupper()) >= 2:
            return False
    return True


def _classes(element) -> list[str]:
    return [name for name in (element.get("class") or "").split() if stable_name(name)]


def own_selectors(element) -> list[str]:
    """Ways to name this element by what it is, most lasting first (none by position)."""
    tag = element.tag if _IDENTIFIER.match(element.tag) else "*"
    found = []
    element_id = element.get("id")
    if element_id and stable_name(element_id):
        found.append(f"#{element_id}")
    if element.get("itemprop"):
        found.append(f"{tag}[itemprop={_quote(element.get('itemprop'))}]")
    for key, value in element.attrib.items():
        if key.startswith("data-") and _IDENTIFIER.match(key):
            if value and len(value) <= 40 and not any(ch.isdigit() for ch in value):
                found.append(f"{tag}[{key}={_quote(value)}]")
            found.append(f"{tag}[{key}]")
    classes = _classes(element)
    found += [f"{tag}.{name}" for name in classes]
    if len(classes) >= 2:
        found.append(f"{tag}.{classes[0]}.{classes[1]}")
    if element.get("name") and _IDENTIFIER.match(element.get("name")):
        found.append(f"{tag}[name={_quote(element.get('name'))}]")
    return found


def _position(element) -> str:
    tag = element.tag
    parent = element.getparent()
    if parent is None:
        return tag
    same_tag = [child for child in parent if child.tag == tag]
    return tag if len(same_tag) == 1 else f"{tag}:nth-of-type({same_tag.index(element) + 1})"


def selectors_for(element) -> list[str]:
    """Candidate selectors for an element: its own names, then anchored on a named ancestor, then a path of
    positions from the nearest ancestor with an id (or the body)."""
    own = own_selectors(element)
    candidates = list(own)
    tail = own[:3] or [element.tag if _IDENTIFIER.match(element.tag) else "*"]
    ancestor = element.getparent()
    for _ in range(ANCHOR_LEVELS):
        if ancestor is None or not isinstance(ancestor.tag, str) or ancestor.tag in ("body", "html"):
            break
        for anchor in own_selectors(ancestor)[:3]:
            candidates += [f"{anchor} {name}" for name in tail]
        ancestor = ancestor.getparent()
    candidates.append(position_path(element))
    return list(dict.fromkeys(candidates))


def position_path(element) -> str:
    """The element by position, from the nearest ancestor with an id (or the body): what is left when nothing names
    it."""
    steps = []
    node = element
    while node is not None and isinstance(node.tag, str) and node.tag not in ("body", "html"):
        node_id = node.get("id")
        if node_id and stable_name(node_id) and node is not element:
            steps.append(f"#{node_id}")
            break
        steps.append(_position(node))
        node = node.getparent()
    return " > ".join(reversed(steps)) if steps else element.tag


def _select(scope, selector: str) -> list:
    try:
        return CSSSelector(selector)(scope)
    except SelectorError:
        return []


# Where a value stands in the page


class PageIndex:
    """The page's elements with their collapsed text, read once for all leaves."""

    def __init__(self, page: RulePage):
        self.page = page
        self.elements: list[tuple[Any, str]] = []
        for element in page.tree.iter():
            if not isinstance(element.tag, str) or element.tag in SKIPPED_TAGS:
                continue
            if any(ancestor.tag in SKIPPED_TAGS - {"html", "body", "head"} for ancestor in element.iterancestors()):
                continue
            text = " ".join(element.text_content().split())
            self.elements.append((element, text if len(text) <= MAX_VALUE_TEXT else ""))

    def sites(self, value: Any, schema: dict) -> list[tuple[Any, str | None]]:
        """(element, attribute or None for its text) whose value, read as a rule reads it, is `value`. Of nested
        elements with the same text, the innermost."""
        found: list[tuple[Any, str | None]] = []
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        for element, text in self.elements:
            if text and (
                (numeric and len(text) <= 60 and same(coerce(text, schema), value))
                or (isinstance(value, str) and same(text, value))
            ):
                found.append((element, None))
            for attribute in VALUE_ATTRIBUTES:
                raw = element.get(attribute)
                if raw and (same(coerce(raw, schema), value) if numeric else same(raw, value)):
                    found.append((element, attribute))
        inner = {id(element) for element, attribute in found if attribute is None}
        return [
            (element, attribute)
            for element, attribute in found
            if attribute is not None or not any(id(child) in inner for child in element.iterdescendants())
        ]


def _site_choices(sites: list[tuple[Any, str | None]], name: str) -> list[tuple[Any, str | None]]:
    """The places a leaf may be read from: the one place, or of several the ones that name the field; none when the
    value stands in unrelated places (which one the model read cannot be known)."""
    if len(sites) <= 1:
        return sites
    tokens = _name_tokens(name)
    named = [site for site in sites if tokens and _names_field(site[0], tokens)]
    distinct = {id(element) for element, _ in named}
    return named if len(distinct) == 1 else []


# Compiling leaves


def _structured_rules(index: PageIndex, name: str, schema: dict, value: Any, sources: tuple[str, ...]) -> list[dict]:
    """x-source rules whose property holds the value, the one named like the field first. Not "heuristic": what it
    reads is a guess about the page's layout, and a compiled rule must be what the page declares or a selector."""
    found = []
    for source in sources:
        for item in structured_items(index.page, source):
            kinds = item_types(item)
            for path, raw in _properties(item):
                got = [coerce(plain(v), schema.get("items", {})) for v in raw] if isinstance(raw, list) else None
                if schema.get("type") == "array":
                    if got is None or not same(got, value):
                        continue
                elif not same(coerce(plain(raw), schema), value):
                    continue
                rule = {"x-source": source, "x-property": path}
                if kinds:
                    rule["x-type"] = kinds[0]
                found.append(rule)
    tokens = _name_tokens(name) or {name.lower()}
    found.sort(
        key=lambda rule: (not any(t in rule["x-property"].lower() for t in tokens), rule["x-property"].count("."))
    )
    return found


def _properties(item: Any, prefix: str = "", depth: int = 0):
    """(dotted path, value) of a schema.org item's properties, nested items included (a few levels)."""
    container = item.get("properties") if isinstance(item.get("properties"), dict) else item
    for key, value in container.items():
        if key.startswith("@") or key in ("type", "id"):
            continue
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and depth < 3:
            yield from _properties(value, path, depth + 1)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value) and depth < 3:
            yield from _properties(value[0], path, depth + 1)
        else:
            yield path, value


def _verified(index: PageIndex, name: str, schema: dict, rule: dict, value: Any) -> bool:
    probe = {"type": "object", "properties": {name or "value": {**schema, **rule}}}
    try:
        got = extract_from(index.page, probe)[name or "value"]
    except Exception:  # a rule the engine refuses is simply not kept
        return False
    return same(got, value)


def compile_scalar(index: PageIndex, name: str, schema: dict, value: Any) -> dict | None:
    """The most robust rule that gives this leaf's value back on this page, or None: schema.org data, then a
    selector, then the page's meta tags (a selector names the element itself; meta reads any tag of the property)."""
    for rule in _structured_rules(index, name, schema, value, ("jsonld", "microdata")):
        if _verified(index, name, schema, rule, value):
            return rule
    for element, attribute in _site_choices(index.sites(value, schema), name):
        for selector in selectors_for(element):
            matches = _select(index.page.tree, selector)
            if not matches or matches[0] is not element:
                continue
            rule = {"x-selector": selector, **({"x-attr": attribute} if attribute else {})}
            if _verified(index, name, schema, rule, value):
                return rule
    for rule in _structured_rules(index, name, schema, value, ("meta",)):
        if _verified(index, name, schema, rule, value):
            return rule
    return None


def compile_array(index: PageIndex, name: str, schema: dict, values: list) -> dict | None:
    """One rule for a whole array: a schema.org list, an item selector (scalars), or an item selector with fields
    relative to each item (objects)."""
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    if all(not isinstance(v, (dict, list)) for v in values):
        for rule in _structured_rules(index, name, schema, values, ("jsonld", "microdata")):
            if _verified(index, name, schema, rule, values):
                return rule
        first = [element for element, attribute in index.sites(values[0], items) if attribute is None]
        for element in first:
            for selector in _item_selectors(element):
                if _verified(index, name, schema, {"x-selector": selector}, values):
                    return {"x-selector": selector}
        return None
    if items.get("type") != "object" or not all(isinstance(v, dict) for v in values):
        return None
    return _compile_object_array(index, name, schema, items, values)


def _item_selectors(element) -> list[str]:
    """Selectors that may name every item of a list, from one of them: its kind (tag and classes), anchored on its
    container."""
    tag = element.tag
    kinds = [f"{tag}.{name}" for name in _classes(element)] + [
        f"{tag}[itemprop={_quote(element.get('itemprop'))}]" for _ in [0] if element.get("itemprop")
    ]
    kinds.append(tag)
    candidates = []
    parent = element.getparent()
    anchors = own_selectors(parent)[:3] if parent is not None else []
    grand = parent.getparent() if parent is not None else None
    anchors += [f"{a} {parent.tag}" for a in (own_selectors(grand)[:2] if grand is not None else [])]
    if parent is not None:
        anchors.append(position_path(parent))
    for kind in kinds:
        candidates += [f"{anchor} > {kind}" for anchor in anchors]
        if kind != tag:
            candidates.append(kind)
    return list(dict.fromkeys(candidates))


def _compile_object_array(index: PageIndex, name: str, schema: dict, items: dict, values: list[dict]) -> dict | None:
    fields = {key: child for key, child in (items.get("properties") or {}).items() if not _is_empty(values[0].get(key))}
    if not fields:
        return None
    # The first item's container: the innermost element holding a place of each of its fields.
    places = []
    for key, child in fields.items():
        sites = [element for element, attribute in index.sites(values[0][key], child) if attribute is None]
        if not sites:
            return None
        places.append(sites)
    for container in _common_ancestors([sites[0] for sites in places]):
        for item_selector in _item_selectors(container):
            containers = _select(index.page.tree, item_selector)
            if len(containers) != len(values) or containers[0] is not container:
                continue
            relative = _relative_fields(container, fields, values[0], places)
            if relative is None:
                continue
            item_schema = copy.deepcopy(items)
            for key, rule in relative.items():
                item_schema["properties"][key].update(rule)
            rule = {"x-selector": item_selector}
            if _verified(index, name, {**schema, "items": item_schema}, rule, values):
                return {**rule, "items": item_schema}
    return None


def _common_ancestors(elements: list) -> list:
    """The ancestors all elements share, innermost first (the elements themselves included when they are one)."""
    chains = [[element, *element.iterancestors()] for element in elements]
    shared = [node for node in chains[0] if all(any(node is other for other in chain) for chain in chains[1:])]
    return [node for node in shared if isinstance(node.tag, str) and node.tag not in ("html", "body")][:3]


def _relative_fields(container, fields: dict, first: dict, places: list) -> dict[str, dict] | None:
    rules = {}
    for (key, child), sites in zip(fields.items(), places, strict=True):
        site = next((element for element in sites if any(a is container for a in element.iterancestors())), None)
        if site is None:
            return None
        for selector in [*own_selectors(site), site.tag]:
            matches = _select(container, selector)
            if (
                matches
                and matches[0] is site
                and same(coerce(" ".join(site.text_content().split()), child), first[key])
            ):
                rules[key] = {"x-selector": selector}
                break
        else:
            return None
    return rules


# The whole answer


def _leaves(schema: dict, answer: Any, path: str = ""):
    """(path, name, schema, value) of every leaf of the answer; arrays are leaves."""
    if schema.get("type") == "object" and isinstance(schema.get("properties"), dict) and "x-selector" not in schema:
        for key, child in schema["properties"].items():
            if isinstance(child, dict):
                yield from _leaves(
                    child, answer.get(key) if isinstance(answer, dict) else None, f"{path}.{key}" if path else key
                )
        return
    yield path, path.rsplit(".", 1)[-1], schema, answer


def _node(schema: dict, path: str) -> dict:
    node = schema
    for key in path.split("."):
        node = node["properties"][key]
    return node


def has_rule(schema: dict) -> bool:
    return "x-selector" in schema or "x-source" in schema


def compile_answer(html: str, url: str | None, schema: dict, answer: Any) -> Compiled:
    """The query's schema with a verified rule on each leaf of the answer that could be compiled; `fields` says of
    every leaf whether a rule or the model fills it. Leaves that already had a rule keep it."""
    index = PageIndex(RulePage(html, url))
    compiled = copy.deepcopy(schema)
    fields: dict[str, str] = {}
    for path, name, node, value in _leaves(schema, answer):
        if not path:
            continue  # a schema that is one leaf (not an object) is not compiled
        if has_rule(node):
            fields[path] = RULE
            continue
        rule = None
        if isinstance(value, list) and value:
            rule = compile_array(index, name, node, value)
        elif not _is_empty(value) and not isinstance(value, (dict, list)):
            rule = compile_scalar(index, name, node, value)
        if rule is None:
            fields[path] = MODEL
            continue
        _node(compiled, path).update(rule)
        fields[path] = RULE
    return Compiled(schema=compiled, fields=fields)


def reproduces(html: str, url: str | None, compiled: Compiled, answer: Any) -> bool:
    """Whether the compiled rules give the answer's values back on this HTML (another copy of the page)."""
    try:
        got = extract_from(RulePage(html, url), rules_only(compiled.schema, compiled.fields))
    except Exception:
        return False
    for path, who in compiled.fields.items():
        if who != RULE:
            continue
        value, want = got, answer
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
            want = want.get(key) if isinstance(want, dict) else None
        if not same(value, want):
            return False
    return True


def rules_only(compiled_schema: dict, fields: dict[str, str]) -> dict:
    """The compiled schema cut to the leaves rules fill (what a replay runs first)."""
    return _cut(compiled_schema, "", {path for path, who in fields.items() if who == RULE})


def model_only(schema: dict, fields: dict[str, str]) -> dict:
    """The query's schema cut to the leaves the model fills (what a mixed replay asks it for)."""
    return _cut(schema, "", {path for path, who in fields.items() if who == MODEL})


def _cut(schema: dict, path: str, keep: set[str]) -> dict:
    cut = {key: value for key, value in schema.items() if key not in ("properties", "required")}
    properties = {}
    for key, child in (schema.get("properties") or {}).items():
        child_path = f"{path}.{key}" if path else key
        if child_path in keep:
            properties[key] = child
        elif any(kept.startswith(child_path + ".") for kept in keep) and isinstance(child, dict):
            properties[key] = _cut(child, child_path, keep)
    cut["properties"] = properties
    required = [key for key in schema.get("required", []) if key in properties]
    if required:
        cut["required"] = required
    return cut


def merge(base: Any, extra: Any) -> Any:
    """The rules' output with the model's answer for the leaves it filled."""
    if isinstance(base, dict) and isinstance(extra, dict):
        merged = dict(base)
        for key, value in extra.items():
            merged[key] = merge(base.get(key), value)
        return merged
    return extra if extra is not None else base


def filled_leaves_now_empty(output: Any, query_schema: dict, fields: dict[str, str]) -> list[str]:
    """Leaves compiled from the model's answer that hold nothing in this output: the page no longer has them where
    the rules look (a template change), and the model must read the page again. Leaves whose rule the query itself
    gives may be empty as its author allowed."""
    empty = []
    for path, who in fields.items():
        if who != RULE or has_rule(_node(query_schema, path)):
            continue
        value: Any = output
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if _is_empty(value):
            empty.append(path)
    return empty

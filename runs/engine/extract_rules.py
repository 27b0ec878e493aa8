"""Extraction without a model: CSS selectors, schema.org data and product signals of the page, driven by the schema.

A leaf field carries either
  "x-selector": a CSS selector (its text, or the attribute named by "x-attr"), or
  "x-source": where schema.org-shaped data is read, with "x-property": a dotted schema.org path such as
              "offers.price", or a list of paths tried in order (default: the field name), and optionally "x-type"
              (default from the nearest object above that names one, else the first item found). Sources:
      "jsonld", "microdata": the page's structured data (extruct);
      "meta":      OpenGraph / product meta tags (product:price:amount, og:price:amount, product:availability,
                   product:retailer_item_id, ...), itemprop attributes outside any microdata item, schema.org RDFa;
      "heuristic": what the page shows: the price nearest its main h1, else its add-to-cart button (price-parser),
                   availability phrases in several languages, values after labels such as SKU, Art.-Nr., EAN, MPN,
                   the item's id in the page's address when the page shows it (as sku);
      "structured": jsonld, microdata, meta, heuristic in that order, field by field (the first that has a value
                   for the property wins; the later ones are read only when needed).
              meta and heuristic give one Product item (its Offer under "offers", also an item of its own) with the
              properties name, sku, gtin (gtin8..14 from itemprop/RDFa), mpn, brand.name, offers.price,
              offers.priceCurrency, offers.availability (a schema.org name such as InStock); see product_signals.
              A path through a list (several offers, one per size or seller; a product group's variants) reads
              the orderable elements first (_orderable): the price is one a buyer can pay, from the offer whose
              availability is given; an availability is an orderable one if any is (_best_availability).
A leaf may add "x-fallback": a list of such rules, tried in order when the first finds nothing.
An array field with "x-selector" yields one item per match; its item schema's selectors are relative to it.
Deterministic and free: no model is called. rule_problems() checks every rule of a schema before any page is
loaded (the API calls it at submit), so a run never fails on a rule after its page loaded.
"""

from __future__ import annotations

import re
from typing import Any

import extruct
from lxml import html as lxml_html
from lxml.cssselect import CSSSelector, SelectorError

from runs.engine.html_tree import schema_org_items
from runs.engine.product_signals import heuristic_product, meta_product

SOURCES = ("jsonld", "microdata", "meta", "heuristic", "structured")
# What "structured" tries, in order: the first source that has a value for the property wins.
STRUCTURED_ORDER = ("jsonld", "microdata", "meta", "heuristic")
_SCHEMA_ORG = re.compile(r"^https?://schema\.org/", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d.,\s]*")


# The keys one rule (a field, or an entry of x-fallback) may carry.
RULE_KEYS = ("x-selector", "x-attr", "x-source", "x-property", "x-type")


class RuleError(ValueError):
    """A schema whose rules cannot be applied (bad selector, unknown source)."""


def selector_problem(selector: object) -> str | None:
    """Why a value is not a CSS selector this engine can apply (the same parser the extraction uses), or None."""
    if not isinstance(selector, str) or not selector.strip():
        return "Must be a CSS selector (a non-empty string)."
    try:
        CSSSelector(selector)
    except SelectorError as error:
        return f"{selector!r} is not a CSS selector this service can apply: {str(error).rstrip('.')}."
    return None


def _rule_problems(rule: dict, path: str, *, in_fallback: bool) -> dict[str, str]:
    problems: dict[str, str] = {}

    def at(key: str) -> str:
        return f"{path}.{key}" if path else key

    if "x-selector" in rule:
        problem = selector_problem(rule["x-selector"])
        if problem:
            problems[at("x-selector")] = problem
    for key in ("x-attr", "x-type"):
        if key in rule and (not isinstance(rule[key], str) or not rule[key].strip()):
            what = "an attribute name" if key == "x-attr" else "a schema.org type such as Product"
            problems[at(key)] = f"Must be {what} (a non-empty string)."
    if "x-source" in rule and rule["x-source"] not in SOURCES:
        problems[at("x-source")] = f"Must be one of {', '.join(SOURCES)}, not {rule['x-source']!r}."
    if "x-property" in rule:
        paths = rule["x-property"]
        listed = paths if isinstance(paths, list) else [paths]
        if not listed or not all(isinstance(item, str) and item.strip() for item in listed):
            problems[at("x-property")] = (
                "Must be a schema.org path such as offers.price, or a non-empty list of them tried in order."
            )
        elif "x-source" not in rule:
            problems[at("x-property")] = f"Applies only with x-source ({', '.join(SOURCES)})."
    if in_fallback:
        if "x-selector" not in rule and "x-source" not in rule:
            problems[path] = "Each x-fallback entry needs x-selector or x-source."
        unknown = sorted(key for key in rule if key not in RULE_KEYS)
        if unknown:
            problems[path] = f"An x-fallback entry takes only {', '.join(RULE_KEYS)}; not {', '.join(unknown)}."
    elif "x-fallback" in rule:
        fallbacks = rule["x-fallback"]
        if not isinstance(fallbacks, list) or not fallbacks:
            problems[at("x-fallback")] = "Must be a non-empty list of rules (objects with x-selector or x-source)."
        else:
            for index, entry in enumerate(fallbacks):
                entry_path = at(f"x-fallback.{index}")
                if not isinstance(entry, dict):
                    problems[entry_path] = "Must be an object with x-selector or x-source."
                else:
                    problems.update(_rule_problems(entry, entry_path, in_fallback=True))
    return problems


def rule_problems(schema: object) -> dict[str, str]:
    """Every extraction rule in the schema that could not be applied, by its dotted path inside the schema
    ("properties.price.x-fallback.0.x-selector"; the root's own rules by their key alone). Empty when all are fine.

    Walks the parts the extraction reads: properties of objects and items of arrays.
    """
    problems: dict[str, str] = {}

    def walk(node: object, path: str) -> None:
        if not isinstance(node, dict):
            return
        problems.update(_rule_problems(node, path, in_fallback=False))
        properties = node.get("properties")
        if isinstance(properties, dict):
            for name, child in properties.items():
                walk(child, f"{path}.properties.{name}" if path else f"properties.{name}")
        items = node.get("items")
        if isinstance(items, dict):
            walk(items, f"{path}.items" if path else "items")

    walk(schema, "")
    return problems


def is_rule_schema(schema: dict) -> bool:
    """True when every leaf of the schema says where its value comes from."""

    def leaves_ok(node: Any) -> bool:
        if not isinstance(node, dict):
            return False
        if "x-selector" in node or "x-source" in node:
            if node.get("type") == "object" or (node.get("type") == "array" and "x-selector" not in node):
                return leaves_ok_children(node)
            return True
        return leaves_ok_children(node) if node.get("type") in ("object", "array") else False

    def leaves_ok_children(node: dict) -> bool:
        if node.get("type") == "object":
            properties = node.get("properties")
            return isinstance(properties, dict) and bool(properties) and all(map(leaves_ok, properties.values()))
        if node.get("type") == "array":
            # `items` may also be a boolean (2020-12) or a list (draft-07 tuples): no rules for those.
            items = node.get("items") if isinstance(node.get("items"), dict) else {}
            if items.get("type") in ("object", "array"):
                return leaves_ok_children(items) if "x-selector" in node else leaves_ok(items)
            return "x-selector" in node or "x-source" in node or leaves_ok(items)
        return False

    return isinstance(schema, dict) and leaves_ok(schema)


def _types(item: dict) -> list[str]:
    kind = item.get("@type") or item.get("type") or []
    kinds = kind if isinstance(kind, list) else [kind]
    return [_SCHEMA_ORG.sub("", str(k)) for k in kinds]


# Availabilities a buyer can order in, as schema.org names them (a URL's or a prefixed name's last part).
_ORDERABLE = re.compile(r"(?:^|[:/])(?:instock|limitedavailability|onlineonly|instoreonly)/?$", re.IGNORECASE)


def _lookup(item: Any, path: list[str]) -> Any:
    if not path:
        return item
    if isinstance(item, list):
        if path[-1] == "availability":
            return _best_availability([_lookup(element, path) for element in item])
        for element in sorted(item, key=lambda element: not _orderable(element)):  # stable: else in the page's order
            found = _lookup(element, path)
            if found not in (None, "", []):
                return found
        return None
    if not isinstance(item, dict):
        return None
    container = item.get("properties") if isinstance(item.get("properties"), dict) else item
    return _lookup(container.get(path[0]), path[1:])


def _orderable(element: Any) -> bool:
    """Whether an element of a list (an offer, a variant and its offers) can be ordered by its availability. A
    marketplace lists a sold-out seller's offer first: its price is not one a buyer can pay."""
    for path in (["availability"], ["offers", "availability"]):
        if _ORDERABLE.search(_availability_name(_lookup(element, path))):
            return True
    return False


def _best_availability(found: list) -> Any:
    """The availability of an item read through a list (its offers, one per size, colour or seller; a product
    group's variants): one that can be ordered if any can, else the first given. A shop lists its sizes in order, and
    its first is often sold out (Zalando: the product read as OutOfStock while most of its sizes were in stock)."""
    found = [value for value in found if value not in (None, "", [])]
    orderable = (value for value in found if _ORDERABLE.search(_availability_name(value)))
    return next(orderable, found[0] if found else None)


def _availability_name(value: Any) -> str:
    """An availability value as text: "InStock" of "https://schema.org/InStock", ["InStock"], {"@id": ...}."""
    value = _plain(value)
    if isinstance(value, dict):
        value = value.get("@id") or value.get("name") or ""
    return value.strip() if isinstance(value, str) else ""


def _plain(value: Any) -> Any:
    """schema.org values as a user wants them: enumeration URLs to their name, single-element lists unwrapped."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, dict) and "@value" in value:
        value = value["@value"]
    if isinstance(value, str):
        value = _SCHEMA_ORG.sub("", value.strip())
    return value


def _coerce(value: Any, schema: dict) -> Any:
    if value is None:
        return None
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if isinstance(value, str) and ("number" in kinds or "integer" in kinds) and "string" not in kinds:
        match = _NUMBER.search(value)
        if not match:
            return None
        number = _parse_number(match.group())
        if number is None:
            return None
        return int(number) if "integer" in kinds and "number" not in kinds else number
    if isinstance(value, (int, float)) and "string" in kinds and "number" not in kinds:
        return str(value)
    if isinstance(value, str) and "boolean" in kinds:
        return value.strip().lower() in {"true", "yes", "1", "instock", "in stock"}
    return value


def _parse_number(text: str) -> float | None:
    digits = re.sub(r"\s", "", text)
    if "," in digits and "." in digits:
        # The later separator is the decimal one: 1.234,56 or 1,234.56
        decimal = "," if digits.rfind(",") > digits.rfind(".") else "."
        digits = digits.replace("." if decimal == "," else ",", "").replace(",", ".")
    elif "," in digits:
        head, _, tail = digits.rpartition(",")
        digits = digits.replace(",", "") if len(tail) == 3 and head else digits.replace(",", ".")
    try:
        return float(digits)
    except ValueError:
        return None


class RulePage:
    """A page as the rules read it: its element tree (links made absolute) and its structured data, each parsed once."""

    def __init__(self, page_html: str, url: str | None):
        self.html = page_html
        self.url = url
        self._tree = None
        self._structured: dict[str, list[dict]] | None = None
        self._signals: dict[str, list[dict]] = {}

    @property
    def tree(self):
        if self._tree is None:
            self._tree = lxml_html.fromstring(self.html)
            if self.url:
                self._tree.make_links_absolute(self.url, resolve_base_href=True, handle_failures="ignore")
        return self._tree

    def structured(self, source: str) -> list[dict]:
        """The schema.org items one source gives ("structured": all of them, in STRUCTURED_ORDER)."""
        if source == "structured":
            return [item for each in STRUCTURED_ORDER for item in self.structured(each)]
        if source in ("jsonld", "microdata"):
            return self._schema_org()[source]
        if source not in self._signals:
            found = meta_product(self.tree) if source == "meta" else heuristic_product(self.tree, self.url)
            # The offer stands as an item of its own too, for rules whose x-type is Offer.
            self._signals[source] = [found, found["offers"]] if "offers" in found else [found] if found else []
        return self._signals[source]

    def _schema_org(self) -> dict[str, list[dict]]:
        if self._structured is None:
            try:
                data = extruct.extract(
                    self.html, base_url=self.url, syntaxes=["json-ld", "microdata"], uniform=True, errors="ignore"
                )
            except Exception:  # a page with broken markup has no usable structured data
                data = {}
            self._structured = {
                "jsonld": list(schema_org_items(data.get("json-ld", []))),
                "microdata": list(schema_org_items(data.get("microdata", []))),
            }
        return self._structured


def _select(element, selector: str) -> list:
    try:
        return CSSSelector(selector)(element)
    except SelectorError as error:
        raise RuleError(f"x-selector {selector!r} is not a valid CSS selector ({error}).") from None


def _element_value(element, schema: dict) -> Any:
    attribute = schema.get("x-attr")
    if attribute:
        return element.get(attribute)
    return " ".join(element.text_content().split())


def _structured_value(page: RulePage, name: str, schema: dict, item_type: str | None) -> Any:
    source = schema["x-source"]
    if source not in SOURCES:
        raise RuleError(f"x-source must be one of {', '.join(SOURCES)}, got {source!r}.")
    paths = schema.get("x-property") or name
    paths = paths if isinstance(paths, list) else [paths]
    wanted = schema.get("x-type") or item_type
    # Source by source (each read only when the ones before it lack the value), paths in order within each.
    for each in STRUCTURED_ORDER if source == "structured" else (source,):
        items = page.structured(each)
        if wanted:
            items = [item for item in items if wanted in _types(item)]
        for path in paths:  # fallbacks in order, e.g. ["offers.price", "offers.lowPrice"]
            for item in items:
                value = _plain(_lookup(item, str(path).split(".")))
                if value not in (None, "", []):
                    return value
    return None


def _extract(node_schema: dict, name: str, scope, page: RulePage, item_type: str | None) -> Any:
    kind = node_schema.get("type")
    item_type = node_schema.get("x-type", item_type)
    if kind == "object" and "properties" in node_schema:
        target = scope
        if "x-selector" in node_schema:
            matches = _select(scope, node_schema["x-selector"])
            if not matches:
                return None
            target = matches[0]
        return {key: _extract(child, key, target, page, item_type) for key, child in node_schema["properties"].items()}
    if kind == "array":
        items_schema = node_schema["items"] if isinstance(node_schema.get("items"), dict) else {}
        if "x-selector" in node_schema:
            elements = _select(scope, node_schema["x-selector"])
            if items_schema.get("type") == "object":
                return [
                    {
                        key: _extract(child, key, element, page, item_type)
                        for key, child in (items_schema.get("properties") or {}).items()
                    }
                    for element in elements
                ]
            return [_coerce(_element_value(element, items_schema), items_schema) for element in elements]
        if "x-source" in node_schema:
            value = _structured_value(page, name, node_schema, item_type)
            values = value if isinstance(value, list) else ([] if value is None else [value])
            return [_coerce(_plain(v), items_schema) for v in values]
    for rule in (node_schema, *node_schema.get("x-fallback", [])):
        value = _leaf_value(rule, name, scope, page, item_type)
        if value not in (None, "", []):
            return _coerce(value, node_schema)
    return None


def _leaf_value(rule: dict, name: str, scope, page: RulePage, item_type: str | None) -> Any:
    if "x-selector" in rule:
        matches = _select(scope, rule["x-selector"])
        return _element_value(matches[0], rule) if matches else None
    if "x-source" in rule:
        return _structured_value(page, name, rule, item_type)
    return None


def extract_by_rules(page_html: str, schema: dict, *, url: str | None = None) -> Any:
    """Apply the schema's selectors and sources to the page; missing values come back as null."""
    return extract_from(RulePage(page_html, url), schema)


def extract_from(page: RulePage, schema: dict) -> Any:
    """extract_by_rules on a page already parsed (the compiler tries many rules on one page)."""
    return _extract(schema, "", page.tree, page, schema.get("x-type"))


def coerce(value: Any, schema: dict) -> Any:
    """A value as a rule gives it for a field of this schema: numbers read from text, booleans from words."""
    return _coerce(value, schema)


def structured_items(page: RulePage, source: str) -> list[dict]:
    """The schema.org items of a page's JSON-LD or microdata, nested ones included."""
    return page.structured(source)


def item_types(item: dict) -> list[str]:
    return _types(item)


def plain(value: Any) -> Any:
    return _plain(value)

"""Product fields of a page that has no JSON-LD or microdata for them, shaped as schema.org items so that the rule
language's paths (`offers.price`, `sku`, `brand.name`) read them as they read structured data.

Two readers, each one pass over an lxml tree already parsed (the caller's; never modified):
  meta_product: what the page declares in attributes — OpenGraph / Facebook product tags
                (`<meta property="product:price:amount">`, `og:price:amount`, `product:availability`, ...),
                `itemprop` attributes outside a microdata item, and RDFa `property` attributes of schema.org.
  heuristic_product: what the page shows — the price nearest the main heading, else the add-to-cart button (read
                with price-parser), availability phrases in several languages near them (an add-to-cart button
                that can be pressed, in some twenty languages, and no phrase: in stock), values after labels such as
                "SKU", "Item #", "Art.-Nr.", "EAN" or "MPN", and the product's id in the page's address when the page
                shows it too (address_id).
Both return a Product item (with an Offer under `offers`) holding only what was found.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from lxml import etree
from price_parser import Price

from runs.engine.html_tree import hidden

PRODUCT_PROPERTIES = ("name", "sku", "gtin", "gtin8", "gtin12", "gtin13", "gtin14", "mpn", "productID", "brand")
OFFER_PROPERTIES = ("price", "lowPrice", "highPrice", "priceCurrency", "availability", "itemCondition")

# OpenGraph / Facebook catalog tags (property= or name=) and the schema.org property each one fills; the first tag
# of a property found wins, so a sale price comes before the regular one.
META_TAGS = {
    "product:sale_price:amount": "price",
    "product:price:amount": "price",
    "og:price:amount": "price",
    "product:sale_price:currency": "priceCurrency",
    "product:price:currency": "priceCurrency",
    "og:price:currency": "priceCurrency",
    "product:availability": "availability",
    "og:availability": "availability",
    "product:condition": "itemCondition",
    "product:retailer_item_id": "sku",
    "product:sku": "sku",
    "og:sku": "sku",
    "product:ean": "gtin",
    "product:gtin": "gtin",
    "product:upc": "gtin",
    "product:isbn": "gtin",
    "og:upc": "gtin",
    "og:ean": "gtin",
    "product:mfr_part_no": "mpn",
    "product:brand": "brand",
    "og:brand": "brand",
    "og:title": "name",
}
# Items whose itemprops describe the product; itemprops inside any other item (a review, a seller) are not its own.
_PRODUCT_ITEM_TYPES = ("Product", "Offer", "AggregateOffer", "IndividualProduct", "ProductModel", "ProductGroup")
_SCHEMA_PREFIX = re.compile(r"^(?:schema:|https?://schema\.org/)", re.IGNORECASE)
_INVISIBLE = {"script", "style", "noscript", "template", "head", "title", "svg", "iframe", "select", "option"}

_AVAILABILITY_WORDS = {
    "instock": "InStock",
    "in stock": "InStock",
    "in_stock": "InStock",
    "available": "InStock",
    "oos": "OutOfStock",
    "out of stock": "OutOfStock",
    "outofstock": "OutOfStock",
    "out_of_stock": "OutOfStock",
    "soldout": "SoldOut",
    "sold out": "SoldOut",
    "discontinued": "Discontinued",
    "preorder": "PreOrder",
    "pre-order": "PreOrder",
    "pending": "PreOrder",
    "backorder": "BackOrder",
    "available for order": "BackOrder",
    "limited availability": "LimitedAvailability",
}

# Phrases a shop shows next to its buy button, by schema.org availability. Negated phrases come first in the
# alternation so that "not available" is never read as "available".
_PHRASES = {
    "OutOfStock": [
        # en
        r"out of stock",
        r"currently unavailable",
        r"temporarily unavailable",
        r"no longer available",
        r"not available (?:online|for (?:delivery|purchase|order))",
        r"not in stock",
        # de
        r"nicht auf lager",
        r"nicht (?:mehr )?(?:lieferbar|vorrätig)",
        r"(?:derzeit|momentan|zurzeit) nicht (?:lieferbar|verfügbar|erhältlich)",
        r"vergriffen",
        # fr
        r"rupture de stock",
        r"en rupture",
        r"(?:momentanément|temporairement|actuellement) indisponible",
        r"(?:n'est )?plus disponible",
        # es
        r"agotado",
        r"sin stock",
        r"sin existencias",
        r"(?:temporalmente|actualmente|momentáneamente) no disponible",
        # it
        r"esaurit[oa]",
        r"(?:temporaneamente|attualmente|momentaneamente) non disponibile",
        r"non più disponibile",
        # nl
        r"niet (?:op voorraad|leverbaar)",
        r"(?:tijdelijk|momenteel) niet beschikbaar",
        r"uitverkocht",
        # pt
        r"esgotado",
        r"(?:temporariamente|momentaneamente) indisponível",
        r"sem estoque",
        r"fora de estoque",
        r"sem stock",
    ],
    "SoldOut": [r"sold out", r"ausverkauft", r"épuisé", r"tutto venduto"],  # "Venduto da" is "sold by"
    "PreOrder": [
        r"pre-?order",
        r"vorbestell(?:en|bar|ung)",
        r"pré-?commande",
        r"précommander",
        r"pre-?venta",
        r"preventa",
        r"pre-?ordina",
        r"pré-?venda",
        r"pre-?encomenda",
    ],
    "BackOrder": [r"back-?order(?:ed)?"],
    "LimitedAvailability": [
        r"only \d+ left",
        r"low stock",
        r"nur noch \d+",
        r"plus que \d+",
        r"solo quedan \d+",
        r"ultimi \d+",
        r"nog \d+ op voorraad",
    ],
    "InStock": [
        r"in stock",
        r"available (?:now|to ship|for delivery|online)",
        r"ships (?:today|tomorrow|within)",
        r"auf lager",
        r"(?:sofort )?lieferbar",
        r"verfügbar",
        r"vorrätig",
        r"en stock",
        r"disponible",
        r"hay existencias",
        r"disponibil[ei]",
        r"disponibilità immediata",
        r"in magazzino",
        r"op voorraad",
        r"leverbaar",
        r"em estoque",
        r"disponível",
    ],
}
_ORDER = ("OutOfStock", "SoldOut", "PreOrder", "BackOrder", "LimitedAvailability", "InStock")
_WORD = r"(?<![\w-])(?:{})(?![\w-])"
_AVAILABILITY = re.compile(
    "|".join(f"(?P<{kind}>{_WORD.format('|'.join(_PHRASES[kind]))})" for kind in _ORDER), re.IGNORECASE
)

# What an add-to-cart control says or is named, in the languages above.
_ADD_TO_CART_TEXT = re.compile(
    r"add to (?:cart|bag|basket|trolley)|buy now|buy it now|add to shopping|"
    r"in den (?:warenkorb|einkaufswagen)|jetzt kaufen|"
    r"ajouter au (?:panier|sac)|acheter|"
    r"añadir al (?:carrito|cesta)|agregar al carrito|comprar|"
    r"aggiungi al carrello|acquista|"
    r"in (?:de )?winkel(?:wagen|mand)|bestellen|"
    r"adicionar ao (?:carrinho|cesto)|"
    # Scripts without blanks between words: Chinese, Japanese, Korean
    r"加入購物車|加入购物车|立即購買|立即购买|我要購買|我要购买|直接購買|カートに入れる|カートに追加|今すぐ購入|"
    r"장바구니 ?담기|바로 ?구매|구매하기|"
    # Putting it in the cart, as words of their own (_WORD); not the cart's name alone, which a header's "Go to cart"
    # link holds too ("Przejdź do koszyka", "Перейти в корзину")
    + _WORD.format(
        "|".join(
            (
                r"(?:pridať|vložiť) do košíka|(?:přidat|vložit) do košíku|dodaj do koszyka|kup teraz",  # sk cs pl
                r"dodaj [uv] košari(?:cu|co)|kosárba (?:teszem|tesz)",  # hr sl hu
                r"adaug[ăa] [îi]n co[șs]|sepete ekle",  # ro tr
                r"добавить в корзину|додати в кошик|дадаць у кошык",  # noqa: RUF001 (Cyrillic) ru uk be
                r"lägg i varukorgen|köp nu|læg i (?:indkøbs)?kurv|køb nu|legg i handlekurven?|kjøp nå",  # sv da no
                r"lisää ostoskoriin|osta nyt|προσθήκη στο καλάθι|הוסף? לסל|הוספה לסל|أضف إلى السلة",  # fi el he ar
            )
        )
    ),
    re.IGNORECASE,
)
# A control whose whole text is one of these: the cart's name or a bare "buy" (a button "Do košíka", "Kupi", "Köp");
# in a longer text they name other things ("Jak koupit", "Köp presentkort", "Tovább a kosárba").
_BUY_ALONE = re.compile(
    r"\W*(?:do košíka|do košíku|do koszyka|[uv] košari(?:cu|co)|kosárba|в корзину|у кошык|в кошик|"  # noqa: RUF001
    r"kupi|kup|koupit|kúpiť|купить|купити|köp|køb|kjøp|osta)\W*",
    re.IGNORECASE,
)
_ADD_TO_CART_NAME = re.compile(
    r"add[-_ ]?to[-_ ]?(?:cart|bag|basket)|buy[-_ ]?now|buy[-_ ]?box|addtocart", re.IGNORECASE
)
_CONTROLS = {"button", "input", "a"}
_NAMING_TAGS = {"h2", "h3", "h4", "div", "span", "p", "strong", "b"}  # where a page without an h1 names its product

# Labels followed by a value: "SKU: AB-123", "Item #123", "Art.-Nr. 4711", "EAN 4006381333931".
_VALUE = r"[:#.]?\s*(?:[:#]\s*)?([A-Za-z0-9][A-Za-z0-9\-_./]{2,39})"
_LABELS = {
    "gtin": r"ean(?:[- ]?13)?|gtin(?:[- ]?1[234])?|upc|isbn(?:[- ]?13)?|barcode|código de barras|codice ean",
    "mpn": r"mpn|manufacturer part number|manufacturer's part number|part number|herstellernummer|"
    r"hersteller-?artikelnummer|model number|modellnummer|référence fabricant|numéro de modèle",
    "sku": r"sku|asin|item number|item no|item #|item|product code|product number|product id|article number|"
    r"art\.?[- ]?nr|artikel-?nr|artikelnummer|artikelnr|bestellnummer|référence|réf|code article|code produit|"
    r"referencia|ref|código|cod(?:ice)?(?: articolo| prodotto)?|artikelcode|productcode|"
    r"código do produto|número do artigo|style|model|šifra|kód|kod|cod produs|numéro de l'objet|numéro d'article|"
    r"número de artículo|numero (?:dell')?articolo|post id|listing id|ad id",
}
_LABELLED = {key: re.compile(_WORD.format(labels) + r"\s*" + _VALUE, re.IGNORECASE) for key, labels in _LABELS.items()}
_STRUCK_CLASS = re.compile(r"old|was|strike|regular|before|crossed|rrp|uvp|compare|original|list-?price", re.I)
_PRICE_CLASS = re.compile(r"price|preis|prix|precio|prezzo|prijs|preço|amount", re.IGNORECASE)
_CURRENCY_CODES = {"€": "EUR", "£": "GBP", "₹": "INR", "₩": "KRW", "zł": "PLN", "kč": "CZK", "r$": "BRL", "₽": "RUB"}
_LETTER_CURRENCIES = {"kr", "ft", "lei", "rp", "rm", "tl", "kn", "zl", "fr", "sfr", "chf", "euro", "euros", "eur"}
_NEAR = 400  # elements between a price and the heading or the buy button beyond which it is not the product's


def meta_product(tree: Any) -> dict:
    """The product as the page's meta tags, stray itemprop attributes and schema.org RDFa declare it."""
    product: dict[str, Any] = {}
    offer: dict[str, Any] = {}

    def put(prop: str, value: Any) -> None:
        value = " ".join(str(value).split()) if value is not None else ""
        if not value:
            return
        target = offer if prop in OFFER_PROPERTIES else product
        if prop not in target:
            target[prop] = value

    ranked = sorted(
        (
            (list(META_TAGS).index(key), META_TAGS[key], meta.get("content"))
            for meta in tree.iter("meta")
            if (key := (meta.get("property") or meta.get("name") or "").strip().lower()) in META_TAGS
        ),
        key=lambda found: found[0],
    )
    for _, prop, value in ranked:
        put(prop, value)
    wanted = set(PRODUCT_PROPERTIES) | set(OFFER_PROPERTIES)
    for element in tree.xpath("//*[@itemprop]"):
        if element.get("itemscope") is not None or not _in_product_item(element):
            continue
        for prop in element.get("itemprop", "").split():
            if prop in wanted:
                put(prop, _attribute_value(element))
    schema_vocab = any("schema.org" in vocab for vocab in tree.xpath("//@vocab"))
    for element in tree.xpath("//*[@property]"):
        for token in element.get("property", "").split():
            prop = _SCHEMA_PREFIX.sub("", token)
            if prop in wanted and (prop != token or schema_vocab):
                put(prop, _attribute_value(element))
    return _item(product, offer)


def heuristic_product(tree: Any, url: str | None = None) -> dict:
    """The product as the page shows it: the heading, the price by the heading and buy button, its availability,
    and labelled identifiers; its SKU the id in url that the page shows, where there is one (address_id)."""
    page = _VisiblePage(tree)
    product: dict[str, Any] = {}
    offer: dict[str, Any] = {}
    if page.heading is not None:
        product["name"] = " ".join(page.heading.text_content().split())
    price = page.price()
    if price is not None:
        offer["price"] = str(price.amount)
        if price.currency:
            currency = price.currency.strip()
            code = currency.upper() if currency.isalpha() and len(currency) == 3 else currency
            offer["priceCurrency"] = _CURRENCY_CODES.get(currency.lower(), code)
    availability = page.availability()
    if availability:
        offer["availability"] = availability
    product.update(labelled_values(page.text))
    shown_id = address_id(url, page.text)
    if shown_id:
        product["sku"] = shown_id
    return _item(product, offer)


def read_price(text: str) -> Price | None:
    """The amount and currency of a short text that states a price ("€ 17,10", "Now $9.49", "4,900원"): the
    currency must stand next to the amount and the text say little else."""
    price = Price.fromstring(text)
    currency = (price.currency or "").strip()
    if price.amount is None or not currency or not _is_currency(currency):
        return None
    number = r"\d[\d.,' \u00a0]*\d|\d"
    symbol = re.escape(currency)
    beside = re.search(rf"{symbol}\s?(?:{number})|(?:{number})\s?{symbol}", text)
    if not beside:
        return None
    rest = text.replace(beside.group(), " ")
    if sum(ch.isalpha() for ch in rest) > 12:
        return None
    price = Price.fromstring(beside.group())
    return price if price.amount is not None and price.amount > 0 else None


def _is_currency(currency: str) -> bool:
    """A symbol ($, €, zł, 원), an ISO code as written (EUR) or a local abbreviation; price-parser alone also takes
    words such as "Br" or "DA" that are currencies only somewhere."""
    if not currency.isascii() or not currency.isalpha():
        return True
    return (len(currency) == 3 and currency.isupper()) or currency.lower() in _LETTER_CURRENCIES


def availability_from_text(text: str) -> str | None:
    """The schema.org availability a shop's phrase states ("Nicht auf Lager" → OutOfStock), or None."""
    match = _AVAILABILITY.search(text)
    return match.lastgroup if match else None


def labelled_values(text: str) -> dict[str, str]:
    """Identifiers that follow their label in the text: {"sku": ..., "gtin": ..., "mpn": ...}; a value holds a digit."""
    found: dict[str, str] = {}
    for key, pattern in _LABELLED.items():
        for match in pattern.finditer(text):
            value = match.group(1).rstrip(".-/")
            if any(ch.isdigit() for ch in value) and (key != "gtin" or value.isdigit()):
                found[key] = value
                break
    return found


# A run of letters and digits in an address: "B08LNDXM65" of "/dp/B08LNDXM65", "M67296549" of "M67296549.htm".
_ADDRESS_RUN = re.compile(r"[A-Za-z0-9]*\d[A-Za-z0-9]*")
_ID_KEY = re.compile(
    r"p|pid|id|sku|item|itemid|item_id|product|productid|product_id|prod|prodid|art|article|artnr|code|ref",
    re.IGNORECASE,
)
_PAGE_SUFFIX = re.compile(r"\.(?:s?html?|php|aspx?|jsp)$", re.IGNORECASE)


def address_id(url: str | None, text: str) -> str | None:
    """The product's id in its page's address, where text (the page's) shows it as a word of its own: a shop's own
    id for the item, which is what schema.org calls its sku ("/dp/B08LNDXM65" and "ASIN B08LNDXM65"; "/itm/
    133588510845" and "eBay item number: 133588510845"; "?pid=260591"). Of the address's runs of five or more
    letters and digits, three or more of them digits (a year is not one), the last the page shows, reading the path
    and then the query's values under a key that names an id. A shown id comes before a labelled one: a label's
    value is often the maker's model number or a variant's code. On the product-extraction set: sku F1 0.785 ->
    0.835, both halves alike (0.810 -> 0.855 and 0.762 -> 0.815, ids in sorted order, even and odd places); without
    the text's word, a category's or a tracking code's id would be taken."""
    if not url:
        return None
    try:
        address = urlsplit(url)
    except ValueError:  # "http://[::1/p/12345": not an address to read
        return None
    runs = [
        run
        for segment in address.path.split("/")
        for run in _ADDRESS_RUN.findall(_PAGE_SUFFIX.sub("", unquote(segment)))
    ]
    # A query's value only under a key that names an id ("?pid=260591"), never a tracking or filter one ("utm_id")
    runs += [
        run for key, value in parse_qsl(address.query) if _ID_KEY.fullmatch(key) for run in _ADDRESS_RUN.findall(value)
    ]
    for run in reversed(runs):
        if len(run) >= 5 and sum(ch.isdigit() for ch in run) >= 3 and re.search(rf"(?<![\w-]){run}(?![\w-])", text):
            return run
    return None


def normal_availability(value: str) -> str:
    """A meta tag's availability ("in stock", "oos", "https://schema.org/InStock") as a schema.org name."""
    word = value.strip().lower().rsplit("/", 1)[-1]
    return _AVAILABILITY_WORDS.get(word, value)


def _item(product: dict, offer: dict) -> dict:
    if "availability" in offer:
        offer["availability"] = normal_availability(offer["availability"])
    if "brand" in product:
        product["brand"] = {"@type": "Brand", "name": product["brand"]}
    if offer:
        product["offers"] = {"@type": "Offer", **offer}
    return {"@type": "Product", **product} if product else {}


def _attribute_value(element: Any) -> str | None:
    for attribute in ("content", "href", "resource", "value"):
        if element.get(attribute):
            return element.get(attribute)
    text = element.text_content()
    return text if len(text) < 200 else None


def _in_product_item(element: Any) -> bool:
    for ancestor in element.iterancestors():
        if ancestor.get("itemscope") is not None:
            kind = (ancestor.get("itemtype") or "").rstrip("/").rsplit("/", 1)[-1]
            return not kind or kind in _PRODUCT_ITEM_TYPES
    return True


class _VisiblePage:
    """The page's visible elements in document order, with the two places a product page centres on: its main
    heading and its add-to-cart control."""

    def __init__(self, tree: Any):
        self.elements: list = []
        self.position: dict = {}
        chunks: list[str] = []
        self.heading = None
        self.buy = None
        walker = etree.iterwalk(tree, events=("start", "end"))
        for event, element in walker:
            if event == "end":
                if element in self.position or not _hidden(element):
                    chunks.append(element.tail or "")
                continue
            if _hidden(element):
                walker.skip_subtree()
                continue
            self.position[element] = len(self.elements)
            self.elements.append(element)
            tag = element.tag
            if tag == "h1" and self.heading is None and element.text_content().strip():
                self.heading = element
            elif tag in _CONTROLS and self.buy is None and self._is_buy(element):
                self.buy = element
            chunks.append(element.text or "")
        self.text = " ".join(" ".join(chunks).split())
        main_heading = self._main_heading(tree) if self.heading is not None else self._title_shown(tree)
        if main_heading is not None:
            self.heading = main_heading

    def _main_heading(self, tree: Any) -> Any:
        """Of several h1, the one sharing most words with the page's title (a shop's banner may be an h1 too)."""
        headings = [e for e in self.elements if e.tag == "h1" and e.text_content().strip()]
        if len(headings) < 2:
            return None
        title = set(
            _words(" ".join(tree.xpath("//title//text()") + tree.xpath("//meta[@property='og:title']/@content")))
        )
        return max(headings, key=lambda h: len(title & set(_words(h.text_content()))))

    def _title_shown(self, tree: Any) -> Any:
        """On a page without an h1, the small element that shows most of the page's title (OpenGraph's, else its
        <title>), ten characters of it or more, the first of the longest: the product's name, written as a heading or
        not (a Taiwanese shop names its product in a <div>); not the shop's name that ends the title ("Blue Widget
        3000 | Acme Shopping" and a logo's "Acme Shopping"). None when none does."""
        titles = tree.xpath("//meta[@property='og:title']/@content") or tree.xpath("//title//text()")[:1]
        title = " ".join(" ".join(str(part) for part in titles).split()).lower()
        best, longest = None, 9
        for element in self.elements:
            if element.tag in _NAMING_TAGS and len(element) <= 2:
                text = " ".join(element.text_content().split()).lower()
                if len(text) > longest and text in title:
                    best, longest = element, len(text)
        return best

    @staticmethod
    def _is_buy(element: Any) -> bool:
        if element.get("disabled") is not None:
            return False
        if element.tag == "input" and (element.get("type") or "").lower() not in ("submit", "button", "image"):
            return False
        names = " ".join(element.get(a) or "" for a in ("id", "class", "name", "data-action", "aria-label"))
        text = " ".join((element.get("value") or element.text_content()).split())  # "Add  to Trolley" in markup
        return bool(
            _ADD_TO_CART_NAME.search(names)
            or (len(text) < 60 and _ADD_TO_CART_TEXT.search(text))
            or _BUY_ALONE.fullmatch(text)
        )

    def anchor(self) -> int | None:
        """Where the product's price is looked for (its position): by its heading, else by its buy button. Not by
        both: the buy button of a shop in a language the heuristic reads since (Slovak, Chinese, ...) moved two prices
        to one beside it (a price with VAT for the one without; a box's price for a can's) and the heading's nearest
        was right."""
        element = self.heading if self.heading is not None else self.buy
        return None if element is None else self.position[element]

    def price(self) -> Price | None:
        anchor = self.anchor()
        if anchor is None:
            return None
        best: tuple[float, Price] | None = None
        for element, price in self._prices():
            position = self.position[element]
            distance = abs(position - anchor)
            if distance > _NEAR:
                continue
            score = float(distance)
            marks = " ".join(
                f"{e.tag} {e.get('class') or ''} {e.get('id') or ''}"
                for e in (element, *element.iterancestors())
                if e is not None and self.position.get(e, -1) >= position - 3
            )
            if _PRICE_CLASS.search(marks):
                score -= 40
            if any(e.tag in ("del", "s", "strike") for e in (element, *element.iterancestors())) or (
                _STRUCK_CLASS.search(marks)
            ):
                score += 200
            if self.heading is not None and position < self.position[self.heading]:
                score += 100
            if best is None or score < best[0]:
                best = (score, price)
        return best[1] if best else None

    def _prices(self) -> Iterator[tuple[Any, Price]]:
        """The innermost short elements whose text is an amount with a currency."""
        for element in self.elements:
            text = element.text or ""
            has_digit = any(ch.isdigit() for ch in text)
            if not has_digit and not (len(element) and _PRICE_CLASS.search(element.get("class") or "")):
                continue
            # The element or one of its two nearest ancestors: a price is often split into parts ("$", "9", ".49").
            for candidate in (element, *islice(element.iterancestors(), 2)):
                if candidate not in self.position:
                    break
                content = " ".join(candidate.text_content().split())
                if len(content) > 40:
                    break
                price = read_price(content)
                if price is not None:
                    yield candidate, price
                    break

    def availability(self) -> str | None:
        """The availability phrase nearest the buy button (else the heading), read in growing circles around it;
        a buy button that can be pressed and no phrase means in stock."""
        anchor = self.buy if self.buy is not None else self.heading
        if anchor is None:
            return None
        seen = 0
        for ancestor in (anchor, *anchor.iterancestors()):
            text = " ".join(_visible_text(ancestor).split())
            if len(text) > 4000:
                break
            if len(text) > seen:
                seen = len(text)
                found = availability_from_text(text)
                if found:
                    return found
        return "InStock" if self.buy is not None else None


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _hidden(element: Any) -> bool:
    """Not shown: a comment, an element that never shows (_INVISIBLE), or one hidden by its markup. A closed tab or
    accordion panel counts as hidden here (the main content keeps those): the price looked for is the one shown."""
    return not isinstance(element.tag, str) or element.tag in _INVISIBLE or hidden(element)


def _visible_text(element: Any) -> str:
    return " ".join(
        piece
        for node in element.iter()
        if isinstance(node.tag, str) and node.tag not in _INVISIBLE
        for piece in (node.text, node.tail)
        if piece
    )

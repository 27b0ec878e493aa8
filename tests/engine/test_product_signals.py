"""Product fields without JSON-LD or microdata: `x-source: "meta"` (OpenGraph product tags, stray itemprop, RDFa) and
`"heuristic"` (the price by the heading and the buy button, availability phrases, labelled identifiers), on real
pages of shared/datasets/product-extraction and on small pages in several languages; and `structured` trying
JSON-LD, microdata, meta and the heuristics in that order, field by field."""

from __future__ import annotations

import gzip
import json

import pytest
from lxml import html

from runs.engine.extract_rules import extract_by_rules
from runs.engine.product_signals import (
    address_id,
    availability_from_text,
    heuristic_product,
    labelled_values,
    meta_product,
)
from tests.datasets import DATASETS

PAGES = DATASETS / "product-extraction" / "dataset" / "html"


def real_page(page_id: str) -> str:
    return gzip.decompress((PAGES / f"{page_id}.html.gz").read_bytes()).decode("utf-8", "replace")


# A shop page with no JSON-LD or microdata, its price and currency in OpenGraph product tags.
META_ONLY = "b331d47650"
# A shop page with no structured data and no product meta tags: only what it shows.
SHOWN_ONLY = "4e545337e1"
# An out-of-stock page with no structured data ("Derzeit nicht verfügbar." by the buy box).
SHOWN_OUT_OF_STOCK = "2c036dd02f"
# Shops whose item id is in the page's address and shown on the page, under no label the heuristic knows: eBay's
# "/itm/133588510845" ("eBay item number"); and Amazon's ASIN, where a label gives the maker's model number instead.
ID_IN_ADDRESS = ("2d3e52568d", "https://www.ebay.it/itm/133588510845", "133588510845")
ID_IN_ADDRESS_OVER_LABEL = ("2eca89a9c9", "https://www.amazon.fr/dp/B08LNDXM65", "B08LNDXM65")
# A Zalando dress whose JSON-LD has one offer per size, the first sold out and later ones in stock.
OFFER_PER_SIZE = "9d8d7e059e"
# A Slovak shop: no structured data, a "Do košíka" button by a price with VAT, the price without it by the heading.
SLOVAK_BUY_BOX = "453f5cc079"


def page_id(prefix: str) -> str:
    matches = [path.name.removesuffix(".html.gz") for path in PAGES.glob(f"{prefix[:10]}*.html.gz")]
    assert len(matches) == 1, f"one page of the dataset starts with {prefix[:10]}"
    return matches[0]


def product_schema(source: str) -> dict:
    def field(path: str) -> dict:
        return {"type": ["string", "null"], "x-source": source, "x-property": path}

    return {
        "type": "object",
        "x-type": "Product",
        "properties": {
            "price": {"type": ["number", "null"], "x-source": source, "x-property": "offers.price"},
            "currency": field("offers.priceCurrency"),
            "availability": field("offers.availability"),
            "sku": field("sku"),
        },
    }


def test_meta_reads_the_price_of_a_page_whose_only_product_data_is_its_meta_tags():
    page = real_page(page_id(META_ONLY))
    assert extract_by_rules(page, product_schema("jsonld"))["price"] is None
    assert extract_by_rules(page, product_schema("microdata"))["price"] is None
    found = extract_by_rules(page, product_schema("meta"))
    assert (found["price"], found["currency"]) == (49.99, "EUR")


def test_heuristic_reads_price_availability_and_sku_from_what_the_page_shows():
    page = real_page(page_id(SHOWN_ONLY))
    assert extract_by_rules(page, product_schema("meta")) == {
        "price": None,
        "currency": None,
        "availability": None,
        "sku": None,
    }
    assert extract_by_rules(page, product_schema("heuristic")) == {
        "price": 150.0,
        "currency": "GBP",
        "availability": "InStock",
        "sku": "64981901",
    }


@pytest.mark.parametrize("page", [ID_IN_ADDRESS, ID_IN_ADDRESS_OVER_LABEL], ids=["ebay", "amazon"])
def test_heuristic_takes_the_sku_from_the_pages_address_where_the_page_shows_it(page):
    prefix, url, sku = page
    shop_page = real_page(page_id(prefix))
    assert extract_by_rules(shop_page, product_schema("heuristic"), url=url)["sku"] == sku
    assert extract_by_rules(shop_page, product_schema("structured"), url=url)["sku"] == sku
    assert extract_by_rules(shop_page, product_schema("heuristic"))["sku"] != sku  # not known without the address


@pytest.mark.parametrize(
    ("url", "text", "found"),
    [
        ("https://shop.test/p/blue-kettle-KT40711.html", "Blue kettle Item KT40711 in stock", "KT40711"),
        ("https://shop.test/store/122725?pid=260591", "Deal 260591 of store 122725", "260591"),  # the query's last
        ("https://shop.test/store/122725?pid=260591", "Deal of store 122725", "122725"),  # the last one shown
        ("https://shop.test/p/KT40711?utm_id=99999", "Kettle KT40711 (99999)", "KT40711"),  # not a tracking id
        ("http://[::1/p/KT40711", "Kettle KT40711", None),  # not an address that can be read
        ("https://shop.test/p/KT40711", "Blue kettle, in stock", None),  # the page does not show it
        ("https://shop.test/p/KT40711", "Blue kettle KT40711-B", None),  # only as part of another word
        ("https://shop.test/2024/11/kettle", "Since 2024: kettle 11", None),  # too short to be an id
        ("https://shop.test/p/kettle-pro?ref=newsletter", "Kettle pro newsletter", None),  # no digits
        (None, "Item KT40711", None),
    ],
)
def test_address_id(url, text, found):
    assert address_id(url, text) == found


def test_heuristic_reads_a_slovak_buy_box_its_price_by_the_heading():
    found = extract_by_rules(real_page(page_id(SLOVAK_BUY_BOX)), product_schema("heuristic"))
    # "Do košíka" is a buy button that can be pressed: in stock. The price by the heading, not the one by the button.
    assert (found["availability"], found["price"], found["currency"]) == ("InStock", 4386.0, "EUR")


@pytest.mark.parametrize(
    ("button", "availability"),
    [
        ("<button>Add\n          to   Trolley</button>", "InStock"),  # its words apart in the markup (Argos)
        ("<button>Do košíka</button>", "InStock"),  # sk
        ("<button>Dodaj u košaricu</button>", "InStock"),  # hr
        ("<a href='/cart/add'>Kupi</a>", "InStock"),  # hr, sl
        ("<button>В корзину</button>", "InStock"),  # noqa: RUF001 (Cyrillic: ru)
        ("<button>加入購物車</button>", "InStock"),  # zh
        ("<a href='/order'>바로구매</a>", "InStock"),  # ko
        ("<input type='submit' value='Lägg i varukorgen'>", "InStock"),  # sv
        ("<button disabled>Do košíka</button>", None),  # cannot be pressed
        ("<a href='/kupon'>Kupon</a>", None),  # a word that holds a buy word is not one
        ("<button>Köp</button>", "InStock"),  # sv: a bare "buy", the control's whole text
        ("<button>Купить</button>", "InStock"),  # ru
        ("<a href='/cart'>Przejdź do koszyka</a>", None),  # pl: "go to the cart", a header's link
        ("<a href='/gift'>Köp presentkort</a>", None),  # sv: "buy a gift card"
        ("<a href='/help'>Jak koupit</a>", None),  # cs: "how to buy"
        ("<a href='/shops'>Где купить?</a>", None),  # where to buy it: not a buy button
    ],
)
def test_a_buy_button_in_several_languages_means_in_stock(button, availability):
    tree = html.fromstring(f"<html><body><h1>Kettle</h1><p>29,99 €</p>{button}</body></html>")
    assert heuristic_product(tree)["offers"].get("availability") == availability


def test_heuristic_reads_out_of_stock_from_the_buy_box_of_a_german_page():
    found = extract_by_rules(real_page(page_id(SHOWN_OUT_OF_STOCK)), product_schema("heuristic"))
    assert found["availability"] == "OutOfStock"
    assert found["price"] is None  # no price is shown for it, and none from elsewhere on the page is taken


def test_structured_takes_each_field_from_the_first_source_that_has_it():
    page = real_page(page_id(META_ONLY))
    found = extract_by_rules(page, product_schema("structured"))
    # The price from the meta tags; the page declares no SKU anywhere, its "Product code" label gives it.
    assert found == {"price": 49.99, "currency": "EUR", "availability": "InStock", "sku": "12185160"}


def test_an_item_with_several_offers_is_available_when_one_of_them_is():
    found = extract_by_rules(real_page(page_id(OFFER_PER_SIZE)), product_schema("jsonld"))
    assert (found["availability"], found["price"]) == ("InStock", 89.5)


@pytest.mark.parametrize(
    ("offers", "availability"),
    [
        (["OutOfStock", "InStock", "OutOfStock"], "InStock"),
        (["SoldOut", "https://schema.org/LimitedAvailability"], "LimitedAvailability"),
        (["OutOfStock", "SoldOut"], "OutOfStock"),  # none can be ordered: the first
        ([None, "OutOfStock"], "OutOfStock"),
        (["OutOfStock", "schema:InStock"], "schema:InStock"),  # however the name is written
        (["OutOfStock", "instock"], "instock"),
    ],
)
def test_availability_across_offers(offers, availability):
    listed = ", ".join(json.dumps({"@type": "Offer", **({"availability": value} if value else {})}) for value in offers)
    page = f"""<html><head><script type="application/ld+json">{{"@context": "https://schema.org", "@type": "Product",
    "name": "Mug", "offers": [{listed}]}}</script></head><body><h1>Mug</h1></body></html>"""
    assert extract_by_rules(page, product_schema("jsonld"))["availability"] == availability


@pytest.mark.parametrize(
    ("offers", "expected"),
    [
        # a marketplace: the first seller is sold out, the second sells it for less, in another currency
        ([("OutOfStock", "30.00", "EUR"), ("InStock", "25.00", "USD")], (25.0, "USD", "InStock")),
        ([("OutOfStock", "30.00", "EUR"), ("SoldOut", "25.00", "USD")], (30.0, "EUR", "OutOfStock")),  # the first
        ([(None, "30.00", "EUR"), ("InStock", "25.00", "EUR")], (25.0, "EUR", "InStock")),
    ],
)
def test_an_items_price_comes_from_an_offer_that_can_be_ordered(offers, expected):
    listed = [
        {"@type": "Offer", "price": price, "priceCurrency": currency, **({"availability": value} if value else {})}
        for value, price, currency in offers
    ]
    product = {"@context": "https://schema.org", "@type": "Product", "name": "Mug", "offers": listed}
    page = f'<html><head><script type="application/ld+json">{json.dumps(product)}</script></head><body></body></html>'
    found = extract_by_rules(page, product_schema("jsonld"))
    assert (found["price"], found["currency"], found["availability"]) == expected


def test_a_product_groups_variants_are_available_when_one_of_them_is():
    variants = [
        {"@type": "Product", "offers": {"@type": "Offer", "availability": value}} for value in ("OutOfStock", "InStock")
    ]
    group = {"@context": "https://schema.org", "@type": "ProductGroup", "name": "Tee", "hasVariant": variants}
    page = f'<html><head><script type="application/ld+json">{json.dumps(group)}</script></head><body></body></html>'
    schema = {
        "type": "object",
        "x-type": "ProductGroup",
        "properties": {
            "availability": {"type": "string", "x-source": "jsonld", "x-property": "hasVariant.offers.availability"}
        },
    }
    assert extract_by_rules(page, schema) == {"availability": "InStock"}


def test_structured_prefers_json_ld_to_meta_tags_and_the_page():
    page = """<html><head><meta property="product:price:amount" content="12.00">
    <script type="application/ld+json">{"@context": "https://schema.org", "@type": "Product",
    "offers": {"@type": "Offer", "price": "10.00"}}</script></head>
    <body><h1>Mug</h1><span class="price">£14.00</span><button>Add to basket</button><p>SKU: MUG-77</p></body></html>"""
    found = extract_by_rules(page, product_schema("structured"))
    # Field by field: neither JSON-LD nor the meta tags name a currency, so the page's shown one is taken.
    assert found == {"price": 10.0, "currency": "GBP", "availability": "InStock", "sku": "MUG-77"}
    assert extract_by_rules(page, product_schema("meta"))["price"] == 12.0
    assert extract_by_rules(page, product_schema("heuristic"))["price"] == 14.0


def test_meta_reads_og_tags_stray_itemprops_and_schema_org_rdfa():
    tree = html.fromstring("""<html><head>
    <meta property="og:title" content="Kettle">
    <meta property="product:price:currency" content="EUR"><meta property="product:price:amount" content="19.99">
    <meta property="product:availability" content="out of stock"><meta property="product:brand" content="Acme">
    </head><body><span itemprop="sku">K-100</span>
    <div itemscope itemtype="https://schema.org/Review"><span itemprop="name">Not the product</span></div>
    <p property="schema:gtin13" content="4006381333931"></p></body></html>""")
    assert meta_product(tree) == {
        "@type": "Product",
        "name": "Kettle",
        "brand": {"@type": "Brand", "name": "Acme"},
        "sku": "K-100",
        "gtin13": "4006381333931",
        "offers": {"@type": "Offer", "priceCurrency": "EUR", "price": "19.99", "availability": "OutOfStock"},
    }


@pytest.mark.parametrize(
    ("text", "availability"),
    [
        ("In stock. Usually dispatched within 24 hours", "InStock"),
        ("Currently unavailable.", "OutOfStock"),
        ("Sofort lieferbar", "InStock"),
        ("Derzeit nicht verfügbar", "OutOfStock"),
        ("Artikel ist nicht auf Lager", "OutOfStock"),
        ("Ausverkauft", "SoldOut"),
        ("En stock, expédié sous 24h", "InStock"),
        ("Rupture de stock", "OutOfStock"),
        ("Disponible en tienda", "InStock"),
        ("Producto agotado", "OutOfStock"),
        ("Disponibilità immediata", "InStock"),
        ("Prodotto esaurito", "OutOfStock"),
        ("Tutto venduto", "SoldOut"),
        ("Venduto da GlobalNetOnline e spedito da Amazon", None),  # "sold by": not sold out (Amazon.it)
        ("Op voorraad, morgen in huis", "InStock"),
        ("Helaas uitverkocht", "OutOfStock"),
        ("Em estoque", "InStock"),
        ("Produto esgotado", "OutOfStock"),
        ("Pre-order now", "PreOrder"),
        ("Only 3 left in stock", "LimitedAvailability"),
        ("Image not available for this colour", None),
        ("Free delivery on orders over £50", None),
    ],
)
def test_availability_phrases_in_several_languages(text, availability):
    assert availability_from_text(text) == availability


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("Product code: 64981901 Cosy faux fur", {"sku": "64981901"}),
        ("Art.-Nr. 4711-B Farbe: rot", {"sku": "4711-B"}),
        ("Item # 12-345 ships free", {"sku": "12-345"}),
        ("Référence : AB123 EAN : 3760123456789", {"sku": "AB123", "gtin": "3760123456789"}),
        ("MPN: XPS-9310 UPC: 884116364315", {"mpn": "XPS-9310", "gtin": "884116364315"}),
        ("SKU: none given, see the style guide", {}),  # a value holds a digit: words after a label are not one
    ],
)
def test_labelled_identifiers(text, values):
    assert labelled_values(text) == values


def test_the_price_by_the_heading_wins_over_other_prices_and_a_struck_through_one():
    tree = html.fromstring("""<html><body>
    <nav><a href="/sale">Everything under 9,99 €</a></nav>
    <h1>Wasserkocher Pro</h1>
    <div><del class="price">34,99 €</del> <span class="price">29,99 €</span></div>
    <button class="add-to-cart">In den Warenkorb</button>
    <aside><h2>Dazu passt</h2><span class="price">4,99 €</span></aside></body></html>""")
    offer = heuristic_product(tree)["offers"]
    assert (offer["price"], offer["priceCurrency"], offer["availability"]) == ("29.99", "EUR", "InStock")


def test_a_page_without_an_h1_has_its_product_named_where_it_shows_its_title():
    tree = html.fromstring("""<html><head><title>Kettle Pro 2000 | Kitchen Shop</title></head><body>
    <div class="promo">Gift cards from € 5,00</div><span class="logo">Kitchen Shop</span>
    <div class="item-name">Kettle Pro 2000</div><div><span class="amount">€ 29,99</span></div></body></html>""")
    found = heuristic_product(tree)
    offer = found["offers"]
    assert (found["name"], offer["price"], offer["priceCurrency"]) == ("Kettle Pro 2000", "29.99", "EUR")


def test_a_page_without_heading_or_buy_button_gets_no_price_from_the_heuristic():
    tree = html.fromstring("<html><body><p>Gift cards from $25.00</p></body></html>")
    assert "offers" not in heuristic_product(tree)

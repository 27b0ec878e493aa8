"""The compiler on its own: which place of a page a value is read from, how lasting its selector is, and that every
rule it keeps gives the model's value back (applied by the rule engine)."""

from __future__ import annotations

from runs.engine.compile import compile_answer, stable_name
from runs.engine.extract_rules import extract_by_rules

PRICE_TWICE = """<html><body>
<div class="product"><h1>Kettle</h1><span class="price">19,99 €</span></div>
<aside class="related"><a href="/toaster">Toaster</a> <span class="cost">19,99 €</span></aside>
</body></html>"""

WEIGHT_TWICE = """<html><body>
<div class="a"><span>2.5</span></div><div class="b"><span>2.5</span></div>
</body></html>"""


def test_a_value_in_two_places_compiles_to_the_place_that_names_the_field():
    schema = {"type": "object", "properties": {"price": {"type": "number"}}}
    compiled = compile_answer(PRICE_TWICE, None, schema, {"price": 19.99})
    assert compiled.fields == {"price": "rule"}
    assert compiled.schema["properties"]["price"]["x-selector"] == "span.price"
    moved = PRICE_TWICE.replace('class="price">19,99', 'class="price">24,50')  # the next product's page
    assert extract_by_rules(moved, compiled.schema)["price"] == 24.5


def test_a_value_in_two_places_that_do_not_name_the_field_is_left_to_the_model():
    schema = {"type": "object", "properties": {"weight": {"type": "number"}}}
    compiled = compile_answer(WEIGHT_TWICE, None, schema, {"weight": 2.5})
    assert compiled.fields == {"weight": "model"}
    assert "x-selector" not in compiled.schema["properties"]["weight"]


def test_lasting_names_come_before_generated_classes_and_positions():
    page = """<html><body><div class="css-1x9f3a sc-bdfBwQ"><p class="jsx-4218794" data-testid="sku">AB-123</p>
    <p class="css-9z8y7x"><span itemprop="brand">Acme</span></p><p>Made in Spain</p></div></body></html>"""
    schema = {
        "type": "object",
        "properties": {"sku": {"type": "string"}, "brand": {"type": "string"}, "origin": {"type": "string"}},
    }
    answer = {"sku": "AB-123", "brand": "Acme", "origin": "Made in Spain"}
    compiled = compile_answer(page, None, schema, answer)
    rules = compiled.schema["properties"]
    assert rules["sku"]["x-selector"] == 'p[data-testid="sku"]'
    assert rules["brand"]["x-selector"] == 'span[itemprop="brand"]'
    assert rules["origin"]["x-selector"] == "div > p:nth-of-type(3)"  # nothing names it: its position
    assert extract_by_rules(page, compiled.schema) == answer
    assert [stable_name(name) for name in ("price", "v2-feature", "css-1x9f3a", "sc-bdfBwQ", "jsx-4218794")] == [
        True,
        True,
        False,
        False,
        False,
    ]


def test_an_array_of_objects_compiles_to_an_item_selector_with_relative_fields():
    page = """<html><body><h1>Reviews</h1><ol class="reviews">
    <li class="review"><b class="author">Kim</b> <i class="stars">5</i></li>
    <li class="review"><b class="author">Lee</b> <i class="stars">3</i></li>
    <li class="review"><b class="author">Ana</b> <i class="stars">4</i></li></ol></body></html>"""
    schema = {
        "type": "object",
        "properties": {
            "reviews": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"author": {"type": "string"}, "stars": {"type": "integer"}},
                },
            }
        },
    }
    answer = {"reviews": [{"author": "Kim", "stars": 5}, {"author": "Lee", "stars": 3}, {"author": "Ana", "stars": 4}]}
    compiled = compile_answer(page, None, schema, answer)
    assert compiled.fields == {"reviews": "rule"}
    reviews = compiled.schema["properties"]["reviews"]
    assert reviews["x-selector"].endswith("li.review")
    assert reviews["items"]["properties"]["author"]["x-selector"] == "b.author"
    longer = page.replace("</ol>", '<li class="review"><b class="author">Bo</b> <i class="stars">1</i></li></ol>')
    assert extract_by_rules(longer, compiled.schema)["reviews"][-1] == {"author": "Bo", "stars": 1}


def test_an_answer_the_page_does_not_hold_is_never_given_a_rule():
    page = "<html><body><h1>Kettle</h1><p class='price'>19,99 €</p></body></html>"
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "price": {"type": "number"}}}
    compiled = compile_answer(page, None, schema, {"name": "Electric kettle", "price": 21.0})  # not what it says
    assert compiled.fields == {"name": "model", "price": "model"}
    assert compiled.rule_count == 0


PRICE_IN_META = """<html><head><meta property="product:price:amount" content="49.99">
<meta property="product:price:currency" content="EUR"></head><body>
<h1>Lamp</h1><div class="a"><span>49.99</span></div><div class="b"><span>49.99</span></div>
</body></html>"""


def test_a_value_the_page_declares_in_its_meta_tags_compiles_to_a_meta_rule():
    """The visible price stands in two unrelated places (no selector can be chosen); the product meta tag says it."""
    schema = {"type": "object", "properties": {"price": {"type": "number"}}}
    compiled = compile_answer(PRICE_IN_META, None, schema, {"price": 49.99})
    assert compiled.fields == {"price": "rule"}
    rule = compiled.schema["properties"]["price"]
    assert rule["x-source"] == "meta" and rule["x-property"] in ("price", "offers.price")
    moved = PRICE_IN_META.replace('content="49.99"', 'content="12.50"')  # the next product's page
    assert extract_by_rules(moved, compiled.schema)["price"] == 12.5

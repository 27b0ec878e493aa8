import { describe, expect, it } from "vitest";
import { checkSchema, describeJsonError, leavesWithoutSource } from "./schema";

describe("the schema editor's checks", () => {
  it("says where a JSON mistake is", () => {
    const text = '{\n  "type": "object",\n  "properties": {"a": {"type": "string" "x-selector": "h1"}}\n}';
    const check = checkSchema(text);
    expect(check.problem?.line).toBe(3);
    expect(check.problem?.message).toMatch(/^Expected ',' or '}'/);
    expect(check.problem?.message).not.toMatch(/position|line \d/);
  });

  it("handles the error formats of other engines", () => {
    const text = '{"a": }';
    expect(describeJsonError(text, new SyntaxError("Unexpected token } in JSON at position 6"))).toEqual({
      message: "Unexpected token }",
      line: 1,
      column: 7,
    });
    expect(
      describeJsonError(text, new SyntaxError("JSON.parse: unexpected character at line 1 column 7 of the JSON data")),
    ).toEqual({ message: "Unexpected character", line: 1, column: 7 });
  });

  it("wants an object", () => {
    expect(checkSchema("[]").problem?.message).toMatch(/must be a JSON object/);
    expect(checkSchema("").problem?.message).toMatch(/needs a JSON schema/);
  });

  it("tells a schema that needs no model from one that does, as the service does", () => {
    const rules = {
      type: "object",
      properties: {
        name: { type: "string", "x-selector": "h1" },
        sku: { type: "string", "x-source": "jsonld" },
        sizes: { type: "array", "x-selector": "li", items: { type: "string" } },
        reviews: {
          type: "array",
          "x-selector": ".review",
          items: { type: "object", properties: { author: { type: "string", "x-selector": ".author" } } },
        },
      },
    };
    expect(checkSchema(JSON.stringify(rules)).ruleBased).toBe(true);
    const mixed = {
      type: "object",
      properties: { name: { type: "string", "x-selector": "h1" }, price: { type: "number" } },
    };
    expect(leavesWithoutSource(mixed)).toEqual(["price"]);
    expect(leavesWithoutSource({ type: "object", properties: {} })).toEqual(["(root)"]);
  });
});

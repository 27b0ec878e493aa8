// The extract form's schema editor: parse the text, say where a JSON mistake is, and tell whether the schema
// can run without a model (every leaf says where its value is: x-selector or x-source), as the service decides
// (runs/engine/extract_rules.py is_rule_schema).

export interface SchemaProblem {
  message: string;
  line?: number;
  column?: number;
}

export interface SchemaCheck {
  value?: Record<string, unknown>;
  problem?: SchemaProblem;
  /** Dotted paths of leaves with no x-selector / x-source (they need a model). */
  needsModel: string[];
  ruleBased: boolean;
}

export const EXAMPLE_SCHEMA = `{
  "type": "object",
  "properties": {
    "name": { "type": "string", "x-selector": "h1" },
    "price": { "type": "string", "x-selector": ".price" }
  }
}`;

function lineAndColumn(text: string, position: number): { line: number; column: number } {
  const before = text.slice(0, position);
  const lines = before.split("\n");
  return { line: lines.length, column: (lines[lines.length - 1]?.length ?? 0) + 1 };
}

/** A JSON.parse error as "what is wrong" plus where, from the engines' different message formats. */
export function describeJsonError(text: string, error: unknown): SchemaProblem {
  const raw = error instanceof Error ? error.message : String(error);
  let line: number | undefined;
  let column: number | undefined;
  const lineColumn = /line (\d+) column (\d+)/i.exec(raw);
  const position = /position (\d+)/i.exec(raw);
  if (lineColumn) {
    line = Number(lineColumn[1]);
    column = Number(lineColumn[2]);
  } else if (position) {
    ({ line, column } = lineAndColumn(text, Number(position[1])));
  } else if (/unexpected end/i.test(raw)) {
    ({ line, column } = lineAndColumn(text, text.length));
  }
  let message = raw
    .replace(/^JSON\.parse:\s*/i, "")
    .replace(/\s*in JSON at position \d+.*$/i, "")
    .replace(/\s*at line \d+ column \d+ of the JSON data$/i, "")
    .replace(/\s*\(line \d+ column \d+\)$/i, "")
    .trim();
  if (!message) message = "This is not valid JSON";
  message = message.charAt(0).toUpperCase() + message.slice(1);
  return { message, line, column };
}

type Node = Record<string, unknown>;

function isNode(value: unknown): value is Node {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Leaves that do not say where their value comes from (a port of is_rule_schema that also names them). */
export function leavesWithoutSource(schema: unknown): string[] {
  const missing: string[] = [];

  function leaf(node: unknown, path: string): void {
    if (!isNode(node)) {
      missing.push(path || "(root)");
      return;
    }
    if ("x-selector" in node || "x-source" in node) {
      if (node.type === "object" || (node.type === "array" && !("x-selector" in node))) children(node, path);
      return;
    }
    if (node.type === "object" || node.type === "array") children(node, path);
    else missing.push(path || "(root)");
  }

  function children(node: Node, path: string): void {
    if (node.type === "object") {
      const properties = isNode(node.properties) ? node.properties : {};
      const names = Object.keys(properties);
      if (names.length === 0) {
        missing.push(path || "(root)");
        return;
      }
      for (const name of names) leaf(properties[name], path ? `${path}.${name}` : name);
      return;
    }
    if (node.type === "array") {
      const items = isNode(node.items) ? node.items : {};
      const itemPath = `${path || "(root)"}[]`;
      if (items.type === "object" || items.type === "array") {
        if ("x-selector" in node) children(items, itemPath);
        else leaf(items, itemPath);
        return;
      }
      if ("x-selector" in node || "x-source" in node) return;
      leaf(items, itemPath);
      return;
    }
    missing.push(path || "(root)");
  }

  leaf(schema, "");
  return missing;
}

export function checkSchema(text: string): SchemaCheck {
  if (!text.trim()) {
    return { problem: { message: "An extract run needs a JSON schema." }, needsModel: [], ruleBased: false };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: describeJsonError(text, error), needsModel: [], ruleBased: false };
  }
  if (!isNode(value)) {
    return {
      problem: { message: 'The schema must be a JSON object, like {"type": "object", "properties": {…}}.' },
      needsModel: [],
      ruleBased: false,
    };
  }
  if (value.type !== undefined && typeof value.type !== "string" && !Array.isArray(value.type)) {
    return { problem: { message: '"type" must be a string such as "object".' }, needsModel: [], ruleBased: false };
  }
  if (value.properties !== undefined && !isNode(value.properties)) {
    return {
      problem: { message: '"properties" must be an object of field schemas.' },
      needsModel: [],
      ruleBased: false,
    };
  }
  const needsModel = leavesWithoutSource(value);
  return { value, needsModel, ruleBased: needsModel.length === 0 };
}

import { useState } from "react";

type Json = unknown;

function summary(value: Json): string {
  if (Array.isArray(value)) return `[${value.length} item${value.length === 1 ? "" : "s"}]`;
  const keys = Object.keys(value as object).length;
  return `{${keys} field${keys === 1 ? "" : "s"}}`;
}

function Scalar({ value }: { value: Json }) {
  if (value === null || value === undefined) return <span className="json-null">null</span>;
  if (typeof value === "string") return <span className="json-string">"{value}"</span>;
  if (typeof value === "number") return <span className="json-number">{String(value)}</span>;
  if (typeof value === "boolean") return <span className="json-boolean">{String(value)}</span>;
  return <span>{String(value)}</span>;
}

function Entry({ name, value, depth }: { name: string | null; value: Json; depth: number }) {
  const label = name === null ? null : <span className="json-key">{name}</span>;
  if (value !== null && typeof value === "object") {
    const entries: [string, Json][] = Array.isArray(value)
      ? value.map((item, index) => [String(index), item])
      : Object.entries(value as Record<string, Json>);
    if (entries.length === 0) {
      return (
        <li>
          {label}
          {label && <span className="json-colon">: </span>}
          <span className="json-empty">{Array.isArray(value) ? "[]" : "{}"}</span>
        </li>
      );
    }
    return (
      <li>
        <details open={depth < 3}>
          <summary>
            {label}
            {label && <span className="json-colon">: </span>}
            <span className="json-summary">{summary(value)}</span>
          </summary>
          <ul className="json-children">
            {entries.map(([key, item]) => (
              <Entry key={key} name={key} value={item} depth={depth + 1} />
            ))}
          </ul>
        </details>
      </li>
    );
  }
  return (
    <li>
      {label}
      {label && <span className="json-colon">: </span>}
      <Scalar value={value} />
    </li>
  );
}

/** A collapsible view of any JSON value, with a switch to the raw text and a copy button. */
export function JsonView({ value, label = "Result" }: { value: Json; label?: string }) {
  const [raw, setRaw] = useState(false);
  const [copied, setCopied] = useState(false);
  const text = JSON.stringify(value, null, 2) ?? "null";

  async function copy() {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(true);
      setTimeout(() => setCopied(false), 1500);
    } catch {
      setCopied(false);
    }
  }

  return (
    <div className="json-view">
      <div className="segmented small" role="group" aria-label={`${label} view`}>
        <button type="button" aria-pressed={!raw} onClick={() => setRaw(false)}>
          Tree
        </button>
        <button type="button" aria-pressed={raw} onClick={() => setRaw(true)}>
          Raw JSON
        </button>
        <button type="button" onClick={copy} className="copy">
          {copied ? "Copied" : "Copy"}
        </button>
      </div>
      {raw ? (
        <pre className="code-block">{text}</pre>
      ) : (
        <ul className="json-tree" aria-label={`${label} as a tree`}>
          <Entry name={null} value={value} depth={0} />
        </ul>
      )}
    </div>
  );
}

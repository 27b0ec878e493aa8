import { useMemo, useRef } from "react";
import { checkSchema, EXAMPLE_SCHEMA, type SchemaCheck } from "../lib/schema";

interface Props {
  id: string;
  value: string;
  onChange(value: string): void;
  /** An error from the service for this field (shown under the editor's own checks). */
  serverError?: string | null;
  label?: string;
}

export function useSchemaCheck(text: string): SchemaCheck {
  return useMemo(() => checkSchema(text), [text]);
}

/** JSON schema text with line numbers, checked as you type; the problem and its line are shown inline. */
export function SchemaEditor({ id, value, onChange, serverError, label = "Schema" }: Props) {
  const check = useSchemaCheck(value);
  const gutter = useRef<HTMLDivElement>(null);
  const lineCount = Math.max(value.split("\n").length, 6);
  const problem = value.trim() ? check.problem : undefined;
  const errorText = problem
    ? `${problem.line ? `Line ${problem.line}${problem.column ? `, column ${problem.column}` : ""}: ` : ""}${problem.message}`
    : null;
  const describedBy = [`${id}-status`, serverError ? `${id}-server` : ""].filter(Boolean).join(" ");

  function format() {
    if (check.value) onChange(JSON.stringify(check.value, null, 2));
  }

  return (
    <div className={`field schema-field${errorText || serverError ? " has-error" : ""}`}>
      <div className="field-label-row">
        <label htmlFor={id}>{label}</label>
        <div className="inline-actions">
          <button type="button" className="link-button" onClick={() => onChange(EXAMPLE_SCHEMA)}>
            Insert example
          </button>
          <button type="button" className="link-button" onClick={format} disabled={!check.value}>
            Format
          </button>
        </div>
      </div>
      <div className="code-editor">
        <div className="gutter" ref={gutter} aria-hidden="true">
          {Array.from({ length: lineCount }, (_, index) => (
            <span key={index} className={problem?.line === index + 1 ? "bad-line" : undefined}>
              {index + 1}
            </span>
          ))}
        </div>
        <textarea
          id={id}
          value={value}
          spellCheck={false}
          autoCapitalize="off"
          autoCorrect="off"
          rows={10}
          placeholder={'{"type": "object", "properties": {"title": {"type": "string", "x-selector": "h1"}}}'}
          onChange={(event) => onChange(event.target.value)}
          onScroll={(event) => {
            if (gutter.current) gutter.current.scrollTop = event.currentTarget.scrollTop;
          }}
          aria-invalid={errorText || serverError ? true : undefined}
          aria-describedby={describedBy}
        />
      </div>
      <div id={`${id}-status`} className="schema-status" aria-live="polite">
        {errorText ? (
          <p className="field-error">{errorText}</p>
        ) : !value.trim() ? (
          <p className="hint">
            A JSON schema for the result. Give every field an <code>x-selector</code> (CSS) or <code>x-source</code>{" "}
            (jsonld, microdata) and no model is needed.
          </p>
        ) : check.ruleBased ? (
          <p className="hint ok">Valid JSON schema. Every field says where its value is: no model needed.</p>
        ) : (
          <p className="hint">
            Valid JSON schema. Fields without <code>x-selector</code> or <code>x-source</code> (
            {check.needsModel.slice(0, 5).join(", ")}
            {check.needsModel.length > 5 ? ", …" : ""}) are filled by the model, if the service has one.
          </p>
        )}
      </div>
      {serverError && (
        <p className="field-error" id={`${id}-server`}>
          {serverError}
        </p>
      )}
    </div>
  );
}

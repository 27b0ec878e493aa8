import { useState, type FormEvent } from "react";
import { ApiError } from "../api/client";
import { queries } from "../api/endpoints";
import type { Run, SavedQuery } from "../api/types";
import { Modal } from "./Modal";
import { SchemaEditor, useSchemaCheck } from "./SchemaEditor";
import { describedBy, ErrorBanner, Field } from "./ui";

const NAME = /^[a-z0-9_-]{1,64}$/;

/** Run a saved query now, optionally against another URL or with another instruction (this run only). */
export function RunQueryDialog({
  query,
  onClose,
  onQueued,
}: {
  query: SavedQuery;
  onClose(): void;
  onQueued(run: Run): void;
}) {
  const [url, setUrl] = useState("");
  const [instruction, setInstruction] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const api = error instanceof ApiError ? error : null;
  const urlError =
    url.trim() && !/^https?:\/\/[^/\s]+/i.test(url.trim()) ? "Use an http:// or https:// URL." : api?.field("url");

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (urlError) return;
    setBusy(true);
    setError(null);
    try {
      const overrides: { url?: string; instruction?: string } = {};
      if (url.trim()) overrides.url = url.trim();
      if (instruction.trim()) overrides.instruction = instruction.trim();
      const run = await queries.run(query.name, overrides);
      onQueued(run);
      onClose();
    } catch (reason) {
      setError(reason);
      setBusy(false);
    }
  }

  return (
    <Modal title={`Run “${query.name}”`} onClose={onClose}>
      <form onSubmit={submit} className="modal-body" noValidate>
        <Field
          id="override-url"
          label="Override URL"
          hint={
            <>
              Optional; this run only. Saved: <span className="break">{query.url}</span>
            </>
          }
          error={urlError}
        >
          <input
            id="override-url"
            type="url"
            placeholder={query.url}
            value={url}
            autoFocus
            onChange={(event) => setUrl(event.target.value)}
            aria-invalid={urlError ? true : undefined}
            aria-describedby={describedBy("override-url", true, urlError)}
          />
        </Field>
        <Field
          id="override-instruction"
          label="Override instruction"
          hint="Optional; this run only."
          error={api?.field("instruction")}
        >
          <textarea
            id="override-instruction"
            rows={2}
            placeholder={query.instruction || "No instruction saved"}
            value={instruction}
            onChange={(event) => setInstruction(event.target.value)}
            aria-describedby={describedBy("override-instruction", true, api?.field("instruction"))}
          />
        </Field>
        {error !== null && !(api && (api.field("url") || api.field("instruction"))) && <ErrorBanner error={error} />}
        <div className="modal-actions">
          <button type="button" className="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? "Queuing…" : "Run now"}
          </button>
        </div>
      </form>
    </Modal>
  );
}

interface EditorProps {
  /** Editing an existing query (its name is fixed), or creating one when absent. */
  query?: SavedQuery;
  onSaved(query: SavedQuery): void;
  onCancel(): void;
}

export function QueryEditor({ query, onSaved, onCancel }: EditorProps) {
  const [name, setName] = useState(query?.name ?? "");
  const [url, setUrl] = useState(query?.url ?? "");
  const [schema, setSchema] = useState(query ? JSON.stringify(query.schema, null, 2) : "");
  const [instruction, setInstruction] = useState(query?.instruction ?? "");
  const [error, setError] = useState<unknown>(null);
  const [touched, setTouched] = useState(false);
  const [busy, setBusy] = useState(false);
  const check = useSchemaCheck(schema);
  const api = error instanceof ApiError ? error : null;

  const problems = {
    name: !query && touched && !NAME.test(name) ? "Use 1-64 lowercase letters, digits, - and _." : api?.field("name"),
    url: touched && !/^https?:\/\/[^/\s]+/i.test(url.trim()) ? "Use an http:// or https:// URL." : api?.field("url"),
  };

  async function submit(event: FormEvent) {
    event.preventDefault();
    setTouched(true);
    if ((!query && !NAME.test(name)) || !/^https?:\/\/[^/\s]+/i.test(url.trim()) || !check.value) return;
    setBusy(true);
    setError(null);
    try {
      const edit = { url: url.trim(), schema: check.value, instruction: instruction.trim() };
      const saved = query ? await queries.update(query.name, edit) : await queries.create(name, edit);
      onSaved(saved);
    } catch (reason) {
      setError(reason);
      setBusy(false);
    }
  }

  return (
    <form
      onSubmit={submit}
      className="form-card query-editor"
      noValidate
      aria-label={query ? "Edit query" : "New query"}
    >
      {!query && (
        <Field id="edit-name" label="Name" hint="Lowercase letters, digits, - and _." error={problems.name}>
          <input
            id="edit-name"
            value={name}
            autoComplete="off"
            onChange={(event) => setName(event.target.value.trim())}
            aria-invalid={problems.name ? true : undefined}
            aria-describedby={describedBy("edit-name", true, problems.name)}
          />
        </Field>
      )}
      <Field id="edit-url" label="URL" error={problems.url}>
        <input
          id="edit-url"
          type="url"
          value={url}
          onChange={(event) => setUrl(event.target.value)}
          aria-invalid={problems.url ? true : undefined}
          aria-describedby={describedBy("edit-url", false, problems.url)}
        />
      </Field>
      <SchemaEditor id="edit-schema" value={schema} onChange={setSchema} serverError={api?.field("schema")} />
      <Field id="edit-instruction" label="Instruction" error={api?.field("instruction")}>
        <textarea
          id="edit-instruction"
          rows={2}
          value={instruction}
          onChange={(event) => setInstruction(event.target.value)}
          aria-describedby={describedBy("edit-instruction", false, api?.field("instruction"))}
        />
      </Field>
      {error !== null && !(api && Object.keys(api.fields).length) && <ErrorBanner error={error} />}
      <div className="form-actions">
        <button type="button" className="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="button primary" disabled={busy}>
          {busy ? "Saving…" : query ? "Save changes" : "Create query"}
        </button>
      </div>
    </form>
  );
}

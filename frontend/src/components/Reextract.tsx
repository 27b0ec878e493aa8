import { useState, type FormEvent } from "react";
import { useNavigate } from "react-router";
import { ApiError } from "../api/client";
import { runs } from "../api/endpoints";
import type { RunDetail } from "../api/types";
import { Modal } from "./Modal";
import { SchemaEditor, useSchemaCheck } from "./SchemaEditor";
import { ErrorBanner, Field } from "./ui";

/** Whether a run kept a page that can be extracted again. */
export function hasArchivedPage(run: RunDetail): boolean {
  return run.steps.some((step) => step.page);
}

/** Extract again from the page a run archived: no request leaves the machine; the new run's drift says what changed. */
export function Reextract({ run, onClose }: { run: RunDetail; onClose(): void }) {
  const navigate = useNavigate();
  const [schema, setSchema] = useState(run.spec.schema ? JSON.stringify(run.spec.schema, null, 2) : "");
  const [instruction, setInstruction] = useState(run.spec.instruction ?? "");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const check = useSchemaCheck(schema);
  const schemaError = error instanceof ApiError ? (error.field("schema") ?? undefined) : undefined;

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!check.value) {
      setError(new ApiError(400, "invalid_request", "Enter a JSON schema.", { schema: ["Enter a JSON schema."] }));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const created = await runs.reextract(run.id, { schema: check.value, instruction: instruction.trim() });
      navigate(`/runs/${created.id}/live`);
    } catch (reason) {
      setError(reason);
      setBusy(false);
    }
  }

  return (
    <Modal title="Re-extract" onClose={onClose} wide>
      <form onSubmit={submit} className="modal-body" noValidate>
        <p>
          Extract again from the page this run kept, with this schema and instruction. The page is read from the
          archive: no request is made, and the new run shows how its result differs from this run's.
        </p>
        <SchemaEditor id="reextract-schema" value={schema} onChange={setSchema} serverError={schemaError} />
        <Field id="reextract-instruction" label="Instruction" hint="What to extract, in words (for the model).">
          <textarea
            id="reextract-instruction"
            rows={3}
            value={instruction}
            onChange={(event) => setInstruction(event.target.value)}
          />
        </Field>
        {error !== null && !schemaError && <ErrorBanner error={error} />}
        <div className="modal-actions">
          <button type="button" className="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? "Starting…" : "Re-extract"}
          </button>
        </div>
      </form>
    </Modal>
  );
}

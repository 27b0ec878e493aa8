import { useState, type FormEvent } from "react";
import { useLocation, useNavigate } from "react-router";
import { ApiError } from "../api/client";
import { profiles as profilesApi, runs } from "../api/endpoints";
import type { Render, RunKind, RunOptions, RunSpec } from "../api/types";
import { SchemaEditor, useSchemaCheck } from "../components/SchemaEditor";
import { describedBy, ErrorBanner, Field, PageHeader } from "../components/ui";
import { useResource } from "../lib/useResource";

const NAME = /^[a-z0-9_-]{1,64}$/;

const KIND_INFO: Record<RunKind, { label: string; text: string }> = {
  fetch: { label: "Fetch", text: "Load a page and return clean Markdown, title and links." },
  extract: { label: "Extract", text: "Load a page and return JSON that matches your schema." },
  agent: { label: "Agent", text: "A model drives the browser toward a goal, step by step." },
};

type SessionSource = "none" | "profile" | "file";

interface FormState {
  kind: RunKind;
  url: string;
  schema: string;
  instruction: string;
  goal: string;
  cred: string;
  saveProfile: string;
  overwriteProfile: boolean;
  source: SessionSource;
  profile: string;
  storageStatePath: string;
  mainContent: boolean;
  render: Render;
  timeoutSeconds: string;
  maxSteps: string;
  screenshots: boolean;
  waitFor: string;
}

function initialState(spec: RunSpec | undefined): FormState {
  const options = spec?.options ?? {};
  return {
    kind: spec?.kind ?? "fetch",
    url: spec?.url ?? "",
    schema: spec?.schema !== undefined ? JSON.stringify(spec.schema, null, 2) : "",
    instruction: spec?.instruction ?? "",
    goal: spec?.goal ?? "",
    cred: spec?.cred ?? "",
    saveProfile: spec?.saveProfile ?? "",
    overwriteProfile: spec?.overwriteProfile ?? false,
    source: spec?.profile ? "profile" : spec?.storageStatePath ? "file" : "none",
    profile: spec?.profile ?? "",
    storageStatePath: spec?.storageStatePath ?? "",
    mainContent: options.mainContent ?? true,
    render: options.render ?? "auto",
    timeoutSeconds: String(Math.round((options.timeoutMs ?? 60000) / 1000)),
    maxSteps: String(options.maxSteps ?? 25),
    screenshots: options.screenshots ?? true,
    waitFor: options.waitFor ?? "",
  };
}

type Problems = Partial<Record<string, string>>;

function validate(form: FormState, schemaOk: boolean): Problems {
  const problems: Problems = {};
  const url = form.url.trim();
  if (!url) problems.url = "Enter the URL of the page.";
  else if (!/^https?:\/\/[^/\s]+/i.test(url)) problems.url = "Use an http:// or https:// URL.";
  if (form.kind === "extract" && !schemaOk) problems.schema = "Fix the schema first.";
  if (form.kind === "agent" && !form.goal.trim()) problems.goal = "Describe what the agent should achieve.";
  if (form.kind === "agent" && form.cred && !NAME.test(form.cred))
    problems.cred = "Use 1-64 lowercase letters, digits, - and _.";
  if (form.kind === "agent" && form.saveProfile && !NAME.test(form.saveProfile))
    problems.saveProfile = "Use 1-64 lowercase letters, digits, - and _.";
  if (form.source === "profile" && !form.profile) problems.profile = "Choose a profile (or no stored session).";
  if (form.source === "file" && !form.storageStatePath.trim())
    problems.storageStatePath = "Enter a path inside the data directory.";
  const timeout = Number(form.timeoutSeconds);
  if (!Number.isFinite(timeout) || timeout < 1) problems["options.timeoutMs"] = "At least 1 second.";
  const maxSteps = Number(form.maxSteps);
  if (form.kind === "agent" && (!Number.isInteger(maxSteps) || maxSteps < 1 || maxSteps > 200))
    problems["options.maxSteps"] = "A whole number from 1 to 200.";
  return problems;
}

export function buildSpec(form: FormState, schema: unknown): RunSpec {
  const options: RunOptions = {
    timeoutMs: Math.round(Number(form.timeoutSeconds) * 1000),
    screenshots: form.screenshots,
  };
  if (form.kind !== "agent") {
    options.mainContent = form.mainContent;
    options.render = form.render;
  } else {
    options.maxSteps = Number(form.maxSteps);
  }
  if (form.waitFor.trim()) options.waitFor = form.waitFor.trim();
  const spec: RunSpec = { kind: form.kind, url: form.url.trim(), options };
  if (form.kind === "extract") {
    spec.schema = schema;
    if (form.instruction.trim()) spec.instruction = form.instruction.trim();
  }
  if (form.kind === "agent") {
    spec.goal = form.goal.trim();
    if (form.cred.trim()) spec.cred = form.cred.trim();
    if (form.saveProfile.trim()) spec.saveProfile = form.saveProfile.trim();
    if (form.saveProfile.trim() && form.overwriteProfile) spec.overwriteProfile = true;
  }
  if (form.source === "profile" && form.profile) spec.profile = form.profile;
  if (form.source === "file" && form.storageStatePath.trim()) spec.storageStatePath = form.storageStatePath.trim();
  return spec;
}

export function NewRun() {
  const location = useLocation();
  const navigate = useNavigate();
  const template = (location.state as { spec?: RunSpec } | null)?.spec;
  const [form, setForm] = useState<FormState>(() => initialState(template));
  const [touched, setTouched] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const schemaCheck = useSchemaCheck(form.schema);
  const profileList = useResource(() => profilesApi.list(), []);

  const local = touched ? validate(form, Boolean(schemaCheck.value)) : {};
  const server = error instanceof ApiError ? error : null;
  const problem = (name: string): string | undefined => local[name] ?? server?.field(name);

  function set<K extends keyof FormState>(key: K, value: FormState[K]) {
    setForm((current) => ({ ...current, [key]: value }));
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    setTouched(true);
    const problems = validate(form, Boolean(schemaCheck.value));
    if (Object.keys(problems).length > 0) {
      setError(null);
      const first = Object.keys(problems)[0] ?? "";
      document.getElementById(fieldId(first))?.focus();
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const run = await runs.submit(buildSpec(form, schemaCheck.value));
      navigate(`/runs/${run.id}/live`, { state: { run } });
    } catch (reason) {
      setError(reason);
      setBusy(false);
    }
  }

  const profiles = profileList.data ?? [];

  return (
    <div className="page new-run">
      <PageHeader title="New run" subtitle="Every run is queued, executed in Chromium and kept with its trace." />
      <form onSubmit={submit} noValidate className="form-card">
        <fieldset className="kind-picker">
          <legend>Kind</legend>
          <div className="kind-options">
            {(Object.keys(KIND_INFO) as RunKind[]).map((kind) => (
              <label key={kind} className={`kind-option${form.kind === kind ? " selected" : ""}`}>
                <input
                  type="radio"
                  name="kind"
                  value={kind}
                  checked={form.kind === kind}
                  onChange={() => set("kind", kind)}
                  aria-label={KIND_INFO[kind].label}
                  aria-describedby={`kind-${kind}-text`}
                />
                <span className="kind-name" aria-hidden="true">
                  {KIND_INFO[kind].label}
                </span>
                <span className="kind-text" id={`kind-${kind}-text`}>
                  {KIND_INFO[kind].text}
                </span>
              </label>
            ))}
          </div>
        </fieldset>

        <Field id="run-url" label="URL" error={problem("url")}>
          <input
            id="run-url"
            type="url"
            inputMode="url"
            placeholder="https://example.com/page"
            value={form.url}
            onChange={(event) => set("url", event.target.value)}
            aria-invalid={problem("url") ? true : undefined}
            aria-describedby={describedBy("run-url", false, problem("url"))}
          />
        </Field>

        {form.kind === "extract" && (
          <>
            <SchemaEditor
              id="run-schema"
              value={form.schema}
              onChange={(value) => set("schema", value)}
              serverError={server?.field("schema") ?? (touched && !form.schema.trim() ? "Enter a schema." : null)}
            />
            <Field
              id="run-instruction"
              label="Instruction"
              hint="Optional: tells the model what to look for (not used when every field has a selector)."
              error={problem("instruction")}
            >
              <textarea
                id="run-instruction"
                rows={2}
                value={form.instruction}
                onChange={(event) => set("instruction", event.target.value)}
                aria-describedby={describedBy("run-instruction", true, problem("instruction"))}
              />
            </Field>
          </>
        )}

        {form.kind === "agent" && (
          <>
            <Field id="run-goal" label="Goal" error={problem("goal")}>
              <textarea
                id="run-goal"
                rows={3}
                placeholder="Find the price of the cheapest trail shoe in size 42"
                value={form.goal}
                onChange={(event) => set("goal", event.target.value)}
                aria-invalid={problem("goal") ? true : undefined}
                aria-describedby={describedBy("run-goal", false, problem("goal"))}
              />
            </Field>
            <div className="field-row">
              <Field
                id="run-cred"
                label="Credential"
                hint={
                  <>
                    A name from <code>manage.py cred set</code>; optional.
                  </>
                }
                error={problem("cred")}
              >
                <input
                  id="run-cred"
                  autoComplete="off"
                  value={form.cred}
                  onChange={(event) => set("cred", event.target.value)}
                  aria-describedby={describedBy("run-cred", true, problem("cred"))}
                />
              </Field>
              <Field
                id="run-save-profile"
                label="Save profile as"
                hint="Keep the browser session afterwards under this name; optional."
                error={problem("saveProfile")}
              >
                <input
                  id="run-save-profile"
                  autoComplete="off"
                  value={form.saveProfile}
                  onChange={(event) => set("saveProfile", event.target.value)}
                  aria-describedby={describedBy("run-save-profile", true, problem("saveProfile"))}
                />
              </Field>
              {form.saveProfile.trim() && (
                <label className="check">
                  <input
                    type="checkbox"
                    checked={form.overwriteProfile}
                    onChange={(event) => set("overwriteProfile", event.target.checked)}
                  />
                  Replace it if it exists
                </label>
              )}
            </div>
          </>
        )}

        <fieldset className="session-source">
          <legend>Browser session</legend>
          <div className="segmented">
            {(
              [
                ["none", "None"],
                ["profile", "Profile"],
                ["file", "Storage-state file"],
              ] as const
            ).map(([value, label]) => (
              <label key={value} className={form.source === value ? "selected" : undefined}>
                <input
                  type="radio"
                  name="session-source"
                  value={value}
                  checked={form.source === value}
                  onChange={() => set("source", value)}
                />
                {label}
              </label>
            ))}
          </div>
          {form.source === "profile" && (
            <Field
              id="run-profile"
              label="Profile"
              error={problem("profile")}
              hint={
                profiles.length === 0 && !profileList.loading
                  ? "No profiles yet: import one under Profiles."
                  : undefined
              }
            >
              <select
                id="run-profile"
                value={form.profile}
                onChange={(event) => set("profile", event.target.value)}
                aria-invalid={problem("profile") ? true : undefined}
                aria-describedby={describedBy("run-profile", profiles.length === 0, problem("profile"))}
              >
                <option value="">Choose a profile…</option>
                {profiles.map((profile) => (
                  <option key={profile.name} value={profile.name}>
                    {profile.name} ({profile.cookies.status})
                  </option>
                ))}
              </select>
            </Field>
          )}
          {form.source === "file" && (
            <Field
              id="run-storage-state"
              label="Storage-state path"
              hint="A Playwright storage-state file inside the service's data directory, mode 0600."
              error={problem("storageStatePath")}
            >
              <input
                id="run-storage-state"
                placeholder="states/shop.json"
                value={form.storageStatePath}
                onChange={(event) => set("storageStatePath", event.target.value)}
                aria-invalid={problem("storageStatePath") ? true : undefined}
                aria-describedby={describedBy("run-storage-state", true, problem("storageStatePath"))}
              />
            </Field>
          )}
        </fieldset>

        <details
          className="options"
          open={Boolean(problem("options.timeoutMs") || problem("options.maxSteps") || problem("options"))}
        >
          <summary>Options</summary>
          <div className="options-grid">
            {form.kind !== "agent" && (
              <>
                <label className="check">
                  <input
                    type="checkbox"
                    checked={form.mainContent}
                    onChange={(event) => set("mainContent", event.target.checked)}
                  />
                  Main content only
                </label>
                <Field id="run-render" label="Render">
                  <select
                    id="run-render"
                    value={form.render}
                    onChange={(event) => set("render", event.target.value as Render)}
                  >
                    <option value="auto">Auto (browser)</option>
                    <option value="browser">Browser</option>
                    <option value="http">Plain HTTP (no screenshot)</option>
                  </select>
                </Field>
              </>
            )}
            <label className="check">
              <input
                type="checkbox"
                checked={form.screenshots}
                onChange={(event) => set("screenshots", event.target.checked)}
              />
              Screenshots
            </label>
            <Field id="run-timeout" label="Timeout (seconds)" error={problem("options.timeoutMs")}>
              <input
                id="run-timeout"
                type="number"
                min={1}
                step={1}
                value={form.timeoutSeconds}
                onChange={(event) => set("timeoutSeconds", event.target.value)}
                aria-describedby={describedBy("run-timeout", false, problem("options.timeoutMs"))}
              />
            </Field>
            {form.kind === "agent" && (
              <Field id="run-max-steps" label="Max steps" error={problem("options.maxSteps")}>
                <input
                  id="run-max-steps"
                  type="number"
                  min={1}
                  max={200}
                  value={form.maxSteps}
                  onChange={(event) => set("maxSteps", event.target.value)}
                  aria-describedby={describedBy("run-max-steps", false, problem("options.maxSteps"))}
                />
              </Field>
            )}
            <Field id="run-wait-for" label="Wait for (CSS selector)" error={problem("options.waitFor")}>
              <input
                id="run-wait-for"
                placeholder="main article"
                value={form.waitFor}
                onChange={(event) => set("waitFor", event.target.value)}
                aria-describedby={describedBy("run-wait-for", false, problem("options.waitFor"))}
              />
            </Field>
          </div>
        </details>

        {server && <ErrorBanner error={server} title="The run was not submitted" />}
        {error !== null && !server && <ErrorBanner error={error} />}

        <div className="form-actions">
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? "Submitting…" : `Run ${form.kind}`}
          </button>
        </div>
      </form>
    </div>
  );
}

function fieldId(name: string): string {
  const ids: Record<string, string> = {
    url: "run-url",
    schema: "run-schema",
    goal: "run-goal",
    cred: "run-cred",
    saveProfile: "run-save-profile",
    profile: "run-profile",
    storageStatePath: "run-storage-state",
    "options.timeoutMs": "run-timeout",
    "options.maxSteps": "run-max-steps",
  };
  return ids[name] ?? "run-url";
}

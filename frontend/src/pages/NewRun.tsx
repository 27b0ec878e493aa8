import { useState, type FormEvent } from "react";
import { useLocation, useNavigate } from "react-router";
import { ApiError } from "../api/client";
import { profiles as profilesApi, runs } from "../api/endpoints";
import type { Render, RunKind, RunSpec } from "../api/types";
import { CrawlFields } from "../components/CrawlFields";
import { SchemaEditor, useSchemaCheck } from "../components/SchemaEditor";
import { describedBy, ErrorBanner, Field, PageHeader } from "../components/ui";
import { buildSpec, initialState, validate, type FormState } from "../lib/runForm";
import { useResource } from "../lib/useResource";

const KIND_INFO: Record<RunKind, { label: string; text: string }> = {
  fetch: { label: "Fetch", text: "Load a page and return clean Markdown, title and links." },
  extract: { label: "Extract", text: "Load a page and return JSON that matches your schema." },
  agent: { label: "Agent", text: "A model drives the browser toward a goal, step by step." },
  crawl: {
    label: "Crawl",
    text: "Follow a site's links and sitemaps from the page; each page becomes a run of its own.",
  },
};

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

        {form.kind === "crawl" && (
          <CrawlFields crawl={form.crawl} onChange={(crawl) => set("crawl", crawl)} problem={problem} />
        )}

        {(form.kind === "extract" || form.kind === "crawl") && (
          <>
            <SchemaEditor
              id="run-schema"
              label={form.kind === "crawl" ? "Schema (optional: each page's JSON)" : "Schema"}
              value={form.schema}
              onChange={(value) => set("schema", value)}
              serverError={
                server?.field("schema") ??
                (touched && form.kind === "extract" && !form.schema.trim() ? "Enter a schema." : null)
              }
            />
            {(form.kind === "extract" || form.schema.trim()) && (
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
            )}
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
              <label className="check">
                <input
                  type="checkbox"
                  checked={form.mainContent}
                  onChange={(event) => set("mainContent", event.target.checked)}
                />
                Main content only
              </label>
            )}
            {(form.kind === "fetch" || form.kind === "extract") && (
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
            )}
            {form.kind !== "crawl" && (
              <label className="check">
                <input
                  type="checkbox"
                  checked={form.screenshots}
                  onChange={(event) => set("screenshots", event.target.checked)}
                />
                Screenshots
              </label>
            )}
            <Field
              id="run-timeout"
              label="Timeout (seconds)"
              hint={form.kind === "crawl" ? "For each page." : undefined}
              error={problem("options.timeoutMs")}
            >
              <input
                id="run-timeout"
                type="number"
                min={1}
                step={1}
                value={form.timeoutSeconds}
                onChange={(event) => set("timeoutSeconds", event.target.value)}
                aria-describedby={describedBy("run-timeout", form.kind === "crawl", problem("options.timeoutMs"))}
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
            {form.kind !== "crawl" && (
              <Field id="run-wait-for" label="Wait for (CSS selector)" error={problem("options.waitFor")}>
                <input
                  id="run-wait-for"
                  placeholder="main article"
                  value={form.waitFor}
                  onChange={(event) => set("waitFor", event.target.value)}
                  aria-describedby={describedBy("run-wait-for", false, problem("options.waitFor"))}
                />
              </Field>
            )}
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
    "crawl.maxPages": "crawl-maxPages",
    "crawl.maxDepth": "crawl-maxDepth",
    "crawl.perHostConcurrency": "crawl-perHostConcurrency",
    "crawl.delayMs": "crawl-delayMs",
  };
  return ids[name] ?? "run-url";
}

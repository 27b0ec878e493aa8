import { useState, type FormEvent } from "react";
import { ApiError } from "../api/client";
import { webhooks } from "../api/endpoints";
import type { WebhookCreated, WebhookEvent, WebhookHook } from "../api/types";
import { ConfirmDialog } from "../components/Modal";
import { describedBy, EmptyState, ErrorBanner, Field, Loading, Notice, PageHeader, Time } from "../components/ui";
import { useResource } from "../lib/useResource";

const EVENTS: { value: WebhookEvent; label: string }[] = [
  { value: "run.finished", label: "run.finished: every run that ends" },
  { value: "run.succeeded", label: "run.succeeded" },
  { value: "run.failed", label: "run.failed" },
  { value: "query.drifted", label: "query.drifted: a replay whose result changed" },
];

function AddForm({ onAdded }: { onAdded(hook: WebhookCreated): void }) {
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<WebhookEvent[]>(["run.finished"]);
  const [query, setQuery] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const api = error instanceof ApiError ? error : null;
  const urlError = api?.field("url");
  const eventsError = events.length === 0 ? "Choose at least one event." : api?.field("events");
  const queryError = api?.field("query");

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (events.length === 0) return;
    setError(null);
    setBusy(true);
    try {
      onAdded(await webhooks.create({ url: url.trim(), events, ...(query.trim() ? { query: query.trim() } : {}) }));
      setUrl("");
      setQuery("");
    } catch (reason) {
      setError(reason);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="form-card webhook-form" onSubmit={submit} noValidate aria-labelledby="webhook-add-title">
      <h2 id="webhook-add-title">Add a webhook</h2>
      <p className="hint">
        Runs are POSTed to it as they end, signed per Standard Webhooks; failed deliveries are retried for 24 hours.
      </p>
      <Field id="webhook-url" label="URL" error={urlError}>
        <input
          id="webhook-url"
          value={url}
          placeholder="https://chat.example/hooks/prices"
          onChange={(event) => setUrl(event.target.value)}
          aria-invalid={urlError ? true : undefined}
          aria-describedby={describedBy("webhook-url", false, urlError)}
        />
      </Field>
      <fieldset className="events">
        <legend>Events</legend>
        {EVENTS.map((option) => (
          <label className="check" key={option.value}>
            <input
              type="checkbox"
              checked={events.includes(option.value)}
              onChange={(event) =>
                setEvents((chosen) =>
                  event.target.checked ? [...chosen, option.value] : chosen.filter((value) => value !== option.value),
                )
              }
            />{" "}
            {option.label}
          </label>
        ))}
        {eventsError && <p className="field-error">{eventsError}</p>}
      </fieldset>
      <Field id="webhook-query" label="Only runs of the saved query (optional)" error={queryError}>
        <input
          id="webhook-query"
          value={query}
          placeholder="price-watch"
          onChange={(event) => setQuery(event.target.value)}
          aria-invalid={queryError ? true : undefined}
          aria-describedby={describedBy("webhook-query", false, queryError)}
        />
      </Field>
      {error !== null && !urlError && !queryError && <ErrorBanner error={error} />}
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={busy || events.length === 0}>
          {busy ? "Adding…" : "Add webhook"}
        </button>
      </div>
    </form>
  );
}

function Deliveries({ hook }: { hook: WebhookHook }) {
  const attempts = useResource(() => webhooks.deliveries(hook.id), [hook.id]);
  if (attempts.error !== null) return <ErrorBanner error={attempts.error} />;
  if (!attempts.data) return <Loading />;
  if (attempts.data.length === 0) return <p className="muted">No delivery attempts yet.</p>;
  return (
    <div className="table-wrap">
      <table className="deliveries-table">
        <caption>Last delivery attempts to {hook.url}</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Answer</th>
            <th scope="col">Took</th>
            <th scope="col">Delivery</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {attempts.data.map((attempt, index) => (
            <tr key={`${attempt.webhookId}-${index}`}>
              <td data-label="When">
                <Time iso={attempt.at} />
              </td>
              <td data-label="Event">
                <code>{attempt.event}</code>
              </td>
              <td data-label="Answer">{attempt.statusCode ?? "—"}</td>
              <td data-label="Took">{attempt.durationMs} ms</td>
              <td data-label="Delivery">{attempt.deliveryStatus}</td>
              <td data-label="Error">{attempt.error || <span className="muted">—</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Webhooks() {
  const list = useResource(() => webhooks.list(), []);
  const [added, setAdded] = useState<WebhookCreated | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<WebhookHook | null>(null);

  return (
    <div className="page webhooks">
      <PageHeader title="Webhooks" subtitle="URLs told about runs as they end." />
      <AddForm
        onAdded={(hook) => {
          setAdded(hook);
          list.reload();
        }}
      />
      {added && (
        <Notice tone="success">
          <p>
            Added. Its signing secret, shown this once: <code className="secret">{added.secret}</code>
          </p>
        </Notice>
      )}
      {list.error !== null && <ErrorBanner error={list.error} />}
      {list.loading && !list.data ? (
        <Loading />
      ) : list.data && list.data.length === 0 ? (
        <EmptyState title="No webhooks yet." />
      ) : (
        <div className="table-wrap">
          <table className="webhooks-table">
            <caption className="visually-hidden">Webhooks</caption>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">Query</th>
                <th scope="col">Added</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {(list.data ?? []).map((hook) => (
                <tr key={hook.id} data-webhook={hook.id}>
                  <td data-label="URL" className="break">
                    {hook.url}
                  </td>
                  <td data-label="Events">{hook.events.join(", ")}</td>
                  <td data-label="Query">{hook.query ?? <span className="muted">all runs</span>}</td>
                  <td data-label="Added">
                    <Time iso={hook.createdAt} />
                  </td>
                  <td className="row-actions">
                    <button
                      type="button"
                      className="button small"
                      onClick={() => setOpen(open === hook.id ? null : hook.id)}
                      aria-expanded={open === hook.id}
                    >
                      Deliveries
                    </button>{" "}
                    <button
                      type="button"
                      className="button small danger-outline"
                      onClick={() => setDeleting(hook)}
                      aria-label={`Delete ${hook.url}`}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {open && list.data?.find((hook) => hook.id === open) && (
        <section className="section" aria-label="Deliveries">
          <Deliveries hook={list.data.find((hook) => hook.id === open)!} />
        </section>
      )}
      {deleting && (
        <ConfirmDialog
          title="Delete webhook"
          message={
            <p>
              Delete the webhook to <strong>{deleting.url}</strong>? Nothing more is delivered to it.
            </p>
          }
          confirmLabel="Delete webhook"
          onConfirm={async () => {
            await webhooks.remove(deleting.id);
            if (open === deleting.id) setOpen(null);
            list.reload();
          }}
          onClose={() => setDeleting(null)}
        />
      )}
    </div>
  );
}

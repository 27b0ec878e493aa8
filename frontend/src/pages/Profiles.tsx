import { useRef, useState, type FormEvent } from "react";
import { ApiError } from "../api/client";
import { profiles } from "../api/endpoints";
import type { CookieSummary, Profile } from "../api/types";
import { ConfirmDialog } from "../components/Modal";
import {
  describedBy,
  EmptyState,
  ErrorBanner,
  Field,
  Loading,
  Notice,
  PageHeader,
  ProfileBadge,
  Time,
} from "../components/ui";
import { formatBytes, formatCount } from "../lib/format";
import { useResource } from "../lib/useResource";

const NAME = /^[a-z0-9_-]{1,64}$/;

function nameFromFile(fileName: string): string {
  return fileName
    .replace(/\.json$/i, "")
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
}

function cookieBreakdown(cookies: CookieSummary): string {
  const parts = [
    cookies.expired ? `${cookies.expired} expired` : "",
    cookies.expiringWithin7Days ? `${cookies.expiringWithin7Days} expiring within 7 days` : "",
    cookies.sessionOnly ? `${cookies.sessionOnly} session-only` : "",
    cookies.originsWithStorage ? formatCount(cookies.originsWithStorage, "origin") + " with local storage" : "",
  ].filter(Boolean);
  return parts.join(", ");
}

function ImportForm({ onImported }: { onImported(profile: Profile): void }) {
  const [name, setName] = useState("");
  const [file, setFile] = useState<File | null>(null);
  const [overwrite, setOverwrite] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [fileError, setFileError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const api = error instanceof ApiError ? error : null;
  const nameError =
    name && !NAME.test(name)
      ? "Use 1-64 lowercase letters, digits, - and _."
      : api?.code === "profile_exists"
        ? `A profile named “${name}” exists. Tick “Replace” to overwrite it.`
        : api?.field("name");
  const stateError = fileError ?? api?.field("state");

  async function submit(event: FormEvent) {
    event.preventDefault();
    setError(null);
    setFileError(null);
    if (!file) {
      setFileError("Choose a storage-state JSON file.");
      return;
    }
    if (!NAME.test(name)) {
      setError(new ApiError(400, "invalid_request", "Enter a profile name.", { name: ["Enter a profile name."] }));
      return;
    }
    let state: unknown;
    try {
      state = JSON.parse(await file.text());
    } catch {
      setFileError("This file is not valid JSON. Export it with Playwright's context.storageState().");
      return;
    }
    setBusy(true);
    try {
      const profile = await profiles.importState(name, state, overwrite);
      onImported(profile);
      setName("");
      setFile(null);
      setOverwrite(false);
      if (fileInput.current) fileInput.current.value = "";
    } catch (reason) {
      setError(reason);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="form-card import-form" onSubmit={submit} noValidate aria-labelledby="import-title">
      <h2 id="import-title">Import a profile</h2>
      <p className="hint">
        A Playwright storage state (<code>{"{cookies, origins}"}</code>), e.g. from{" "}
        <code>context.storage_state(path=…)</code>. It is stored as a private file; only this summary is ever shown.
      </p>
      <div className="field-row">
        <Field id="profile-file" label="Storage-state file" error={stateError}>
          <input
            id="profile-file"
            ref={fileInput}
            type="file"
            accept=".json,application/json"
            onChange={(event) => {
              const chosen = event.target.files?.[0] ?? null;
              setFile(chosen);
              setFileError(null);
              if (chosen && !name) setName(nameFromFile(chosen.name));
            }}
            aria-invalid={stateError ? true : undefined}
            aria-describedby={describedBy("profile-file", false, stateError)}
          />
        </Field>
        <Field id="profile-name" label="Profile name" error={nameError}>
          <input
            id="profile-name"
            value={name}
            autoComplete="off"
            placeholder="shop"
            onChange={(event) => setName(event.target.value.trim())}
            aria-invalid={nameError ? true : undefined}
            aria-describedby={describedBy("profile-name", false, nameError)}
          />
        </Field>
      </div>
      <label className="check">
        <input type="checkbox" checked={overwrite} onChange={(event) => setOverwrite(event.target.checked)} />
        Replace a profile of the same name
      </label>
      {error !== null && !nameError && !api?.field("state") && <ErrorBanner error={error} />}
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={busy}>
          {busy ? "Importing…" : "Import profile"}
        </button>
      </div>
    </form>
  );
}

export function Profiles() {
  const list = useResource(() => profiles.list(), []);
  const [deleting, setDeleting] = useState<Profile | null>(null);
  const [imported, setImported] = useState<Profile | null>(null);

  return (
    <div className="page profiles">
      <PageHeader title="Profiles" subtitle="Stored browser sessions that runs can start from." />
      <ImportForm
        onImported={(profile) => {
          setImported(profile);
          list.reload();
        }}
      />
      {imported && (
        <Notice tone="success">
          <p>
            Imported <strong>{imported.name}</strong>: {formatCount(imported.cookies.cookieCount, "cookie")}, status{" "}
            {imported.cookies.status}.
          </p>
        </Notice>
      )}
      {list.error !== null && <ErrorBanner error={list.error} />}
      {list.loading && !list.data ? (
        <Loading />
      ) : list.data && list.data.length === 0 ? (
        <EmptyState title="No profiles yet.">
          Import a storage state above, or log in by hand with <code>manage.py profile login NAME --url …</code>.
        </EmptyState>
      ) : (
        <div className="table-wrap">
          <table className="profiles-table">
            <caption className="visually-hidden">Profiles</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Cookies</th>
                <th scope="col">Domains</th>
                <th scope="col">Earliest expiry</th>
                <th scope="col">Updated</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {(list.data ?? []).map((profile) => (
                <tr key={profile.name} data-profile={profile.name}>
                  <td data-label="Name">
                    <span>
                      <span className="profile-name">{profile.name}</span>{" "}
                      <span className="muted small">{formatBytes(profile.size)}</span>
                    </span>
                  </td>
                  <td data-label="Status">
                    <ProfileBadge status={profile.cookies.status} />
                  </td>
                  <td data-label="Cookies">
                    <span>
                      {formatCount(profile.cookies.cookieCount, "cookie")}
                      {cookieBreakdown(profile.cookies) && (
                        <span className="muted small block">{cookieBreakdown(profile.cookies)}</span>
                      )}
                    </span>
                  </td>
                  <td data-label="Domains">
                    <span className="domains">
                      {profile.cookies.domains.length ? (
                        profile.cookies.domains.slice(0, 6).map((domain) => (
                          <code key={domain} className="domain">
                            {domain}
                          </code>
                        ))
                      ) : (
                        <span className="muted">—</span>
                      )}
                      {profile.cookies.domains.length > 6 && (
                        <span className="muted small"> +{profile.cookies.domains.length - 6} more</span>
                      )}
                    </span>
                  </td>
                  <td data-label="Earliest expiry">
                    <Time iso={profile.cookies.earliestExpiry} relative={false} />
                  </td>
                  <td data-label="Updated">
                    <Time iso={profile.updatedAt} />
                  </td>
                  <td className="row-actions">
                    <button
                      type="button"
                      className="button small danger-outline"
                      onClick={() => setDeleting(profile)}
                      aria-label={`Delete ${profile.name}`}
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
      {deleting && (
        <ConfirmDialog
          title="Delete profile"
          message={
            <p>
              Delete the profile <strong>{deleting.name}</strong>? Runs that name it will fail until it is imported
              again.
            </p>
          }
          confirmLabel="Delete profile"
          onConfirm={async () => {
            await profiles.remove(deleting.name);
            if (imported?.name === deleting.name) setImported(null);
            list.reload();
          }}
          onClose={() => setDeleting(null)}
        />
      )}
    </div>
  );
}

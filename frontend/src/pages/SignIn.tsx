import { useState, type FormEvent } from "react";
import { Navigate, useNavigate, useSearchParams } from "react-router";
import { ApiError } from "../api/client";
import { describedBy, ErrorBanner, Field, Loading } from "../components/ui";
import { useSession } from "../session";

function safeNext(next: string | null): string {
  // Only paths of this app: never an absolute URL or a protocol-relative //host.
  return next && next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

export function SignIn() {
  const { status, signIn, problem, retry } = useSession();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const [key, setKey] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const next = safeNext(params.get("next"));

  if (status === "loading") return <Loading label="Connecting to the service…" />;
  if (status === "signedIn" && !busy) return <Navigate to={next} replace />;

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (!key.trim()) {
      setError(new ApiError(400, "invalid_request", "Enter an API key."));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await signIn(key.trim());
      navigate(next, { replace: true });
    } catch (reason) {
      setError(reason);
      setBusy(false);
    }
  }

  const fieldError =
    error instanceof ApiError && (error.status === 401 || error.code === "invalid_request") ? error.message : null;

  return (
    <main className="signin-page">
      <div className="signin-card">
        <div className="signin-brand">
          <img src="/favicon.svg" alt="" width="36" height="36" />
          <div>
            <h1>Web data playground</h1>
            <p className="subtitle">Fetch, extract and agent runs in a real browser, with every step kept.</p>
          </div>
        </div>
        {status === "unreachable" && (
          <div className="banner banner-error" role="alert">
            <p>{problem}</p>
            <button type="button" className="button small" onClick={retry}>
              Try again
            </button>
          </div>
        )}
        <form onSubmit={submit} noValidate>
          <Field
            id="api-key"
            label="API key"
            hint="The key is exchanged for a session cookie; it is not stored in this browser."
            error={fieldError}
          >
            <input
              id="api-key"
              name="key"
              type="password"
              autoComplete="current-password"
              autoFocus
              value={key}
              onChange={(event) => setKey(event.target.value)}
              aria-invalid={fieldError ? true : undefined}
              aria-describedby={describedBy("api-key", true, fieldError)}
            />
          </Field>
          {error !== null && !fieldError && <ErrorBanner error={error} />}
          <button type="submit" className="button primary wide" disabled={busy}>
            {busy ? "Signing in…" : "Sign in"}
          </button>
        </form>
        <p className="hint signin-help">
          No key yet? Start the service with <code>SERVICE_API_KEY=…</code> or create one with{" "}
          <code>manage.py apikey create &lt;name&gt;</code>.
        </p>
      </div>
    </main>
  );
}

import type { Drift } from "../api/types";

/** A saved query's drift mark: what changed since its previous successful replay. */
export function DriftSummary({ drift, baseline }: { drift: Drift | null; baseline?: boolean }) {
  if (!drift) {
    return baseline ? (
      <span className="muted" title="The first successful replay: later ones are compared with it.">
        Baseline
      </span>
    ) : (
      <span className="muted">—</span>
    );
  }
  const total = drift.changed.length + drift.emptied.length + drift.appeared.length;
  if (total === 0) return <span className="drift drift-none">No drift</span>;
  const parts = [
    drift.changed.length ? `${drift.changed.length} changed` : "",
    drift.emptied.length ? `${drift.emptied.length} emptied` : "",
    drift.appeared.length ? `${drift.appeared.length} appeared` : "",
  ].filter(Boolean);
  const details = [
    drift.changed.length ? `changed: ${drift.changed.join(", ")}` : "",
    drift.emptied.length ? `emptied: ${drift.emptied.join(", ")}` : "",
    drift.appeared.length ? `appeared: ${drift.appeared.join(", ")}` : "",
  ]
    .filter(Boolean)
    .join("; ");
  return (
    <span className={`drift ${drift.emptied.length ? "drift-bad" : "drift-some"}`} title={details}>
      {parts.join(", ")}
    </span>
  );
}

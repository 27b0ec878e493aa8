import type { Run, RunStatus } from "../api/types";
import { isFinal } from "../api/types";
import { crawlCounts, crawlSummary, formatRate, pagesPerMinute, type CrawlSummary } from "../lib/crawl";
import { CrawlPages } from "./CrawlPages";

interface Props {
  run: Pick<Run, "id" | "spec" | "result">;
  /** The crawl's steps so far: a "discover" step, then one per page. */
  steps: readonly { action: string; observation: string }[];
  status: RunStatus;
  startedAt: string | null;
  finishedAt: string | null;
  /** The time the rate of a running crawl is measured to. */
  now: number;
}

/** A crawl's pages: how many are done, found, failed and how fast, and the table of them. */
export function CrawlProgress({ run, steps, status, startedAt, finishedAt, now }: Props) {
  const finished = isFinal(status);
  const counts = crawlCounts(steps, finished ? crawlSummary(run.result) : null);
  const rate = pagesPerMinute(counts.done, startedAt, finishedAt ? Date.parse(finishedAt) : now);
  const maxPages = run.spec.crawl?.maxPages;
  const facts: [string, string, string, string?][] = [
    ["done", "Pages done", counts.done.toLocaleString(), maxPages ? `at most ${maxPages.toLocaleString()}` : ""],
    ["waiting", "Waiting", counts.waiting.toLocaleString(), "Pages found in scope and not fetched yet."],
    [
      "found",
      "URLs found",
      counts.found.toLocaleString(),
      "Links, sitemap entries and the start URL; duplicates and skipped ones included.",
    ],
    ["failed", "Failed", counts.failed.toLocaleString()],
    [
      "rate",
      finished ? "Rate" : "Rate so far",
      formatRate(rate),
      "Pages done per minute (or second) since the crawl started.",
    ],
  ];
  return (
    <section className="section" aria-labelledby="pages-title">
      <h2 id="pages-title">
        Pages <span className="count">{counts.done}</span>
      </h2>
      <dl className="facts summary crawl-counts">
        {facts.map(([name, label, value, hint]) => (
          <div key={name} title={hint || undefined}>
            <dt>{label}</dt>
            <dd data-count={name}>{value}</dd>
          </div>
        ))}
      </dl>
      <CrawlPages crawlId={run.id} version={`${steps.length} ${status}`} live={!finished} />
    </section>
  );
}

function counted(counts: Record<string, number>): string {
  const entries = Object.entries(counts).filter(([, n]) => n > 0);
  if (entries.length === 0) return "none";
  return entries
    .sort(([, a], [, b]) => b - a)
    .map(([name, n]) => `${name.replace(/_/g, " ")} ${n.toLocaleString()}`)
    .join(" · ");
}

/** A finished crawl's result in words, less the counts CrawlProgress shows (the JSON is in the export). */
export function CrawlSummaryView({ result }: { result: unknown }) {
  const summary: CrawlSummary | null = crawlSummary(result);
  if (!summary) return <p className="muted">No summary.</p>;
  const { queued = 0, in_flight: inFlight = 0, ...answers } = summary.frontier;
  return (
    <dl className="facts crawl-summary">
      <div className="wide">
        <dt>Pages by status</dt>
        <dd data-summary="byStatus">{counted(summary.byStatus)}</dd>
      </div>
      <div className="wide">
        <dt>Page answers</dt>
        <dd title="HTTP status, or the error code of a page that did not answer">{counted(answers)}</dd>
      </div>
      <div className="wide">
        <dt>Not fetched, by reason</dt>
        <dd data-summary="skipped">{counted(summary.skipped)}</dd>
      </div>
      {queued + inFlight > 0 && (
        <div className="wide">
          <dt>Left in the frontier</dt>
          <dd>{(queued + inFlight).toLocaleString()} pages</dd>
        </div>
      )}
    </dl>
  );
}

// A crawl's progress from what the service gives: while it runs, its steps (a "discover" step, then one "page" step
// per page done, each saying what the links it found came to); once finished, its result (the summary).

/** A crawl run's result (runs/crawl.py Crawl.summary). */
export interface CrawlSummary {
  /** Pages fetched (child runs). */
  pages: number;
  byStatus: Record<string, number>;
  /** URLs offered to the frontier: the start URL, sitemap entries and links, duplicates and skipped ones included. */
  found: number;
  /** Why found URLs were not fetched, by reason (duplicate, out_of_scope, robots, limit…). */
  skipped: Record<string, number>;
  frontier: Record<string, number>;
}

export interface CrawlCounts {
  done: number;
  failed: number;
  /** URLs found so far (as CrawlSummary.found). */
  found: number;
  /** Pages queued and not done yet. */
  waiting: number;
}

function isCounts(value: unknown): value is Record<string, number> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((n) => typeof n === "number")
  );
}

export function crawlSummary(result: unknown): CrawlSummary | null {
  if (typeof result !== "object" || result === null) return null;
  const summary = result as Partial<CrawlSummary>;
  const ok =
    typeof summary.pages === "number" &&
    typeof summary.found === "number" &&
    isCounts(summary.byStatus) &&
    isCounts(summary.skipped) &&
    isCounts(summary.frontier);
  return ok ? (summary as CrawlSummary) : null;
}

// "page succeeded: run <id> (depth 1)" opens a page step; "3 links: {'queued': 2, 'duplicate': 1}" (or the start
// URL's, or the sitemaps') says what found URLs came to.
const PAGE_LINE = /^page (\w+):/;
const OUTCOME = /["']([a-z_]+)["']\s*:\s*(\d+)/g;

/** Counts read from a crawl's steps (observations cut at 2000 characters while live still hold them). */
export function countsFromSteps(steps: readonly { action: string; observation: string }[]): CrawlCounts {
  let done = 0;
  let failed = 0;
  let found = 0;
  let queued = 0;
  for (const step of steps) {
    if (step.action !== "discover" && step.action !== "page") continue;
    const status = step.action === "page" ? PAGE_LINE.exec(step.observation)?.[1] : undefined;
    if (step.action === "page") done += 1;
    if (status === "failed") failed += 1;
    for (const [, reason, count] of step.observation.matchAll(OUTCOME)) {
      found += Number(count);
      if (reason === "queued") queued += Number(count);
    }
  }
  return { done, failed, found, waiting: Math.max(0, queued - done) };
}

/** The counts of a crawl: its summary's once it has one, else what its steps say so far. */
export function crawlCounts(
  steps: readonly { action: string; observation: string }[],
  summary: CrawlSummary | null,
): CrawlCounts {
  if (!summary) return countsFromSteps(steps);
  return {
    done: summary.pages,
    failed: summary.byStatus.failed ?? 0,
    found: summary.found,
    waiting: (summary.frontier.queued ?? 0) + (summary.frontier.in_flight ?? 0),
  };
}

/** Pages done per minute from the crawl's start to `end` (now, or when it finished); null before a second passed. */
export function pagesPerMinute(done: number, startedAt: string | null, end: number): number | null {
  if (!startedAt) return null;
  const elapsed = end - Date.parse(startedAt);
  if (!Number.isFinite(elapsed) || elapsed < 1000) return null;
  return (done * 60_000) / elapsed;
}

/** 0.4 pages/min, 12 pages/min, 2.5 pages/s. */
export function formatRate(perMinute: number | null): string {
  if (perMinute === null) return "—";
  if (perMinute >= 60) return `${(perMinute / 60).toFixed(1)} pages/s`;
  return `${perMinute < 10 ? perMinute.toFixed(1) : Math.round(perMinute)} pages/min`;
}

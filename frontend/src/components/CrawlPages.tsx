import { useEffect, useRef, useState } from "react";
import { Link } from "react-router";
import { exportUrl, runs } from "../api/endpoints";
import type { RunSummary } from "../api/types";
import { formatDuration, runDurationMs } from "../lib/format";
import { useNow, useResource, useThrottled } from "../lib/useResource";
import { runPath } from "./RunTable";
import { EmptyState, ErrorBanner, errorTitle, Loading, StatusBadge } from "./ui";

const SHOWN_AT_FIRST = 50;
const SHOWN_AT_MOST = 500; // the API's largest page
const LOOKUPS_AT_ONCE = 4;
const NO_PAGES: RunSummary[] = [];

/** The titles of succeeded fetch pages, by run id (null: the page has none, or it could not be read). A run list
 * carries no result, so each page's title is read once, with its result, a few pages at a time. */
function usePageTitles(pages: readonly RunSummary[]): Record<string, string | null> {
  const [titles, setTitles] = useState<Record<string, string | null>>({});
  const asked = useRef(new Set<string>());
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  useEffect(() => {
    const wanted = pages
      .filter((page) => page.kind === "fetch" && page.status === "succeeded" && !asked.current.has(page.id))
      .map((page) => page.id);
    wanted.forEach((id) => asked.current.add(id));
    async function lookUp() {
      while (wanted.length > 0) {
        const id = wanted.shift() as string;
        let title: string | null = null;
        try {
          const result = (await runs.withResult(id))?.result as { title?: unknown } | null | undefined;
          title = typeof result?.title === "string" && result.title ? result.title : null;
        } catch {
          title = null; // shown as "none" rather than asked again on every read of the list
        }
        if (mounted.current) setTitles((current) => ({ ...current, [id]: title }));
      }
    }
    for (let n = 0; n < Math.min(LOOKUPS_AT_ONCE, wanted.length); n++) void lookUp();
  }, [pages]);
  return titles;
}

function PageTitle({ page, title }: { page: RunSummary; title: string | null | undefined }) {
  if (page.error) {
    return (
      <span className="muted" title={page.error.message}>
        {errorTitle(page.error.code)}
      </span>
    );
  }
  if (page.status !== "succeeded") return <span className="muted">—</span>;
  if (page.kind !== "fetch") {
    return (
      <span className="muted mono" title={page.preview}>
        {page.preview || "—"}
      </span>
    );
  }
  if (title === undefined) return <span className="muted">…</span>;
  return title ? <>{title}</> : <span className="muted">none</span>;
}

interface Props {
  crawlId: string;
  /** Changes when the crawl may have more pages (a step, a new status): the list is read again, once a second at
   * most. */
  version: string;
  /** The crawl is running: the list is also read every few seconds (a page in progress shows). */
  live: boolean;
}

/** A crawl's pages, newest first: each one's URL (to its run), status and title. */
export function CrawlPages({ crawlId, version, live }: Props) {
  const [limit, setLimit] = useState(SHOWN_AT_FIRST);
  const tick = useNow(live, 5000);
  const reading = useThrottled(`${version} ${live ? tick : ""}`, 1000);
  const list = useResource((signal) => runs.list({ parent: crawlId }, null, limit, signal), [crawlId, limit, reading]);
  const pages = list.data?.results ?? NO_PAGES;
  const titles = usePageTitles(pages);
  const now = Date.now();

  if (list.error !== null && !list.data) return <ErrorBanner error={list.error} />;
  if (!list.data) return <Loading label="Reading the pages…" />;
  if (pages.length === 0) {
    return <EmptyState title={live ? "Pages appear here as they are fetched." : "This crawl fetched no pages."} />;
  }
  return (
    <>
      <div className="table-wrap">
        <table className="runs-table crawl-pages">
          <caption className="visually-hidden">Pages of the crawl, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Page</th>
              <th scope="col">Status</th>
              <th scope="col">Title</th>
              <th scope="col" className="num">
                Duration
              </th>
            </tr>
          </thead>
          <tbody>
            {pages.map((page) => (
              <tr key={page.id} data-run-id={page.id}>
                <td data-label="Page" className="url-cell" title={page.url}>
                  <Link to={runPath(page)}>{page.url}</Link>
                </td>
                <td data-label="Status">
                  <StatusBadge status={page.status} />
                </td>
                <td data-label="Title" className="subject-cell">
                  <PageTitle page={page} title={titles[page.id]} />
                </td>
                <td data-label="Duration" className="num">
                  {formatDuration(runDurationMs(page, now))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {list.data.next && limit < SHOWN_AT_MOST && (
        <div className="pagination">
          <button type="button" className="button" onClick={() => setLimit((n) => n + SHOWN_AT_FIRST)}>
            Show {SHOWN_AT_FIRST} more
          </button>
        </div>
      )}
      {list.data.next && limit >= SHOWN_AT_MOST && (
        <p className="hint">
          The newest {SHOWN_AT_MOST} pages are shown;{" "}
          <a href={exportUrl("json", { parent: crawlId })} download>
            export them all
          </a>
          .
        </p>
      )}
    </>
  );
}

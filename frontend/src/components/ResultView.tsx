import type { FetchResult, RunKind } from "../api/types";
import { JsonView } from "./JsonTree";
import { MarkdownView } from "./Markdown";

function isFetchResult(value: unknown): value is FetchResult {
  return typeof value === "object" && value !== null && typeof (value as FetchResult).markdown === "string";
}

export function ResultView({ kind, result }: { kind: RunKind; result: unknown }) {
  if (result === null || result === undefined) return <p className="muted">No result.</p>;
  if (kind === "fetch" && isFetchResult(result)) {
    return (
      <div className="fetch-result">
        <dl className="facts">
          <div>
            <dt>Title</dt>
            <dd>{result.title || <span className="muted">none</span>}</dd>
          </div>
          <div>
            <dt>HTTP status</dt>
            <dd>{result.status}</dd>
          </div>
          <div className="wide">
            <dt>Final URL</dt>
            <dd className="break">{result.finalUrl}</dd>
          </div>
          {result.pageType && (
            <div>
              <dt>Page type</dt>
              <dd title="What kind of page it is; the main content was found for that kind">{result.pageType}</dd>
            </div>
          )}
          {result.render && (
            <div>
              <dt>Rendered with</dt>
              <dd>{result.render}</dd>
            </div>
          )}
          {result.loadState === "domcontentloaded" && (
            <div>
              <dt>Load state</dt>
              <dd title="The load event did not come within a few seconds; the page was read as it was">
                DOMContentLoaded only
              </dd>
            </div>
          )}
          {result.truncated && (
            <div>
              <dt>Cut</dt>
              <dd title="The page was longer than the service reads; this is its beginning">beginning only</dd>
            </div>
          )}
          <div>
            <dt>Links</dt>
            <dd>{result.links.length.toLocaleString()}</dd>
          </div>
        </dl>
        <MarkdownView markdown={result.markdown} />
        {result.links.length > 0 && (
          <details className="links">
            <summary>Links on the page ({result.links.length.toLocaleString()})</summary>
            <ul>
              {result.links.slice(0, 500).map((link, index) => (
                <li key={`${index}-${link}`} className="break">
                  {/^https?:/i.test(link) ? (
                    <a href={link} target="_blank" rel="noopener noreferrer nofollow">
                      {link}
                    </a>
                  ) : (
                    link
                  )}
                </li>
              ))}
            </ul>
            {result.links.length > 500 && <p className="hint">The first 500 are shown; export the run for all.</p>}
          </details>
        )}
      </div>
    );
  }
  return <JsonView value={result} />;
}

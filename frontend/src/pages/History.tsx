import { useEffect, useState, type FormEvent } from "react";
import { Link, useSearchParams } from "react-router";
import { cursorOf } from "../api/client";
import { runs, type RunFilter } from "../api/endpoints";
import { RunFilterFields, SavedQueryNames } from "../components/RunFilterFields";
import { RunTable } from "../components/RunTable";
import { EmptyState, ErrorBanner, Loading, PageHeader, SelectField } from "../components/ui";
import { filterFromSearch, rememberHistoryFilter, searchFromFilter } from "../lib/historyFilter";
import { useResource } from "../lib/useResource";

const PAGE_SIZES = [25, 50, 100, 200];
const PAGE_SIZE_OPTIONS = PAGE_SIZES.map((size) => ({ value: size, label: String(size) }));

function limitOf(params: URLSearchParams): number {
  const limit = Number(params.get("limit"));
  return PAGE_SIZES.includes(limit) ? limit : 50;
}

export function History() {
  const [params, setParams] = useSearchParams();
  const filter = filterFromSearch(params);
  const cursor = params.get("cursor");
  const limit = limitOf(params);
  const [queryText, setQueryText] = useState(filter.query ?? "");
  const filterKey = searchFromFilter(filter).toString();

  useEffect(() => setQueryText(filter.query ?? ""), [filter.query]);
  useEffect(() => rememberHistoryFilter(filterFromSearch(new URLSearchParams(filterKey))), [filterKey]);

  const page = useResource((signal) => runs.list(filter, cursor, limit, signal), [filterKey, cursor, limit]);

  /** A change of the filter ("clear": none) or of the page size, made to the newest address, not to this render's
   * `params`: the router renders a change a moment after the address has it, and a second change made in between
   * (a fast user, a busy machine) must not drop the first. A new filter starts at its first page. */
  function update(change: Partial<RunFilter> | "clear", nextLimit?: number) {
    const newest = new URLSearchParams(window.location.search);
    const search = searchFromFilter(change === "clear" ? {} : { ...filterFromSearch(newest), ...change });
    const size = nextLimit ?? limitOf(newest);
    if (size !== 50) search.set("limit", String(size));
    setParams(search);
  }

  function submitQuery(event: FormEvent) {
    event.preventDefault();
    update({ query: queryText });
  }

  function goTo(url: string | null) {
    const next = cursorOf(url);
    const search = new URLSearchParams(params);
    if (next) search.set("cursor", next);
    else search.delete("cursor");
    setParams(search);
    window.scrollTo({ top: 0 });
  }

  const filtered = Boolean(filter.kind || filter.status || filter.query);
  const results = page.data?.results ?? [];

  return (
    <div className="page history">
      <PageHeader
        title="History"
        subtitle="Every run, newest first."
        actions={
          <>
            <button type="button" className="button" onClick={page.reload}>
              Refresh
            </button>
            <Link className="button" to={`/export${filterKey ? `?${filterKey}` : ""}`}>
              Export these runs
            </Link>
          </>
        }
      />
      <form className="filters" onSubmit={submitQuery} role="search" aria-label="Filter runs">
        <RunFilterFields idPrefix="filter" filter={filter} onChange={(change) => update(change)} />
        <div className="field grow">
          <label htmlFor="filter-query">Query name</label>
          <div className="input-with-button">
            <input
              id="filter-query"
              list="saved-query-names"
              placeholder="Any"
              value={queryText}
              onChange={(event) => setQueryText(event.target.value)}
              onBlur={() => queryText !== (filter.query ?? "") && update({ query: queryText })}
            />
            <button type="submit" className="button">
              Apply
            </button>
          </div>
          <SavedQueryNames id="saved-query-names" />
        </div>
        <SelectField
          id="filter-limit"
          label="Per page"
          value={limit}
          options={PAGE_SIZE_OPTIONS}
          onChange={(size) => update({}, size)}
        />
        {filtered && (
          <button type="button" className="link-button clear-filters" onClick={() => update("clear")}>
            Clear filters
          </button>
        )}
      </form>

      {page.error !== null && <ErrorBanner error={page.error} />}
      {page.loading && !page.data ? (
        <Loading />
      ) : results.length === 0 && !page.error ? (
        <EmptyState title={filtered ? "No runs match these filters." : "No runs yet."}>
          {filtered ? (
            <button type="button" className="link-button" onClick={() => update("clear")}>
              Clear the filters
            </button>
          ) : (
            <Link to="/">Start your first run</Link>
          )}
        </EmptyState>
      ) : (
        <div className={page.loading ? "stale" : undefined} aria-busy={page.loading}>
          <RunTable runs={results} caption="Runs, newest first" />
        </div>
      )}

      {(page.data?.previous || page.data?.next) && (
        <nav className="pagination" aria-label="Pages">
          <button type="button" className="button" onClick={() => goTo(null)} disabled={!cursor}>
            Newest
          </button>
          <button
            type="button"
            className="button"
            onClick={() => goTo(page.data?.previous ?? null)}
            disabled={!page.data?.previous}
          >
            ← Newer
          </button>
          <button
            type="button"
            className="button"
            onClick={() => goTo(page.data?.next ?? null)}
            disabled={!page.data?.next}
          >
            Older →
          </button>
        </nav>
      )}
    </div>
  );
}

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

export function History() {
  const [params, setParams] = useSearchParams();
  const filter = filterFromSearch(params);
  const cursor = params.get("cursor");
  const limit = PAGE_SIZES.includes(Number(params.get("limit"))) ? Number(params.get("limit")) : 50;
  const [queryText, setQueryText] = useState(filter.query ?? "");
  const filterKey = searchFromFilter(filter).toString();

  useEffect(() => setQueryText(filter.query ?? ""), [filter.query]);
  useEffect(() => rememberHistoryFilter(filterFromSearch(new URLSearchParams(filterKey))), [filterKey]);

  const page = useResource((signal) => runs.list(filter, cursor, limit, signal), [filterKey, cursor, limit]);

  function update(next: RunFilter, nextLimit = limit) {
    const search = searchFromFilter(next);
    if (nextLimit !== 50) search.set("limit", String(nextLimit));
    setParams(search);
  }

  function submitQuery(event: FormEvent) {
    event.preventDefault();
    update({ ...filter, query: queryText });
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
        <RunFilterFields idPrefix="filter" filter={filter} onChange={(next) => update(next)} />
        <div className="field grow">
          <label htmlFor="filter-query">Query name</label>
          <div className="input-with-button">
            <input
              id="filter-query"
              list="saved-query-names"
              placeholder="Any"
              value={queryText}
              onChange={(event) => setQueryText(event.target.value)}
              onBlur={() => queryText !== (filter.query ?? "") && update({ ...filter, query: queryText })}
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
          onChange={(size) => update(filter, size)}
        />
        {filtered && (
          <button type="button" className="link-button clear-filters" onClick={() => update({})}>
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
            <button type="button" className="link-button" onClick={() => update({})}>
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

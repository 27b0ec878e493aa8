import { queries, type RunFilter } from "../api/endpoints";
import { RUN_KINDS, RUN_STATUSES, type RunKind, type RunStatus } from "../api/types";
import { useResource } from "../lib/useResource";

interface RunFilterFieldsProps {
  /** Prefix of the fields' ids (a page may hold more than one filter). */
  idPrefix: string;
  filter: RunFilter;
  onChange(next: RunFilter): void;
}

/** The kind and status fields of a run filter, as the history and the export show them. */
export function RunFilterFields({ idPrefix, filter, onChange }: RunFilterFieldsProps) {
  return (
    <>
      <div className="field">
        <label htmlFor={`${idPrefix}-kind`}>Kind</label>
        <select
          id={`${idPrefix}-kind`}
          value={filter.kind ?? ""}
          onChange={(event) => onChange({ ...filter, kind: event.target.value as RunKind | "" })}
        >
          <option value="">All kinds</option>
          {RUN_KINDS.map((kind) => (
            <option key={kind} value={kind}>
              {kind}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${idPrefix}-status`}>Status</label>
        <select
          id={`${idPrefix}-status`}
          value={filter.status ?? ""}
          onChange={(event) => onChange({ ...filter, status: event.target.value as RunStatus | "" })}
        >
          <option value="">All statuses</option>
          {RUN_STATUSES.map((status) => (
            <option key={status} value={status}>
              {status}
            </option>
          ))}
        </select>
      </div>
    </>
  );
}

/** The saved queries' names, offered to a query-name input by its `list` attribute. */
export function SavedQueryNames({ id }: { id: string }) {
  const saved = useResource(() => queries.list(), []);
  return (
    <datalist id={id}>
      {(saved.data ?? []).map((query) => (
        <option key={query.name} value={query.name} />
      ))}
    </datalist>
  );
}

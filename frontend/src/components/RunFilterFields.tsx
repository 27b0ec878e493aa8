import { queries, type RunFilter } from "../api/endpoints";
import { RUN_KINDS, RUN_STATUSES } from "../api/types";
import { useResource } from "../lib/useResource";
import { SelectField } from "./ui";

const KIND_OPTIONS = [
  { value: "" as const, label: "All kinds" },
  ...RUN_KINDS.map((kind) => ({ value: kind, label: kind })),
];
const STATUS_OPTIONS = [
  { value: "" as const, label: "All statuses" },
  ...RUN_STATUSES.map((status) => ({ value: status, label: status })),
];

interface RunFilterFieldsProps {
  /** Prefix of the fields' ids (a page may hold more than one filter). */
  idPrefix: string;
  filter: RunFilter;
  /** The field that changed, alone: the caller applies it to its newest filter, which may be newer than `filter`
   * (two quick changes, the second made before the first was rendered). */
  onChange(change: Partial<RunFilter>): void;
}

/** The kind and status fields of a run filter, as the history and the export show them. */
export function RunFilterFields({ idPrefix, filter, onChange }: RunFilterFieldsProps) {
  return (
    <>
      <SelectField
        id={`${idPrefix}-kind`}
        label="Kind"
        value={filter.kind ?? ""}
        options={KIND_OPTIONS}
        onChange={(kind) => onChange({ kind })}
      />
      <SelectField
        id={`${idPrefix}-status`}
        label="Status"
        value={filter.status ?? ""}
        options={STATUS_OPTIONS}
        onChange={(status) => onChange({ status })}
      />
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

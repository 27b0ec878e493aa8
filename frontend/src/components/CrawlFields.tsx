import type { CrawlScope, CrawlSitemap, Render } from "../api/types";
import type { CrawlFormState } from "../lib/runForm";
import { describedBy, Field } from "./ui";

interface Props {
  crawl: CrawlFormState;
  onChange(crawl: CrawlFormState): void;
  /** The problem with a field, by its API name (crawl.maxPages): the form's own check or the service's answer. */
  problem(name: string): string | undefined;
}

const SCOPES: readonly [CrawlScope, string][] = [
  ["host", "This host"],
  ["domain", "This domain and its subdomains"],
  ["path", "This host, under the URL's path"],
];

const SITEMAPS: readonly [CrawlSitemap, string][] = [
  ["auto", "Links and sitemaps"],
  ["only", "Sitemaps only (links not followed)"],
  ["off", "Links only"],
];

const RENDERS: readonly [Render, string][] = [
  ["auto", "Auto (plain HTTP, the browser for JavaScript pages)"],
  ["http", "Plain HTTP"],
  ["browser", "Browser (a screenshot per page)"],
];

const NUMBERS: readonly { name: "maxPages" | "maxDepth" | "perHostConcurrency" | "delayMs"; label: string }[] = [
  { name: "maxPages", label: "Max pages" },
  { name: "maxDepth", label: "Max depth (links)" },
  { name: "perHostConcurrency", label: "Pages at once per host" },
  { name: "delayMs", label: "Delay per host (ms)" },
];

/** The crawl's own options: how many pages, which ones, how politely. */
export function CrawlFields({ crawl, onChange, problem }: Props) {
  function set<K extends keyof CrawlFormState>(key: K, value: CrawlFormState[K]) {
    onChange({ ...crawl, [key]: value });
  }
  const id = (name: string) => `crawl-${name}`;

  return (
    <fieldset className="crawl-fields">
      <legend>Crawl</legend>
      <div className="options-grid">
        {NUMBERS.map(({ name, label }) => (
          <Field key={name} id={id(name)} label={label} error={problem(`crawl.${name}`)}>
            <input
              id={id(name)}
              type="number"
              inputMode="numeric"
              min={0}
              step={1}
              value={crawl[name]}
              onChange={(event) => set(name, event.target.value)}
              aria-invalid={problem(`crawl.${name}`) ? true : undefined}
              aria-describedby={describedBy(id(name), false, problem(`crawl.${name}`))}
            />
          </Field>
        ))}
        <Field id={id("scope")} label="Scope" error={problem("crawl.scope")}>
          <select
            id={id("scope")}
            value={crawl.scope}
            onChange={(event) => set("scope", event.target.value as CrawlScope)}
          >
            {SCOPES.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </Field>
        <Field id={id("sitemap")} label="Find pages by" error={problem("crawl.sitemap")}>
          <select
            id={id("sitemap")}
            value={crawl.sitemap}
            onChange={(event) => set("sitemap", event.target.value as CrawlSitemap)}
          >
            {SITEMAPS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </Field>
        <Field id={id("render")} label="Load pages with" error={problem("crawl.render")}>
          <select
            id={id("render")}
            value={crawl.render}
            onChange={(event) => set("render", event.target.value as Render)}
          >
            {RENDERS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </Field>
        <label className="check">
          <input
            type="checkbox"
            checked={crawl.respectRobots}
            onChange={(event) => set("respectRobots", event.target.checked)}
          />
          Respect robots.txt
        </label>
      </div>
      <div className="field-row">
        <GlobField
          id={id("include")}
          label="Include"
          value={crawl.include}
          error={problem("crawl.include")}
          hint="Only pages whose path matches one of these; none: every page in scope."
          placeholder={"/docs/**\n/blog/*"}
          onChange={(value) => set("include", value)}
        />
        <GlobField
          id={id("exclude")}
          label="Exclude"
          value={crawl.exclude}
          error={problem("crawl.exclude")}
          hint="Pages never fetched. ** crosses /, * stays within a segment."
          placeholder={"**/print/**\n/search*"}
          onChange={(value) => set("exclude", value)}
        />
      </div>
    </fieldset>
  );
}

interface GlobFieldProps {
  id: string;
  label: string;
  hint: string;
  placeholder: string;
  value: string;
  error: string | undefined;
  onChange(value: string): void;
}

function GlobField({ id, label, hint, placeholder, value, error, onChange }: GlobFieldProps) {
  return (
    <Field id={id} label={`${label} (globs, one a line)`} hint={hint} error={error}>
      <textarea
        id={id}
        rows={3}
        spellCheck={false}
        autoCapitalize="off"
        placeholder={placeholder}
        value={value}
        onChange={(event) => onChange(event.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy(id, true, error)}
      />
    </Field>
  );
}

// The new-run form's state and rules, apart from the page that shows it: a form made from a spec (Run again), what
// is wrong with it before it is sent (the server checks again and has the last word), and the spec it sends.

import type { CrawlOptions, CrawlScope, CrawlSitemap, Render, RunKind, RunOptions, RunSpec } from "../api/types";

const NAME = /^[a-z0-9_-]{1,64}$/;

export type SessionSource = "none" | "profile" | "file";

/** A crawl's options as the form holds them: numbers as typed, globs as text with one a line. */
export interface CrawlFormState {
  maxPages: string;
  maxDepth: string;
  include: string;
  exclude: string;
  scope: CrawlScope;
  sitemap: CrawlSitemap;
  respectRobots: boolean;
  render: Render;
  perHostConcurrency: string;
  delayMs: string;
}

// The service's defaults and limits (runs/serializers.py CrawlOptionsSerializer; README "Crawls").
const CRAWL_DEFAULTS = {
  maxPages: 100,
  maxDepth: 3,
  scope: "host",
  sitemap: "auto",
  respectRobots: true,
  render: "auto",
  perHostConcurrency: 2,
  delayMs: 0,
} as const;

const CRAWL_LIMITS: Record<"maxPages" | "maxDepth" | "perHostConcurrency" | "delayMs", [number, number]> = {
  maxPages: [1, 10_000],
  maxDepth: [0, 50],
  perHostConcurrency: [1, 16],
  delayMs: [0, 60_000],
};

export interface FormState {
  kind: RunKind;
  url: string;
  schema: string;
  instruction: string;
  goal: string;
  cred: string;
  saveProfile: string;
  overwriteProfile: boolean;
  source: SessionSource;
  profile: string;
  storageStatePath: string;
  mainContent: boolean;
  render: Render;
  timeoutSeconds: string;
  maxSteps: string;
  screenshots: boolean;
  waitFor: string;
  crawl: CrawlFormState;
}

/** The form for a new run, or for one like `spec` (Run again). */
export function initialState(spec: RunSpec | undefined): FormState {
  const options = spec?.options ?? {};
  return {
    kind: spec?.kind ?? "fetch",
    url: spec?.url ?? "",
    schema: spec?.schema !== undefined ? JSON.stringify(spec.schema, null, 2) : "",
    instruction: spec?.instruction ?? "",
    goal: spec?.goal ?? "",
    cred: spec?.cred ?? "",
    saveProfile: spec?.saveProfile ?? "",
    overwriteProfile: spec?.overwriteProfile ?? false,
    source: spec?.profile ? "profile" : spec?.storageStatePath ? "file" : "none",
    profile: spec?.profile ?? "",
    storageStatePath: spec?.storageStatePath ?? "",
    mainContent: options.mainContent ?? true,
    render: options.render ?? "auto",
    timeoutSeconds: String(Math.round((options.timeoutMs ?? 60000) / 1000)),
    maxSteps: String(options.maxSteps ?? 25),
    screenshots: options.screenshots ?? true,
    waitFor: options.waitFor ?? "",
    crawl: initialCrawl(spec?.crawl),
  };
}

function initialCrawl(crawl: CrawlOptions | undefined): CrawlFormState {
  const options = { ...CRAWL_DEFAULTS, ...crawl };
  return {
    maxPages: String(options.maxPages),
    maxDepth: String(options.maxDepth),
    include: (crawl?.include ?? []).join("\n"),
    exclude: (crawl?.exclude ?? []).join("\n"),
    scope: options.scope,
    sitemap: options.sitemap,
    respectRobots: options.respectRobots,
    render: options.render,
    perHostConcurrency: String(options.perHostConcurrency),
    delayMs: String(options.delayMs),
  };
}

/** Globs typed one a line: trimmed, blank lines dropped. */
export function globLines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
}

export type Problems = Partial<Record<string, string>>;

/** What is wrong with the form, by API field name; schemaOk: the schema editor parsed a usable schema. */
export function validate(form: FormState, schemaOk: boolean): Problems {
  const problems: Problems = {};
  const url = form.url.trim();
  if (!url) problems.url = "Enter the URL of the page.";
  else if (!/^https?:\/\/[^/\s]+/i.test(url)) problems.url = "Use an http:// or https:// URL.";
  if (form.kind === "extract" && !schemaOk) problems.schema = "Fix the schema first.";
  if (form.kind === "crawl" && form.schema.trim() && !schemaOk)
    problems.schema = "Fix the schema first (or empty it: pages are then fetched as Markdown).";
  if (form.kind === "crawl") {
    for (const [name, [min, max]] of Object.entries(CRAWL_LIMITS)) {
      const value = wholeNumber(form.crawl[name as keyof typeof CRAWL_LIMITS]);
      if (!Number.isInteger(value) || value < min || value > max)
        problems[`crawl.${name}`] = `A whole number from ${min.toLocaleString("en")} to ${max.toLocaleString("en")}.`;
    }
  }
  if (form.kind === "agent" && !form.goal.trim()) problems.goal = "Describe what the agent should achieve.";
  if (form.kind === "agent" && form.cred && !NAME.test(form.cred))
    problems.cred = "Use 1-64 lowercase letters, digits, - and _.";
  if (form.kind === "agent" && form.saveProfile && !NAME.test(form.saveProfile))
    problems.saveProfile = "Use 1-64 lowercase letters, digits, - and _.";
  if (form.source === "profile" && !form.profile) problems.profile = "Choose a profile (or no stored session).";
  if (form.source === "file" && !form.storageStatePath.trim())
    problems.storageStatePath = "Enter a path inside the data directory.";
  const timeout = Number(form.timeoutSeconds);
  if (!Number.isFinite(timeout) || timeout < 1) problems["options.timeoutMs"] = "At least 1 second.";
  const maxSteps = Number(form.maxSteps);
  if (form.kind === "agent" && (!Number.isInteger(maxSteps) || maxSteps < 1 || maxSteps > 200))
    problems["options.maxSteps"] = "A whole number from 1 to 200.";
  return problems;
}

/** A whole number as typed ("" and "2.5" are not), else NaN. */
function wholeNumber(text: string): number {
  return /^\s*\d+\s*$/.test(text) ? Number(text) : NaN;
}

/** The spec the form sends: only the fields of its kind, text trimmed, seconds as timeoutMs. */
export function buildSpec(form: FormState, schema: Record<string, unknown> | undefined): RunSpec {
  const spec = form.kind === "crawl" ? crawlSpec(form, schema) : pageSpec(form, schema);
  if (form.source === "profile" && form.profile) spec.profile = form.profile;
  if (form.source === "file" && form.storageStatePath.trim()) spec.storageStatePath = form.storageStatePath.trim();
  return spec;
}

function pageSpec(form: FormState, schema: Record<string, unknown> | undefined): RunSpec {
  const options: RunOptions = {
    timeoutMs: Math.round(Number(form.timeoutSeconds) * 1000),
    screenshots: form.screenshots,
  };
  if (form.kind !== "agent") {
    options.mainContent = form.mainContent;
    options.render = form.render;
  } else {
    options.maxSteps = Number(form.maxSteps);
  }
  if (form.waitFor.trim()) options.waitFor = form.waitFor.trim();
  const spec: RunSpec = { kind: form.kind, url: form.url.trim(), options };
  if (form.kind === "extract") {
    spec.schema = schema;
    if (form.instruction.trim()) spec.instruction = form.instruction.trim();
  }
  if (form.kind === "agent") {
    spec.goal = form.goal.trim();
    if (form.cred.trim()) spec.cred = form.cred.trim();
    if (form.saveProfile.trim()) spec.saveProfile = form.saveProfile.trim();
    if (form.saveProfile.trim() && form.overwriteProfile) spec.overwriteProfile = true;
  }
  return spec;
}

/** A crawl: every crawl option (so the spec says what was asked), the options its pages take (main content, each
 * page's timeout), and a schema only when one was given (its pages are then extract runs). */
function crawlSpec(form: FormState, schema: Record<string, unknown> | undefined): RunSpec {
  const crawl = form.crawl;
  const spec: RunSpec = {
    kind: "crawl",
    url: form.url.trim(),
    crawl: {
      maxPages: wholeNumber(crawl.maxPages),
      maxDepth: wholeNumber(crawl.maxDepth),
      include: globLines(crawl.include),
      exclude: globLines(crawl.exclude),
      scope: crawl.scope,
      sitemap: crawl.sitemap,
      respectRobots: crawl.respectRobots,
      render: crawl.render,
      perHostConcurrency: wholeNumber(crawl.perHostConcurrency),
      delayMs: wholeNumber(crawl.delayMs),
    },
    options: { mainContent: form.mainContent, timeoutMs: Math.round(Number(form.timeoutSeconds) * 1000) },
  };
  if (form.schema.trim() && schema) {
    spec.schema = schema;
    if (form.instruction.trim()) spec.instruction = form.instruction.trim();
  }
  return spec;
}

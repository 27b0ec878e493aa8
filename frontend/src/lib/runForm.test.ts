import { describe, expect, it } from "vitest";
import type { RunSpec } from "../api/types";
import { buildSpec, initialState, validate, type CrawlFormState, type FormState } from "./runForm";

function form(overrides: Partial<FormState>): FormState {
  return { ...initialState(undefined), url: "https://shop.test/item", ...overrides };
}

describe("the new-run form", () => {
  it("sends a fetch with only a fetch's fields, the timeout in milliseconds and text trimmed", () => {
    const spec = buildSpec(
      form({ url: "  https://shop.test/item ", goal: "ignored", instruction: "ignored", timeoutSeconds: "12" }),
      undefined,
    );
    expect(spec).toEqual({
      kind: "fetch",
      url: "https://shop.test/item",
      options: { timeoutMs: 12000, screenshots: true, mainContent: true, render: "auto" },
    });
  });

  it("sends an agent's goal, credential and profile to save, and overwriteProfile only with a profile to save", () => {
    const agent = form({
      kind: "agent",
      goal: " find the price ",
      cred: "shop",
      maxSteps: "7",
      overwriteProfile: true,
    });
    expect(buildSpec(agent, undefined)).toEqual({
      kind: "agent",
      url: "https://shop.test/item",
      goal: "find the price",
      cred: "shop",
      options: { timeoutMs: 60000, screenshots: true, maxSteps: 7 },
    });
    expect(buildSpec({ ...agent, saveProfile: "shop-session" }, undefined)).toMatchObject({
      saveProfile: "shop-session",
      overwriteProfile: true,
    });
  });

  it("gives back the spec it was made from (Run again)", () => {
    const spec: RunSpec = {
      kind: "extract",
      url: "https://shop.test/item",
      schema: { type: "object", properties: { price: { type: "number" } } },
      instruction: "The price in euros.",
      profile: "shop",
      options: { timeoutMs: 30000, screenshots: false, mainContent: false, render: "browser", waitFor: "#price" },
    };
    expect(buildSpec(initialState(spec), spec.schema)).toEqual(spec);
  });

  it("names what is wrong by the API's field names, and nothing when the form is right", () => {
    expect(validate(form({}), true)).toEqual({});
    expect(validate(form({ url: "ftp://shop.test/" }), true)).toEqual({ url: "Use an http:// or https:// URL." });
    expect(validate(form({ kind: "extract" }), false)).toEqual({ schema: "Fix the schema first." });
    expect(validate(form({ kind: "agent", cred: "Shop", maxSteps: "201" }), true)).toEqual({
      goal: "Describe what the agent should achieve.",
      cred: "Use 1-64 lowercase letters, digits, - and _.",
      "options.maxSteps": "A whole number from 1 to 200.",
    });
    expect(validate(form({ source: "profile", timeoutSeconds: "0" }), true)).toEqual({
      profile: "Choose a profile (or no stored session).",
      "options.timeoutMs": "At least 1 second.",
    });
  });

  it("sends a crawl with every crawl option, globs one a line, its pages' options and no schema when none", () => {
    const crawl: Partial<CrawlFormState> = {
      maxPages: "20",
      maxDepth: " 2 ",
      include: " /docs/**\n\n/blog/*  \n",
      exclude: "**/print/**",
      scope: "domain",
      sitemap: "off",
      respectRobots: false,
      render: "browser",
      perHostConcurrency: "1",
      delayMs: "500",
    };
    const crawlForm = form({ kind: "crawl", goal: "ignored", waitFor: "#ignored", timeoutSeconds: "30" });
    expect(buildSpec({ ...crawlForm, crawl: { ...crawlForm.crawl, ...crawl } }, undefined)).toEqual({
      kind: "crawl",
      url: "https://shop.test/item",
      crawl: {
        maxPages: 20,
        maxDepth: 2,
        include: ["/docs/**", "/blog/*"],
        exclude: ["**/print/**"],
        scope: "domain",
        sitemap: "off",
        respectRobots: false,
        render: "browser",
        perHostConcurrency: 1,
        delayMs: 500,
      },
      options: { mainContent: true, timeoutMs: 30000 },
    });
  });

  it("sends a crawl's schema and instruction only when a schema was given", () => {
    const schema = { type: "object", properties: { name: { type: "string", "x-selector": "h1" } } };
    const withSchema = form({ kind: "crawl", schema: JSON.stringify(schema), instruction: " The name " });
    expect(buildSpec(withSchema, schema)).toMatchObject({ schema, instruction: "The name" });
    const without = buildSpec({ ...withSchema, schema: "  " }, undefined);
    expect("schema" in without || "instruction" in without).toBe(false);
  });

  it("gives back the crawl it was made from (Run again), defaults for the options it did not name", () => {
    const spec: RunSpec = {
      kind: "crawl",
      url: "https://docs.test/",
      crawl: { maxPages: 7, include: ["/guide/**"], sitemap: "only", render: "http" },
      options: { mainContent: false, timeoutMs: 20000 },
    };
    expect(buildSpec(initialState(spec), undefined)).toEqual({
      ...spec,
      crawl: {
        maxPages: 7,
        maxDepth: 3,
        include: ["/guide/**"],
        exclude: [],
        scope: "host",
        sitemap: "only",
        respectRobots: true,
        render: "http",
        perHostConcurrency: 2,
        delayMs: 0,
      },
    });
  });

  it("names each crawl number out of the service's range by its API name", () => {
    const crawlForm = form({ kind: "crawl" });
    expect(validate(crawlForm, false)).toEqual({}); // no schema: none to fix
    const wrong = { maxPages: "0", maxDepth: "", perHostConcurrency: "2.5", delayMs: "60001" };
    expect(validate({ ...crawlForm, crawl: { ...crawlForm.crawl, ...wrong } }, true)).toEqual({
      "crawl.maxPages": "A whole number from 1 to 10,000.",
      "crawl.maxDepth": "A whole number from 0 to 50.",
      "crawl.perHostConcurrency": "A whole number from 1 to 16.",
      "crawl.delayMs": "A whole number from 0 to 60,000.",
    });
    expect(validate({ ...crawlForm, schema: "{" }, false)).toEqual({
      schema: "Fix the schema first (or empty it: pages are then fetched as Markdown).",
    });
  });
});

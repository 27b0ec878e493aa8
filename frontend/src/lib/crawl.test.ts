import { describe, expect, it } from "vitest";
import { countsFromSteps, crawlCounts, crawlSummary, formatRate, pagesPerMinute } from "./crawl";

// Steps as runs/crawl.py writes them.
const STEPS = [
  {
    action: "discover",
    observation:
      "robots.txt read: http://site.test/robots.txt\nstart: {'queued': 1}\n" +
      "sitemaps: 2 pages listed: {'queued': 1, 'duplicate': 1}",
  },
  {
    action: "page",
    observation: "page succeeded: run 1 (depth 0)\n5 links: {'queued': 2, 'out_of_scope': 1, 'duplicate': 2}",
  },
  { action: "page", observation: "page failed: run 2 (depth 1)\nhttp_error: The page answered HTTP 404." },
  { action: "page", observation: "page succeeded: run 3 (depth 1)\n0 links: {}" },
];

describe("a crawl's progress", () => {
  it("counts pages done and failed, URLs found and pages waiting from its steps", () => {
    expect(countsFromSteps(STEPS)).toEqual({ done: 3, failed: 1, found: 8, waiting: 1 });
    expect(countsFromSteps(STEPS.slice(0, 1))).toEqual({ done: 0, failed: 0, found: 3, waiting: 2 });
    expect(countsFromSteps([])).toEqual({ done: 0, failed: 0, found: 0, waiting: 0 });
    // A step of another kind (none today) is not a page, whatever its text.
    expect(countsFromSteps([{ action: "note", observation: "page failed: {'queued': 3}" }]).done).toBe(0);
  });

  it("takes a finished crawl's counts from its summary", () => {
    const summary = crawlSummary({
      pages: 4,
      byStatus: { succeeded: 3, failed: 1 },
      found: 12,
      skipped: { duplicate: 6 },
      frontier: { queued: 0, in_flight: 0, "200": 3, http_error: 1 },
    });
    expect(summary).not.toBeNull();
    expect(crawlCounts(STEPS, summary)).toEqual({ done: 4, failed: 1, found: 12, waiting: 0 });
    expect(crawlSummary({ pages: 4 })).toBeNull();
    expect(crawlSummary(null)).toBeNull();
  });

  it("measures pages per minute since the start, to now or to the end", () => {
    const start = "2026-01-01T00:00:00Z";
    const at = (seconds: number) => Date.parse(start) + seconds * 1000;
    expect(pagesPerMinute(3, start, at(30))).toBe(6);
    expect(pagesPerMinute(90, start, at(60))).toBe(90);
    expect(pagesPerMinute(1, start, at(0.5))).toBeNull(); // too early to say
    expect(pagesPerMinute(1, null, at(60))).toBeNull();
  });

  it("writes the rate per minute, or per second when faster than one a second", () => {
    expect(formatRate(6)).toBe("6.0 pages/min");
    expect(formatRate(0.25)).toBe("0.3 pages/min");
    expect(formatRate(42.4)).toBe("42 pages/min");
    expect(formatRate(90)).toBe("1.5 pages/s");
    expect(formatRate(null)).toBe("—");
  });
});

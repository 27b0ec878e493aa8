import { describe, expect, it } from "vitest";
import { runsToCsv, textCell } from "./csv";

const base = {
  id: "3f0c",
  kind: "extract" as const,
  url: "https://shop.example/p/1",
  status: "succeeded" as const,
  createdAt: "2026-01-01T00:00:00.123456Z",
};

describe("single-run CSV (the columns of /api/export?format=csv)", () => {
  it("writes the run's columns, then one per dotted result field", () => {
    const csv = runsToCsv([
      { ...base, result: { name: "Trail shoe", offers: { price: 89.9, currency: "EUR" }, sizes: [40, 41] } },
    ]);
    expect(csv).toBe(
      "runId,kind,url,status,createdAt,name,offers.price,offers.currency,sizes\r\n" +
        '3f0c,extract,https://shop.example/p/1,succeeded,2026-01-01T00:00:00.123456Z,Trail shoe,89.9,EUR,"[40,41]"\r\n',
    );
  });

  it("writes one row per record of a list of objects", () => {
    const csv = runsToCsv([{ ...base, result: [{ a: 1 }, { a: 2, b: true }] }]);
    expect(csv.split("\r\n")).toEqual([
      "runId,kind,url,status,createdAt,a,b",
      `3f0c,extract,${base.url},succeeded,${base.createdAt},1,`,
      `3f0c,extract,${base.url},succeeded,${base.createdAt},2,true`,
      "",
    ]);
  });

  it("prefixes result fields that would take the run's own column names", () => {
    const csv = runsToCsv([{ ...base, kind: "fetch", result: { url: "https://x", status: 200, title: "T" } }]);
    expect(csv.split("\r\n")[0]).toBe("runId,kind,url,status,createdAt,result.url,result.status,title");
  });

  it("puts a scalar result in the result column and writes a run without result as one row", () => {
    expect(runsToCsv([{ ...base, result: "done" }]).split("\r\n")[0]).toBe("runId,kind,url,status,createdAt,result");
    expect(runsToCsv([{ ...base, status: "failed", result: null }]).split("\r\n")).toHaveLength(3);
  });

  it("quotes and defuses cells a spreadsheet would misread", () => {
    expect(textCell("=HYPERLINK(1)")).toBe("'=HYPERLINK(1)");
    expect(textCell('say "hi", then\nleave')).toBe('"say ""hi"", then\nleave"');
    expect(textCell("-3 apples")).toBe("'-3 apples");
  });
});

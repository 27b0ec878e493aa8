// @vitest-environment jsdom
import { fireEvent, render, screen } from "@testing-library/react";
import { useState } from "react";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import { initialState, type CrawlFormState } from "../lib/runForm";
import { CrawlFields } from "./CrawlFields";

function Form({ error, seen }: { error: ApiError; seen: CrawlFormState[] }) {
  const [crawl, setCrawl] = useState(initialState(undefined).crawl);
  return (
    <CrawlFields
      crawl={crawl}
      onChange={(next) => {
        seen.push(next);
        setCrawl(next);
      }}
      problem={(name) => error.field(name)}
    />
  );
}

describe("the crawl form", () => {
  it("shows the service's field errors next to their fields", () => {
    const error = new ApiError(400, "invalid_spec", "Check the crawl options.", {
      "crawl.maxPages": ["Ensure this value is less than or equal to 10000."],
      "crawl.exclude.1": ["Ensure this field has no more than 500 characters."],
    });
    render(<Form error={error} seen={[]} />);
    const maxPages = screen.getByLabelText("Max pages");
    expect(maxPages.getAttribute("aria-invalid")).toBe("true");
    const said = document.getElementById(maxPages.getAttribute("aria-describedby") ?? "");
    expect(said?.textContent).toBe("Ensure this value is less than or equal to 10000.");
    const exclude = screen.getByLabelText(/^Exclude/);
    expect(exclude.getAttribute("aria-describedby")).toContain("crawl-exclude-error");
    expect(document.getElementById("crawl-exclude-error")?.textContent).toBe(
      "1: Ensure this field has no more than 500 characters.",
    );
    expect(screen.getByLabelText("Max depth (links)").getAttribute("aria-invalid")).toBeNull();
  });

  it("keeps what is typed, each option in its own field", () => {
    const seen: CrawlFormState[] = [];
    render(<Form error={new ApiError(400, "invalid_spec", "")} seen={seen} />);
    fireEvent.change(screen.getByLabelText(/^Include/), { target: { value: "/docs/**\n/blog/*" } });
    fireEvent.change(screen.getByLabelText("Scope"), { target: { value: "path" } });
    fireEvent.click(screen.getByLabelText("Respect robots.txt"));
    expect(seen.at(-1)).toMatchObject({ include: "/docs/**\n/blog/*", scope: "path", respectRobots: false });
  });
});

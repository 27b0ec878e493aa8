// @vitest-environment jsdom
import { fireEvent, render, screen } from "@testing-library/react";
import { useState } from "react";
import { describe, expect, it } from "vitest";
import { SchemaEditor } from "./SchemaEditor";

function Editor({ initial }: { initial: string }) {
  const [value, setValue] = useState(initial);
  return <SchemaEditor id="schema" value={value} onChange={setValue} />;
}

describe("SchemaEditor", () => {
  it("shows the JSON mistake inline, next to its line, and clears it when fixed", () => {
    render(<Editor initial={'{"type": "object",\n "properties": {}'} />);
    const textarea = screen.getByLabelText("Schema");
    expect(textarea.getAttribute("aria-invalid")).toBe("true");
    expect(screen.getByText(/^Line 2, column \d+:/)).toBeTruthy();

    fireEvent.change(textarea, {
      target: { value: '{"type": "object", "properties": {"t": {"type": "string", "x-selector": "h1"}}}' },
    });
    expect(textarea.getAttribute("aria-invalid")).toBeNull();
    expect(screen.getByText(/no model needed/)).toBeTruthy();
  });

  it("formats valid JSON", () => {
    render(<Editor initial={'{"type":"object","properties":{"t":{"type":"string","x-selector":"h1"}}}'} />);
    fireEvent.click(screen.getByRole("button", { name: "Format" }));
    expect((screen.getByLabelText("Schema") as HTMLTextAreaElement).value).toContain('\n  "type": "object"');
  });
});

import { describe, expect, it } from "vitest";
import type { RunSpec } from "../api/types";
import { buildSpec, initialState, validate, type FormState } from "./runForm";

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
});

// @vitest-environment jsdom
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, ApiError, csrfToken, cursorOf, errorFromResponse } from "./client";

afterEach(() => {
  vi.unstubAllGlobals();
  document.cookie = "csrftoken=; expires=Thu, 01 Jan 1970 00:00:00 GMT";
});

describe("the API client", () => {
  it("turns the service's error body into a readable error with its fields", async () => {
    const response = new Response(
      JSON.stringify({
        error: {
          code: "invalid_request",
          message: "url: Only http:// and https:// URLs can be fetched.",
          fields: { url: ["Only http:// and https:// URLs can be fetched."] },
        },
      }),
      { status: 400, headers: { "Content-Type": "application/json" } },
    );
    const error = await errorFromResponse(response);
    expect(error.code).toBe("invalid_request");
    expect(error.message).toBe("url: Only http:// and https:// URLs can be fetched.");
    expect(error.field("url")).toBe("Only http:// and https:// URLs can be fetched.");
  });

  it("never shows an HTML or empty error page as it is", async () => {
    const error = await errorFromResponse(new Response("<html><body>Bad Gateway</body></html>", { status: 502 }));
    expect(error.message).toBe("The service (or a page it contacted) answered badly.");
    const csrf = await errorFromResponse(
      new Response(JSON.stringify({ error: { code: "forbidden", message: "CSRF Failed: CSRF token missing." } }), {
        status: 403,
      }),
    );
    expect(csrf.message).toMatch(/security token/);
  });

  it("finds nested field errors", () => {
    const error = new ApiError(400, "invalid_request", "x", { "options.timeoutMs": ["At most 300000."] });
    expect(error.field("options.timeoutMs")).toBe("At most 300000.");
    expect(error.field("options")).toBe("timeoutMs: At most 300000.");
  });

  it("sends the CSRF token on writes only", async () => {
    document.cookie = "csrftoken=abc123";
    const calls: RequestInit[] = [];
    vi.stubGlobal("fetch", async (_url: string, init: RequestInit) => {
      calls.push(init);
      return new Response(JSON.stringify({ ok: true }), { status: 200 });
    });
    await api("/api/runs");
    await api("/api/runs", { method: "POST", body: { kind: "fetch" } });
    const headers = calls.map((init) => init.headers as Record<string, string>);
    expect(headers[0]?.["X-CSRFToken"]).toBeUndefined();
    expect(headers[1]?.["X-CSRFToken"]).toBe("abc123");
    expect(headers[1]?.["Content-Type"]).toBe("application/json");
    expect(calls[1]?.body).toBe('{"kind":"fetch"}');
  });

  it("says so when the service cannot be reached", async () => {
    vi.stubGlobal("fetch", async () => {
      throw new TypeError("Failed to fetch");
    });
    await expect(api("/api/runs")).rejects.toMatchObject({ code: "network_error" });
  });

  it("reads cookies and cursors", () => {
    expect(csrfToken("sessionid=x; csrftoken=t%3D1")).toBe("t=1");
    expect(cursorOf("http://127.0.0.1:3470/api/runs?cursor=cD0y&limit=50")).toBe("cD0y");
    expect(cursorOf(null)).toBeNull();
  });
});
